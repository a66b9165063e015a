"""Pass ``transpose-loads``: ``desc.load(...).T`` feeding a ``dot`` becomes one transposed load.

Triton code transposes a loaded block with ``.T``, ``xl.trans`` or ``xl.permute(x, (1, 0))``:
tutorial 09 loads B as stored (N x K) and multiplies by ``b.T``. Laid out as written, the
``vector.transpose`` makes the loaded block's layout the transpose of the DPAS operand's, and the
loads become element-wise gathers (pvc bf16, 256x256 tiles: a K loop of 3,070 instructions for
32 dpas, 128 gathers). ``desc.load(..., transpose=True)`` says the same thing and has a
transposed 2D block load (or, for a 16-bit A operand, ``slm-transpose``'s route), so the pass
rewrites the first into the second::

    %b = xegpu.load_nd %d[%n, %k] : vector<NxK>
    %t = vector.transpose %b [1, 0] : vector<KxN>
    %c = xegpu.dpas %a, %t, %acc
becomes
    %t = xegpu.load_nd %d[%n, %k] {transpose = [1, 0]} : vector<KxN>
    %c = xegpu.dpas %a, %t, %acc

The load stays where it was (a store between the load and the transpose must not be seen by it).
Taken only when the loaded block is used by nothing but the transpose, has no layout of its
own, and every use of the transpose is a ``dot`` operand; anything else is left as written.
It runs before ``slm-transpose``, which then sees the same IR as for ``transpose=True``.
"""
from __future__ import annotations

from typing import Set

from .. import ir
from ..ir.core import Op, users
from ..ir.types import VectorType
from .rewrite import STRUCTURED_RULES, Rewriter


def _foldable(load: Op, uses) -> bool:
    if not isinstance(load, ir.LoadNdOp):
        return False
    t = load.result.type
    if load.attrs.get("transpose") or load.attrs.get("layout") is not None or not isinstance(t, VectorType) \
            or t.rank != 2:
        return False
    readers = uses.get(load.result, [])
    if len(readers) != 1 or not isinstance(readers[0][0], ir.TransposeOp):
        return False
    tr = readers[0][0]
    if tuple(tr.attrs.get("permutation") or ()) != (1, 0):
        return False
    return all(isinstance(op, ir.DpasOp) and i < 2 for op, i in uses.get(tr.result, [])) and \
        bool(uses.get(tr.result))


class TransposeLoads(Rewriter):
    NAME = "transpose-loads"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.LoadNdOp] = "rule_load_nd"
    RULES[ir.TransposeOp] = "rule_transpose"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        uses = users(func)
        self.folded: Set[Op] = {op for op in func.walk() if _foldable(op, uses)}
        return super().run(func)

    def rule_load_nd(self, op: ir.LoadNdOp):
        if op not in self.folded:
            return self.piecewise(op)
        rows, cols = op.result.type.shape
        attrs = dict(op.attrs, transpose=(1, 0))
        new = self.b.insert(op.clone_with([self.get(v) for v in op.operands],
                                          [VectorType((cols, rows), op.result.type.elem)], attrs))
        return [[new.result]]   # (its one reader, the transpose, takes it as its own result)

    def rule_transpose(self, op: ir.TransposeOp):
        src = op.operands[0]
        if src.op in self.folded:
            return [self.all(src)]
        return self.piecewise(op)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, ir.TransposeOp) for op in func.walk()):
        return func   # (nothing to fold: no copy)
    return TransposeLoads(ctx).run(func)
