"""The interpreter's skeleton: the rule table, errors, values, and running one program's blocks.

A rule is ``fn(ctx, op, args) -> results``: ``ctx`` is the running program (``Program``), ``args``
the values of ``op``'s operands, and the return value one value per result (``None`` for none).
Rules are found by op class through the MRO, like the codegen's (``lowering/codegen/core.py``);
an op without a rule is a ``CompilationError`` naming the op and pointing at its kernel line.

Values are host objects: a scalar is a NumPy scalar of the IR dtype (``np.bool_`` for i1,
``ml_dtypes.bfloat16`` for bf16), a tile a NumPy array of the IR shape, a pointer a
``memory.Ptr`` (buffer, element offset), descriptors and SLM matrices small records of
``memory.py``. Rules never modify a value in place, so values may be shared.

Adding an op is one rule. For example, a ``DevicePrintOp(prefix, *values)`` would be::

    @rule(ir.DevicePrintOp)
    def _device_print(ctx, op, args):
        ctx.print(op.attrs["prefix"], args)
"""
from __future__ import annotations

import builtins
import linecache
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import ir
from ..errors import CompilationError, XekernError
from ..ir.core import Block, Loc, Op, Value
from ..ir.types import DType, VectorType
from .numerics import npdt

Rule = Callable[["Program", Op, list], Optional[Sequence]]
RULES: Dict[type, Rule] = {}


def rule(*classes):
    """Register ``fn(ctx, op, args) -> results`` as the interpreter rule of op ``classes``."""
    def deco(fn):
        for c in classes:
            RULES[c] = fn
        return fn
    return deco


def rule_for(op: Op) -> Rule:
    """The rule of ``op``'s class (or of its nearest base class that has one)."""
    for cls in type(op).__mro__:
        fn = RULES.get(cls)
        if fn is not None:
            return fn
    loc = op.loc
    msg = (f"interpreter: no rule for '{op.op_name}' ({type(op).__name__}); the interpreter runs "
           f"workgroup-level IR and cannot run this op")
    if loc is None:
        raise CompilationError(msg)
    raise CompilationError(msg, loc.file, loc.line, loc.col, linecache.getline(loc.file, loc.line) or None,
                           loc.func)


# ---- errors ------------------------------------------------------------------------------------

class InterpreterError(XekernError):
    """A kernel did something at run time that the interpreter refuses (the device would have
    produced garbage or crashed). The message names the kernel, the program and the source line."""


class OutOfBoundsError(InterpreterError, IndexError):
    """An unmasked access outside the memory of an argument (or of a shared local memory matrix)."""


class DeviceAssertionError(InterpreterError, AssertionError):
    """A device-side assertion failed in an interpreted kernel."""


def where(op: Optional[Op]) -> str:
    """``  at file:line in func:`` plus the source line, for error messages."""
    loc: Optional[Loc] = op.loc if op is not None else None
    if loc is None:
        return ""
    text = linecache.getline(loc.file, loc.line).strip()
    out = f"\n  at {loc.file}:{loc.line}" + (f" in {loc.func}" if loc.func else "")
    if text:
        out += f"\n    {text}"
    return out


# ---- values ------------------------------------------------------------------------------------

def to_value(t, x):
    """``x`` as the interpreter's value of IR type ``t`` (a NumPy scalar or an array of ``t``'s
    shape and dtype); ``x`` is already of the right dtype except for NumPy's 0-d arrays."""
    if isinstance(t, VectorType):
        dt = npdt(t.elem)
        if type(x) is np.ndarray and x.dtype == dt and x.shape == t.shape:
            return x
        a = np.asarray(x)
        if a.dtype != dt:
            a = a.astype(dt)
        if a.shape != t.shape:
            a = np.broadcast_to(a, t.shape).copy()
        return a
    if isinstance(t, DType):
        dt = npdt(t)
        if isinstance(x, np.generic) and x.dtype == dt:
            return x
        a = np.asarray(x)
        if a.dtype != dt:
            a = a.astype(dt)
        return a.reshape(())[()]
    return x


def _expect(t):
    """(dtype, shape or None for a scalar) a result of IR type ``t`` must have; None: not checked."""
    if isinstance(t, VectorType):
        return npdt(t.elem), t.shape
    if isinstance(t, DType):
        return npdt(t), None
    return None


def check_value(op: Op, expect, v) -> None:
    """Raise if ``v`` does not match ``expect`` (from ``_expect``): an interpreter bug, not a user's."""
    if expect is None:
        return
    dt, shape = expect
    if shape is None:
        ok = isinstance(v, np.generic) and v.dtype == dt
    else:
        ok = type(v) is np.ndarray and v.dtype == dt and v.shape == shape
    if not ok:
        got = f"{type(v).__name__} {getattr(v, 'dtype', '')}{list(getattr(v, 'shape', ()))}"
        want = f"{dt}{list(shape or ())}"
        raise InterpreterError(f"interpreter bug: '{op.op_name}' produced {got}, not {want}{where(op)}")


