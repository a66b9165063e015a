"""Functions and structured control flow: func, return, scf.for / scf.if / scf.while / yield."""
from __future__ import annotations

from typing import Dict, List, Sequence

from .core import Block, IRError, Op, Value
from .attrs import Attr
from .types import DType, Type, int1


class FuncOp(Op):
    """``xegpu.func``: a kernel. ``attrs`` carry launch facts (``num_subgroups``, ``sg_size``)."""

    NAME = "func.func"
    ATTRS = (Attr("sym_name", str), Attr("level", str, doc="wg, sg, inst or lane: the IR level"),
             Attr("kernel_level", str, doc="wg, sg or lane: the level the kernel is written at (@xk.jit(level=))"),
             Attr("target", str), Attr("emitter", str, doc="how codegen reaches the hardware (lowering/emitters.py)"),
             Attr("num_subgroups", int), Attr("sg_size", int),
             Attr("multiple_of", dict, doc="integer argument -> a number it is a multiple of (specialization)"))

    def __init__(self, name: str, arg_types: Sequence[Type], arg_names: Sequence[str],
                 attrs: Dict = None, loc=None):
        body = Block(arg_types, arg_names)
        a = {"sym_name": name}
        a.update(attrs or {})
        super().__init__([], [], a, [body], loc=loc)

    @property
    def name(self) -> str:
        return self.attrs["sym_name"]

    @property
    def body(self) -> Block:
        return self.regions[0]

    @property
    def args(self) -> List[Value]:
        return self.body.args


class ReturnOp(Op):
    NAME = "func.return"
    IS_TERMINATOR = True

    def __init__(self, loc=None):
        super().__init__([], [], loc=loc)


class YieldOp(Op):
    """``scf.yield``: the values a structured op's body hands back."""

    NAME = "scf.yield"
    IS_TERMINATOR = True

    def __init__(self, values: Sequence[Value] = (), loc=None):
        super().__init__(values, [], loc=loc)


class ConditionOp(Op):
    """``scf.condition``: ends a while's ``before`` region: continue while ``cond``."""

    NAME = "scf.condition"
    IS_TERMINATOR = True

    def __init__(self, cond: Value, values: Sequence[Value] = (), loc=None):
        super().__init__([cond, *values], [], loc=loc)


def _check_yield(op: Op, block: Block, types: Sequence[Type], what: str) -> None:
    term = block.terminator
    if term is None:
        raise IRError(f"{what} has no terminator", op)
    vals = term.operands[1:] if isinstance(term, ConditionOp) else term.operands
    got = [v.type for v in vals]
    if got != list(types):
        raise IRError(f"{what} yields ({', '.join(map(str, got))}) but ({', '.join(map(str, types))}) "
                      f"is expected", op)


class ForOp(Op):
    """``scf.for %iv = %lb to %ub step %step iter_args(...)``: a counted loop with carried values."""

    NAME = "scf.for"
    ATTRS = (Attr("num_stages", int, doc="Triton's tuning hint (accepted, unused)"),
             Attr("loop_unroll_factor", int, doc="Triton's tuning hint (accepted, unused)"),
             Attr("accumulators", tuple, ("emitter-decisions",), "carried DPAS accumulators in named vISA registers"),
             Attr("edge", bool, ("split-edges",), "the loop of the steps at the tensors' edge (codegen computes its "
                                                  "lane-derived values in its body)"))

    def __init__(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value], loc=None):
        body = Block([lb.type] + [v.type for v in inits], ["iv"])
        super().__init__([lb, ub, step, *inits], [v.type for v in inits], regions=[body], loc=loc)

    @property
    def body(self) -> Block:
        return self.regions[0]

    @property
    def iv(self) -> Value:
        return self.body.args[0]

    @property
    def iter_args(self) -> List[Value]:
        return self.body.args[1:]

    @property
    def inits(self):
        return self.operands[3:]

    def verify(self):
        lb, ub, st = self.operands[:3]
        if not (isinstance(lb.type, DType) and lb.type.is_int and lb.type == ub.type == st.type):
            raise IRError(f"loop bounds must share one integer type, got {lb.type}, {ub.type}, {st.type}", self)
        _check_yield(self, self.body, [v.type for v in self.inits], "the loop body")


class IfOp(Op):
    """``scf.if %cond``: two regions yielding the op's results."""

    NAME = "scf.if"

    def __init__(self, cond: Value, result_types: Sequence[Type], loc=None):
        super().__init__([cond], result_types, regions=[Block(), Block()], loc=loc)

    @property
    def then_block(self) -> Block:
        return self.regions[0]

    @property
    def else_block(self) -> Block:
        return self.regions[1]

    def verify(self):
        if self.operands[0].type != int1:
            raise IRError(f"the condition must be a scalar i1, got {self.operands[0].type}", self)
        types = [r.type for r in self.results]
        _check_yield(self, self.then_block, types, "the then-branch")
        _check_yield(self, self.else_block, types, "the else-branch")


class WhileOp(Op):
    """``scf.while``: ``before`` computes the condition from the carried values, ``after`` the next ones."""

    NAME = "scf.while"

    def __init__(self, inits: Sequence[Value], loc=None):
        types = [v.type for v in inits]
        super().__init__(inits, types, regions=[Block(types), Block(types)], loc=loc)

    @property
    def before(self) -> Block:
        return self.regions[0]

    @property
    def after(self) -> Block:
        return self.regions[1]

    def verify(self):
        types = [r.type for r in self.results]
        term = self.before.terminator
        if not isinstance(term, ConditionOp) or term.operands[0].type != int1:
            raise IRError("the before-region must end in scf.condition on a scalar i1", self)
        _check_yield(self, self.before, types, "the before-region")
        _check_yield(self, self.after, types, "the after-region")
