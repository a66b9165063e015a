"""Pass ``block-pointers``: a pointer tile that is a block of a row-strided matrix, feeding a
``dot``, is loaded through a tensor descriptor (2D block messages).

Triton's tutorial 03 loads its DPAS operands through pointer tiles::

    offs_am = (pid_m * BLOCK_SIZE_M + xl.arange(0, BLOCK_SIZE_M)) % M
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    for k in ...:
        a = xl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        a_ptrs += BLOCK_SIZE_K * stride_ak

``tile_affine`` writes element ``(i, j)`` of the offsets as ``U + i * stride_am + j`` (``stride_ak``
is 1: an integer argument equal to 1 is a specialization of its own) and the mask as the bound
``j + 32 * k - K < 0``: the tile is the block at column ``32 * k`` of a matrix ``K`` wide, whose
masked-off elements are the ones a descriptor load pads with zero. The load becomes::

    %d = xegpu.create_nd_tdesc (addptr %a_ptr, U - 32 * k), [BM, K], [stride_am, 1], [0, 0]
    %a = xegpu.load_nd %d[0, 32 * k]                               (a select when ``other`` is not 0)

What the bounds cannot say becomes a uniform condition: ``% M`` is the identity while the block
does not wrap (``0 <= pid_m * BM`` and ``pid_m * BM + BM <= M``), and a mask conjunct of another
shape must be all true. Conditions that do not change in the innermost loop around the load
*unswitch* it: ``scf.if %ok { the loop with descriptor loads } else { the loop as written }``, so
the hot loop holds no element-wise path; other conditions choose per load between the descriptor
load and the original ``load_gather``.

Taken for a 2-D ``load_gather`` of 8-, 16- or 32-bit elements whose only uses are ``dot``
operands, on targets with 2D block IO, when the offsets have a unit column stride, and the width
and pitch are constants meeting the surface rules or kernel arguments (``surface-rules``, the next
pass, then checks those at launch as for any descriptor). A carried base pointer that the loop
yields unchanged is taken from before the loop.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from .. import ir
from ..ir import types as T
from ..ir.core import Op, Value, users
from ..ir.types import TensorDescType, VectorType
from .poly import Poly, const, constant_of, padd, pmul
from .rewrite import STRUCTURED_RULES, Rewriter, drop_dead
from .tile_affine import Condition, TileAffine


class Plan(NamedTuple):
    base: Value                   # the scalar base pointer (old function)
    origin: Poly                  # elements from ``base`` to the descriptor's (0, 0)
    shape: tuple                  # (rows, columns) of the described matrix: Poly each
    pitch: Poly                   # elements from one row to the next
    offsets: tuple                # the block's (row, column) in it: Poly each
    conditions: List[Condition]   # uniform conditions for the descriptor load to be right
    select: bool                  # masked-off elements take ``other`` (not zero): select after
    loop: Optional[ir.ForOp]      # the loop the conditions unswitch (None: a branch per load)


def _unchanged_carry(p: Value, carried: Dict[Value, tuple]) -> Value:
    """``p``, or the value before the loop when ``p`` is a loop's carried value it yields unchanged."""
    while p in carried:
        loop, k = carried[p]
        if loop.body.terminator.operands[k] is not p:
            break
        p = loop.inits[k]
    return p


def _common(p: Poly, whole: Poly, scale: Poly) -> Poly:
    """The terms ``t`` of ``p`` for which ``whole`` holds ``t * scale`` (term by term)."""
    terms = dict(whole)
    out = []
    for m, c in p:
        if all(terms.get(mm) == cc for mm, cc in pmul(((m, c),), scale)):
            out.append((m, c))
    return tuple(out)


def _is_zero(v: Optional[Value]) -> bool:
    while v is not None and isinstance(v.op, ir.BroadcastOp):
        v = v.op.operands[0]
    return v is None or (isinstance(v.op, ir.ConstantOp) and v.op.value == 0)


