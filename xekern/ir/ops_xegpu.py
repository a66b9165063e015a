"""XeGPU ops (seeds 000 and 001): tensor descriptors, block and scattered memory access, DPAS,
shared-local-memory matrices, named barriers, fences and compile hints.

The same op classes serve every level: at workgroup level the value types are whole tiles,
after distribution they are a subgroup's piece, and at lane level one work item's slots. Block
ops keep the layout on their descriptor, so codegen knows which slot holds which element.
"""
from __future__ import annotations

from math import prod
from typing import Optional, Sequence

from .core import IRError, Op, Value
from .attrs import BLOCK_RUNS, BLOCKS, FRONTEND, HINTS, LAYOUT, NONE, TILES, USER_LAYOUT, Attr
from .types import (DType, MemDescType, NBarrierType, PointerType, TensorDescType, VectorType,
                    elem_of, int1, shape_of)

CACHE_HINTS = {None, "cached", "uncached", "streaming", "read_invalidate", "write_back", "write_through"}
ATOMIC_KINDS = {"add", "max", "min", "and", "or", "xor", "xchg", "cas"}
HINT_KEYS = ("l1_hint", "l2_hint", "l3_hint")


def _hints(op: Op) -> None:
    for k in HINT_KEYS:
        if op.attrs.get(k) not in CACHE_HINTS:
            raise IRError(f"{k} = {op.attrs.get(k)!r} is not a cache hint of the RFC "
                          f"({', '.join(sorted(h for h in CACHE_HINTS if h))})", op)


def _is_tdesc(v: Value, scattered: bool) -> TensorDescType:
    t = v.type
    if not isinstance(t, TensorDescType) or t.scattered != scattered:
        kind = "a scattered" if scattered else "an nd"
        raise IRError(f"expects {kind} tensor_desc, got {t}", v.owner if isinstance(v.owner, Op) else None)
    return t


# ---- scattered access ---------------------------------------------------------------------

class CreateTDescOp(Op):
    """``xegpu.create_tdesc %base, %offsets``: one address per element, ``chunk_size`` elements each."""

    NAME = "xegpu.create_tdesc"

    def __init__(self, base: Value, offsets: Value, type: TensorDescType, loc=None):
        super().__init__([base, offsets], [type], loc=loc)

    def verify(self):
        base, offs = self.operands
        t = self.result.type
        if not isinstance(base.type, PointerType):
            raise IRError(f"the base must be a pointer, got {base.type}", self)
        if not t.scattered or t.elem != base.type.elem:
            raise IRError(f"result must be a scattered tensor_desc of {base.type.elem}", self)
        if not elem_of(offs.type).is_int or shape_of(offs.type) != t.shape:
            raise IRError(f"offsets {offs.type} must be integers shaped like the descriptor {t.shape}", self)
        if t.chunk_size not in (1, 2, 3, 4, 8, 16, 32, 64):
            raise IRError(f"chunk_size {t.chunk_size} is not one of the RFC's 1, 2, 3, 4, 8 (or 16..64 on Xe2)", self)


class UpdateOffsetOp(Op):
    """``xegpu.update_offset %tdesc, %delta``: move each address by its delta (in elements)."""

    NAME = "xegpu.update_offset"

    def __init__(self, tdesc: Value, delta: Value, loc=None):
        super().__init__([tdesc, delta], [tdesc.type], loc=loc)

    def verify(self):
        t = _is_tdesc(self.operands[0], True)
        if shape_of(self.operands[1].type) != t.shape:
            raise IRError("the delta must have the descriptor's shape", self)


class LoadGatherOp(Op):
    """``xegpu.load_gather %tdesc, %mask``: masked-off elements keep ``other`` (zero if absent)."""

    NAME = "xegpu.load_gather"
    ATTRS = HINTS + (Attr("volatile", bool), TILES, *BLOCK_RUNS)

    def __init__(self, tdesc: Value, mask: Value, type: VectorType, other: Optional[Value] = None,
                 hints=None, loc=None):
        ops = [tdesc, mask] + ([other] if other is not None else [])
        super().__init__(ops, [type], dict(hints or {}), loc=loc)

    def verify(self):
        t = _is_tdesc(self.operands[0], True)
        m = self.operands[1].type
        if elem_of(m) != int1 or shape_of(m) != t.shape:
            raise IRError(f"mask {m} must be i1 shaped like the descriptor {t.shape}", self)
        if prod(shape_of(self.result.type)) != prod(t.value_shape):
            raise IRError(f"result {self.result.type} does not hold the {prod(t.value_shape)} loaded elements", self)
        if len(self.operands) == 3 and self.operands[2].type != self.result.type:
            raise IRError("the 'other' value must have the result's type", self)
        _hints(self)


