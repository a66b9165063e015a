"""Pass ``slm-transpose``: a transposed DPAS A operand that no 2D block load can deliver is loaded
as stored and transposed cooperatively through shared local memory (seed 001).

A DPAS A fragment packs consecutive K elements of a row in each dword (two 16-bit, four int8).
Loaded transposed from a K x M tensor, those K elements sit in consecutive *memory rows*, but the
only transposed 2D block loads (32- and 64-bit, HARDWARE.md) give each lane one memory row: int8
would be loaded element by element (gathers), 16-bit words unzipped in registers. Instead the
workgroup loads the K x M tile as it is stored, with VNNI 2D block loads (each lane one column,
``32 / bits`` consecutive rows packed in a dword, the subgroups sharing the tile without
replication), and redistributes it into the DPAS layout through SLM::

    %a = xegpu.load_nd %td[%k, %m] {transpose = [1, 0]} : vector<MxK>        (A of a dpas)
becomes
    %t = xegpu.load_nd %td[%k, %m] {layout = <VNNI blocks>} : vector<KxM>
    %u = vector.transpose %t [1, 0] : vector<MxK>                             (free: lanes relabelled)
    %a = xegpu.convert_layout %u {slm_block = [8, 32]} : vector<MxK>

``wg-to-sg`` lowers the convert_layout to ``store_matrix``, barrier, ``load_matrix``, barrier
(in a loop ``slm_barriers`` drops, merges and unfences what it can).
``slm_block`` (the DPAS A block) stores the SLM matrix as contiguous fragment-sized blocks, so a
lane's VNNI dwords are one wide SLM store and each subgroup reads its A fragments back with
sub-group block reads (on pvc two fragments per transposed read: ``codegen/slm_read.py``). The
pass runs before layout propagation, which lays out everything else.

Targets without 2D block IO (dg2, cpu8) load the stored tile with per-lane vector loads instead
(``pair_rows_layout``: each lane two (int8: four) consecutive rows of a run of columns, so it packs
the VNNI dwords of its columns itself), and the SLM matrix holds VNNI rows (``slm_block = [1, 2]``,
``slm_strides = [1, M]``: row ``p`` holds the dwords of K rows ``2p, 2p+1`` of every column). A
DPAS A fragment's lane ``j`` holds K pair ``j`` of 8 consecutive rows: 8 consecutive dwords of VNNI
row ``j``, one 32-byte per-lane SLM load. A tile larger than the target's ``slm_bytes`` keeps its
element-wise transposed loads. An A operand loaded as it lies goes the same way on those targets
(``as_stored``): read there, its lane would gather one dword of each of 8 rows; the workgroup loads
it with per-lane loads (``pair_cols_layout``: each lane a row's VNNI dwords as they lie in memory,
one vector load, no packing) into the same SLM matrix (dg2's flagship nt GEMM: 305 -> 83
instructions for 16 dpas in its K loop). A B operand loaded as it lies too (``b_as_stored``): its
lane ``n`` holds VNNI pairs of two memory rows; loaded as the row pairs above, transposed, through
a row-major SLM matrix where lane ``n`` finds its K values side by side, and transposed back (dg2's
tn: 2,158 -> 149, tt, which then computes C = A B, 2,439 -> 116). Not for emitters whose DPAS read
operands loaded as they lie from memory themselves (the CPU device's, ``fused_dpas_loads``: a
launch with that off runs these routes on the CPU).
"""
from __future__ import annotations

from math import prod
from typing import Optional, Set

from .. import ir
from ..ir.core import Op
from ..ir.types import VectorType
from .layouts import pair_cols_layout, pair_rows_layout, vnni_rows_layout
from .rewrite import Rewriter, STRUCTURED_RULES


def needs_slm_transpose(target, elem, fma_dot=()) -> bool:
    """Whether a transposed A operand of ``elem`` takes the SLM route on ``target``: DPAS packs
    2 (16-bit) or 4 (8-bit) consecutive K elements of a row in each dword, while a 32-bit
    transposed block load puts one memory row in each lane. int8 would then be gathered element
    by element, and 16-bit words unzipped with two movs per register (the flagship's pvc bf16 tn
    K loop was 25.2% dpas that way, 60.4% through SLM: ``gemm.py --isa``). The untransposed tile
    must load with VNNI 2D block loads. ``fma_dot``: dtypes the emitter computes as FMAs instead."""
    return slm_route(target, elem, fma_dot) is not None


def slm_route(target, elem, fma_dot=()) -> Optional[str]:
    """How a transposed A operand of ``elem`` is loaded on its way to SLM (``needs_slm_transpose``):
    ``"block2d"`` (VNNI 2D block loads), ``"rows"`` (per-lane vector loads of row pairs, targets
    without 2D block IO), or None (no SLM route)."""
    if target.dpas_shape(elem) is None or elem.name in fma_dot or elem.bits >= 32:
        return None
    info = target.block2d_for(elem)
    if info is not None:
        return "block2d" if info.vnni else None
    return None if target.has_block2d else "rows"


