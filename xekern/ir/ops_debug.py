"""Debug ops: ``debug.print`` and ``debug.assert`` (``xl.device_print`` / ``xl.device_assert``).

The frontend builds them only when the compilation has ``debug`` on (``XEKERN_DEBUG=1``), so a
kernel compiled without it holds no trace of them. Both take an optional last operand: the i32
tile of each element's row-major index in the workgroup tile ``shape`` (an attribute that stays the
workgroup shape through every pass), so that after distribution each lane still knows which
element each of its slots is::

    debug.print %x, %idx {prefix = "x =", count = 1, shape = [16]} : vector<16xf32>, vector<16xi32>
"""
from __future__ import annotations

from .core import IRError, Op, Value
from .attrs import Attr, NONE
from .types import DType, VectorType, int1, int32


def _check_index(op: Op, data, index) -> None:
    tiles = [v for v in data if isinstance(v.type, VectorType)]
    shapes = {v.type.shape for v in tiles}
    if len(shapes) > 1:
        raise IRError(f"tile operands must have one shape, got {sorted(shapes)}", op)
    if tiles and index is None:
        raise IRError("tile operands need the element-index operand", op)
    if index is not None:
        t = index.type
        if not isinstance(t, VectorType) or t.elem != int32 or (tiles and t.shape != tiles[0].type.shape):
            raise IRError(f"the element index must be an i32 tile shaped like the values, got {t}", op)
        if not op.attrs.get("shape"):
            raise IRError("an element index needs the workgroup tile 'shape' attribute", op)


class PrintOp(Op):
    """``debug.print``: print ``prefix`` and the values with the program id. Scalars print once per
    program; tiles print one line per element (and per work item holding a copy of it)."""

    NAME = "debug.print"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("prefix", str), Attr("count", int), Attr("shape", (tuple, NONE)), Attr("hex", bool))

    def __init__(self, prefix: str, values, index: Value = None, shape=(), hex: bool = False, loc=None):
        operands = list(values) + ([index] if index is not None else [])
        super().__init__(operands, [], {"prefix": prefix, "count": len(values), "shape": tuple(shape) or None,
                                        "hex": bool(hex)}, loc=loc)

    @property
    def prefix(self) -> str:
        return self.attrs["prefix"]

    @property
    def values(self):
        return self.operands[:self.attrs["count"]]

    @property
    def index(self):
        return self.operands[self.attrs["count"]] if len(self.operands) > self.attrs["count"] else None

    def verify(self):
        if not isinstance(self.prefix, str):
            raise IRError("the prefix must be a string", self)
        for v in self.values:
            t = v.type.elem if isinstance(v.type, VectorType) else v.type
            if not isinstance(t, DType):
                raise IRError(f"cannot print a value of type {v.type}", self)
        _check_index(self, self.values, self.index)


class AssertOp(Op):
    """``debug.assert``: where ``cond`` is false, print ``file:line``, the program id (and the
    element index for a tile) and ``msg``. OpenCL has no way to stop a kernel, so the kernel goes on."""

    NAME = "debug.assert"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("msg", str), Attr("file", str), Attr("line", int), Attr("shape", (tuple, NONE)))

    def __init__(self, cond: Value, msg: str, file: str, line: int, index: Value = None, shape=(), loc=None):
        operands = [cond] + ([index] if index is not None else [])
        super().__init__(operands, [], {"msg": msg, "file": file, "line": int(line),
                                        "shape": tuple(shape) or None}, loc=loc)

    @property
    def cond(self) -> Value:
        return self.operands[0]

    @property
    def index(self):
        return self.operands[1] if len(self.operands) > 1 else None

    def verify(self):
        t = self.cond.type
        if (t.elem if isinstance(t, VectorType) else t) != int1:
            raise IRError(f"the condition must be i1 (a boolean scalar or tile), got {t}", self)
        _check_index(self, [self.cond], self.index)


class BreakpointOp(Op):
    """``debug.breakpoint``: Python's ``breakpoint()`` written in a kernel. The operands are the
    kernel's live runtime variables, named by ``names``; ``consts`` holds its compile-time ones
    (name -> value). The interpreter opens ``pdb`` there, in a frame whose locals are those
    variables and whose file and line are the kernel's; the device has no debugger, so the
    compiler removes the op before its passes (the kernel runs on as if it were not there)."""

    NAME = "debug.breakpoint"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("names", tuple), Attr("consts", dict))

    def __init__(self, names, values, consts=None, loc=None):
        super().__init__(list(values), [], {"names": tuple(names), "consts": dict(consts or {})}, loc=loc)

    def verify(self):
        if len(self.attrs["names"]) != len(self.operands):
            raise IRError("one name per operand", self)