class StoreScatterOp(Op):
    """``xegpu.store_scatter %value, %tdesc, %mask``: masked-off elements are not written."""

    NAME = "xegpu.store_scatter"
    HAS_SIDE_EFFECTS = True
    ATTRS = HINTS + (TILES, *BLOCK_RUNS)

    def __init__(self, value: Value, tdesc: Value, mask: Value, hints=None, loc=None):
        super().__init__([value, tdesc, mask], [], dict(hints or {}), loc=loc)

    def verify(self):
        v, td, m = self.operands
        t = _is_tdesc(td, True)
        if elem_of(v.type) != t.elem or prod(shape_of(v.type)) != prod(t.value_shape):
            raise IRError(f"value {v.type} does not match the descriptor {t}", self)
        if elem_of(m.type) != int1 or shape_of(m.type) != t.shape:
            raise IRError(f"mask {m.type} must be i1 shaped like the descriptor", self)
        _hints(self)


class PrefetchOp(Op):
    """``xegpu.prefetch %tdesc``: bring the addressed lines into cache."""

    NAME = "xegpu.prefetch"
    HAS_SIDE_EFFECTS = True
    ATTRS = HINTS + (TILES,)

    def __init__(self, tdesc: Value, hints=None, loc=None):
        super().__init__([tdesc], [], dict(hints or {}), loc=loc)

    def verify(self):
        _is_tdesc(self.operands[0], True)
        _hints(self)


class AtomicRMWOp(Op):
    """``xegpu.atomic_rmw <kind>``: per element ``old = *p; *p = old <kind> value``; returns ``old``.
    ``cas`` takes a compare operand and writes ``value`` only where ``*p == cmp``."""

    NAME = "xegpu.atomic_rmw"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("kind", str), Attr("sem", str), Attr("scope", str), TILES)

    def __init__(self, kind: str, tdesc: Value, value: Value, mask: Value, cmp: Optional[Value] = None,
                 loc=None):
        ops = [tdesc, value, mask] + ([cmp] if cmp is not None else [])
        super().__init__(ops, [value.type], {"kind": kind}, loc=loc)

    @property
    def kind(self):
        return self.attrs["kind"]

    def verify(self):
        td, v, m = self.operands[:3]
        t = _is_tdesc(td, True)
        if self.kind not in ATOMIC_KINDS:
            raise IRError(f"unknown atomic kind {self.kind}", self)
        if (self.kind == "cas") != (len(self.operands) == 4):
            raise IRError("cas, and only cas, takes a compare value", self)
        if elem_of(v.type) != t.elem or shape_of(v.type) != t.shape:
            raise IRError(f"value {v.type} does not match the descriptor {t}", self)
        if elem_of(m.type) != int1 or shape_of(m.type) != t.shape:
            raise IRError("mask must be i1 shaped like the descriptor", self)
        e = t.elem
        if e.bits not in (32, 64) and not (e.is_floating and e.bits == 16):
            raise IRError(f"atomics need 32- or 64-bit elements (or 16-bit floats), got {e}", self)
        if e.is_floating and self.kind in ("and", "or", "xor"):
            raise IRError(f"atomic {self.kind} needs integers, got {e}", self)


# ---- nd (block) access -----------------------------------------------------------------------

