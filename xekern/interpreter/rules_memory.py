"""Interpreter rules for memory: pointers, scattered descriptors (gather, scatter, atomics),
nd block descriptors, DPAS, and matrices in shared local memory.

Global memory is the launch's arguments, each a flat NumPy ``Buffer``; a pointer is a buffer and
an element offset. Every access that is not masked off is bounds-checked: an unmasked access
outside an argument is a bug the device would turn into garbage (or a crash), so it raises
``OutOfBoundsError`` naming the kernel, the argument, the index and the kernel's line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from .. import ir
from ..ir.types import DType, MemDescType, TensorDescType, VectorType, elem_of
from . import numerics as N
from .core import OutOfBoundsError, rule, to_value
from .rules_arith import binary


class Buffer:
    """The host memory of one pointer argument (or of one SLM matrix): a flat array."""

    __slots__ = ("name", "data", "dirty")

    def __init__(self, name: str, data: np.ndarray):
        self.name = name
        self.data = data
        self.dirty = False   # written by the kernel (copied back to the device after the launch)

    def describe(self) -> str:
        return f"{self.name} ({self.data.size} elements of {self.data.dtype})"


class BufferView(Buffer):
    """A pointer cast's view of another buffer's bytes as another element type; writes through it
    mark the buffer it views dirty."""

    __slots__ = ("root",)

    def __init__(self, root: Buffer, dtype):
        self.root = root
        self.name = root.name
        self.data = root.data.view(dtype)

    @property
    def dirty(self):
        return self.root.dirty

    @dirty.setter
    def dirty(self, value):
        self.root.dirty = value


@dataclass(frozen=True)
class Ptr:
    """A scalar pointer: ``buffer`` and an offset in elements."""

    buffer: Buffer
    offset: int


@dataclass(frozen=True)
class ScatterDesc:
    """``create_tdesc``: one element offset per position (int64), ``chunk`` elements each."""

    buffer: Buffer
    offsets: np.ndarray
    type: TensorDescType


@dataclass(frozen=True)
class NdDesc:
    """``create_nd_tdesc``: a block view of a strided tensor starting at ``base`` (elements)."""

    buffer: Buffer
    base: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    offsets: Tuple[int, ...]
    type: TensorDescType


@dataclass(frozen=True)
class SlmMatrix:
    """``create_mem_desc``: a matrix in this workgroup's shared local memory."""

    buffer: Buffer
    type: MemDescType


def check_bounds(ctx, op, buf: Buffer, idx: np.ndarray, active: np.ndarray, what: str) -> None:
    """Raise ``OutOfBoundsError`` if an ``active`` element of ``idx`` is outside ``buf``."""
    bad = active & ((idx < 0) | (idx >= buf.data.size))
    if not bad.any():
        return
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    n, total = int(bad.sum()), int(np.count_nonzero(active))
    at = f" at tile position {pos}" if idx.ndim else ""
    raise ctx.error(op, f"out-of-bounds {what} of element {int(idx[pos])} of {buf.describe()}{at} "
                        f"({n} of the {total} accessed elements are outside it); mask the access "
                        f"(mask=offs < n) or fix the offsets", OutOfBoundsError)


# ---- pointers and scattered access ---------------------------------------------------------------

