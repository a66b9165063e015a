"""IR types: scalar dtypes, pointers, vectors (tiles), tensor descriptors, mem descriptors.

Every type is a small frozen dataclass with a stable text form used by the printer, e.g.
``vector<64x32xf32, #xegpu.layout<sg_layout = [4, 1], ...>>`` or
``!xegpu.tensor_desc<8x16xbf16, #xegpu.block_tdesc_attr<array_length = 2>>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Optional, Tuple, Union

import numpy as np


class Type:
    """Base class of every IR type."""

    def verify(self) -> None:
        pass


@dataclass(frozen=True)
class DType(Type):
    """A scalar element type. ``kind`` is one of ``bool``, ``int``, ``uint``, ``float``."""

    name: str          # IR spelling: i1, i8, ..., ui8, f8E5M2, f8E4M3FN, f16, bf16, f32, f64
    bits: int
    kind: str
    user_name: str     # the name users write: int1, int8, ..., bfloat16, float32

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:  # cheap: dtypes key the launch caches
        return hash(self.name)

    def __repr__(self) -> str:
        return f"xl.{self.user_name}"

    # Triton's dtype spellings: a scalar's type is its own scalar type, and no block
    @property
    def scalar(self) -> "DType":
        return self

    def is_block(self) -> bool:
        return False

    @property
    def is_floating(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_fp8(self) -> bool:
        return self.is_floating and self.bits == 8

    @property
    def computed_in_f32(self) -> bool:
        """A float narrower than f32: carried in its own bits, computed in f32 and rounded back."""
        return self.is_floating and self.bits < 32

    @property
    def np_dtype(self) -> np.dtype:
        if self.name in _ML_DTYPES:
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, _ML_DTYPES[self.name]))
        return np.dtype(_NP_NAMES[self.name])


_NP_NAMES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
             "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
             "f16": "float16", "f32": "float32", "f64": "float64",
             "f8E4M3B15": "uint8"}   # (its bits: no NumPy type has it)
# NumPy has no bfloat16 or fp8: the ml_dtypes package's types (the same bits) stand for them
_ML_DTYPES = {"bf16": "bfloat16", "f8E5M2": "float8_e5m2", "f8E4M3FN": "float8_e4m3fn",
              "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E5M2FNUZ": "float8_e5m2fnuz"}

int1 = DType("i1", 1, "bool", "int1")
int8 = DType("i8", 8, "int", "int8")
int16 = DType("i16", 16, "int", "int16")
int32 = DType("i32", 32, "int", "int32")
int64 = DType("i64", 64, "int", "int64")
uint8 = DType("ui8", 8, "uint", "uint8")
uint16 = DType("ui16", 16, "uint", "uint16")
uint32 = DType("ui32", 32, "uint", "uint32")
uint64 = DType("ui64", 64, "uint", "uint64")
float16 = DType("f16", 16, "float", "float16")
bfloat16 = DType("bf16", 16, "float", "bfloat16")
float32 = DType("f32", 32, "float", "float32")
float64 = DType("f64", 64, "float", "float64")
# fp8 (OCP): e5m2 (bias 15, inf and NaN) and e4m3fn (bias 7, no inf, NaN 0x7f): storage types,
# computed in f32; a conversion to them rounds to nearest even and saturates to the largest finite
# value (Triton's cvt.rn.satfinite)
float8e5 = DType("f8E5M2", 8, "float", "float8e5")
float8e4nv = DType("f8E4M3FN", 8, "float", "float8e4nv")
# the fnuz formats (AMD's; Triton's float8e4b8 and float8e5b16): bias 8 and 16, no inf, no negative
# zero, one NaN (0x80)
float8e4b8 = DType("f8E4M3FNUZ", 8, "float", "float8e4b8")
float8e5b16 = DType("f8E5M2FNUZ", 8, "float", "float8e5b16")

# Triton's own fp8 (float8e4b15): e4m3 with bias 15, no inf or NaN, largest 1.875; conversions to it
# round through f16 and saturate at 1.75, as Triton's do. No host array has it (NumPy and
# ml_dtypes lack it): its bits are uint8, and a kernel bitcasts them (``.to(xl.float8e4b15,
# bitcast=True)``)
float8e4b15 = DType("f8E4M3B15", 8, "float", "float8e4b15")

ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float8e5, float8e4nv, float8e4b8, float8e5b16, float16, bfloat16, float32, float64)
BY_NAME = {d.name: d for d in ALL_DTYPES + (float8e4b15,)}
BY_USER_NAME = {d.user_name: d for d in ALL_DTYPES + (float8e4b15,)}


_FROM_NUMPY = {}


def dtype_from_numpy(npdt) -> Optional[DType]:
    """The DType of a NumPy dtype, or None when xekern has no such type (memoized: launches call it)."""
    try:
        return _FROM_NUMPY[npdt]
    except (KeyError, TypeError):
        pass
    dt = np.dtype(npdt)
    out = None
    by_ml = {v: BY_NAME[k] for k, v in _ML_DTYPES.items()}
    if dt.name in by_ml:
        out = by_ml[dt.name]
    else:
        for d in ALL_DTYPES:
            if d.name not in _ML_DTYPES and np.dtype(_NP_NAMES[d.name]) == dt:
                out = d
                break
    try:
        _FROM_NUMPY[npdt] = out
    except TypeError:
        pass
    return out


def int_type(bits: int, signed: bool = True) -> DType:
    if bits == 1:
        return int1
    return BY_NAME[("i" if signed else "ui") + str(bits)]


@dataclass(frozen=True)
class PointerType(Type):
    """A pointer to ``elem`` in ``space`` (``global`` or ``slm``)."""

    elem: DType
    space: str = "global"

    @property
    def element_ty(self) -> DType:
        """Triton's spelling of ``elem``: ``out_ptr.dtype.element_ty``."""
        return self.elem

    def __str__(self) -> str:
        sp = "" if self.space == "global" else f", {self.space}"
        return f"!xegpu.ptr<{self.elem}{sp}>"


