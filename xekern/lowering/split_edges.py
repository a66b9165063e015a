"""Pass ``split-edges``: a counted loop whose descriptor loads lie inside their tensors in all but
its last iterations runs those first iterations without bounds tests (targets without 2D block IO).

On such a target (dg2) a descriptor load whose lanes hold runs of memory rows is one per-lane
vector message per run (``messages.lane_row_runs``, ``codegen/nd_elementwise.py``), but only where
the whole tile lies inside the tensor at a dword-aligned column; elsewhere it is read element by
element. Tested in every iteration, the test and the element-wise path sit in the K loop of a
GEMM: their registers and instructions are paid in every iteration for the last one's sake. The
pass splits the loop where the first such load would reach past its tensor::

    %r = scf.for %k = %lb to %ub step %s iter_args(%acc = %0) {
      %a = xegpu.load_nd %d[%m, %k] ...
becomes
    %split = (the first %k from which a load reaches past its tensor, or %lb)
    %f = scf.for %k = %lb to %split step %s iter_args(%acc = %0) {
      %a = xegpu.load_nd %d[%m, %k] {inside = true} ...         (no test: vector loads)
    %r = scf.for %k = %split to %ub step %s iter_args(%acc = %f) { the loop as it was } {edge = true}

Both loops run the same iterations as the one loop, in order. The second is marked ``edge``:
codegen computes the values it derives from the lane id (its SLM and memory addresses) in its body
(``CodeGen.lane_scope``), so that they are not held in registers through both loops. The pass runs
on the workgroup's tiles, so the split is the same in every subgroup (both loops hold the body's
barriers) and a workgroup tile inside its tensor has every subgroup's and lane's piece inside.
Taken for the ``load_nd`` ops directly in the body of a loop with a constant positive step whose
descriptor comes from a ``create_nd_tdesc`` before the loop with a unit column stride, whose
offsets are loop-invariant or the induction variable plus loop-invariant values, and whose column
is dword-aligned by what the compiler knows (the launch's specialization: pointer arguments 16-byte
aligned, integers multiples of 16; see ``coalesce``). For a tile at ``(o_r, o_c)`` of extent
``(e_r, e_c)`` in an ``R x C`` tensor, a coordinate that does not move with the loop must satisfy
``0 <= o <= R - e`` (else no iteration is split off), and one that moves must be ``>= 0`` at
``%lb``, after which ``%k <= C - e_c - (o_c - %k)`` bounds the first loop. Not taken: loads whose
only readers are DPAS that read their operands from memory themselves (the CPU device's fused
loads, ``emitter-decisions``), whose bounds tests are their own.
"""
from __future__ import annotations

from math import gcd
from typing import List, Optional, Tuple

from .. import ir
from ..ir import types as T
from ..ir.terms import argument_multiples, known_multiple, pointer_base
from ..ir.types import VectorType
from .rewrite import STRUCTURED_RULES, Rewriter

# an affine form: (coefficient of the loop's induction variable, [(sign, int or loop-invariant value)])
Form = Tuple[int, List[Tuple[int, object]]]