class CreateNdTDescOp(Op):
    """``xegpu.create_nd_tdesc %base, shape, strides, offsets``: a block view of a strided tensor.

    Loads of it pad out-of-bounds elements with zero and stores skip them (``boundary_check``).
    """

    NAME = "xegpu.create_nd_tdesc"
    ATTRS = (Attr("rank", int), USER_LAYOUT, Attr("array_length", int),
             Attr("block_io", bool, ("surface-rules",), "2D block messages may read it (the surface rules hold)"),
             Attr("surface", int, ("surface-rules",), "the index of its surface check at launch"))

    def __init__(self, base: Value, shape: Sequence[Value], strides: Sequence[Value],
                 offsets: Sequence[Value], type: TensorDescType, loc=None):
        super().__init__([base, *shape, *strides, *offsets], [type], {"rank": len(shape)}, loc=loc)

    @property
    def rank(self):
        return self.attrs["rank"]

    @property
    def base(self):
        return self.operands[0]

    @property
    def shape(self):
        return self.operands[1:1 + self.rank]

    @property
    def strides(self):
        return self.operands[1 + self.rank:1 + 2 * self.rank]

    @property
    def offsets(self):
        return self.operands[1 + 2 * self.rank:]

    def verify(self):
        t = self.result.type
        r = self.rank
        if not isinstance(self.base.type, PointerType) or self.base.type.elem != t.elem:
            raise IRError(f"base {self.base.type} must point to {t.elem}", self)
        if t.scattered or len(t.shape) != r or r not in (1, 2):
            raise IRError(f"an nd descriptor of rank {r} needs a block of rank {r} (1 or 2), got {t}", self)
        if len(self.offsets) != r:
            raise IRError(f"needs {r} offsets, got {len(self.offsets)}", self)
        for v in self.operands[1:]:
            if not (isinstance(v.type, DType) and v.type.is_int):
                raise IRError(f"shape, strides and offsets are integer scalars, got {v.type}", self)


class _NdAccess(Op):
    """Shared accessors of load_nd / store_nd / prefetch_nd: ``tdesc`` then one offset per dim."""

    TDESC_INDEX = 0

    @property
    def tdesc(self) -> Value:
        return self.operands[self.TDESC_INDEX]

    @property
    def offsets(self):
        return self.operands[self.TDESC_INDEX + 1:]

    def _check_offsets(self):
        t = _is_tdesc(self.tdesc, False)
        if len(self.offsets) != len(t.shape):
            raise IRError(f"needs {len(t.shape)} offsets, got {len(self.offsets)}", self)
        for v in self.offsets:
            if not (isinstance(v.type, DType) and v.type.is_int):
                raise IRError(f"offsets are integer scalars, got {v.type}", self)
        _hints(self)
        return t


class LoadNdOp(_NdAccess):
    """``xegpu.load_nd %tdesc[offsets]``: load the block (out-of-bounds elements read as zero).

    ``transpose = [1, 0]`` loads the block transposed; ``packed`` loads it in VNNI form (pairs or
    quads of rows packed into 32 bits, for DPAS's B operand); ``transpose_bit_width`` transposes
    ``32 / bits`` adjacent elements as one unit.
    """

    NAME = "xegpu.load_nd"
    ATTRS = HINTS + BLOCKS + (
        Attr("transpose", (tuple, NONE)), Attr("transpose_bit_width", (int, NONE)),
        Attr("packed", bool, (FRONTEND, "layout"), "VNNI: K pairs (or quads) packed per lane"),
        Attr("layout", LAYOUT, (FRONTEND, "slm-transpose"), "the layout the user (or slm-transpose) gave"),
        Attr("fused", bool, ("emitter-decisions",), "read from memory by the DPAS that uses it (no copy)"),
        Attr("inside", bool, ("split-edges",), "inside the tensor at a dword-aligned column, in every iteration "
             "of its loop: per-lane vector loads, no bounds test"),
        Attr("column_multiple", int, ("split-edges",), "a number the tensor's width and the tile's column are "
             "multiples of: a run of columns within such a block lies all inside or all outside"), TILES)

    def __init__(self, tdesc: Value, offsets: Sequence[Value], type: VectorType, transpose=None,
                 packed: bool = False, transpose_bit_width: Optional[int] = None, hints=None, loc=None):
        attrs = dict(hints or {})
        attrs.update(transpose=tuple(transpose) if transpose else None, packed=packed,
                     transpose_bit_width=transpose_bit_width)
        super().__init__([tdesc, *offsets], [type], attrs, loc=loc)

    def verify(self):
        """With ``block_grid = [v, a]`` (after blocking) one load gives ``v`` blocks stacked vertically
        times ``a`` side by side (``array_length``), one result each, column by column."""
        t = self._check_offsets()
        tr = self.attrs.get("transpose")
        if tr is not None and self.attrs.get("packed"):
            raise IRError("VNNI packing and transpose cannot be combined (RFC)", self)
        gv, ga = self.attrs.get("block_grid") or (1, 1)
        if len(self.results) != gv * ga:
            raise IRError(f"block_grid = {[gv, ga]} needs {gv * ga} results, got {len(self.results)}", self)
        want = t.value_shape if tr is None else tuple(t.value_shape[p] for p in tr)
        for r in self.results:
            if r.type.elem != t.elem:
                raise IRError(f"loads {t.elem}, not {r.type.elem}", self)
            if r.type.layout is not None and r.type.shape != want:  # (lane level: a lane's slots)
                raise IRError(f"result {r.type} does not hold the block {list(want)}", self)
        if self.attrs.get("transpose_bit_width") not in (None, 32, 64):
            raise IRError("transpose_bit_width must be 32 or 64", self)


