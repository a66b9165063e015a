"""Host-side debugging of interpreted kernels: tracing every op, and ``pdb`` at a kernel line.

Interpreted kernels run in this process one op at a time, so Python's own tools reach them::

    with xekern.interpreter.trace():              # print every op's result, per program
        kernel[grid](...)

    with xekern.interpreter.break_at(12):         # pdb when a program reaches line 12 of a kernel
        kernel[grid](...)                         # (p x, p mask, p program_id; `l` lists the kernel)

At a breakpoint the frame's locals are the kernel's variables as last assigned in that program
(NumPy values), plus ``program_id`` and ``op``. Variables are found from the kernel's source:
``name = <expression>`` takes the value of the last op built for that expression.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import linecache
import os
from typing import Callable, Dict, List, Optional

import numpy as np

from .. import ir
from ..ir.core import Op

_TRACERS: List[Callable] = []
_BREAKPOINTS: List["Breakpoint"] = []


class Event:
    """What a tracer receives after each op: the program, the op, its operand and result values,
    and the kernel's variables as last assigned."""

    __slots__ = ("program_id", "op", "operands", "results", "variables")

    def __init__(self, program_id, op, operands, results, variables):
        self.program_id = program_id
        self.op = op
        self.operands = operands
        self.results = results
        self.variables = variables

    @property
    def line(self) -> Optional[int]:
        return self.op.loc.line if self.op.loc is not None else None

    def __str__(self) -> str:
        loc = self.op.loc
        where = f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else "?"
        res = ", ".join(_short(v) for v in (self.results or ()))
        pid = f"pid ({', '.join(map(str, self.program_id))})"
        return f"{pid} {where} {self.op.op_name}" + (f" -> {res}" if res else "")


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)} " + np.array2string(v, threshold=8, edgeitems=2, precision=4)
    if isinstance(v, np.generic):
        return f"{v.dtype} {v}"
    return type(v).__name__


def print_event(event: Event) -> None:
    builtins.print(str(event))


class _Registration:
    """Undo a registration on ``with``-exit (or with ``remove()``)."""

    def __init__(self, table: list, item):
        self.table, self.item = table, item
        table.append(item)

    def remove(self) -> None:
        if self.item in self.table:
            self.table.remove(self.item)

    def __enter__(self):
        return self.item

    def __exit__(self, *exc):
        self.remove()


def trace(callback: Optional[Callable[[Event], None]] = None) -> _Registration:
    """Call ``callback(event)`` after every op of every interpreted program (default: print a line
    per op). Use as ``with xekern.interpreter.trace(): ...`` or keep the handle and ``.remove()`` it."""
    return _Registration(_TRACERS, callback or print_event)


class Breakpoint:
    """Stop in ``pdb`` (``builtins.breakpoint``) when a program reaches kernel ``line``."""

    def __init__(self, line: int, file: Optional[str] = None, program=None):
        self.line = int(line)
        self.file = os.path.abspath(file) if file else None
        self.program = (program,) if isinstance(program, int) else (tuple(program) if program is not None else None)
        self.hits = 0

    def matches(self, op: Op, program_id) -> bool:
        loc = op.loc
        if loc is None or loc.line != self.line:
            return False
        if self.file is not None and os.path.abspath(loc.file) != self.file:
            return False
        return self.program is None or tuple(program_id[:len(self.program)]) == self.program


def break_at(line: int, file: Optional[str] = None, program=None) -> _Registration:
    """Open ``pdb`` each time an interpreted program starts running kernel source ``line`` (of
    ``file``, any kernel file when None; only in ``program``, an id or an id tuple, when given)."""
    return _Registration(_BREAKPOINTS, Breakpoint(line, file, program))


def clear() -> None:
    """Remove every tracer and breakpoint."""
    _TRACERS.clear()
    _BREAKPOINTS.clear()


def active_hooks() -> Optional["Hooks"]:
    return Hooks(list(_TRACERS), list(_BREAKPOINTS)) if (_TRACERS or _BREAKPOINTS) else None


