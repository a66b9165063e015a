"""A kernel's source: its text, AST, file, line numbers and the names it can see.

The function is found in its file's AST by its first line (``co_firstlineno``), so positions in
error messages are the file's own lines and columns. A top-level function is parsed from its own
lines (its extent comes from its bytecode's line table), which is what a process's first compile
costs; otherwise the whole file is parsed once and shared by every kernel in it. Both are cheaper
than ``inspect.getsource`` (which tokenizes).
"""
from __future__ import annotations

import ast
import linecache
import os
from functools import cached_property
from typing import Dict, Tuple

from ..errors import CompilationError

_MODULES: Dict[str, Tuple[float, ast.Module, list]] = {}


def _module_ast(path: str):
    """(AST, lines) of a source file, cached per modification time."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        mtime = None
    hit = _MODULES.get(path)
    if hit is not None and hit[0] == mtime:
        return hit[1], hit[2]
    if mtime is not None:
        linecache.checkcache(path)
    lines = linecache.getlines(path)
    if not lines:
        return None, None
    tree = ast.parse("".join(lines), filename=path)
    _MODULES[path] = (mtime, tree, lines)
    return tree, lines


def _code_lines(code) -> int:
    """The last source line with bytecode in ``code`` or the functions nested in it."""
    last = max((ln for _, _, ln in code.co_lines() if ln is not None), default=code.co_firstlineno)
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            last = max(last, _code_lines(c))
    return last


def _function_ast(code, lines):
    """The AST of the top-level function starting at ``code.co_firstlineno``, parsed from its own lines
    only (a kernel's first compile need not parse the whole file), with the file's line numbers.
    None when that does not work (an indented definition, or no complete statement found): the
    caller parses the whole file."""
    first = code.co_firstlineno
    if not 0 < first <= len(lines) or lines[first - 1][:1] in (" ", "\t"):
        return None
    end = _code_lines(code)
    pad = "\n" * (first - 1)  # empty lines before it: the AST gets the file's line numbers as parsed
    for last in range(end, min(end + 40, len(lines)) + 1):  # the last statement may close on a later line
        try:
            tree = ast.parse(pad + "".join(lines[first - 1:last]))
        except SyntaxError:
            continue
        if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return tree
    return None


class KernelSource:
    """The parsed source of one ``@xk.jit`` function, with positions in its file."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        code = getattr(fn, "__code__", None)
        self.file = code.co_filename if code is not None else "<unknown>"
        first = code.co_firstlineno if code is not None else 0
        tree, lines = None, None
        if code is not None and self.file not in _MODULES:
            lines = linecache.getlines(self.file)
            tree = _function_ast(code, lines) if lines else None
        if tree is None:
            tree, lines = _module_ast(self.file) if code is not None else (None, None)
        node = None
        if tree is not None:
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == self.name:
                    starts = [n.lineno] + [d.lineno for d in n.decorator_list]
                    if first in starts:
                        node = n
                        break
        if node is None:
            raise CompilationError(f"cannot read the source of kernel '{self.name}'; kernels must be defined in "
                                   f"a file, not typed at a prompt or built with exec")
        self.tree: ast.FunctionDef = node
        self.start_line = min([node.lineno] + [d.lineno for d in node.decorator_list])
        self.text = "".join(lines[self.start_line - 1:node.end_lineno])

    @property
    def globals(self) -> dict:
        return self.fn.__globals__

    @cached_property
    def closure(self) -> dict:
        code = self.fn.__code__
        cells = self.fn.__closure__ or ()
        out = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                out[name] = cell.cell_contents
            except ValueError:
                pass
        return out

    def position(self, node):
        return getattr(node, "lineno", self.tree.lineno), getattr(node, "col_offset", 0)

    def error(self, node, message: str, call_chain=()) -> CompilationError:
        line, col = self.position(node)
        text = linecache.getline(self.file, line) or None
        return CompilationError(message, self.file, line, col, text, self.name, tuple(call_chain))
