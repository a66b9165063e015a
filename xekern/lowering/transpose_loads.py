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
Taken when the loaded block has no layout of its own and every use of the transpose is a ``dot``
operand. A block also used as loaded (attention's backward multiplies by ``q`` and by ``q.T``)
keeps its load for those uses and gets a second, transposed one beside it for the transpose, through
a twin of its descriptor (a descriptor has one layout, and the two loads need two): two block loads
of the same bytes at the same point, instead of a transpose through SLM. Only for descriptors made
by ``make_tensor_descriptor`` in the function itself (not carried through a loop).
It runs before ``slm-transpose``, which then sees the same IR as for ``transpose=True``.
"""
from __future__ import annotations

from typing import Dict, Set

from .. import ir
from ..ir.core import Op, Value, users
from ..ir.types import VectorType
from .rewrite import STRUCTURED_RULES, Rewriter


def _plain_load(load: Op) -> bool:
    t = load.result.type if isinstance(load, ir.LoadNdOp) else None
    return isinstance(t, VectorType) and t.rank == 2 and not load.attrs.get("transpose") and \
        load.attrs.get("layout") is None


def _dot_transpose(op: Op, uses) -> bool:
    """A 2-D transpose whose every use is a ``dot`` operand (A or B)."""
    return isinstance(op, ir.TransposeOp) and tuple(op.attrs.get("permutation") or ()) == (1, 0) and \
        bool(uses.get(op.result)) and all(isinstance(u, ir.DpasOp) and i < 2 for u, i in uses[op.result])


def _foldable(load: Op, uses) -> bool:
    """The load's one reader is a transpose that feeds dots."""
    readers = uses.get(load.result, []) if _plain_load(load) else []
    return len(readers) == 1 and _dot_transpose(readers[0][0], uses)


def _split(load: Op, uses) -> bool:
    """Some readers are transposes that feed dots, others are not."""
    readers = [op for op, _ in uses.get(load.result, [])] if _plain_load(load) else []
    feeds = [_dot_transpose(r, uses) for r in readers]
    return len(readers) > 1 and isinstance(load.operands[0].op, ir.CreateNdTDescOp) and any(feeds) and not all(feeds)


class TransposeLoads(Rewriter):
    NAME = "transpose-loads"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.LoadNdOp] = "rule_load_nd"
    RULES[ir.TransposeOp] = "rule_transpose"
    RULES[ir.CreateNdTDescOp] = "rule_create_nd_tdesc"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.uses = users(func)
        self.folded: Set[Op] = {op for op in func.walk() if _foldable(op, self.uses)}
        self.split: Set[Op] = {op for op in func.walk() if _split(op, self.uses)}
        self.transposed: Dict[Op, Value] = {}   # a split load -> its transposed twin
        self.twins: Dict[Value, Value] = {v.operands[0]: None for v in self.split}   # descriptor -> its twin
        return super().run(func)

    def rule_create_nd_tdesc(self, op: ir.CreateNdTDescOp):
        out = self.piecewise(op)
        if op.result in self.twins:
            self.twins[op.result] = self.b.insert(op.clone_with([self.get(v) for v in op.operands],
                                                                [op.result.type], dict(op.attrs))).result
        return out

    def _transposed_load(self, op: ir.LoadNdOp, desc: Value = None) -> Value:
        rows, cols = op.result.type.shape
        attrs = dict(op.attrs, transpose=(1, 0))
        operands = [self.get(v) for v in op.operands]
        if desc is not None:
            operands[0] = desc
        return self.b.insert(op.clone_with(operands, [VectorType((cols, rows), op.result.type.elem)], attrs)).result

    def rule_load_nd(self, op: ir.LoadNdOp):
        if op in self.split:
            out = self.piecewise(op)
            self.transposed[op] = self._transposed_load(op, self.twins[op.operands[0]])
            return out
        if op not in self.folded:
            return self.piecewise(op)
        return [[self._transposed_load(op)]]   # (its one reader, the transpose, takes it as its own result)

    def rule_transpose(self, op: ir.TransposeOp):
        src = op.operands[0]
        if src.op in self.folded:
            return [self.all(src)]
        if src.op in self.split and _dot_transpose(op, self.uses):
            return [[self.transposed[src.op]]]
        return self.piecewise(op)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, ir.TransposeOp) for op in func.walk()):
        return func   # (nothing to fold: no copy)
    return TransposeLoads(ctx).run(func)
