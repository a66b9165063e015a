"""Errors a user can meet: in a kernel's source (CompilationError) or at a launch (LaunchError)."""
from __future__ import annotations

from typing import Optional


class XekernError(Exception):
    """Base class of xekern's user-facing errors."""


class CompilationError(XekernError):
    """A kernel cannot be compiled. Shows the kernel's file, line and a caret under the node.

    Example message::

        at /home/me/k.py:7:8 in add_kernel:
            x = xl.load(x_ptr + offs, mask=mask, other=0.0)
                ^
        'mask' must be a tile of int1, got float32
    """

    def __init__(self, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 col: Optional[int] = None, source_line: Optional[str] = None, func: str = "",
                 call_chain: tuple = ()):
        self.message = message
        self.file, self.line, self.col = file, line, col
        self.source_line = source_line
        self.func = func
        self.call_chain = call_chain
        super().__init__(self._format())

    def _format(self) -> str:
        if self.file is None:
            return self.message
        where = f"at {self.file}:{self.line}:{self.col}" + (f" in {self.func}" if self.func else "") + ":"
        parts = [where]
        if self.source_line is not None:
            text = self.source_line.rstrip("\n")
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            parts.append("    " + stripped)
            parts.append("    " + " " * max(0, (self.col or 0) - indent) + "^")
        parts.append(self.message)
        for c in self.call_chain:
            parts.append(f"  called from {c}")
        return "\n".join(parts)



def stage_error(stage: str, e: Exception) -> CompilationError:
    """The ``CompilationError`` for ``e``, raised by compilation stage ``stage`` (a pass, codegen, the
    interpreter's verifier): at the kernel line of the op it names (``e.op.loc``), if any.

        stage_error("layout", PassError("no layout for ...", op))   # at the op's file:line, with a caret
    """
    loc = getattr(getattr(e, "op", None), "loc", None)
    msg = f"{stage}: {e}"
    if loc is None:
        return CompilationError(msg)
    import linecache
    return CompilationError(msg, loc.file, loc.line, loc.col, linecache.getline(loc.file, loc.line) or None,
                            loc.func)

class LaunchError(XekernError, TypeError):
    """A kernel launch got a wrong argument, grid, device or resource request; nothing ran."""


class CacheWarning(UserWarning):
    """The kernel cache had to be rebuilt or bypassed."""


class EmitterWarning(UserWarning):
    """A device's driver rejected a kernel's code, which was rebuilt with the next emitter."""
