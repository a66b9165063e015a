"""Triton's type objects, for code that inspects types in a kernel: ``xl.block_type``,
``xl.constexpr_type``, ``xl.void``, ``xl.slice`` and ``xl.tuple``.

xekern's kernels carry IR types: a tile's ``x.type`` is a ``VectorType`` (shape and element dtype),
a scalar's its ``DType``; constexprs are plain Python values and tuples Python tuples. These names
make the same checks work as in Triton::

    xl.static_assert(x.type == xl.block_type(xl.float32, [BLOCK]))
    xl.static_assert(isinstance(x.type, xl.block_type) and x.type.element_ty == xl.float32)
    t = xl.tuple([a, b])             # a tuple, as (a, b)
    y = x[xl.slice(None, None, None), None]      # as x[:, None]
"""
from __future__ import annotations

import builtins

from ..ir.types import DType, VectorType
from .core import MAX_TILE_NUMEL, constexpr


class _BlockTypeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, VectorType)


class block_type(metaclass=_BlockTypeMeta):
    """Triton's ``tl.block_type(element_ty, shape)``: the type of a tile, equal to ``x.type`` of a
    tile of that shape and dtype (an IR ``VectorType``; ``isinstance(x.type, xl.block_type)`` holds
    for every tile). ``.element_ty`` / ``.scalar``, ``.shape``, ``.numel``, ``.is_block()`` and
    ``.get_block_shapes()`` read it."""

    def __new__(cls, element_ty, shape):
        element_ty = constexpr(element_ty).value
        if not isinstance(element_ty, DType):
            raise TypeError(f"block_type needs an element dtype such as xl.float32, got {element_ty!r}")
        shape = builtins.tuple(int(constexpr(s).value) for s in shape)
        if not shape:
            raise TypeError("0d block_type is forbidden")
        n = 1
        for s in shape:
            n *= s
        if n > MAX_TILE_NUMEL:
            raise ValueError(f"block_type of {n} elements: more than the {MAX_TILE_NUMEL} a tile may have")
        return VectorType(shape, element_ty)


class constexpr_type:
    """Triton's ``tl.constexpr_type(value)``: the type of a compile-time constant, equal to another
    of the same value; ``xl.constexpr(v).type`` is one."""

    def __init__(self, value):
        self.value = constexpr(value).value

    def __eq__(self, other) -> bool:
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("constexpr_type", repr(self.value)))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


# Triton's void dtype: the "type" of what returns nothing (no value of it exists)
void = DType("void", 0, "void", "void")


class slice:  # noqa: A001  (Triton's name)
    """Triton's ``tl.slice(start, stop, step)``: what ``a:b:c`` in a subscript is. On a tile, only
    the whole axis (``xl.slice(None, None, None)``, i.e. ``:``) may be taken; on a tuple, constant
    bounds slice it as Python does."""

    def __init__(self, start=None, stop=None, step=None):
        self.start, self.stop, self.step = (constexpr(v).value for v in (start, stop, step))

    def as_python(self) -> builtins.slice:
        return builtins.slice(self.start, self.stop, self.step)

    def is_whole(self) -> bool:
        return self.start is None and self.stop is None and self.step is None

    def __repr__(self) -> str:
        return f"slice({self.start!r}, {self.stop!r}, {self.step!r})"


class tuple(builtins.tuple):  # noqa: A001  (Triton's name)
    """Triton's ``tl.tuple(values)``: a tuple of kernel values (a Python tuple: indexing with
    constants, ``len``, unpacking, ``+``). A tuple kernel argument arrives as one
    (``runtime/tuple_args.py``)."""

    def __new__(cls, args=(), type=None):  # noqa: A002  (Triton's keyword)
        return super().__new__(cls, args)
