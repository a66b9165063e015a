"""Which barriers after an SLM layout exchange a loop body can go without (part of ``wg-to-sg``).

An exchange through SLM is: stores, barrier, loads, barrier (``WgToSg.through_slm``). The second
barrier only keeps the next stores into the same matrix from overwriting what another subgroup
has not read yet. When, on the way from it to those next stores, every subgroup passes another
barrier anyway, it is not needed. In a K loop with two exchanges into two matrices (two K steps
per iteration, each transposing its A tile through its own SLM matrix)::

    store m0; B; load m0; [B]; store m1; B; load m1; [B]      (next iteration: store m0; B; ...)

the bracketed barriers go: the barrier after ``store m1`` lies between ``load m0`` and the next
``store m0``, and the next iteration's barrier after ``store m0`` between ``load m1`` and the next
``store m1``. On pvc each barrier is 6 instructions (fence, payload movs, signal, wait).

The rule, for a trailing barrier at the top level of a loop body, guarding a matrix that only its
own exchange writes: walk the body from it, wrapping around to the body's start (the next
iteration, or the loop's next run: either starts there), until a store into the matrix. It goes
if a barrier that stays is met first at the top level (nested regions may not run). A matrix other
code can write (``shuffle_tensor``'s) keeps its barriers.
"""
from __future__ import annotations

from typing import Dict

from .. import ir
from ..ir.core import Op, Value


def _writes(op: Op, mem: Value) -> bool:
    return any(isinstance(o, ir.StoreMatrixOp) and o.operands[1] is mem for o in op.walk())


def drop_redundant(func: ir.FuncOp, trailing: Dict[Op, Value]) -> int:
    """Erase the barriers of ``trailing`` (barrier -> the private SLM matrix it guards) that the
    rule above makes redundant; returns how many went."""
    dropped = 0
    for loop in [o for o in func.walk() if isinstance(o, ir.ForOp)]:
        ops = loop.body.ops
        for bar in [o for o in ops if o in trailing]:
            mem, i = trailing[bar], ops.index(bar)
            for op in ops[i + 1:] + ops[:i]:  # on to the body's end, then from its start
                if isinstance(op, ir.BarrierOp) and op not in trailing:
                    ops.remove(bar)
                    dropped += 1
                    break
                if _writes(op, mem):
                    break
    return dropped