class StoreNdOp(_NdAccess):
    """``xegpu.store_nd %value, %tdesc[offsets]``: store the block; out-of-bounds elements are skipped."""

    NAME = "xegpu.store_nd"
    HAS_SIDE_EFFECTS = True
    ATTRS = HINTS + (TILES,)
    TDESC_INDEX = 1

    def __init__(self, value: Value, tdesc: Value, offsets: Sequence[Value], hints=None, loc=None):
        super().__init__([value, tdesc, *offsets], [], dict(hints or {}), loc=loc)

    def verify(self):
        t = self._check_offsets()
        v = self.operands[0].type
        if elem_of(v) != t.elem or (getattr(v, "layout", None) is not None and shape_of(v) != t.value_shape):
            raise IRError(f"value {v} does not match the descriptor {t}", self)


class PrefetchNdOp(_NdAccess):
    """``xegpu.prefetch_nd %tdesc[offsets]``: prefetch the block into cache."""

    NAME = "xegpu.prefetch_nd"
    HAS_SIDE_EFFECTS = True
    ATTRS = HINTS + (Attr("layout", LAYOUT, ("layout",), "the prefetch's own cooperative layout"),
                     Attr("block", tuple, ("sg", "inst"), "its piece's shape once a level has cut it"), TILES)

    def __init__(self, tdesc: Value, offsets: Sequence[Value], hints=None, loc=None):
        super().__init__([tdesc, *offsets], [], dict(hints or {}), loc=loc)

    def verify(self):
        self._check_offsets()


class UpdateNdOffsetOp(Op):
    """``xegpu.update_nd_offset %tdesc, deltas``: the same descriptor moved by ``deltas`` elements."""

    NAME = "xegpu.update_nd_offset"

    def __init__(self, tdesc: Value, deltas: Sequence[Value], loc=None):
        super().__init__([tdesc, *deltas], [tdesc.type], loc=loc)

    def verify(self):
        t = _is_tdesc(self.operands[0], False)
        if len(self.operands) - 1 != len(t.shape):
            raise IRError(f"needs {len(t.shape)} deltas", self)


class DpasOp(Op):
    """``xegpu.dpas %a, %b, %acc``: ``acc + a @ b`` on the matrix engine (B in VNNI form)."""

    NAME = "xegpu.dpas"
    ATTRS = (Attr("precision", str, doc="tf32 for f32 operands"), TILES,
             Attr("flavour", str, ("emitter-decisions",),
                  "builtin: IGC's own DPAS where the emitter would write inline vISA (a loop that computes "
                  "on other tiles between its products)"),
             Attr("fused_dot", tuple, ("emitter-decisions",),
                  "[group, row, column, k]: one of the DPAS ops a micro-kernel computes together (lowering/fused_dots.py)"))

    def __init__(self, a: Value, b: Value, acc: Optional[Value], type: VectorType, loc=None):
        super().__init__([a, b] + ([acc] if acc is not None else []), [type], loc=loc)

    @property
    def acc(self) -> Optional[Value]:
        return self.operands[2] if len(self.operands) == 3 else None

    def verify(self):
        a, b = self.operands[0].type, self.operands[1].type
        r = self.result.type
        if a.elem != b.elem and not (a.elem.is_int and b.elem.is_int and a.elem.bits == b.elem.bits == 8):
            raise IRError(f"A and B must share an element type, got {a.elem} and {b.elem}", self)
        if self.acc is not None and self.acc.type != r:
            raise IRError(f"accumulator {self.acc.type} must have the result type {r}", self)
        if a.layout is None and a.rank < 2:
            return  # lane level: each operand is a lane's slots
        if not (a.rank == b.rank == r.rank and a.rank in (2, 3)):
            raise IRError("dpas multiplies 2-D tiles, or 3-D tiles with a leading batch dimension "
                          "(multi_mma: [B, M, K] x [B, K, N] -> [B, M, N])", self)
        (*ba, m, k), (*bb, k2, n) = a.shape, b.shape
        if k != k2 or ba != bb or tuple(r.shape) != tuple(ba) + (m, n):
            raise IRError(f"shapes {a.shape} x {b.shape} -> {r.shape} do not multiply", self)