# ---- plans and programs ------------------------------------------------------------------------

class Step:
    """One op of a block, resolved once per kernel: its rule, operands and results."""

    __slots__ = ("fn", "op", "ins", "outs")

    def __init__(self, op: Op):
        self.fn = rule_for(op)
        self.op = op
        self.ins = op.operands
        self.outs = tuple((r, _expect(r.type)) for r in op.results)


class Plan:
    """The steps of every block of a function (built once, reused by every program)."""

    def __init__(self, func: ir.FuncOp):
        self.func = func
        self.blocks: Dict[Block, Tuple[List[Step], Optional[Op]]] = {}
        self.constants: Dict[Op, object] = {}  # arith.constant values, made on first use
        self._add(func.body)

    def _add(self, block: Block) -> None:
        term = block.terminator
        body = block.ops[:-1] if term is not None else block.ops
        steps = [Step(op) for op in body]
        self.blocks[block] = (steps, term)
        for op in block.ops:
            for r in op.regions:
                self._add(r)


class Program:
    """One workgroup being interpreted: its ids, its values, its shared local memory."""

    def __init__(self, launch, program_id: Tuple[int, int, int], env: Dict[Value, object]):
        self.launch = launch                  # the launch (kernel name, grid, buffers, hooks)
        self.program_id = program_id
        self.env = env
        self.slm: Dict[Op, object] = {}        # create_mem_desc op -> its matrix (one per workgroup)
        self.hooks = launch.hooks

    @property
    def kernel(self) -> str:
        return self.launch.kernel_name

    @property
    def grid(self) -> Tuple[int, int, int]:
        return self.launch.grid

    def run(self, block: Block, args: Sequence = ()) -> List:
        """Run ``block`` with its arguments bound to ``args``; return its terminator's operand values."""
        env = self.env
        for a, v in zip(block.args, args):
            env[a] = v
        steps, term = self.launch.plan.blocks[block]
        hooks = self.hooks
        for s in steps:
            if hooks is not None:
                hooks.before(self, s.op)
            try:
                res = s.fn(self, s.op, [env[v] for v in s.ins])
            except XekernError:
                raise
            except Exception as e:  # a NumPy error in a rule: name the op and the kernel line
                raise InterpreterError(f"kernel '{self.kernel}', program {self.program_id}: '{s.op.op_name}' "
                                       f"failed: {type(e).__name__}: {e}{where(s.op)}") from e
            if s.outs:
                if res is None or len(res) != len(s.outs):
                    raise InterpreterError(f"interpreter bug: the rule of '{s.op.op_name}' gave "
                                           f"{0 if res is None else len(res)} results for {len(s.outs)}")
                for (r, expect), v in zip(s.outs, res):
                    check_value(s.op, expect, v)
                    env[r] = v
            if hooks is not None:
                hooks.after(self, s.op, res)
        if term is None:
            return []
        return [env[v] for v in term.operands]

    # ---- helpers for rules ----------------------------------------------------------------------
    def error(self, op: Op, message: str, cls=InterpreterError) -> InterpreterError:
        return cls(f"kernel '{self.kernel}', program {self.program_id}: {message}{where(op)}")

    def print(self, prefix: str, values: Sequence, hex: bool = False) -> None:
        """Print ``values`` the way an interpreted ``device_print`` does: once per program,
        ``pid (x, y, z) <prefix> <value>`` per value. Goes through ``builtins.print``."""
        pid = f"pid ({', '.join(map(str, self.program_id))})"
        if not values:
            builtins.print(f"{pid} {prefix}".rstrip())
            return
        for v in values:
            a = np.asarray(v)
            as_hex = hex and a.dtype.kind in "iu"
            if a.ndim:
                text = np.array2string(a, formatter={"int": hex_int} if as_hex else None)
            else:
                text = hex_int(a[()]) if as_hex else str(a[()])
            builtins.print(f"{pid} {prefix} {text}".rstrip())

    def assert_(self, op: Op, cond, message: str) -> None:
        """Raise ``DeviceAssertionError`` naming the failing positions if ``cond`` is false anywhere."""
        c = np.asarray(cond)
        if c.all():
            return
        bad = np.argwhere(~c.astype(bool))
        at = f" at tile positions {[tuple(int(i) for i in b) for b in bad[:8]]}" if c.ndim else ""
        raise self.error(op, f"device assertion failed{at}: {message}", DeviceAssertionError)


def hex_int(x) -> str:
    return hex(int(x))
