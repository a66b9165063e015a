"""Tile accesses the CPU device's vectorizer turns into plain vector loads and stores.

The Intel OpenCL CPU compiler widens each work-item's scalar code over the sub-group's lanes: a
lane's ``float`` becomes one element of a zmm register. When it can prove an address is
``uniform + lane id`` it emits one vector load or store, and for a uniform address a scalar load
and a broadcast; anything else is a gather or scatter of 16 separate elements, ~10x slower in a
GEMM. Its analysis gives up easily. Measured on its x86 (``CL_CONFIG_DUMP_ASM=True``, runtime
2026.2), each of these made every later address a gather or scatter:

- a sign-extended i32 expression anywhere in the address (``sext(stride * batch)``, i.e. every
  kernel's ``ptr + i * stride``); ``sext`` of a plain argument multiplied in i64 is fine;
- ``get_sub_group_id()`` or ``smin`` / ``smax`` (``xl.minimum``; LLVM also makes them from
  compare-and-select) in the address: both count as per-lane values;
- a branch on such a value: both sides then run, masked.

``sub_group_broadcast(x, 0)`` is the cure: the vectorizer knows its result is uniform and does not
look inside. So a tile access here broadcasts the tile's first address (and the in-bounds test)
once, outside the loop that uses it, and builds every element's address from it in i64 from
plain values, the lane id zero-extended and added last. The whole tile must lie inside the
tensor (``inside``, one uniform test); the bounds-checked element-wise code handles the edges.
"""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from .core import CodeGen, NdDesc, mem_type
from .ocl import I1, I32, I64


def uniform(cg: CodeGen, v):
    """``v`` (i1, i32, i64 or a pointer) as a value the CPU vectorizer knows is the same in every
    lane: ``sub_group_broadcast(v, 0)``. Only for values that are uniform already."""
    b = cg.b
    if isinstance(v.type, ll.PointerType):
        i = uniform(cg, b.ptrtoint(v, I64))
        return b.inttoptr(i, v.type)
    if v.type == I1:
        return b.trunc(uniform(cg, b.zext(v, I32)), I1)
    name = {32: "_Z19sub_group_broadcastjj", 64: "_Z19sub_group_broadcastmj"}[v.type.width]
    return cg.call(name, v.type, [v, ll.Constant(I32, 0)], convergent=True)


def lane_index(cg: CodeGen):
    """The lane id as the i64 the vectorizer recognises as consecutive (built once)."""
    return cg.cached("lane_i64", lambda: cg.b.zext(cg.call("_Z22get_sub_group_local_idv", I32, []), I64))


class TileAccess:
    """Unchecked addressing of the 2-D tile at ``origin`` (memory coordinates, i32) of descriptor
    ``d``; ``transposed`` when tile coordinates (i, j) are memory coordinates (j, i)."""

    def __init__(self, cg: CodeGen, d: NdDesc, origin: List, transposed: bool = False):
        self.cg, self.d, self.origin, self.tr = cg, d, origin, transposed
        self._base = None

    def inside(self, rows: int, cols: int):
        """i1, uniform: the tile's ``rows x cols`` elements all lie inside the tensor."""
        b, cg = self.cg.b, self.cg
        ext = (cols, rows) if self.tr else (rows, cols)
        ok = None
        for o, n, e in zip(self.origin, self.d.shape, ext):
            c = b.and_(b.icmp_signed(">=", o, cg.i32(0)), b.icmp_signed("<=", o, b.sub(n, cg.i32(e))))
            ok = c if ok is None else b.and_(ok, c)
        return ok

    def prepare(self) -> None:
        """Build the tile's (broadcast) first address here: call it where it dominates the uses."""
        cg, b = self.cg, self.cg.b
        off = None
        for o, s in zip(self.origin, self.d.strides):
            term = _times(cg, cg.to_i64(o), s)
            off = term if off is None else b.add(off, term)
        self._base = uniform(cg, cg.gep(self.d.base, mem_type(self.d.type.elem), off))

    def address(self, i, j, lane: bool = False):
        """Pointer to tile element (i, j) (ints, or uniform i32 values such as a loop counter), plus
        the lane id along the tile's columns when ``lane``."""
        cg, b = self.cg, self.cg.b
        if self._base is None:
            raise AssertionError("TileAccess.prepare() must come first")
        rel = (j, i) if self.tr else (i, j)
        off = None
        for r, s in zip(rel, self.d.strides):
            if isinstance(r, int):
                if r == 0:
                    continue
                r = ll.Constant(I64, r)
            else:
                r = cg.to_i64(r)
            term = _times(cg, r, s)
            off = term if off is None else b.add(off, term)
        et = mem_type(self.d.type.elem)
        p = self._base if off is None else cg.gep(self._base, et, off)
        if lane:
            p = cg.gep(p, et, _times(cg, lane_index(cg), self.d.strides[0 if self.tr else 1]))
        return p


def _times(cg: CodeGen, x64, stride):
    if isinstance(stride, ll.Constant) and stride.constant == 1:
        return x64
    return cg.b.mul(x64, cg.to_i64(stride))


def lane_columns(tile, sg: int) -> bool:
    """Whether lane ``l`` holds column ``l + n`` (n from ``lane_slot_offsets``) of a 2-D ``tile``:
    lanes along the columns, the slot offsets the same in every lane."""
    from ...ir.layout import lane_base
    lay = tile.layout
    if tile.rank != 2 or tuple(getattr(lay, "lane_layout", None) or ()) != (1, sg) or tile.shape[1] % sg:
        return False
    return all(tuple(lane_base(lay, tile.shape, lane)) == (0, lane) for lane in range(sg))