@rule(ir.PtrCastOp)
def _ptrcast(ctx, op, args):
    p = args[0]
    root = p.buffer.root if isinstance(p.buffer, BufferView) else p.buffer
    dt = N.npdt(op.result.type.elem)
    nbytes = p.offset * p.buffer.data.dtype.itemsize
    if nbytes % dt.itemsize or root.data.nbytes % dt.itemsize:
        raise ValueError(f"pointer cast of {root.describe()} at byte {nbytes} to {op.result.type}: the address "
                         f"is not a multiple of the element size")
    return [Ptr(BufferView(root, dt) if dt != root.data.dtype else root, nbytes // dt.itemsize)]


@rule(ir.AddPtrOp)
def _addptr(ctx, op, args):
    p, off = args
    return [Ptr(p.buffer, p.offset + int(off))]


@rule(ir.CreateTDescOp)
def _create_tdesc(ctx, op, args):
    p, offs = args
    return [ScatterDesc(p.buffer, p.offset + np.asarray(offs).astype(np.int64), op.result.type)]


@rule(ir.UpdateOffsetOp)
def _update_offset(ctx, op, args):
    d, delta = args
    return [ScatterDesc(d.buffer, d.offsets + np.asarray(delta).astype(np.int64), d.type)]


def _elements(d: ScatterDesc, mask) -> Tuple[np.ndarray, np.ndarray]:
    """(element indices, mask) of every element a scattered access touches, chunk last."""
    c = d.type.chunk_size
    m = np.broadcast_to(np.asarray(mask, bool), d.offsets.shape)
    if c == 1:
        return d.offsets, m
    return d.offsets[..., None] + np.arange(c), np.repeat(m[..., None], c, axis=-1)


@rule(ir.LoadGatherOp)
def _load_gather(ctx, op, args):
    d, mask = args[0], args[1]
    idx, m = _elements(d, mask)
    check_bounds(ctx, op, d.buffer, idx, m, "load")
    t: VectorType = op.result.type
    out = np.array(args[2]).reshape(idx.shape) if len(args) > 2 else np.zeros(idx.shape, N.npdt(t.elem))
    out[m] = d.buffer.data[idx[m]]
    return [out.reshape(t.shape)]


@rule(ir.StoreScatterOp)
def _store_scatter(ctx, op, args):
    """Masked-off elements are not written; where a tile writes one address twice, the later
    position (row-major) wins."""
    value, d, mask = args
    idx, m = _elements(d, mask)
    check_bounds(ctx, op, d.buffer, idx, m, "store")
    v = np.asarray(value).reshape(idx.shape)
    d.buffer.data[idx[m]] = v[m]
    d.buffer.dirty = True
    return None


@rule(ir.PrefetchOp, ir.PrefetchNdOp)
def _prefetch(ctx, op, args):
    return None  # a cache hint: it never faults, and the host has no cache to warm


_ATOMIC = {"add": "addi", "and": "andi", "or": "ori", "xor": "xori"}


def _atomic_new(kind: str, old, val, cmp, t: DType):
    """The value an atomic ``kind`` leaves in memory."""
    if kind == "xchg":
        return val
    if kind == "cas":  # compares bits, like cmpxchg
        return np.where(N.as_unsigned(old, t) == N.as_unsigned(cmp, t), val, old)
    if kind in ("max", "min"):
        if t.is_floating:  # LLVM's atomicrmw fmax/fmin: maxnum/minnum (NaN ignored)
            k = "maxnumf" if kind == "max" else "minnumf"
        else:
            k = kind + ("si" if t.is_signed else "ui")
        return binary(k, old, val, t)
    k = _ATOMIC[kind]
    if t.is_floating:
        k = "addf"
    return binary(k, old, val, t)


def _rounds(where: np.ndarray):
    """Index arrays that split ``where`` into rounds without repeated addresses: round ``r`` has
    the ``r``-th occurrence of each address, so rounds in order are the sequential order."""
    n = where.size
    if n == 0:
        return []
    order = np.argsort(where, kind="stable")
    s = where[order]
    first = np.r_[True, s[1:] != s[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - start
    top = int(rank.max())
    if top == 0:
        return [slice(None)]
    return [np.flatnonzero(rank == r) for r in range(top + 1)]


@rule(ir.AtomicRMWOp)
def _atomic(ctx, op, args):
    """Each element where ``mask`` holds, in row-major order: ``old = *p; *p = old <kind> value``;
    returns the old values (0 where masked off)."""
    d, value, mask = args[:3]
    cmp = np.asarray(args[3]) if len(args) > 3 else None
    t = d.type.elem
    idx, m = _elements(d, mask)
    check_bounds(ctx, op, d.buffer, idx, m, f"atomic_{op.kind}")
    sel = np.flatnonzero(m)
    where = idx.reshape(-1)[sel]
    vals = np.asarray(value).reshape(-1)[sel]
    cmps = cmp.reshape(-1)[sel] if cmp is not None else None
    data = d.buffer.data
    old = np.empty(where.size, data.dtype)
    for sel_r in _rounds(where):  # each round touches an address at most once
        w = where[sel_r]
        old[sel_r] = data[w]
        data[w] = _atomic_new(op.kind, old[sel_r], vals[sel_r], cmps[sel_r] if cmps is not None else None, t)
    d.buffer.dirty = True
    out = np.zeros(idx.size, N.npdt(t))
    out[sel] = old
    return [to_value(op.result.type, out.reshape(op.result.type.shape))]


# ---- nd (block) access ---------------------------------------------------------------------------

@rule(ir.CreateNdTDescOp)
def _create_nd(ctx, op: ir.CreateNdTDescOp, args):
    p = args[0]
    r = op.rank
    ints = [int(v) for v in args[1:]]
    return [NdDesc(p.buffer, p.offset, tuple(ints[:r]), tuple(ints[r:2 * r]), tuple(ints[2 * r:]),
                   op.result.type)]


@rule(ir.UpdateNdOffsetOp)
def _update_nd(ctx, op, args):
    d: NdDesc = args[0]
    offs = tuple(o + int(x) for o, x in zip(d.offsets, args[1:]))
    return [NdDesc(d.buffer, d.base, d.shape, d.strides, offs, d.type)]


def _block(d: NdDesc, deltas) -> Tuple[np.ndarray, np.ndarray]:
    """(element indices, in-bounds mask) of the descriptor's block at its offsets + ``deltas``.
    Out-of-bounds means outside the described tensor (``shape``), which loads pad with zero and
    stores skip; the device checks the bounds whatever ``boundary_check`` says."""
    shape = d.type.value_shape
    grids = np.indices(shape, dtype=np.int64) if len(shape) > 1 else [np.arange(shape[0], dtype=np.int64)]
    idx = np.int64(d.base)
    inb = np.ones(shape, bool)
    for g, o, x, n, s in zip(grids, d.offsets, deltas, d.shape, d.strides):
        c = g + (o + int(x))
        inb &= (c >= 0) & (c < n)
        idx = idx + c * s
    return np.broadcast_to(idx, shape), inb


@rule(ir.LoadNdOp)
def _load_nd(ctx, op: ir.LoadNdOp, args):
    d: NdDesc = args[0]
    idx, inb = _block(d, args[1:])
    check_bounds(ctx, op, d.buffer, idx, inb, "descriptor load (the descriptor's shape and strides reach past "
                                              "the argument's memory)")
    out = np.zeros(idx.shape, N.npdt(d.type.elem))
    out[inb] = d.buffer.data[idx[inb]]
    tr = op.attrs.get("transpose")
    n = len(op.results)
    parts = np.split(out, n, axis=-1) if n > 1 else [out]  # array_length: blocks side by side
    res = []
    for r, part in zip(op.results, parts):
        if tr is not None:
            part = np.transpose(part, tr)
        res.append(to_value(r.type, np.ascontiguousarray(part)))
    return res


@rule(ir.StoreNdOp)
def _store_nd(ctx, op: ir.StoreNdOp, args):
    value, d = args[0], args[1]
    idx, inb = _block(d, args[2:])
    check_bounds(ctx, op, d.buffer, idx, inb, "descriptor store (the descriptor's shape and strides reach "
                                              "past the argument's memory)")
    v = np.asarray(value).reshape(idx.shape)
    d.buffer.data[idx[inb]] = v[inb]
    d.buffer.dirty = True
    return None


# ---- DPAS ----------------------------------------------------------------------------------------

@rule(ir.DpasOp)
def _dpas(ctx, op: ir.DpasOp, args):
    """``acc + a @ b`` computed exactly enough: float64 products and sums (exact products for
    16-bit and 32-bit inputs) rounded once to the accumulator type; 8-bit integers in int64,
    wrapped to int32. (The GPU rounds f32 inputs to tf32 first; the CPU device does not.)"""
    a, b = args[0], args[1]
    t = elem_of(op.result.type)
    if t.is_floating:
        r = np.asarray(a).astype(np.float64) @ np.asarray(b).astype(np.float64)
        if len(args) > 2:
            r = r + np.asarray(args[2]).astype(np.float64)
        return [to_value(op.result.type, r.astype(N.npdt(t)))]
    r = np.asarray(a).astype(np.int64) @ np.asarray(b).astype(np.int64)
    if len(args) > 2:
        r = r + np.asarray(args[2]).astype(np.int64)
    return [to_value(op.result.type, N.from_bits(r.astype(N.UNSIGNED[64]).astype(N.UNSIGNED[t.bits]), t))]


# ---- shared local memory -------------------------------------------------------------------------

def _poison(n: int, dt: np.dtype) -> np.ndarray:
    """Fresh SLM: NaN (floats) or 0x5A bytes, so reading before writing shows (the device's SLM
    starts with whatever the last workgroup left)."""
    if dt.kind == "f" or dt.name in ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        return np.full(n, np.nan, dt)
    out = np.empty(n, dt)
    out.view(np.uint8)[...] = 0x5A
    return out


@rule(ir.CreateMemDescOp)
def _create_mem_desc(ctx, op, args):
    m = ctx.slm.get(op)  # like the device: one allocation per op and workgroup, reused by loops
    if m is None:
        t: MemDescType = op.result.type
        n = int(np.prod(t.shape))
        m = ctx.slm[op] = SlmMatrix(Buffer(f"shared local memory matrix {list(t.shape)}",
                                           _poison(n, N.npdt(t.elem))), t)
    return [m]


@rule(ir.MemDescViewOp)
def _mem_desc_view(ctx, op, args):
    return [SlmMatrix(args[0].buffer, op.result.type)]


def _matrix_elements(ctx, op, m: SlmMatrix, offsets, shape) -> np.ndarray:
    """Element offsets of a ``shape`` tile at ``offsets`` (leading offsets fix outer dimensions)."""
    t = m.type
    offs = [int(o) for o in offsets]
    lead = len(offs) - len(shape)
    grids = list(np.indices(shape, dtype=np.int64)) if shape else []
    coords = [np.full(shape, o, np.int64) for o in offs[:lead]] + [g + o for g, o in zip(grids, offs[lead:])]
    inside = np.ones(shape, bool)
    for c, n in zip(coords, t.shape):
        inside &= (c >= 0) & (c < n)
    if not inside.all():
        pos = tuple(int(i) for i in np.argwhere(~inside)[0])
        at = tuple(int(c[pos]) for c in coords)
        raise ctx.error(op, f"out-of-bounds access of element {at} of the shared local memory matrix "
                            f"{list(t.shape)} (tile of shape {list(shape)} at offsets {offs})", OutOfBoundsError)
    idx = np.broadcast_to(np.int64(t.offset(coords)), shape)
    check_bounds(ctx, op, m.buffer, idx, np.ones(shape, bool), "shared local memory access (its @strides "
                                                               "reach past the matrix)")
    return idx


@rule(ir.LoadMatrixOp)
def _load_matrix(ctx, op, args):
    m: SlmMatrix = args[0]
    t = op.result.type
    idx = _matrix_elements(ctx, op, m, args[1:], tuple(getattr(t, "shape", ())))
    return [to_value(t, m.buffer.data[idx])]


@rule(ir.StoreMatrixOp)
def _store_matrix(ctx, op, args):
    value, m = args[0], args[1]
    shape = np.shape(value)
    idx = _matrix_elements(ctx, op, m, args[2:], shape)
    m.buffer.data[idx] = value
    return None


@rule(ir.ShuffleTensorOp)
def _shuffle_tensor(ctx, op, args):
    """The tile goes through the SLM matrix as on the device (the matrix holds it afterwards); the
    interpreter's tiles carry no layout, so what comes back is the tile itself."""
    value, m = args
    shape = np.shape(value)
    idx = _matrix_elements(ctx, op, m, [0] * len(shape), shape)
    m.buffer.data[idx] = value
    return [to_value(op.result.type, m.buffer.data[idx])]
