"""2D block messages as IGC's own intrinsics and inline vISA (the igc-builtins emitter, and the
other GPU emitters where they fall back to it): reads through ``llvm.genx.GenISA.LSC2DBlockRead``,
stores and prefetches (which have no builtin in IGC 12504) as inline vISA ``lsc_store_block2d`` /
``lsc_load_block2d ... %null`` with uniform operands.
"""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ... import ir
from .arith import sub_group_shuffle
from .block2d import prefetch_shape, store_shape, surface
from .core import CodeGen, NdDesc
from .nd_elementwise import nd_origin, slots_as_vector
from .ocl import I1

# LSC2DBlockRead's cache-control operand: 0 leaves the choice to the message's default (L1 and L3 cached)
CACHE_DEFAULT = 0


def genisa_read(cg: CodeGen, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, transpose: bool, vnni: bool,
                vt: ll.VectorType):
    """One 2D block read message (``block2d.load_block2d``'s ``read``): IGC's ``LSC2DBlockRead``
    intrinsic (HARDWARE.md) with its 13th operand, the cache controls (IGC 2.x reads it and fails
    with an internal error without it; IGC 12504, whose intrinsic has 12, ignores it: both build
    the same message)."""
    surf = surface(cg, d, [y, x] if len(d.shape) == 2 else [x], bits // 8)
    args = surf[:4] + [x, y, cg.i32(bits), cg.i32(w), cg.i32(h), cg.i32(n), ll.Constant(I1, int(transpose)),
                       ll.Constant(I1, int(vnni)), cg.i32(CACHE_DEFAULT)]
    return cg.ocl.intrinsic(cg.b, f"llvm.genx.GenISA.LSC2DBlockRead.v{vt.count}i{vt.element.width}", vt, args)


def inline_asm(cg: CodeGen, text: str, args: List, constraints: str) -> None:
    """Inline vISA. IGC 12504 silently drops an asm statement whose ``rw.u`` (uniform) operand it
    cannot prove uniform (e.g. a block origin computed with a runtime division): every uniform
    operand goes through a shuffle from lane 0, which IGC sees as uniform and which costs nothing
    when the value already was."""
    args = [lane0(cg, a) if c == "rw.u" and isinstance(a.type, ll.IntType) else a
            for a, c in zip(args, constraints.split(","))]
    cg.asm(ll.VoidType(), text, constraints, args)


def lane0(cg: CodeGen, a):
    """``a`` through a shuffle from lane 0, once per value and basic block (the blocks of a stored
    tile share their surface); a constant as it is."""
    if isinstance(a, ll.Constant):
        return a
    return cg.cached_here(("uniform", a), lambda: sub_group_shuffle(cg, "idx", a, cg.i32(0)))


def store_block2d(cg: CodeGen, op: ir.StoreNdOp, d: NdDesc) -> None:
    """One ``lsc_store_block2d`` per stored block (16 elements wide, 1..8 rows). The rows go in as
    one ``<rows x iN>`` operand: a vector is laid out element by element across the lanes (row
    after row, as the message reads them); a wide scalar would be laid out lane by lane."""
    t = d.type.elem
    h, w = store_shape(cg, op, d)
    vals = cg.slots(op.operands[0])
    surf = surface(cg, d, nd_origin(cg, d, op))
    data = slots_as_vector(cg, vals, 0, h, t.bits) if h > 1 else _as_int(cg, vals[0], t.bits)
    _store_rows(cg, d, surf, 0, w, h, data)


def _as_int(cg: CodeGen, v, bits: int):
    return v if isinstance(v.type, ll.IntType) else cg.b.bitcast(v, ll.IntType(bits))


def _store_rows(cg: CodeGen, d: NdDesc, surf: List, r0: int, w: int, n: int, data) -> None:
    """One ``lsc_store_block2d`` of ``n`` rows from row ``r0`` of the stored block."""
    y = cg.b.add(surf[5], cg.i32(r0))
    text = (f"lsc_store_block2d.ugm (M1, {cg.target.sg_size}) flat[$0,$1,$2,$3,$4,$5] "
            f"$6:d{d.type.elem.bits}.1x{w}x{n}nn")
    inline_asm(cg, text, surf[:5] + [y, data], "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u,rw")


def prefetch_block2d(cg: CodeGen, op: ir.PrefetchNdOp, d: NdDesc) -> None:
    """A 2D block prefetch (IGC has no builtin for it): inline vISA ``lsc_load_block2d`` into null."""
    t = d.type.elem
    hw = prefetch_shape(cg, op, d)
    if hw is None:
        return
    h, w = hw
    surf = surface(cg, d, nd_origin(cg, d, op))
    text = (f"lsc_load_block2d.ugm.ca.ca (M1, {cg.target.sg_size}) %null:d{t.bits}.1x{w}x{h}nn "
            f"flat[$0,$1,$2,$3,$4,$5]")
    inline_asm(cg, text, surf, "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u")
