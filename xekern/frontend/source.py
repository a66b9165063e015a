"""A kernel's source: its text, AST, file, line numbers and the names it can see.

The function is found in its file's AST by its first line (``co_firstlineno``), so positions in
error messages are the file's own lines and columns. Parsing the whole file once is cheaper
than ``inspect.getsource`` (which tokenizes), and the parse is shared by every kernel in it.
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


class KernelSource:
    """The parsed source of one ``@xk.jit`` function, with positions in its file."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        code = getattr(fn, "__code__", None)
        self.file = code.co_filename if code is not None else "<unknown>"
        first = code.co_firstlineno if code is not None else 0
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
