"""A kernel's source: its text, AST, file, line numbers and the names it can see."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from functools import cached_property

from ..errors import CompilationError


class KernelSource:
    """The parsed source of one ``@xk.jit`` function, with positions mapped back to its file."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        try:
            lines, start = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        except (OSError, TypeError) as e:
            raise CompilationError(f"cannot read the source of kernel '{self.name}' ({e}); kernels must be "
                                   f"defined in a file, not typed at a prompt or built with exec") from None
        self.start_line = start
        first = next((l for l in lines if l.strip()), lines[0])
        self.indent = len(first) - len(first.lstrip())
        self.text = textwrap.dedent("".join(lines))

    @cached_property
    def tree(self) -> ast.FunctionDef:
        mod = ast.parse(self.text)
        fn = mod.body[0]
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise CompilationError(f"'{self.name}' is not a function definition")
        return fn

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
        line = self.start_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent
        return line, col

    def error(self, node, message: str, call_chain=()) -> CompilationError:
        line, col = self.position(node)
        text = linecache.getline(self.file, line) or None
        return CompilationError(message, self.file, line, col, text, self.name, tuple(call_chain))
