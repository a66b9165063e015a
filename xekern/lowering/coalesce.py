"""Pass ``coalesce``: which slots of a pointer tile's loads and stores one sub-group block message moves.

Triton's users write memory accesses as pointer tiles (``x_ptr + offs`` with a mask). Where the
lane-level axis analysis (``lane_affine``) proves that slots ``s .. s+k-1`` hold, in lane ``l``,
the elements ``base + j * sg + l`` of a uniform base pointer, one sub-group block read or write of
``k`` rows moves them instead of ``k`` per-lane gathers or scatters. The pass marks such a
``load_gather`` / ``store_scatter`` with ``block_runs = [[first slot, count], ...]``; codegen then
takes the block message when every lane of the run is unmasked and its address is 16-byte aligned
(one uniform test per run, at run time), else the slots one by one.

The alignment needs no test when it is proved: the base pointer is a kernel argument the launch
found 16-byte aligned (pointers are specialized on it, as Triton does: the function's
``multiple_of``), plus uniform offsets that are multiples of 16 bytes, and each run's first element
lies a multiple of 16 bytes from there (its uniform part, from ``arange``, the program and subgroup
ids, loop counters, constants and integer arguments known to be multiples of 16). The op is then marked
``runs_aligned = true``.

Example: the add kernel of Triton's tutorial 01 (BLOCK 1024, 4 subgroups) has 16 slots per lane:
``xegpu.load_gather ... {block_runs = [[0, 8], [8, 8]]}``: two block reads of 8 rows.
"""
from __future__ import annotations

from math import gcd

from .. import ir
from ..ir.terms import argument_multiples, known_multiple, pointer_base
from .lane_affine import LaneAffine, add_forms, runs
from .poly import pmultiple
from .rewrite import copy_func

BLOCK_BITS = (8, 16, 32)   # the element sizes sub-group block IO moves (codegen/block_io.py)
ALIGN_BYTES = 16           # what a block message's address must be a multiple of (codegen/block_io.py)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp)) for op in func.walk()):
        return func   # (no pointer tile: no copy)
    out = copy_func(func, ctx)
    info = LaneAffine(out, ctx.target.sg_size)
    aligned = Alignment(out, info)
    for op in out.walk():
        if isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp)):
            found, base, form = block_runs(op, info, ctx.target.sg_size, ctx.emitter.lane_linear_runs)
            if found:
                op.attrs["block_runs"] = found
                if aligned(base, form, found, op):
                    op.attrs["runs_aligned"] = True
    return out


def block_runs(op, info: LaneAffine, sg: int, one_row: bool = False) -> tuple:
    """(the runs of ``op``'s slots one block message each can move (empty: none), the uniform base
    pointer, the offsets' form)."""
    td = op.operands[0] if isinstance(op, ir.LoadGatherOp) else op.operands[1]
    t = td.type
    if t.chunk_size != 1 or t.elem.bits not in BLOCK_BITS or t.elem.is_bool:
        return (), None, None
    deltas = []
    while isinstance(td.op, ir.UpdateOffsetOp):
        deltas.append(td.op.operands[1])
        td = td.op.operands[0]
    if not isinstance(td.op, ir.CreateTDescOp) or not info.uniform(td.op.operands[0]):
        return (), None, None
    form = info.form(td.op.operands[1])
    for d in deltas:
        f = info.form(d)
        if form is None or f is None or len(f) != len(form):
            return (), None, None
        form = add_forms(form, f)
    return tuple(runs(form, sg, (8, 4, 2, 1) if one_row else (8, 4, 2))), td.op.operands[0], form


class Alignment:
    """Whether every run of an access starts ``ALIGN_BYTES``-aligned (the module docstring)."""

    def __init__(self, func: ir.FuncOp, info: LaneAffine):
        self.info = info
        self.args = {id(a): a.hint for a in func.args}
        self.multiples = argument_multiples(func)
        self.by_name = {a.hint: self.multiples.get(id(a), 1) for a in func.args}
        # a counted loop's induction variable: a multiple of what its start and step both are
        self.ivs = {id(op.iv): op for op in func.walk() if isinstance(op, ir.ForOp)}

    def atom(self, key: int) -> int:
        loop = self.ivs.get(key)
        if loop is not None:
            lb, _, step = loop.operands[:3]
            return gcd(known_multiple(lb, args=self.multiples), known_multiple(step, args=self.multiples))
        v = self.info.atoms.get(key)
        return known_multiple(v, args=self.multiples) if v is not None else 1

    def __call__(self, base, form, found, op) -> bool:
        param, offset = pointer_base(base, self.args, self.multiples)
        if param is None or self.by_name.get(param, 1) % ALIGN_BYTES or offset % ALIGN_BYTES:
            return False
        size = op.operands[0].type.elem.itemsize if isinstance(op, ir.LoadGatherOp) else \
            op.operands[1].type.elem.itemsize
        return all(pmultiple(form[first][0], self.atom) * size % ALIGN_BYTES == 0 for first, _ in found)
