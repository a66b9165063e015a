"""Pass ``merge-block-messages``: instruction blocks of one tile read by one memory message.

``blocking`` cuts a tile into instruction-sized blocks, one load each, stamped with the block's
place in the tile (``block_index``, ``block_count``). Where the emitter can read several blocks with
one message, this pass puts them into one multi-result load (as upstream XeGPU keeps its array-length
optimization apart from blocking):

* ``load_nd`` on targets with 2D block IO (``Emitter.merge_block2d``): blocks stacked and side by
  side, ``block_grid = (rows, cols)``, results in payload order (column of blocks after column of
  blocks, rows within), within the target's 2D block limits and at most 16 dwords per lane (LLVM's
  SPIR-V vectors stop there), or a named register's worth for DPAS operands of workgroup-level
  kernels (``emitters.named_read_bits``: inline-vISA DPAS names them in place);
* ``load_matrix`` (SLM) on emitters with ``slm_block_reads``: DPAS operands side by side along the
  last axis that lie one after another in the matrix (``messages.slm_contiguous``),
  ``block_grid = (1, count)``, read by one transposed SLM message.

The merged load takes the first block's offsets; the others' offset arithmetic goes with them.

Example: four ``xegpu.load_nd ... {block_index = [0, 0], block_count = [2, 2]}`` ... ``[1, 1]`` of
``vector<8x16xbf16>`` become one ``%5:4 = xegpu.load_nd ... {block_grid = [2, 2]}``.
"""
from __future__ import annotations

import itertools
from math import prod
from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Op, Value
from ..ir.terms import known_multiple
from ..ir.types import VectorType
from .emitter_decisions import holds_operands, innermost_loop
from .emitters import VISA_DPAS_PRECISION, named_read_bits, slm_read_bytes
from .layouts import rows_per_register
from .messages import origin_multiple, slm_contiguous
from .rewrite import Copy, drop_dead

STAMPS = ("block_index", "block_count")


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(op.attrs.get("block_index") is not None for op in func.walk()):
        return func   # (no tile was cut into blocks: no copy)
    return MergeBlockMessages(ctx).run(func)


