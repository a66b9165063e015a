"""Memory helpers shared by the rule tables: element loads and stores, zeros, SLM buffers, and
where a lane's slots are, in a tile or in an SLM matrix (@block / @strides layouts)."""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ...ir.layout import lane_slot_offsets, lane_splits
from ...ir.types import DType, MemDescType, VectorType
from ..rewrite import PassError
from .core import LOCAL, CodeGen, ll_type, mem_type
from .ocl import I1, I8, I32, I64

def load_elem(cg: CodeGen, ptr, t: DType):
    v = cg.b.load(ptr, typ=mem_type(t), align=max(1, t.itemsize))
    return cg.b.trunc(v, I1) if t.is_bool else v


def load_from_dword(cg: CodeGen, ptr, t: DType):
    """An 8- or 16-bit element read out of the aligned dword that holds it (``Emitter.dword_gathers``):
    the dword's address is the element's rounded down to 4 bytes, the element its bits at the
    element's byte offset (little endian)."""
    space = ptr.type.addrspace
    addr = cg.b.ptrtoint(ptr, I64)
    word = cg.b.load(cg.b.inttoptr(cg.b.and_(addr, ll.Constant(I64, -4)), ll.PointerType(I32, space)),
                     typ=I32, align=4)
    shift = cg.b.shl(cg.b.trunc(cg.b.and_(addr, ll.Constant(I64, 3)), I32), ll.Constant(I32, 3))
    v = cg.b.trunc(cg.b.lshr(word, shift), ll.IntType(8 * t.itemsize))
    if t.is_bool:
        return cg.b.trunc(v, I1)
    lt = mem_type(t)
    return v if lt == v.type else cg.b.bitcast(v, lt)


def store_elem(cg: CodeGen, v, ptr, t: DType):
    if t.is_bool:
        v = cg.b.zext(v, I8)
    cg.b.store(v, ptr, align=max(1, t.itemsize))


def zero(t: DType):
    if t.is_floating and t.name != "bf16" and not t.is_fp8:
        return ll.Constant(ll_type(t), 0.0)
    return ll.Constant(ll_type(t), 0)


def slm_buffer(cg: CodeGen, nbytes: int, who: str, op=None):
    """A new buffer of ``nbytes`` in the workgroup's shared local memory (a module-level array in
    OpenCL's local address space, 64-byte aligned), counted in ``cg.slm_bytes``; a clear error when
    the target has no room (``who`` needs it: "the kernel", ...)."""
    align = 64
    cg.slm_bytes = (cg.slm_bytes + align - 1) // align * align + nbytes
    if cg.slm_bytes > cg.target.slm_bytes:
        raise PassError(f"{who} needs {cg.slm_bytes} bytes of shared local memory; "
                        f"{cg.target.name} has {cg.target.slm_bytes} per workgroup", op)
    t = ll.ArrayType(I8, nbytes)
    g = ll.GlobalVariable(cg.module, t, name=cg.module.get_unique_name("slm"), addrspace=LOCAL)
    g.linkage = "internal"
    g.align = align
    g.initializer = ll.Constant(t, ll.Undefined)  # SLM cannot be initialized
    g.type = ll.PointerType(addrspace=LOCAL)  # llvmlite defaults globals to typed pointers; LLVM 22 has none
    return g


def slm_offset(cg: CodeGen, m: MemDescType, coords: List):
    """Element offset (i32) of ``coords`` in an SLM matrix with its @block / @strides layout."""
    b = cg.b
    c = lambda v: ll.Constant(I32, v)
    if m.block is not None:
        blk, inner = None, None
        bsize = 1
        for k in m.block:
            bsize *= k
        for x, k, s in zip(coords, m.block, m.block_strides):
            q, r = b.udiv(x, c(k)), b.urem(x, c(k))
            q = b.mul(q, c(s)) if s != 1 else q
            blk = q if blk is None else b.add(blk, q)
            inner = r if inner is None else b.add(b.mul(inner, c(k)), r)
        return b.add(b.mul(blk, c(bsize)), inner)
    strides = m.strides if m.strides is not None else m.row_major_strides
    off = None
    for x, s in zip(coords, strides):
        term = b.mul(x, c(s)) if s != 1 else x
        off = term if off is None else b.add(off, term)
    return off


def lane_base(cg: CodeGen, layout, block) -> List:
    """Each kept dimension's first element owned by this lane: ``(coord * lane_data) % block``."""
    root = layout.root
    key = ("lane_base", root.lane_layout, root.dim_order, layout.kept_dims, tuple(block), root.lane_data)

    def make():
        lid = cg.lane_id()
        coords = [None] * root.rank
        stride = 1
        for d in root.dim_order:
            coords[d] = cg.b.urem(cg.b.udiv(lid, cg.i32(stride)), cg.i32(root.lane_layout[d]))
            stride *= root.lane_layout[d]
        out = []
        for i, s in enumerate(lane_splits(layout, block)):
            x = coords[layout.kept_dims[i]]
            out.append(cg.b.urem(cg.b.mul(x, cg.i32(s.data)), cg.i32(s.size)))
        return out
    return cg.lane_cached(key, make)


def slot_coords(cg: CodeGen, tile: VectorType, offsets: List) -> List[List]:
    """Per slot, the coordinates (i32) of the element it holds: offsets + lane base + slot offset."""
    base = lane_base(cg, tile.layout, tile.shape)
    starts = [cg.b.add(o, bv) for o, bv in zip(offsets, base)]
    return [[cg.b.add(s, cg.i32(x)) if x else s for s, x in zip(starts, so)]
            for so in lane_slot_offsets(tile.layout, tile.shape)]