# ---- shared local memory --------------------------------------------------------------------

class CreateMemDescOp(Op):
    """``xegpu.create_mem_desc``: a matrix in shared local memory, allocated for the workgroup."""

    NAME = "xegpu.create_mem_desc"

    def __init__(self, type: MemDescType, loc=None):
        super().__init__([], [type], loc=loc)

    def verify(self):
        t = self.result.type
        if t.block is not None:
            if len(t.block) != len(t.shape) or any(s % b for s, b in zip(t.shape, t.block)):
                raise IRError(f"@block {list(t.block)} must tile the matrix {list(t.shape)} (RFC)", self)
        if t.strides is not None and len(t.strides) != len(t.shape):
            raise IRError("@strides needs one stride per dimension", self)


class MemDescViewOp(Op):
    """``xegpu.mem_desc_view %m``: the same shared local memory as a row-major matrix of another
    shape with as many elements (a general ``reshape`` stores a tile and loads it back in its new
    shape through two views of one allocation)."""

    NAME = "xegpu.mem_desc_view"

    def __init__(self, mem: Value, type: MemDescType, loc=None):
        super().__init__([mem], [type], loc=loc)

    def verify(self):
        s, t = self.operands[0].type, self.result.type
        if not isinstance(s, MemDescType) or not isinstance(t, MemDescType) or s.elem != t.elem or \
                prod(s.shape) != prod(t.shape) or s.block is not None or t.block is not None or \
                s.strides is not None or t.strides is not None:
            raise IRError(f"mem_desc_view views a row-major matrix as another with the same element type and count, "
                          f"got {s} -> {t}", self)


class LoadMatrixOp(Op):
    """``xegpu.load_matrix %mem[offsets]``: read a tile from an SLM matrix (``subgroup_block_io``: as
    one sub-group block read). With ``block_grid = [1, a]`` (after blocking) one load gives ``a``
    tiles side by side along the last axis, the first at ``offsets``."""

    NAME = "xegpu.load_matrix"
    ATTRS = BLOCKS + (Attr("subgroup_block_io", bool), USER_LAYOUT, TILES)

    def __init__(self, mem: Value, offsets: Sequence[Value], type: VectorType, subgroup_block_io=False,
                 loc=None):
        super().__init__([mem, *offsets], [type], {"subgroup_block_io": subgroup_block_io}, loc=loc)

    def verify(self):
        m = self.operands[0].type
        if not isinstance(m, MemDescType):
            raise IRError(f"expects a mem_desc, got {m}", self)
        if len(self.operands) - 1 != len(m.shape):
            raise IRError(f"needs {len(m.shape)} offsets", self)
        gv, ga = self.attrs.get("block_grid") or (1, 1)
        if gv != 1 or len(self.results) != ga:
            raise IRError(f"block_grid = {[gv, ga]} needs {ga} results side by side, got {len(self.results)}", self)
        if any(elem_of(r.type) != m.elem for r in self.results):
            raise IRError("element types differ", self)


