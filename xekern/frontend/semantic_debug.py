"""Semantic rules for on-device debugging: ``xl.device_print`` / ``print`` and ``xl.device_assert`` /
``assert``. Both build IR only when the compilation has ``debug`` on (``XEKERN_DEBUG=1``,
``@xk.jit(debug=True)``, or the interpreter); otherwise they check their arguments and vanish."""
from __future__ import annotations

from .. import ir
from ..ir import types as T
from ..language.core import tensor, unwrap
from .semantic import SemanticError


class DebugSemantic:
    def _element_index(self, shape) -> tensor:
        """The i32 tile of each element's row-major index in a tile of ``shape``."""
        idx = None
        stride = 1
        for axis in reversed(range(len(shape))):
            r = self.arange(0, shape[axis]) if shape[axis] > 1 else self.const(0, T.int32, (1,))
            for _ in range(axis):
                r = self.expand_dims(r, 0)
            for _ in range(len(shape) - axis - 1):
                r = self.expand_dims(r, -1)
            r = self.broadcast_to(r, shape)
            if stride != 1:
                r = self.binary("mul", r, stride)
            idx = r if idx is None else self.binary("add", idx, r)
            stride *= shape[axis]
        return idx

    def _printable(self, v, what: str) -> tensor:
        v = unwrap(v)
        if isinstance(v, (bool, int, float)):
            return self.to_tensor(v)
        if not isinstance(v, tensor) or not isinstance(v.dtype, T.DType):
            raise SemanticError(f"{what} prints scalars and tiles of numbers, not {type(v).__name__}")
        return v

    def device_print(self, prefix, *values, hex=False):
        """``xl.device_print("x =", x)``: one line per program for scalars, one per element for tiles."""
        prefix = unwrap(prefix)
        if not isinstance(prefix, str):
            raise SemanticError(f"device_print's prefix must be a string, got {type(prefix).__name__}")
        vals = [self._printable(v, "device_print") for v in values]
        if not self.options.debug:
            return None
        shapes = {v.shape for v in vals if v.is_tile}
        if len(shapes) > 1:
            shape = ()
            for s in shapes:
                shape = self.broadcast_shapes(shape, s)
            vals = [self.broadcast_to(v, shape) if v.is_tile else v for v in vals]
            shapes = {shape}
        shape = next(iter(shapes)) if shapes else ()
        index = self._element_index(shape).handle if shape else None
        self.b.create(ir.PrintOp, prefix, [v.handle for v in vals], index, shape, bool(unwrap(hex)))
        return None

    def device_assert(self, cond, msg=""):
        """``xl.device_assert(x >= 0, "x is negative")``: report the program (and element) where the
        condition is false, with the kernel's file and line."""
        msg = unwrap(msg)
        if not isinstance(msg, str):
            raise SemanticError(f"device_assert's message must be a string, got {type(msg).__name__}")
        c = unwrap(cond)
        if isinstance(c, (bool, int)):
            c = self.to_tensor(bool(c))
        if not isinstance(c, tensor):
            raise SemanticError(f"device_assert needs a condition, got {type(c).__name__}")
        if not self.options.debug:
            return None
        if c.dtype != T.int1:
            c = self.compare("ne", c, 0)
        loc = self.b.loc
        shape = c.shape if c.is_tile else ()
        index = self._element_index(shape).handle if shape else None
        self.b.create(ir.AssertOp, c.handle, msg or "assertion failed", loc.file if loc else "<kernel>",
                      loc.line if loc else 0, index, shape)
        return None

    def breakpoint(self, scope) -> None:
        """``breakpoint()`` in a kernel: a ``debug.breakpoint`` op holding the kernel's variables
        (``scope``: name -> value) for the interpreter's ``pdb``. Built in debug compilations (the
        interpreter's always are); the device compile removes it (compiler.py: no debugger there)."""
        if not self.options.debug:
            return None
        names, values, consts = [], [], {}
        for name, v in scope.items():
            v = unwrap(v)
            if isinstance(v, tensor) and isinstance(v.dtype, T.DType):
                names.append(name)
                values.append(v.handle)
            elif isinstance(v, (bool, int, float, str)) or v is None:
                consts[name] = v
        self.b.create(ir.BreakpointOp, names, values, consts)
        return None
