"""Pass ``fp-fusion``: a float multiply feeding one add or subtract becomes one ``math.fma``
(Triton's ``enable_fp_fusion``, on by default there and here).

An ``arith.mulf`` whose only use is an ``arith.addf`` or ``arith.subf`` in the same block joins it:

    a * b + c, c + a * b  ->  fma(a, b, c)
    a * b - c             ->  fma(a, b, -c)
    c - a * b             ->  fma(-a, b, c)

one rounding instead of two, and one instruction: ``mad`` on Intel GPUs, an FMA on the CPU device.
IGC does not contract a multiply and an add of SPIR-V itself, so without this pass they stay two
instructions (attention's ``qk * scale - m``, layer norm's ``x_hat * w + b``). A multiply outside the
add's block (say, before the loop the add is in) stays where it is: fusing would repeat it.

A launch with ``enable_fp_fusion=False`` (or ``compile_offline(..., enable_fp_fusion=False)``) keeps
them apart; ``True`` fuses on the CPU device too, where the default is off (``Emitter.fp_fusion``: the
OpenCL CPU runtime's code got no faster, attention's slower); the interpreter never fuses, as Triton's
does not. Runs at every level (a kernel written
at subgroup or lane level meets it at its own).

Example: ``%2 = arith.mulf %a, %b`` used only by ``%3 = arith.addf %2, %c`` becomes
``%3 = math.fma %a, %b, %c``.
"""
from __future__ import annotations

from typing import Dict, Tuple

from .. import ir
from ..ir.types import elem_of
from .rewrite import Copy


def _fusions(func: ir.FuncOp) -> Dict[ir.Op, Tuple[int, ir.Op]]:
    """add/sub op -> (index of the operand that is a fusable multiply, that multiply)."""
    uses = ir.users(func)
    out: Dict[ir.Op, Tuple[int, ir.Op]] = {}
    for op in func.walk():
        if not (isinstance(op, ir.BinaryOp) and op.kind in ("addf", "subf")):
            continue
        if elem_of(op.result.type).bits < 16:   # (fp8 is storage: its arithmetic is f32's)
            continue
        for i, v in enumerate(op.operands):
            m = v.op
            if (isinstance(m, ir.BinaryOp) and m.kind == "mulf" and m.parent is op.parent
                    and [u for u, _ in uses.get(v, [])] == [op]):   # (its one use: no other add takes it)
                out[op] = (i, m)
                break
    return out


class FpFusion(Copy):
    NAME = "fp-fusion"
    RULES = dict(Copy.RULES)
    RULES[ir.BinaryOp] = "rule_binary"

    def __init__(self, ctx, fusions):
        super().__init__(ctx)
        self.fusions = fusions
        self.fused = {m for _, m in fusions.values()}

    def rule_binary(self, op: ir.BinaryOp):
        if op in self.fused:
            return [[]]   # (built into its add's fma)
        hit = self.fusions.get(op)
        if hit is None:
            return self.piecewise(op)
        i, m = hit
        a, b = (self.get(x) for x in m.operands)
        c = self.get(op.operands[1 - i])
        if op.kind == "subf":
            if i == 0:    # a * b - c
                c = self.b.insert(ir.UnaryOp("negf", c)).result
            else:         # c - a * b
                a = self.b.insert(ir.UnaryOp("negf", a)).result
        return [[self.b.insert(ir.FmaOp(a, b, c)).result]]


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not getattr(ctx, "fp_fusion", True):
        return func
    fusions = _fusions(func)
    if not fusions:
        return func  # (no copy)
    return FpFusion(ctx, fusions).run(func)