class SlmTranspose(Rewriter):
    NAME = "slm-transpose"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.LoadNdOp] = "rule_load_nd"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.a_loads: Set[Op] = {op.operands[0].op for op in func.walk() if isinstance(op, ir.DpasOp)}
        self.b_loads: Set[Op] = {op.operands[1].op for op in func.walk() if isinstance(op, ir.DpasOp)}
        return super().run(func)

    def rule_load_nd(self, op: ir.LoadNdOp):
        t = op.result.type
        if op in self.b_loads and op not in self.a_loads and op.attrs.get("transpose") is None and \
                op.attrs.get("layout") is None and isinstance(t, VectorType) and t.rank == 2:
            return self.b_as_stored(op, t)
        if op not in self.a_loads or op.attrs.get("layout") is not None or \
                not isinstance(t, VectorType) or t.rank != 2 or \
                not needs_slm_transpose(self.target, t.elem, self.ctx.emitter.fma_dot):
            return self.piecewise(op)
        dpas = self.target.dpas_shape(t.elem)
        M, K = t.shape
        if op.attrs.get("transpose") is None:
            return self.as_stored(op, t, dpas)
        stored = (K, M)
        rows = slm_route(self.target, t.elem, self.ctx.emitter.fma_dot) == "rows"
        layout = (pair_rows_layout if rows else vnni_rows_layout)(stored, t.elem, self.target, self.ctx.num_subgroups)
        if layout is None or M % dpas.m or K % dpas.k or prod(t.shape) * t.elem.itemsize > self.target.slm_bytes:
            return self.piecewise(op)
        attrs = {k: v for k, v in op.attrs.items() if k not in ("transpose", "transpose_bit_width")}
        attrs.update(transpose=None, layout=layout)
        raw = self.b.insert(op.clone_with([self.get(v) for v in op.operands], [VectorType(stored, t.elem)], attrs))
        u = self.b(ir.TransposeOp, raw.result, (1, 0), VectorType(t.shape, t.elem))
        cv = self.b.create(ir.ConvertLayoutOp, u, VectorType(t.shape, t.elem))
        if rows:
            cv.attrs["slm_block"], cv.attrs["slm_strides"] = (1, 32 // t.elem.bits), (1, M)
        else:
            cv.attrs["slm_block"] = (dpas.m, dpas.k)
        return [[cv.result]]

    def as_stored(self, op: ir.LoadNdOp, t: VectorType, dpas):
        """An A operand loaded as it lies, on a target without 2D block IO: its lane ``j`` holds K
        pair ``j`` of 8 rows, one dword of each (a gather per dword). Loaded by the workgroup with
        per-lane vector loads of rows instead (``pair_cols_layout``) and converted through the same SLM
        matrix of VNNI rows, each lane reads its 8 dwords at once. (With 2D block IO, or a layout
        the user gave, it stays.)"""
        M, K = t.shape
        layout = pair_cols_layout(t.shape, t.elem, self.target, self.ctx.num_subgroups)
        if layout is None or not self.stages_as_stored(t, M % dpas.m or K % dpas.k):
            return self.piecewise(op)
        raw = self.b.insert(op.clone_with([self.get(v) for v in op.operands], [t], dict(op.attrs, layout=layout)))
        cv = self.b.create(ir.ConvertLayoutOp, raw.result, t)
        cv.attrs["slm_block"], cv.attrs["slm_strides"] = (1, 32 // t.elem.bits), (1, M)
        return [[cv.result]]

    def b_as_stored(self, op: ir.LoadNdOp, t: VectorType):
        """A B operand loaded as it lies (K x N), on a target without 2D block IO: its lane ``n`` holds
        the VNNI pairs of column ``n``, each from two memory rows (gathers). Loaded by the workgroup
        with per-lane vectors of two (int8: four) rows (``pair_rows_layout``), transposed (free),
        converted through a row-major SLM matrix of N rows of K, where lane ``n`` of a B block finds
        its 16 (int8: 32) K values side by side (one 32-byte load), and transposed back."""
        K, N = t.shape
        dpas = self.target.dpas_shape(t.elem)
        layout = pair_rows_layout(t.shape, t.elem, self.target, self.ctx.num_subgroups)
        if layout is None or not self.stages_as_stored(t, dpas is None or K % dpas.k or N % dpas.n):
            return self.piecewise(op)
        raw = self.b.insert(op.clone_with([self.get(v) for v in op.operands], [t], dict(op.attrs, layout=layout)))
        flipped = VectorType((N, K), t.elem)
        u = self.b(ir.TransposeOp, raw.result, (1, 0), flipped)
        cv = self.b(ir.ConvertLayoutOp, u, flipped)
        return [[self.b(ir.TransposeOp, cv, (1, 0), t)]]

    def stages_as_stored(self, t: VectorType, ragged) -> bool:
        """Whether an operand loaded as it lies goes through SLM: the target's route is "rows", the
        emitter's DPAS do not read such loads themselves, the workgroup has subgroups to share the
        tile, it is made of whole DPAS blocks (not ``ragged``) and fits SLM."""
        return (not self.ctx.emitter.fused_dpas_loads and not ragged and self.ctx.num_subgroups > 1
                and slm_route(self.target, t.elem, self.ctx.emitter.fma_dot) == "rows"
                and prod(t.shape) * t.elem.itemsize <= self.target.slm_bytes)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    return SlmTranspose(ctx).run(func)