class StoreMatrixOp(Op):
    """``xegpu.store_matrix %value, %mem[offsets]``: write a tile into an SLM matrix."""

    NAME = "xegpu.store_matrix"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("subgroup_block_io", bool), TILES)

    def __init__(self, value: Value, mem: Value, offsets: Sequence[Value], subgroup_block_io=False,
                 loc=None):
        super().__init__([value, mem, *offsets], [], {"subgroup_block_io": subgroup_block_io}, loc=loc)

    def verify(self):
        m = self.operands[1].type
        if not isinstance(m, MemDescType):
            raise IRError(f"expects a mem_desc, got {m}", self)
        if len(self.operands) - 2 != len(m.shape):
            raise IRError(f"needs {len(m.shape)} offsets", self)
        if elem_of(self.operands[0].type) != m.elem:
            raise IRError("element types differ", self)


# ---- synchronization ------------------------------------------------------------------------

class AllocNBarrierOp(Op):
    """``xegpu.alloc_nbarrier``: reserve ``count`` named barriers for the workgroup."""

    NAME = "xegpu.alloc_nbarrier"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("count", int),)

    def __init__(self, count: int, loc=None):
        super().__init__([], [], {"count": count}, loc=loc)


class InitNBarrierOp(Op):
    """``xegpu.init_nbarrier %id, %participants``: bind named barrier ``id`` shared by that many subgroups."""

    NAME = "xegpu.init_nbarrier"
    HAS_SIDE_EFFECTS = True

    def __init__(self, nbarrier_id: Value, participants: Value, loc=None):
        super().__init__([nbarrier_id, participants], [NBarrierType()], loc=loc)


class NBarrierArriveOp(Op):
    NAME = "xegpu.nbarrier_arrive"
    HAS_SIDE_EFFECTS = True

    def __init__(self, nbarrier: Value, loc=None):
        super().__init__([nbarrier], [], loc=loc)


class NBarrierWaitOp(Op):
    NAME = "xegpu.nbarrier_wait"
    HAS_SIDE_EFFECTS = True

    def __init__(self, nbarrier: Value, loc=None):
        super().__init__([nbarrier], [], loc=loc)


class FenceOp(Op):
    """``xegpu.fence {scope, memory_kind}``: order memory accesses (scope workgroup|gpu, global|shared)."""

    NAME = "xegpu.fence"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("scope", str), Attr("memory_kind", str))

    def __init__(self, scope: str, memory_kind: str, loc=None):
        super().__init__([], [], {"scope": scope, "memory_kind": memory_kind}, loc=loc)

    def verify(self):
        if self.attrs["scope"] not in ("workgroup", "gpu"):
            raise IRError(f"fence scope {self.attrs['scope']!r} is not 'workgroup' or 'gpu' (RFC)", self)
        if self.attrs["memory_kind"] not in ("global", "shared"):
            raise IRError(f"fence memory_kind {self.attrs['memory_kind']!r} is not 'global' or 'shared' (RFC)", self)


class CompileHintOp(Op):
    """``xegpu.compile_hint {scheduling_barrier}``: keep the lower-level compiler from moving code across."""

    NAME = "xegpu.compile_hint"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("hint", str),)

    def __init__(self, hint: str = "scheduling_barrier", loc=None):
        super().__init__([], [], {"hint": hint}, loc=loc)


class PtrCastOp(Op):
    """``xegpu.ptrcast %p``: the same address as a pointer to another element type (Triton's
    ``p.to(tl.pointer_type(...))``)."""

    NAME = "xegpu.ptrcast"

    def __init__(self, ptr: Value, type: PointerType, loc=None):
        super().__init__([ptr], [type], loc=loc)

    def verify(self):
        p, r = self.operands[0].type, self.result.type
        if not (isinstance(p, PointerType) and isinstance(r, PointerType)) or p.space != r.space:
            raise IRError(f"ptrcast takes a pointer to a pointer of the same space, got {p} -> {r}", self)


class AddPtrOp(Op):
    """``xegpu.addptr %p, %n``: the scalar pointer ``n`` elements past ``p`` (Triton's ``tt.addptr``)."""

    NAME = "xegpu.addptr"

    def __init__(self, ptr: Value, offset: Value, loc=None):
        super().__init__([ptr, offset], [ptr.type], loc=loc)

    def verify(self):
        p, o = self.operands
        if not isinstance(p.type, PointerType) or not (isinstance(o.type, DType) and o.type.is_int):
            raise IRError(f"addptr needs a scalar pointer and an integer, got {p.type} and {o.type}", self)