class MergeBlockMessages(Copy):
    NAME = "merge-block-messages"
    RULES = dict(Copy.RULES)
    RULES[ir.LoadNdOp] = "rule_load"
    RULES[ir.LoadMatrixOp] = "rule_load"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        uses = ir.users(func)
        # loads whose every result is a DPAS A or B operand and nothing else, of a type inline-vISA
        # DPAS takes: it names them inside a named register, so their messages may exceed an LLVM vector
        # (not for DPAS in a loop that computes on other tiles: emitter-decisions gives those IGC's DPAS)
        held = {lp for lp in func.walk() if isinstance(lp, ir.ForOp) and holds_operands(lp)}
        self.dpas_only = {o for o in func.walk() if isinstance(o, (ir.LoadNdOp, ir.LoadMatrixOp)) and o.results
                          and all(uses.get(r) and all(isinstance(u, ir.DpasOp) and i < 2 and
                                                      r.type.elem.name in VISA_DPAS_PRECISION and
                                                      innermost_loop(u) not in held for u, i in uses[r])
                                  for r in o.results)}
        self.plan: Dict[Op, Optional[Tuple[List[Op], tuple]]] = {}   # first block -> (blocks, block_grid)
        for blocks in _tiles(func):
            for group, grid in self.groups(blocks):
                self.plan[group[0]] = (group, grid)
                for other in group[1:]:
                    self.plan[other] = None
        self.orphans: List[Value] = []   # the new function's operands of the blocks merged away
        out = super().run(func)
        drop_dead(out, self.orphans)
        return out

    # ---- the rewrite ------------------------------------------------------------------------------
    def rule_load(self, op: Op):
        """A load alone, or the first block of a message (the merged load), or a block merged into
        an earlier one's message (nothing: its result was bound there). The stamps go."""
        operands = [self.get(v) for v in op.operands]
        attrs = {k: v for k, v in op.attrs.items() if k not in STAMPS}
        entry = self.plan.get(op, ())
        if entry is None:
            self.orphans.extend(operands)
            return [self.vmap[r] for r in op.results]
        if not entry:
            new = self.b.insert(op.clone_with(operands, [r.type for r in op.results], attrs))
            return [[r] for r in new.results]
        group, grid = entry
        attrs["block_grid"] = grid
        new = self.b.insert(op.clone_with(operands, [b.result.type for b in group], attrs))
        for b, r in zip(group, new.results):
            self.vmap[b.result] = [r]
        return [[new.results[0]]]

    # ---- the plan ---------------------------------------------------------------------------------
    def groups(self, blocks: List[Op]) -> List[Tuple[List[Op], tuple]]:
        """The messages of one tile's blocks (row-major): (blocks in payload order, block_grid) of
        each message of more than one block."""
        if isinstance(blocks[0], ir.LoadNdOp):
            return self.nd_groups(blocks)
        return self.matrix_groups(blocks)

    def nd_groups(self, blocks: List[Op]):
        first = blocks[0]
        gr_gc = first.attrs["block_count"]
        piece = first.result.type
        emitter = self.ctx.emitter
        info = self.target.block2d_for(piece.elem) if emitter.merge_block2d else None
        if info is None or first.attrs.get("transpose") or len(gr_gc) != 2 or piece.layout is None:
            return []
        h, w = piece.shape
        narrow = emitter.narrow_block_reads and rows_per_register(piece.elem, piece.layout, w, self.target.sg_size)
        if piece.layout.lane_layout != (1, self.target.sg_size) and not narrow:  # (narrow: tf32's A)
            return []
        gr, gc = gr_gc
        lanes, bits = self.target.sg_size, piece.elem.bits
        # at most 16 dwords per lane (LLVM's SPIR-V backend and spirv-val cap vectors at 16), or what
        # the emitter's named-register reads take for DPAS operands of workgroup-level kernels
        cap = 16 * 32
        if all(b in self.dpas_only for b in blocks) and self.ctx.level == "wg":
            cap = max(cap, named_read_bits(emitter, self.target))

        def fits(v, a):
            return (v * h <= info.max_height and a <= info.max_array and a * w <= info.max_width_x_array
                    and v * h * a * w * bits <= cap * lanes and gr % v == 0 and gc % a == 0)
        v, a = max(((v, a) for v in (1, 2, 4, 8) for a in (1, 2, 4) if fits(v, a)), key=lambda x: (x[0] * x[1], x[1]),
                   default=(1, 1))
        if v * a == 1:
            return []
        return [([blocks[(bi + i) * gc + bj + j] for j in range(a) for i in range(v)], (v, a))
                for bi in range(0, gr, v) for bj in range(0, gc, a)]

    def matrix_groups(self, blocks: List[Op]):
        first = blocks[0]
        limit = slm_read_bytes(self.ctx.emitter, self.target)
        piece = first.result.type
        if not limit or self.ctx.level != "wg" or not isinstance(piece, VectorType) or \
                not all(b in self.dpas_only for b in blocks):
            return []
        grid = first.attrs["block_count"]
        m = first.operands[0].type
        size = prod(piece.shape) * piece.elem.itemsize
        cols = grid[-1]

        def origin(b: Op) -> int:   # (one level deeper than blocking's origin: block offset + its origin)
            return origin_multiple(m, [known_multiple(v, 9) for v in b.operands[1:]])

        def fits(a):
            if a * size > limit or cols % a:
                return False
            return all(slm_contiguous(m, piece, a, origin(b), self.target.sg_size)
                       for b in blocks if b.attrs["block_index"][-1] % a == 0)
        a = max((a for a in (1, 2, 4, 8) if fits(a)), default=1)
        if a == 1:
            return []
        return [(blocks[i:i + a], (1, a)) for i in range(0, len(blocks), a)]


def _tiles(func: ir.FuncOp) -> List[List[Op]]:
    """The blocks of each cut tile, row-major: the stamped loads of one block of ops, a tile's run
    starting at block index 0 and taking the next loads of the same kind, source and count."""
    out: List[List[Op]] = []
    for block in ir.blocks(func):
        open_runs: Dict[tuple, List[Op]] = {}
        for op in block.ops:
            idx = op.attrs.get("block_index") if isinstance(op, (ir.LoadNdOp, ir.LoadMatrixOp)) else None
            if idx is None:
                continue
            key = (type(op), op.operands[0], tuple(op.attrs["block_count"]))
            if not any(idx):
                open_runs[key] = run_ = [op]
                out.append(run_)
            elif key in open_runs:
                open_runs[key].append(op)
    return [r for r in out if len(r) == prod(r[0].attrs["block_count"]) and
            [tuple(b.attrs["block_index"]) for b in r] == _row_major(r[0].attrs["block_count"])]


def _row_major(count) -> List[tuple]:
    return list(itertools.product(*[range(c) for c in count]))