# ---- kernel variables from the source ----------------------------------------------------------------

_NAMES: Dict[str, Dict[tuple, str]] = {}


def _assignment_names(file: str) -> Dict[tuple, str]:
    """(line, col) of each assigned expression in ``file`` -> the variable it is assigned to;
    ("for", line, col) of each ``for NAME in`` statement -> NAME."""
    hit = _NAMES.get(file)
    if hit is not None:
        return hit
    out: Dict[tuple, str] = {}
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[(node.value.lineno, node.value.col_offset)] = t.id
                elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                        and len(t.elts) == len(node.value.elts):
                    for te, ve in zip(t.elts, node.value.elts):
                        if isinstance(te, ast.Name):
                            out[(ve.lineno, ve.col_offset)] = te.id
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out[(node.lineno, node.col_offset)] = node.target.id
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            out[("for", node.lineno, node.col_offset)] = node.target.id
    _NAMES[file] = out
    return out


def _name_of(op: Op) -> Optional[str]:
    """The variable ``op``'s result is assigned to (for a ForOp: its induction variable's name)."""
    loc = op.loc
    if loc is None:
        return None
    key = ("for", loc.line, loc.col) if isinstance(op, ir.ForOp) else (loc.line, loc.col)
    return _assignment_names(loc.file).get(key)


class Hooks:
    """Called by ``Program.run`` around each op while tracers or breakpoints are registered."""

    def __init__(self, tracers, breakpoints):
        self.tracers = tracers
        self.breakpoints = breakpoints
        self.program = None
        self.variables: Dict[str, object] = {}
        self.last_line = None

    def _enter(self, prog) -> None:
        if prog is not self.program:
            self.program, self.variables, self.last_line = prog, {}, None

    def before(self, prog, op: Op) -> None:
        self._enter(prog)
        self._loop_variables(prog, op)
        line = op.loc.line if op.loc is not None else None
        entering = line != self.last_line
        self.last_line = line
        if entering:
            for bp in self.breakpoints:
                if bp.matches(op, prog.program_id):
                    bp.hits += 1
                    pause(prog, op, self.variables)

    def after(self, prog, op: Op, results) -> None:
        if len(op.results) == 1 and not op.regions:
            name = _name_of(op)
            if name is not None:
                self.variables[name] = results[0]
        if self.tracers:
            ev = Event(prog.program_id, op, [prog.env[v] for v in op.operands], list(results or ()),
                       self.variables)
            for t in self.tracers:
                t(ev)

    def _loop_variables(self, prog, op: Op) -> None:
        """The induction variables of the loops around ``op`` (block arguments have no op)."""
        block = op.parent
        while block is not None and block.parent is not None:
            owner = block.parent
            if isinstance(owner, ir.ForOp) and block is owner.body and owner.iv in prog.env:
                name = _name_of(owner)
                if name is not None:
                    self.variables[name] = prog.env[owner.iv]
            block = owner.parent


def pause(prog, op: Op, variables: Dict[str, object]) -> None:
    """Call ``builtins.breakpoint()`` from a frame whose locals are the kernel's variables, compiled
    so that its line is the kernel's (pdb's ``list`` shows the kernel source)."""
    names = [n for n in variables if n.isidentifier() and not keyword.iskeyword(n)]
    extra = [n for n in ("program_id", "op") if n not in variables]
    params = names + extra
    loc = op.loc
    line = max(loc.line, 2) if loc is not None else 2
    src = "\n" * (line - 2) + f"def _kernel_frame({', '.join(params)}):\n    breakpoint()\n"
    glb = {"__builtins__": builtins.__dict__}  # breakpoint is looked up when called (patches apply)
    code = compile(src, loc.file if loc is not None else "<kernel>", "exec")
    exec(code, glb)
    values = [variables[n] for n in names] + [prog.program_id if n == "program_id" else op for n in extra]
    glb["_kernel_frame"](*values)