class BlockPointers(Rewriter):
    NAME = "block-pointers"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.LoadGatherOp] = "rule_load_gather"
    RULES[ir.ForOp] = "rule_loop"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.info = TileAffine(func)
        self.args = set(func.args)
        # program order of the values, to emit a polynomial's terms in an order that does not depend
        # on where Python put the values (monomials are sorted by id)
        self.order: Dict[int, int] = {id(a): i for i, a in enumerate(func.args)}
        for op in func.walk():
            for v in list(op.results) + [a for r in op.regions for a in r.args]:
                self.order.setdefault(id(v), len(self.order))
        uses = users(func)
        carried = {a: (op, k) for op in func.walk() if isinstance(op, ir.ForOp) for k, a in enumerate(op.iter_args)}
        self.loop_of: Dict[Op, ir.ForOp] = {}
        self._enclose(func.body, None)
        self.plans: Dict[Op, Plan] = {}
        for op in func.walk():
            if isinstance(op, ir.LoadGatherOp):
                plan = self._plan(op, uses, carried)
                if plan is not None:
                    self.plans[op] = plan
        self.unswitch: Dict[ir.ForOp, List[Condition]] = {}
        for plan in self.plans.values():
            if plan.loop is not None:
                self.unswitch.setdefault(plan.loop, []).extend(plan.conditions)
        self.taken: set = set()   # loops being rebuilt with their descriptor loads
        self.replaced: List[Value] = []   # what replaced gathers read: dropped where nothing else does
        out = super().run(func)
        drop_dead(out, self.replaced)
        return out

    def _enclose(self, block, loop) -> None:
        for op in block.ops:
            self.loop_of[op] = loop
            for r in op.regions:
                self._enclose(r, op if isinstance(op, ir.ForOp) else loop)

    # ---- analysis ---------------------------------------------------------------------------------
    def _plan(self, op: ir.LoadGatherOp, uses, carried) -> Optional[Plan]:
        t = op.result.type
        readers = uses.get(op.result, [])
        if not readers or not all(isinstance(r, ir.DpasOp) and i < 2 for r, i in readers):
            return None
        if not isinstance(t, VectorType) or t.rank != 2 or t.elem.bits not in (8, 16, 32) or t.elem.is_bool \
                or op.attrs.get("volatile") or self.target.block2d_for(t.elem) is None:
            return None
        td = op.operands[0]
        if not isinstance(td.op, ir.CreateTDescOp) or td.type.chunk_size != 1:
            return None
        form = self.info.form(td.op.operands[1])
        if form is None or len(form.coeffs) != 2 or constant_of(form.coeffs[1]) != 1 or not form.coeffs[0]:
            return None
        mask = self.info.bounds_by_axis(op.operands[1])
        if mask is None:
            return None
        bounds, conditions = mask
        pitch = form.coeffs[0]
        # a bound idx + E < 0 on an axis: E = offset - extent, with the offset's terms in the origin
        row_off = _common(bounds.get(0, ()), form.base, pitch)
        col_off = _common(bounds.get(1, ()), form.base, const(1))
        rows = padd(row_off, bounds[0], -1) if 0 in bounds else const(t.shape[0])
        cols = padd(col_off, bounds[1], -1) if 1 in bounds else const(t.shape[1])
        if not (self._surface_term(cols, t.elem.itemsize, "width") and
                self._surface_term(pitch, t.elem.itemsize, "pitch")):
            return None
        origin = padd(padd(form.base, pmul(row_off, pitch), -1), col_off, -1)
        # (a descriptor pads negative coordinates too: the block's must not be)
        conditions = [("ge0", g) for g in form.guards + (row_off, col_off) if not self.info.nonnegative(g)] + \
            conditions
        if any(kind == "ge0" and (constant_of(g) or 0) < 0 for kind, g in conditions):
            return None   # (never all true)
        conditions = [(kind, g) for kind, g in conditions if kind != "ge0" or constant_of(g) is None]
        loop = self.loop_of.get(op)
        if loop is not None and not all(self._invariant(c, loop) for c in conditions):
            loop = None
        return Plan(_unchanged_carry(td.op.operands[0], carried), origin, (rows, cols), pitch,
                    (row_off, col_off), conditions, not _is_zero(op.operands[2] if len(op.operands) > 2 else None),
                    loop if conditions else None)

    def _surface_term(self, p: Poly, eb: int, what: str) -> bool:
        """A width or pitch (in elements) the surface rules can judge: a constant that meets them,
        or one kernel argument (checked at launch)."""
        rules = self.target.block2d_surface
        c = constant_of(p)
        if c is not None:
            least, align = (rules.min_width, rules.width_align) if what == "width" else \
                (rules.min_pitch, rules.pitch_align)
            return c * eb >= least and (c * eb) % align == 0
        return len(p) == 1 and p[0][1] == 1 and len(p[0][0]) == 1 and self.info.values[p[0][0][0]] in self.args

    def _invariant(self, c: Condition, loop: ir.ForOp) -> bool:
        kind, x = c
        if kind == "true":
            return not any(x is r for o in loop.walk() for r in o.results)
        return self.info.invariant(x, loop)

    # ---- the rewrite ------------------------------------------------------------------------------
    def rule_loop(self, op: ir.ForOp):
        conditions = self.unswitch.get(op)
        if not conditions:
            return self.rewrite_for(op)
        ok = self.all_hold(conditions, op.iv.type if op.iv.type.is_int else T.int32)
        branch = self.b.create(ir.IfOp, ok, [r.type for r in op.results])
        with self.b.at(branch.then_block):
            self.taken.add(op)
            results = self.rewrite_for(op)
            self.taken.discard(op)
            self.b.create(ir.YieldOp, [v for vals in results for v in vals])
        with self.b.at(branch.else_block):
            results = self.rewrite_for(op)
            self.b.create(ir.YieldOp, [v for vals in results for v in vals])
        return [[r] for r in branch.results]

    def rule_load_gather(self, op: ir.LoadGatherOp):
        plan = self.plans.get(op)
        if plan is None or (plan.loop is not None and plan.loop not in self.taken):
            return self.piecewise(op)
        itype = op.operands[0].op.operands[1].type.elem      # the offsets' integer type
        if plan.loop is not None or not plan.conditions:
            self.replaced.extend(self.get(v) for v in op.operands)
            return [[self._block_load(op, plan, itype)]]
        branch = self.b.create(ir.IfOp, self.all_hold(plan.conditions, itype), [op.result.type])
        with self.b.at(branch.then_block):
            self.b.create(ir.YieldOp, [self._block_load(op, plan, itype)])
        with self.b.at(branch.else_block):
            self.b.create(ir.YieldOp, [self.piecewise(op)[0][0]])
        return [[branch.results[0]]]

    def all_hold(self, conditions: List[Condition], itype) -> Value:
        ok = None
        for kind, c in conditions:
            test = self.get(c) if kind == "true" else \
                self.b(ir.CmpOp, "sge", self.materialize(c, itype), self.b(ir.ConstantOp, 0, itype))
            ok = test if ok is None else self.b(ir.BinaryOp, "andi", ok, test)
        return ok

    def _block_load(self, op: ir.LoadGatherOp, plan: Plan, itype) -> Value:
        t = op.result.type
        base = self.get(plan.base)
        if plan.origin:
            base = self.b(ir.AddPtrOp, base, self.materialize(plan.origin, itype))
        shape, (pitch, one), offsets = ([self.materialize(p, T.int32) for p in ps]
                                        for ps in (plan.shape, (plan.pitch, const(1)), plan.offsets))
        zero = self.b(ir.ConstantOp, 0, T.int32)
        d = self.b(ir.CreateNdTDescOp, base, shape, [pitch, one], [zero, zero], TensorDescType(t.shape, t.elem))
        v = self.b(ir.LoadNdOp, d, offsets, VectorType(t.shape, t.elem))
        if plan.select:
            v = self.b(ir.SelectOp, self.get(op.operands[1]), v, self.get(op.operands[2]))
        return v

    def materialize(self, p: Poly, itype) -> Value:
        """The polynomial ``p`` as scalar arithmetic of type ``itype``, here (a lone argument or
        constant as itself, so the surface rules see it)."""
        total = None
        rank = self.order.get
        for mono, coeff in sorted(p, key=lambda mc: sorted(rank(x, -1) for x in mc[0])):
            term = None
            for x in sorted(mono, key=lambda x: rank(x, -1)):
                v = self.get(self.info.values[x])
                if v.type != itype:
                    v = self.b(ir.CastOp, "extsi" if v.type.bits < itype.bits else "trunci", v, itype)
                term = v if term is None else self.b(ir.BinaryOp, "muli", term, v)
            if term is None:
                term = self.b(ir.ConstantOp, coeff, itype)
            elif coeff != 1:
                term = self.b(ir.BinaryOp, "muli", term, self.b(ir.ConstantOp, coeff, itype))
            total = term if total is None else self.b(ir.BinaryOp, "addi", total, term)
        return total if total is not None else self.b(ir.ConstantOp, 0, itype)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not ctx.target.has_block2d or not any(isinstance(op, ir.LoadGatherOp) for op in func.walk()):
        return func   # (nothing to raise: no copy)
    return BlockPointers(ctx).run(func)
