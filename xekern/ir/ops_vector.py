"""vector ops: index ranges, broadcasts, shape casts, reductions, transposes, layout conversion,
and the lane-level slot ops (extract, from_elements, shuffle of slots)."""
from __future__ import annotations

from math import prod
from typing import Sequence, Tuple

from .core import IRError, Op, Value
from .attrs import Attr, USER_LAYOUT
from .types import DType, VectorType, elem_of, int1, int32, shape_of

REDUCE_KINDS = {"add", "mul", "maxnumf", "minnumf", "maximumf", "minimumf", "maxsi", "minsi",
                "maxui", "minui", "and", "or", "xor"}


class StepOp(Op):
    """``vector.step``: the 1-D tile ``[0, 1, ..., n-1]`` (``xl.arange`` adds its start)."""

    NAME = "vector.step"
    ATTRS = (USER_LAYOUT,)

    def __init__(self, type: VectorType, loc=None):
        super().__init__([], [type], loc=loc)

    def verify(self):
        t = self.result.type
        if not isinstance(t, VectorType) or t.rank != 1 or not elem_of(t).is_int:
            raise IRError(f"step produces a 1-D integer vector, not {t}", self)


class BroadcastOp(Op):
    """``vector.broadcast``: a scalar, or a tile with unit dimensions, stretched to ``type``."""

    NAME = "vector.broadcast"
    ATTRS = (USER_LAYOUT,)

    def __init__(self, src: Value, type: VectorType, loc=None):
        super().__init__([src], [type], loc=loc)

    def verify(self):
        s, t = self.operands[0].type, self.result.type
        if elem_of(s) != elem_of(t):
            raise IRError(f"cannot broadcast {s} to {t}: element types differ", self)
        if isinstance(s, VectorType):
            if s.rank != t.rank or any(a != b and a != 1 for a, b in zip(s.shape, t.shape)):
                raise IRError(f"cannot broadcast {s} to {t}: only unit dimensions stretch", self)


class ShapeCastOp(Op):
    """``vector.shape_cast`` restricted to inserting or removing unit dimensions."""

    NAME = "vector.shape_cast"

    def __init__(self, src: Value, type, loc=None):
        super().__init__([src], [type], loc=loc)

    def verify(self):
        s, t = shape_of(self.operands[0].type), shape_of(self.result.type)
        if [d for d in s if d != 1] != [d for d in t if d != 1]:
            raise IRError(f"shape_cast {s} -> {t} may only add or drop unit dimensions", self)


class ReduceOp(Op):
    """``vector.multi_reduction <kind>`` over ``axis``; a 1-D tile reduces to a scalar."""

    NAME = "vector.multi_reduction"
    ATTRS = (Attr("kind", str), Attr("axis", int))

    def __init__(self, kind: str, src: Value, axis: int, result_type, loc=None):
        super().__init__([src], [result_type], {"kind": kind, "axis": axis}, loc=loc)

    @property
    def kind(self):
        return self.attrs["kind"]

    @property
    def axis(self):
        return self.attrs["axis"]

    def verify(self):
        s, r = self.operands[0].type, self.result.type
        if self.kind not in REDUCE_KINDS:
            raise IRError(f"unknown reduction {self.kind}", self)
        if not isinstance(s, VectorType) or not 0 <= self.axis < s.rank:
            raise IRError(f"axis {self.axis} out of range for {s}", self)
        want = s.shape[:self.axis] + s.shape[self.axis + 1:]
        if shape_of(r) != want or elem_of(r) != s.elem:
            raise IRError(f"reducing {s} over axis {self.axis} gives shape {want}, not {r}", self)


class TransposeOp(Op):
    """``vector.transpose``: permute the dimensions of a tile."""

    NAME = "vector.transpose"
    ATTRS = (Attr("permutation", tuple),)

    def __init__(self, src: Value, perm: Sequence[int], type: VectorType, loc=None):
        super().__init__([src], [type], {"permutation": tuple(perm)}, loc=loc)

    @property
    def perm(self):
        return self.attrs["permutation"]

    def verify(self):
        s, t = self.operands[0].type, self.result.type
        if sorted(self.perm) != list(range(s.rank)):
            raise IRError(f"permutation {list(self.perm)} is not one of {s.rank} dimensions", self)
        if tuple(s.shape[p] for p in self.perm) != t.shape:
            raise IRError(f"transposing {s} by {list(self.perm)} does not give {t}", self)


class ConvertLayoutOp(Op):
    """``xegpu.convert_layout``: the same tile, redistributed to another layout."""

    NAME = "xegpu.convert_layout"
    ATTRS = (USER_LAYOUT, Attr("slm_block", tuple, ("slm-transpose",),
                                     "store the SLM matrix as contiguous blocks of this shape"),
             Attr("slm_strides", tuple, ("slm-transpose",),
                  "the order of the SLM matrix's blocks, as @strides (the smallest fastest)"))

    def __init__(self, src: Value, type: VectorType, loc=None):
        super().__init__([src], [type], loc=loc)

    def verify(self):
        s, t = self.operands[0].type, self.result.type
        if not isinstance(s, VectorType) or s.shape != t.shape or s.elem != t.elem:
            raise IRError(f"convert_layout keeps shape and element type: {s} -> {t}", self)


class ExtractOp(Op):
    """``vector.extract``: one slot of a lane-level vector as a scalar."""

    NAME = "vector.extract"
    ATTRS = (Attr("index", int),)

    def __init__(self, src: Value, index: int, loc=None):
        super().__init__([src], [elem_of(src.type)], {"index": index}, loc=loc)

    def verify(self):
        s = self.operands[0].type
        if not isinstance(s, VectorType) or not 0 <= self.attrs["index"] < s.numel:
            raise IRError(f"index {self.attrs['index']} out of range for {s}", self)


class FromElementsOp(Op):
    """``vector.from_elements``: a lane-level vector from scalars."""

    NAME = "vector.from_elements"

    def __init__(self, elems: Sequence[Value], type: VectorType, loc=None):
        super().__init__(elems, [type], loc=loc)

    def verify(self):
        t = self.result.type
        if len(self.operands) != t.numel or any(v.type != t.elem for v in self.operands):
            raise IRError(f"from_elements needs {t.numel} scalars of {t.elem}", self)


class SlotShuffleOp(Op):
    """``vector.shuffle``: ``result[k] = concat(sources)[indices[k]]`` within one lane."""

    NAME = "vector.shuffle"
    ATTRS = (Attr("indices", tuple),)

    def __init__(self, srcs: Sequence[Value], indices: Sequence[int], type: VectorType, loc=None):
        super().__init__(srcs, [type], {"indices": tuple(indices)}, loc=loc)

    @property
    def indices(self) -> Tuple[int, ...]:
        return self.attrs["indices"]

    def verify(self):
        total = sum(prod(shape_of(v.type)) or 1 for v in self.operands)
        t = self.result.type
        if len(self.indices) != t.numel or any(not 0 <= i < total for i in self.indices):
            raise IRError(f"shuffle indices must pick {t.numel} of {total} slots", self)
        if any(elem_of(v.type) != t.elem for v in self.operands):
            raise IRError("shuffle sources must share the result's element type", self)