def _shape_str(shape) -> str:
    return "x".join(str(s) for s in shape)


@dataclass(frozen=True)
class VectorType(Type):
    """A tile: ``shape`` x ``elem`` with an optional distribution layout (see layout.py)."""

    shape: Tuple[int, ...]
    elem: DType
    layout: Optional[object] = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape)

    # Triton's block_type spellings (xl.block_type is this type)
    @property
    def element_ty(self) -> DType:
        return self.elem

    @property
    def scalar(self) -> DType:
        return self.elem

    def is_block(self) -> bool:
        return True

    def get_block_shapes(self) -> Tuple[int, ...]:
        return self.shape

    def with_layout(self, layout) -> "VectorType":
        return replace(self, layout=layout)

    def with_shape(self, shape) -> "VectorType":
        return replace(self, shape=tuple(shape))

    def with_elem(self, elem: DType) -> "VectorType":
        return replace(self, elem=elem)

    def __str__(self) -> str:
        lay = f", {self.layout}" if self.layout is not None else ""
        return f"vector<{_shape_str(self.shape)}x{self.elem}{lay}>"


@dataclass(frozen=True)
class TensorDescType(Type):
    """``!xegpu.tensor_desc``: a block of a tensor in memory (nd), or per-lane addresses (scattered).

    nd form (create_nd_tdesc): ``shape`` is the block shape, ``array_length`` blocks side by side.
    scattered form (create_tdesc): ``shape`` is the offsets' shape, plus ``chunk_size`` elements each.
    """

    shape: Tuple[int, ...]
    elem: DType
    scattered: bool = False
    chunk_size: int = 1
    array_length: int = 1
    boundary_check: bool = True
    memory_scope: str = "global"
    layout: Optional[object] = None

    def with_layout(self, layout) -> "TensorDescType":
        return replace(self, layout=layout)

    def with_shape(self, shape) -> "TensorDescType":
        return replace(self, shape=tuple(shape))

    @property
    def value_shape(self) -> Tuple[int, ...]:
        """Shape of the vector a load of this descriptor produces (before transposes)."""
        if self.scattered:
            return self.shape + ((self.chunk_size,) if self.chunk_size > 1 else ())
        if self.array_length > 1:
            return self.shape[:-1] + (self.shape[-1] * self.array_length,)
        return self.shape

    def __str__(self) -> str:
        attrs = []
        if self.scattered:
            attrs.append(f"chunk_size = {self.chunk_size}")
        if self.array_length != 1:
            attrs.append(f"array_length = {self.array_length}")
        if not self.boundary_check and not self.scattered:
            attrs.append("boundary_check = false")
        if self.memory_scope != "global":
            attrs.append(f"memory_space = {self.memory_scope}")
        kind = "scatter_tdesc_attr" if self.scattered else "block_tdesc_attr"
        a = f", #xegpu.{kind}<{', '.join(attrs)}>" if attrs else ""
        lay = f", {self.layout}" if self.layout is not None else ""
        return f"!xegpu.tensor_desc<{_shape_str(self.shape)}x{self.elem}{a}{lay}>"


