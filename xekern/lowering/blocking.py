"""Pass ``blocking``: cut each subgroup tile into ``inst_data`` blocks, one instruction each.

A subgroup tile of shape ``S`` with ``inst_data = B`` becomes ``S / B`` blocks in row-major
order; ops are repeated per block, a ``dpas`` becomes one DPAS per (m, n) block chained over
the K blocks, and a reduction first combines the blocks along its axis. Tiles without
``inst_data`` stay whole. DPAS block shapes are checked against the target's table here, so a
shape the hardware cannot do is reported before codegen. Each block's load says where it lies in
its tile (``block_index``, ``block_count``): ``merge-block-messages`` then reads blocks together
where one message can.

Example: ``vector<32x64xf32, inst_data = [8, 16]>`` becomes 16 values ``vector<8x16xf32>``.
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..ir.layout import block_offsets
from ..ir.types import TensorDescType, VectorType
from .distribute import Split, Splitter
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

    def nd_tdesc_type(self, t: TensorDescType) -> TensorDescType:
        inst = t.layout.inst_data if t.layout is not None else None
        if inst is None:
            return t.with_layout(t.layout.drop_inst()) if t.layout is not None else t
        return t.with_shape(inst).with_layout(t.layout.drop_inst())

    def rule_load_nd(self, op: ir.LoadNdOp):
        return self._stamped(op, super().rule_load_nd(op))

    def rule_load_matrix(self, op: ir.LoadMatrixOp):
        return self._stamped(op, super().rule_load_matrix(op))

    def _stamped(self, op, out):
        """Each block's load says where the block lies in the tile (``block_index`` of
        ``block_count``), for ``merge-block-messages``, which may read several with one message."""
        t = op.result.type
        if isinstance(t, (VectorType, TensorDescType)) and t.layout is not None and t.layout.inst_data is not None:
            s = self._split_of(op.result, op)
            if s.count > 1:
                for idx, v in zip(s.indices(), out[0]):
                    v.op.attrs.update(block_index=tuple(idx), block_count=tuple(s.grid))
        return out

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
