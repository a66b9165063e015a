"""Pass ``coalesce``: which slots of a pointer tile's loads and stores one sub-group block message moves.

Triton's users write memory accesses as pointer tiles (``x_ptr + offs`` with a mask). Where the
lane-level axis analysis (``lane_affine``) proves that slots ``s .. s+k-1`` hold, in lane ``l``,
the elements ``base + j * sg + l`` of a uniform base pointer, one sub-group block read or write of
``k`` rows moves them instead of ``k`` per-lane gathers or scatters. The pass marks such a
``load_gather`` / ``store_scatter`` with ``block_runs = [[first slot, count], ...]``; codegen then
takes the block message when every lane of the run is unmasked and its address is 16-byte aligned
(one uniform test per run, at run time), else the slots one by one.

Example: the add kernel of Triton's tutorial 01 (BLOCK 1024, 4 subgroups) has 16 slots per lane:
``xegpu.load_gather ... {block_runs = [[0, 8], [8, 8]]}``: two block reads of 8 rows.
"""
from __future__ import annotations

from .. import ir
from .lane_affine import LaneAffine, add_forms, runs
from .rewrite import copy_func

BLOCK_BITS = (8, 16, 32)   # the element sizes sub-group block IO moves (codegen/block_io.py)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp)) for op in func.walk()):
        return func   # (no pointer tile: no copy)
    out = copy_func(func, ctx)
    info = LaneAffine(out, ctx.target.sg_size)
    for op in out.walk():
        if isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp)):
            found = block_runs(op, info, ctx.target.sg_size)
            if found:
                op.attrs["block_runs"] = found
    return out


def block_runs(op, info: LaneAffine, sg: int) -> tuple:
    """The runs of ``op``'s slots one block message each can move (empty: none)."""
    td = op.operands[0] if isinstance(op, ir.LoadGatherOp) else op.operands[1]
    t = td.type
    if t.chunk_size != 1 or t.elem.bits not in BLOCK_BITS or t.elem.is_bool:
        return ()
    deltas = []
    while isinstance(td.op, ir.UpdateOffsetOp):
        deltas.append(td.op.operands[1])
        td = td.op.operands[0]
    if not isinstance(td.op, ir.CreateTDescOp) or not info.uniform(td.op.operands[0]):
        return ()
    form = info.form(td.op.operands[1])
    for d in deltas:
        f = info.form(d)
        if form is None or f is None or len(f) != len(form):
            return ()
        form = add_forms(form, f)
    return tuple(runs(form, sg))
