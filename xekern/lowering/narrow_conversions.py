"""Pass ``narrow-conversions``: a tile narrowed right after a layout conversion is narrowed first.

``propagate-layout`` converts a value where its user wants another layout, and a cast takes its
user's layout: in attention, ``p = exp(s)`` (the first dot's result layout) feeds
``dot(p.to(bf16), v)``, so ``p`` crosses to the A layout in f32 (through SLM between subgroups)
and is cast afterwards. A cast is elementwise and a conversion only moves elements, so the
order can be swapped; the narrow way moves half the bytes (a quarter for int8)::

    %c = xegpu.convert_layout %p : vector<MxNxf32, #L1> -> vector<MxNxf32, #L2>
    %h = arith.truncf %c : vector<MxNxf32, #L2> -> vector<MxNxbf16, #L2>
becomes
    %n = arith.truncf %p : vector<MxNxf32, #L1> -> vector<MxNxbf16, #L1>
    %h = xegpu.convert_layout %n : vector<MxNxbf16, #L1> -> vector<MxNxbf16, #L2>

Taken for ``truncf`` and ``trunci`` that are the converted value's only use. It runs before
``hoist-conversions``, which may then move the narrow conversion out of a loop.
"""
from __future__ import annotations

from typing import Dict

from .. import ir
from ..ir.core import Op, users
from ..ir.types import elem_of
from .rewrite import STRUCTURED_RULES, Rewriter

NARROWING = ("truncf", "trunci")


class NarrowConversions(Rewriter):
    NAME = "narrow-conversions"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.ConvertLayoutOp] = "rule_convert"
    RULES[ir.CastOp] = "rule_cast"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        uses = users(func)
        self.casts: Dict[Op, Op] = {}   # conversion -> the narrowing cast that is its only use
        for op in func.walk():
            if isinstance(op, ir.ConvertLayoutOp):
                readers = uses.get(op.result, [])
                if len(readers) == 1 and isinstance(readers[0][0], ir.CastOp) and readers[0][0].kind in NARROWING:
                    self.casts[op] = readers[0][0]
        return super().run(func)

    def rule_convert(self, op: ir.ConvertLayoutOp):
        cast = self.casts.get(op)
        if cast is None:
            return self.piecewise(op)
        narrow = self.b(ir.CastOp, cast.kind, self.get(op.operands[0]), elem_of(cast.result.type))
        cv = self.b.create(ir.ConvertLayoutOp, narrow, cast.result.type)
        cv.attrs.update(op.attrs)
        return [[cv.result]]   # (its one reader, the cast, takes it as its own result)

    def rule_cast(self, op: ir.CastOp):
        src = op.operands[0]
        if src.op in self.casts:
            return [self.all(src)]
        return self.piecewise(op)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, ir.ConvertLayoutOp) for op in func.walk()):
        return func   # (nothing to narrow: no copy)
    return NarrowConversions(ctx).run(func)