@dataclass(frozen=True)
class MemDescType(Type):
    """``!xegpu.mem_desc``: a matrix in shared local memory (seed 001).

    ``strides`` are the logical strides of each dimension (row-major when None); ``block``
    stores the matrix as contiguous blocks of that shape (the ``@block`` attribute), in the order
    ``strides`` gives the dimensions (the smallest stride fastest; row-major when None): a N x K
    matrix with ``block = [1, 2]``, ``strides = [1, N]`` keeps 16-bit pairs of K consecutive, N
    pairs per row of pairs (the VNNI rows of pass slm-transpose on targets without 2D block IO).
    """

    shape: Tuple[int, ...]
    elem: DType
    strides: Optional[Tuple[int, ...]] = None
    block: Optional[Tuple[int, ...]] = None

    def __str__(self) -> str:
        attrs = []
        if self.strides is not None:
            attrs.append(f"strides = [{', '.join(map(str, self.strides))}]")
        if self.block is not None:
            attrs.append(f"block = [{', '.join(map(str, self.block))}]")
        a = f", #xegpu.mem_layout<{', '.join(attrs)}>" if attrs else ""
        return f"!xegpu.mem_desc<{_shape_str(self.shape)}x{self.elem}{a}>"

    @property
    def row_major_strides(self) -> Tuple[int, ...]:
        out, acc = [], 1
        for s in reversed(self.shape):
            out.append(acc)
            acc *= s
        return tuple(reversed(out))

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.elem.itemsize

    @property
    def block_strides(self) -> Tuple[int, ...]:
        """With ``block``: the strides, in blocks, of the grid of blocks (row-major, or in the order
        of ``strides``, the smallest fastest)."""
        grid = [s // k for s, k in zip(self.shape, self.block)]
        order = sorted(range(len(grid)), key=lambda d: self.strides[d]) if self.strides is not None \
            else list(reversed(range(len(grid))))
        out, acc = [0] * len(grid), 1
        for d in order:
            out[d] = acc
            acc *= grid[d]
        return tuple(out)

    def offset(self, coords):
        """Element offset of logical ``coords`` under the ``@block`` or ``@strides`` layout: ints, or
        NumPy integer arrays element by element (codegen's ``slm_offset`` builds the same in LLVM IR)."""
        if self.block is not None:
            blk = inner = 0
            for x, s, k in zip(coords, self.block_strides, self.block):
                blk = blk + (x // k) * s
                inner = inner * k + x % k
            return blk * prod(self.block) + inner
        strides = self.strides if self.strides is not None else self.row_major_strides
        return sum((x * s for x, s in zip(coords, strides)), 0)


@dataclass(frozen=True)
class PrivateArrayType(Type):
    """``memref<shape x elem, #gpu.address_space<private>>``: an array of one work item (seed 003's
    ``private(...)`` memory attribution), row-major; its elements are read and written one at a time
    with dynamic indices (``memref.load`` / ``memref.store``)."""

    shape: Tuple[int, ...]
    elem: DType

    def __str__(self) -> str:
        return f"memref<{_shape_str(self.shape)}x{self.elem}, #gpu.address_space<private>>"

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem.itemsize


@dataclass(frozen=True)
class NBarrierType(Type):
    """``!xegpu.nbarrier``: a named barrier bound to the calling subgroup."""

    def __str__(self) -> str:
        return "!xegpu.nbarrier"


ScalarLike = Union[DType, PointerType]


def elem_of(t: Type) -> DType:
    """The element dtype of a scalar or vector type."""
    if isinstance(t, DType):
        return t
    if isinstance(t, (VectorType, TensorDescType, MemDescType)):
        return t.elem
    raise TypeError(f"type {t} has no element type")


def shape_of(t: Type) -> Tuple[int, ...]:
    return t.shape if isinstance(t, VectorType) else ()


def like(t: Type, elem: DType) -> Type:
    """``t`` with its element type replaced by ``elem`` (scalars become ``elem``)."""
    if isinstance(t, VectorType):
        return t.with_elem(elem)
    return elem
