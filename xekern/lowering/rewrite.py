"""The machinery every pass uses: rebuild a function op by op into a new one.

Each old value maps to a list of new values (one for a plain rewrite, several when a tile is
split into subgroup pieces or instruction blocks). Rules are looked up by op class along the
MRO; ops without a rule are rebuilt piecewise. Structured control flow (for/if/while) is
handled here once: carried values are flattened, so a loop carrying one tile split in 16
pieces carries 16 values.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Dict, List, Optional, Sequence, Union

from .. import ir
from ..ir import types as T
from ..ir.core import Block, Builder, IRError, Op, Value, users
from ..ir.types import Type


class PassError(Exception):
    """A pass cannot lower an op (an unsupported combination); names the op and the target."""

    def __init__(self, message: str, op: Optional[Op] = None):
        self.op = op
        where = f" (at {op.loc})" if op is not None and op.loc is not None else ""
        super().__init__(f"{message}{where}")


IntLike = Union[int, Value]


class Rewriter:
    """Rebuild ``func`` at a new ``level``. Subclasses add rules in ``RULES`` (op class -> method
    name) and override ``expand`` (how one old type becomes several new ones)."""

    NAME = "rewrite"
    LEVEL = "wg"
    RULES: Dict[type, str] = {}

    def __init__(self, ctx):
        self.ctx = ctx
        self.target = ctx.target
        self.vmap: Dict[Value, List[Value]] = {}
        self.b = Builder()
        self.prologue: List[Op] = []
        self._consts: Dict[tuple, Value] = {}

    # ---- entry --------------------------------------------------------------------------------
    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        attrs = {k: v for k, v in func.attrs.items() if k != "sym_name"}
        attrs["level"] = self.LEVEL
        nf = ir.FuncOp(func.name, [self.arg_type(a.type) for a in func.args], [a.hint for a in func.args],
                       attrs, loc=func.loc)
        for old, new in zip(func.args, nf.args):
            self.vmap[old] = [new]
        self.func = nf
        self.b = Builder(nf.body)
        self.region(func.body)
        nf.body.ops[0:0] = self.prologue
        for op in self.prologue:
            op.parent = nf.body
        self.finish(nf)
        return nf

    def arg_type(self, t: Type) -> Type:
        return t

    def finish(self, func: ir.FuncOp) -> None:
        """Hook after the rebuild (e.g. to record SLM use in the function's attributes)."""

    def region(self, block: Block) -> None:
        for op in block.ops:
            self.rewrite(op)

    def rule_for(self, op: Op) -> Callable:
        for cls in type(op).__mro__:
            name = self.RULES.get(cls)
            if name is not None:
                return getattr(self, name)
        return self.piecewise

    def rewrite(self, op: Op) -> None:
        rule = self.rule_for(op)
        with self.b.located(op.loc):
            try:
                new = rule(op)
            except (PassError, IRError):
                raise
            except (ValueError, KeyError, TypeError, IndexError, AssertionError) as e:
                raise PassError(f"{self.NAME}: cannot lower '{op.op_name}' on {self.target.name}: "
                                f"{type(e).__name__}: {e}", op) from e
        if op.results:
            if new is None or len(new) != len(op.results):
                raise PassError(f"{self.NAME}: rule for '{op.op_name}' gave no results", op)
            for r, vals in zip(op.results, new):
                self.vmap[r] = list(vals) if isinstance(vals, (list, tuple)) else [vals]

    # ---- values -------------------------------------------------------------------------------
    def all(self, v: Value) -> List[Value]:
        try:
            return self.vmap[v]
        except KeyError:
            raise PassError(f"{self.NAME}: value used before its definition was lowered", v.op) from None

    def get(self, v: Value) -> Value:
        vals = self.all(v)
        if len(vals) != 1:
            raise PassError(f"{self.NAME}: expected one value, got {len(vals)} pieces", v.op)
        return vals[0]

    def expand(self, t: Type) -> List[Type]:
        """The new types one old value of type ``t`` becomes."""
        return [t]

    # ---- generic rules ----------------------------------------------------------------------------
    def piecewise(self, op: Op):
        """Rebuild ``op`` once per piece: operands with several pieces are taken piece by piece,
        single values (scalars) are shared."""
        counts = [len(self.all(v)) for v in op.operands]
        result_types = [self.expand(r.type) for r in op.results]
        n = max(counts + [len(t) for t in result_types] + [1])
        for c, v in zip(counts, op.operands):
            if c not in (1, n):
                raise PassError(f"{self.NAME}: '{op.op_name}' mixes operands split in {c} and {n} pieces", op)
        outs: List[List[Value]] = [[] for _ in op.results]
        for i in range(n):
            operands = [self.all(v)[i] if c == n else self.all(v)[0] for c, v in zip(counts, op.operands)]
            types = [ts[i] if len(ts) == n else ts[0] for ts in result_types]
            new = self.b.insert(op.clone_with(operands, types))
            for k, r in enumerate(new.results):
                outs[k].append(r)
        return outs

    def flat(self, vals: Sequence[Value]) -> List[Value]:
        return [x for v in vals for x in self.all(v)]

    def _bind(self, olds: Sequence[Value], news: Sequence[Value]) -> None:
        news = list(news)
        for v in olds:
            k = len(self.expand(v.type))
            self.vmap[v] = news[:k]
            news = news[k:]
        assert not news, "block arguments do not match"

    def rewrite_yield(self, op: Op):
        self.b.insert(op.clone_with(self.flat(op.operands), []))
        return []

    def rewrite_condition(self, op: Op):
        cond = self.get(op.operands[0])
        self.b.insert(op.clone_with([cond] + self.flat(op.operands[1:]), []))
        return []

    def rewrite_for(self, op: ir.ForOp):
        lb, ub, st = (self.get(v) for v in op.operands[:3])
        new = self.b.create(ir.ForOp, lb, ub, st, self.flat(op.inits))
        new.attrs.update({k: v for k, v in op.attrs.items()})
        self.vmap[op.iv] = [new.iv]
        self._bind(op.iter_args, new.iter_args)
        with self.b.at(new.body):
            self.region(op.body)
        self._check_block(new.body, [a.type for a in new.iter_args], op)
        return self._split_results(op, new.results)

    def rewrite_if(self, op: ir.IfOp):
        types = [t for r in op.results for t in self.expand(r.type)]
        new = self.b.create(ir.IfOp, self.get(op.operands[0]), types)
        with self.b.at(new.then_block):
            self.region(op.then_block)
        with self.b.at(new.else_block):
            self.region(op.else_block)
        return self._split_results(op, new.results)

    def rewrite_while(self, op: ir.WhileOp):
        new = self.b.create(ir.WhileOp, self.flat(op.operands))
        self._bind(op.before.args, new.before.args)
        self._bind(op.after.args, new.after.args)
        with self.b.at(new.before):
            self.region(op.before)
        with self.b.at(new.after):
            self.region(op.after)
        return self._split_results(op, new.results)

    def _split_results(self, op, results):
        results = list(results)
        out = []
        for r in op.results:
            k = len(self.expand(r.type))
            out.append(results[:k])
            results = results[k:]
        return out

    def _check_block(self, block, types, op):
        term = block.terminator
        got = [v.type for v in term.operands] if term is not None else []
        if got != types:
            raise PassError(f"{self.NAME}: loop body yields ({', '.join(map(str, got))}) but carries "
                            f"({', '.join(map(str, types))})", op)

    @contextmanager
    def at_prologue(self):
        """Build into the function's entry (values that dominate everything, e.g. subgroup ids)."""
        blk = Block()
        with self.b.at(blk):
            yield
        self.prologue.extend(blk.ops)

    def rewrite_value_barrier(self, op: Op):
        """One barrier over every piece of every operand (a tile split in 4 pieces passes 4 values)."""
        new = self.b.insert(op.clone_with(self.flat(op.operands), [v.type for v in self.flat(op.operands)]))
        return self._split_results(op, new.results)

    # ---- integer index arithmetic (folded when constant) -------------------------------------------
    def i32(self, v: IntLike) -> Value:
        if isinstance(v, Value):
            return v
        key = ("i32", int(v))
        c = self._consts.get(key)
        if c is None:
            op = ir.ConstantOp(int(v), T.int32)
            self.prologue.append(op)
            c = self._consts[key] = op.result
        return c

    def _arith(self, kind: str, a: IntLike, b: IntLike, fold) -> IntLike:
        if isinstance(a, int) and isinstance(b, int):
            return fold(a, b)
        return self.b(ir.BinaryOp, kind, self.i32(a), self.i32(b))

    def iadd(self, a: IntLike, b: IntLike) -> IntLike:
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._arith("addi", a, b, lambda x, y: x + y)

    def imul(self, a: IntLike, b: IntLike) -> IntLike:
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(b, int) and b == 0:
            return 0
        return self._arith("muli", a, b, lambda x, y: x * y)

    def idiv(self, a: IntLike, b: int) -> IntLike:
        if b == 1:
            return a
        return self._arith("divui", a, b, lambda x, y: x // y)

    def irem(self, a: IntLike, b: int) -> IntLike:
        if b == 1:
            return 0
        return self._arith("remui", a, b, lambda x, y: x % y)


def drop_dead(func: ir.FuncOp, values: List[Value]) -> None:
    """Erase the side-effect-free ops, among those defining ``values`` (and, in turn, their
    operands'), whose results nothing reads any more (an edit of a copy: ``copy_func``)."""
    uses = users(func)
    count = {v: len(us) for v, us in uses.items()}
    work = [v.op for v in values if v.op is not None]
    while work:
        op = work.pop()
        if op.parent is None or op.HAS_SIDE_EFFECTS or op.regions or any(count.get(r) for r in op.results):
            continue
        op.parent.ops.remove(op)
        op.parent = None
        for v in op.operands:
            count[v] = count.get(v, 1) - 1
            if v.op is not None:
                work.append(v.op)


STRUCTURED_RULES = {ir.ForOp: "rewrite_for", ir.IfOp: "rewrite_if", ir.WhileOp: "rewrite_while",
                    ir.YieldOp: "rewrite_yield", ir.ConditionOp: "rewrite_condition",
                    ir.ValueBarrierOp: "rewrite_value_barrier"}   # (variadic: its operands split apart)


class Copy(Rewriter):
    """The identity rewrite: a new function equal to ``func``, at its level. A pass that changes a
    few ops in place (an attribute, an op moved or dropped) edits such a copy, never the function
    it was given (the mutation rule, ``ir/core.py``)."""

    NAME = "copy"
    RULES = dict(STRUCTURED_RULES)

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.LEVEL = func.attrs.get("level", "wg")
        return super().run(func)


def copy_func(func: ir.FuncOp, ctx) -> ir.FuncOp:
    """A copy of ``func`` for a pass to edit (``Copy``)."""
    return Copy(ctx).run(func)
