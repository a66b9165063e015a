"""Pass ``blocking``: cut each subgroup tile into ``inst_data`` blocks, one instruction each.

A subgroup tile of shape ``S`` with ``inst_data = B`` becomes ``S / B`` blocks in row-major
order; ops are repeated per block, a ``dpas`` becomes one DPAS per (m, n) block chained over
the K blocks, and a reduction first combines the blocks along its axis. Tiles without
``inst_data`` stay whole. Block shapes are checked against the target's DPAS and 2D-block
tables here, so a shape the hardware cannot do is reported before codegen.

Example: ``vector<32x64xf32, inst_data = [8, 16]>`` becomes 16 values ``vector<8x16xf32>``.
"""
from __future__ import annotations

from math import gcd, prod
from typing import Optional

from .. import ir
from ..ir.layout import block_offsets
from ..ir.terms import known_multiple
from ..ir.types import TensorDescType, VectorType
from .codegen import slm_read
from .codegen.memory import origin_multiple
from .codegen.visa_dpas import PRECISION as VISA_PRECISION
from .distribute import Split, Splitter
from .emitters import named_read_bits, slm_read_bytes
from .layouts import rows_per_register
from .rewrite import PassError


class Blocking(Splitter):
    NAME = "blocking"
    LEVEL = "inst"

    def split(self, t) -> Optional[Split]:
        if not isinstance(t, (VectorType, TensorDescType)) or t.layout is None:
            return None
        shape = tuple(t.shape)
        inst = t.layout.inst_data
        if inst is None:
            return Split(t, (1,) * len(shape), [(0,) * len(shape)], None)
        grid = tuple(s // b for s, b in zip(shape, inst))
        piece = t.with_shape(inst).with_layout(t.layout.drop_inst())
        return Split(piece, grid, block_offsets(shape, inst), None)

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        # loads whose every result is a DPAS A or B operand and nothing else, of a type inline-vISA
        # DPAS takes: it names them inside a named register, so their messages may exceed an LLVM
        # vector (codegen's ``_load_named``); any other user would want the pieces as vectors
        uses = ir.users(func)
        self.dpas_only = {o for o in func.walk() if isinstance(o, (ir.LoadNdOp, ir.LoadMatrixOp)) and o.results
                          and all(uses.get(r) and all(isinstance(u, ir.DpasOp) and i < 2 and
                                                      r.type.elem.name in VISA_PRECISION for u, i in uses[r])
                                  for r in o.results)}
        return super().run(func)

    def nd_tdesc_type(self, t: TensorDescType) -> TensorDescType:
        inst = t.layout.inst_data if t.layout is not None else None
        if inst is None:
            return t.with_layout(t.layout.drop_inst()) if t.layout is not None else t
        return t.with_shape(inst).with_layout(t.layout.drop_inst())

    def rule_load_nd(self, op: ir.LoadNdOp):
        """Per block, or (on targets with 2D block IO) blocks stacked and side by side in one message:
        ``block_grid = (rows, cols)`` blocks per load, results in payload order (column of blocks
        after column of blocks, rows within), at most 512 bits per lane (16 dwords: larger vectors
        are not valid SPIR-V) but for DPAS operands on targets that read into named registers."""
        s = self._split_of(op.result, op)
        t = op.result.type
        emitter = self.ctx.emitter
        info = self.target.block2d_for(t.elem) if emitter.merge_block2d else None
        if info is None or op.attrs.get("transpose") or len(s.grid) != 2 or t.layout is None:
            return super().rule_load_nd(op)
        narrow = emitter.narrow_block_reads and rows_per_register(t.elem, t.layout, s.piece_type.shape[-1],
                                                                  self.target.sg_size)  # (tf32's A)
        if t.layout.lane_layout != (1, self.target.sg_size) and not narrow:
            return super().rule_load_nd(op)
        h, w = s.piece_type.shape
        gr, gc = s.grid
        lanes = self.target.sg_size
        bits = t.elem.bits

        # at most 16 dwords per lane (LLVM's SPIR-V backend and spirv-val cap vectors at 16), or what
        # the emitter's named-register reads take for DPAS operands of workgroup-level kernels (the
        # visa emitter's, which inline-vISA DPAS names in place)
        cap = 16 * 32
        if op in self.dpas_only and self.ctx.level == "wg":
            cap = max(cap, named_read_bits(emitter, self.target))

        def fits(v, a):
            return (v * h <= info.max_height and a <= info.max_array and a * w <= info.max_width_x_array
                    and v * h * a * w * bits <= cap * lanes and gr % v == 0 and gc % a == 0)
        v, a = max(((v, a) for v in (1, 2, 4, 8) for a in (1, 2, 4) if fits(v, a)), key=lambda x: (x[0] * x[1], x[1]),
                   default=(1, 1))
        if v * a == 1:
            return super().rule_load_nd(op)
        td = self.get(op.tdesc)
        out = [None] * s.count
        for bi in range(0, gr, v):
            for bj in range(0, gc, a):
                idx = [(bi + i, bj + j) for j in range(a) for i in range(v)]  # payload order
                first = s.index(idx[0])
                attrs = dict(op.attrs, block_grid=(v, a))
                new = self.b.insert(op.clone_with([td] + self._nd_offsets(op, s, first, False),
                                                  [s.piece_type] * len(idx), attrs))
                for (i, j), r in zip(idx, new.results):
                    out[s.index((i, j))] = r
        return [out]

    def rule_load_matrix(self, op: ir.LoadMatrixOp):
        """DPAS operands read from SLM by emitters with ``slm_block_reads`` (the visa emitter,
        workgroup-level kernels): pieces side by side along the last axis in one multi-result load_matrix,
        up to a message's worth, where they lie one after another in the matrix
        (``slm_read.contiguous``): codegen reads them with one transposed SLM message. Else one load
        per piece."""
        t = op.result.type
        limit = slm_read_bytes(self.ctx.emitter, self.target)
        if op not in self.dpas_only or not limit or self.ctx.level != "wg" or \
                not isinstance(t, VectorType) or t.layout is None or t.layout.inst_data is None:
            return super().rule_load_matrix(op)
        s = self._split_of(op.result, op)
        m = op.operands[0].type
        piece = prod(s.piece_type.shape) * t.elem.itemsize
        base = [known_multiple(v) for v in op.operands[1:]]
        lead = len(base) - t.rank

        def fits(a):
            if a * piece > limit or s.grid[-1] % a:
                return False
            return all(slm_read.contiguous(m, s.piece_type, a, origin_multiple(m, base[:lead] + [
                gcd(k, o) for k, o in zip(base[lead:], s.origins[i])]), self.target.sg_size)
                for i, idx in enumerate(s.indices()) if idx[-1] % a == 0)
        a = max((a for a in (1, 2, 4, 8) if fits(a)), default=1)
        if a == 1:
            return super().rule_load_matrix(op)
        mem = self.get(op.operands[0])
        out = [None] * s.count
        for idx in s.indices():
            if idx[-1] % a:
                continue
            first = s.index(idx)
            offs = self._matrix_offsets(op.operands[1:], s, first, t.rank)
            new = self.b.insert(op.clone_with([mem] + offs, [s.piece_type] * a, dict(op.attrs, block_grid=(1, a))))
            for j, r in enumerate(new.results):
                out[first + j] = r
        return [out]

    def rule_dpas(self, op: ir.DpasOp):
        a = op.operands[0].type
        if a.elem.name in self.ctx.emitter.fma_dot:  # FMA dots are not cut into instruction blocks
            return super().rule_dpas(op)
        shape = self.target.dpas_shape(a.elem)
        ia, ib = a.layout.inst_data, op.operands[1].type.layout.inst_data
        if shape is None or ia is None or ib is None or tuple(ia) != (shape.m, shape.k) or \
                tuple(ib) != (shape.k, shape.n):
            raise PassError(f"blocking: dpas blocks A {ia} x B {ib} do not match {self.target.name}'s DPAS "
                            f"shape for {a.elem.user_name}", op)
        return super().rule_dpas(op)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    return Blocking(ctx).run(func)
