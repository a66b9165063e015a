"""Pass ``sink-loads``: a DPAS operand's load comes right before the first DPAS that reads it.

Blocking (pass ``inst``) splits a subgroup's ``load_nd`` / ``load_matrix`` into its DPAS blocks and
a ``dpas`` into its products, all loads first: a K step's operands are all in registers before its
first product. Where a step's operands are many (dg2: 128 registers of 32 bytes; a 32 x 16 tile of
C^T with K = 32 reads 12 operand blocks of 8 registers, 96 registers beside 64 of accumulators),
IGC keeps that order and spills. Moved next to their first use, the blocks of the second K half
are read while the first half's products run, and IGC's scheduler (which hoists loads as far as
registers allow) has room to choose.

A load moves down its block past ops without side effects and without regions only (a barrier,
a store, a loop or a branch stops it), to just before the first op that reads it; an SLM load
(``load_matrix``) to just before the DPAS before that one (it stays where no DPAS is on its way
down), so that its message is on its way while that DPAS runs: IGC then reads SLM blocks into
two registers in turn instead of one, with a wait before each (dg2's flagship K loop with K = 32
per iteration: 86 -> 81 instructions for 16 dpas, K = 64: 148 -> 140 for 32).

Lane level, GPU targets without 2D block IO only (the CPU device's compiler schedules its own
code). Where a 2D block message carries several DPAS blocks, moving them apart costs (pvc's
flagship K loop, bf16 with IGC 2.40: tn 158 -> 175 instructions for 96 dpas, nt 148 -> 156).
On those targets pass ``inst`` orders a dot's products K step by K step, so that a step's blocks
are the only ones live (``distribute.rule_dpas``), and ``slm-barriers`` moves the closing barrier
of an SLM exchange to the loop body's end (``late_close``), so that the loads between may sink.
"""
from __future__ import annotations

from .. import ir
from .rewrite import copy_func

_LOADS = (ir.LoadNdOp, ir.LoadMatrixOp)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if ctx.target.kind != "gpu" or ctx.target.has_block2d or not any(isinstance(op, ir.DpasOp) for op in func.walk()):
        return func
    out = copy_func(func, ctx)
    for block in ir.blocks(out):
        sink(block)
    return out


def sink(block) -> int:
    """Move each load of ``block`` down to its first reader (see the module docstring); returns how
    many moved."""
    ops = block.ops
    moved = 0
    i = len(ops) - 1
    while i >= 0:
        op = ops[i]
        if isinstance(op, _LOADS) and not op.regions:
            results = set(op.results)
            j = i + 1
            while j < len(ops):
                nxt = ops[j]
                if nxt.HAS_SIDE_EFFECTS or nxt.regions or nxt.IS_TERMINATOR or any(v in results for v in nxt.operands):
                    break
                j += 1
            if isinstance(op, ir.LoadMatrixOp):   # one DPAS earlier, or not at all (the docstring)
                k = j - 1
                while k > i and not isinstance(ops[k], ir.DpasOp):
                    k -= 1
                j = k if k > i else i + 1
            if j > i + 1:
                ops.insert(j - 1, ops.pop(i))
                moved += 1
        i -= 1
    return moved