class SplitEdges(Rewriter):
    NAME = "split-edges"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.ForOp] = "rule_loop"
    RULES[ir.LoadNdOp] = "rule_load_nd"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.multiples = argument_multiples(func)
        self.args = {id(a): a.hint for a in func.args}
        self.pointer_align = {a.hint: self.multiples.get(id(a), 1) for a in func.args}
        self.marking = set()
        self.whole = {}   # load -> a number its tensor's width and its column are multiples of
        # loads the CPU device's DPAS read from memory themselves (fused, emitter-decisions): their
        # own tests stay theirs, and a loop split for them alone would only double the driver's work
        self.fused = set()
        if self.ctx.emitter.fused_dpas_loads:
            uses = ir.users(func)
            self.fused = {op for op in func.walk() if isinstance(op, ir.LoadNdOp) and uses.get(op.result)
                          and all(isinstance(u, ir.DpasOp) and i < 2 for u, i in uses[op.result])}
        return super().run(func)

    def rule_load_nd(self, op: ir.LoadNdOp):
        out = self.piecewise(op)
        if op in self.marking:
            out[0][0].op.attrs["inside"] = True
        elif op in self.whole:
            out[0][0].op.attrs["column_multiple"] = self.whole[op]
        return out

    def rule_loop(self, op: ir.ForOp):
        plan = self.plan(op)
        if plan is None:
            return self.rewrite_for(op)
        loads, invariant, bounds = plan
        lb, ub, st = (self.get(v) for v in op.operands[:3])
        split = self.split_point(lb, ub, st, invariant, bounds)
        saved, self.marking = self.marking, set(loads)
        first = self.loop(op, lb, split, st, self.flat(op.inits))
        self.marking = saved
        rest = self.loop(op, split, ub, st, list(first.results))
        rest.attrs["edge"] = True
        return self._split_results(op, rest.results)

    def loop(self, op: ir.ForOp, lb, ub, st, inits) -> ir.ForOp:
        new = self.b.create(ir.ForOp, lb, ub, st, inits)
        new.attrs.update(op.attrs)
        self.vmap[op.iv] = [new.iv]
        self._bind(op.iter_args, new.iter_args)
        with self.b.at(new.body):
            self.region(op.body)
        self._check_block(new.body, [a.type for a in new.iter_args], op)
        return new

    # ---- which loads, and the conditions ----------------------------------------------------------
    def plan(self, loop: ir.ForOp):
        """(the loads to mark, loop-invariant conditions as (terms, upper): 0 <= sum of terms, and
        <= sum of upper unless it is None, bounds on the induction variable as terms) or None."""
        step = loop.operands[2].op
        if not (isinstance(step, ir.ConstantOp) and isinstance(step.value, int) and step.value > 0) or \
                loop.operands[0].type != T.int32:
            return None
        self.inner = {o for o in loop.walk() if o is not loop}
        self.loop_op = loop
        loads, invariant, bounds = [], [], []
        for op in loop.body.ops:
            if not isinstance(op, ir.LoadNdOp):
                continue
            got = self.load_conditions(op, loop)
            if got is not None:
                loads.append(op)
                invariant += got[0]
                bounds += got[1]
        return (loads, invariant, bounds) if loads else None

    def load_conditions(self, op: ir.LoadNdOp, loop: ir.ForOp):
        td = op.tdesc
        create = td.op
        t = op.result.type
        if not isinstance(create, ir.CreateNdTDescOp) or create in self.inner or create.rank != 2 or \
                not isinstance(t, VectorType) or t.rank != 2 or op in self.fused:
            return None
        tr = bool(op.attrs.get("transpose"))
        elem = td.type.elem
        one = create.strides[1].op
        if elem.is_bool or elem.bits not in (8, 16, 32) or not (isinstance(one, ir.ConstantOp) and one.value == 1):
            return None
        forms = []
        for base_off, off in zip(create.offsets, op.offsets):
            f = self.affine(off)
            if f is None or f[0] not in (0, 1):
                return None
            forms.append((f[0], f[1] + [(1, self.term(base_off))]))
        col = self.col_multiple(forms[1], loop)
        if not self.aligned(create, col, elem.itemsize):
            return None
        ext = tuple(reversed(t.shape)) if tr else tuple(t.shape)
        width = gcd(col, known_multiple(create.shape[1], args=self.multiples))
        if width > 1:
            self.whole[op] = width
        invariant, bounds = [], []
        for (coef, terms), n, e in zip(forms, map(self.term, create.shape), ext):
            if coef == 0:   # 0 <= o and o <= n - e
                invariant.append((terms, [(1, n), (-1, e)]))
            else:           # o at the first iteration >= 0; k <= n - e - (o - k)
                invariant.append((terms + [(1, loop.operands[0])], None))
                bounds.append([(1, n), (-1, e)] + [(-s, t) for s, t in terms])
        return invariant, bounds

    @staticmethod
    def term(v):
        """A value defined before the loop as a term: its int when it is a constant."""
        op = v.op
        if isinstance(op, ir.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
            return op.value
        return v

    def affine(self, v) -> Optional[Form]:
        """``v`` as ``coef * iv + sum of terms`` (terms: ints and values defined before the loop)."""
        if v is self.loop_op.iv:
            return 1, []
        op = v.op
        if op is None:
            return (0, [(1, v)]) if not self._defined_inside(v) else None
        if isinstance(op, ir.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
            return 0, [(1, op.value)]
        if op not in self.inner:
            return 0, [(1, v)]
        if isinstance(op, ir.BinaryOp) and op.kind == "muli":
            a, b = self.affine(op.operands[0]), self.affine(op.operands[1])
            if a is None or b is None:
                return None
            for x, y in ((a, b), (b, a)):   # a constant times a form of constants and the variable
                if x[0] == 0 and all(isinstance(v, int) for _, v in x[1]):
                    c = sum(s * v for s, v in x[1])
                    if c == 1:
                        return y
                    if all(isinstance(v, int) for _, v in y[1]):
                        return y[0] * c, [(s * c, v) for s, v in y[1]]
            return None
        if isinstance(op, ir.BinaryOp) and op.kind in ("addi", "subi"):
            a, b = self.affine(op.operands[0]), self.affine(op.operands[1])
            if a is None or b is None:
                return None
            s = 1 if op.kind == "addi" else -1
            return a[0] + s * b[0], a[1] + [(s * x, t) for x, t in b[1]]
        return None

    def _defined_inside(self, v) -> bool:
        blk = v.owner
        return blk is self.loop_op.body or any(blk in o.regions for o in self.inner)

    def col_multiple(self, col_form: Form, loop: ir.ForOp) -> int:
        """A number every iteration's tile column (``col_form``) is a multiple of (0: always 0)."""
        coef, terms = col_form
        col = 0
        for _, t in terms:
            col = gcd(col, t if isinstance(t, int) else known_multiple(t, args=self.multiples))
        if coef:
            lb, _, st = loop.operands[:3]
            col = gcd(col, gcd(known_multiple(lb, args=self.multiples), st.op.value))
        return col

    def aligned(self, create, col: int, size: int) -> bool:
        """Whether every iteration's tile column (a multiple of ``col``) is a whole dword from
        memory's start: the base pointer's alignment, the row pitch and the column known multiples."""
        if size >= 4:
            return True
        param, offset = pointer_base(create.base, self.args, self.multiples)
        if param is None:
            return False
        align = gcd(self.pointer_align.get(param, 1), offset) if offset else self.pointer_align.get(param, 1)
        pitch = known_multiple(create.strides[0], args=self.multiples) * size
        return align % 4 == 0 and pitch % 4 == 0 and (col * size) % 4 == 0

    # ---- the split point --------------------------------------------------------------------------
    def value(self, terms) -> object:
        out = 0
        ints = sum(s * t for s, t in terms if isinstance(t, int))
        terms = [(s, t) for s, t in terms if not isinstance(t, int)] + ([(1, ints)] if ints else [])
        for s, t in terms:
            v = t if isinstance(t, int) else self.get(t)
            if isinstance(v, int) and isinstance(out, int):
                out += s * v
            elif s > 0:
                out = self.iadd(out, v)
            else:
                out = self._arith("subi", out, v, lambda x, y: x - y)
        return out

    def cmp(self, pred: str, a, c):
        return self.b(ir.CmpOp, pred, self.i32(a), self.i32(c))

    def split_point(self, lb, ub, st, invariant, bounds):
        """``lb + step * (number of first iterations every load lies inside in)``, ``lb`` when an
        invariant condition fails or there is none."""
        last = self._arith("subi", ub, 1, lambda x, y: x - y)
        for b in bounds:
            last = self.b(ir.BinaryOp, "minsi", self.i32(last), self.i32(self.value(b)))
        n = self._arith("subi", last, lb, lambda x, y: x - y)
        ok = self.cmp("sge", n, 0)
        for terms, upper in invariant:
            o = self.value(terms)
            if not (isinstance(o, int) and o >= 0):
                ok = self.b(ir.BinaryOp, "andi", ok, self.cmp("sge", o, 0))
            if upper is not None:
                ok = self.b(ir.BinaryOp, "andi", ok, self.cmp("sle", o, self.value(upper)))
        count = self.iadd(self.b(ir.BinaryOp, "divsi", self.i32(n), st), 1)
        split = self.iadd(lb, self.b(ir.BinaryOp, "muli", self.i32(count), st))
        return self.b(ir.SelectOp, ok, split, lb)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if ctx.target.has_block2d or not any(isinstance(op, ir.LoadNdOp) and op.parent is not func.body
                                         for op in func.walk()):
        return func
    return SplitEdges(ctx).run(func)
