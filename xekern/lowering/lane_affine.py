"""Lane-level axis analysis: each slot of an integer value as a uniform part plus a multiple of the lane id.

At lane level a tile is a vector of slots per work item. For the offsets of a pointer tile, what
decides the memory message is how a slot varies across the lanes of the subgroup and from slot to
slot. This analysis writes slot ``s`` of an integer value as

    U_s + a_s * lane_id

where ``U_s`` is a polynomial in *uniform* scalars (the same in every lane: kernel arguments, the
program id, the subgroup id, loop induction variables and what is computed from them only) with
integer coefficients, and ``a_s`` an integer. ``vector.step`` pieces, ``lane_layout``-driven lane
offsets (``lane_id % 16``), broadcasts, slot shuffles, sums and products with uniform values keep
that form (as Triton's AxisInfo keeps contiguity and divisibility); anything else is unknown (None).

Slots ``s, s+1, ..., s+k-1`` are one *block run* when ``a = 1`` in each and ``U`` grows by exactly
``sg`` from one to the next: lane ``l`` of slot ``s + j`` then holds element ``U_s + j * sg + l``, the
order of a sub-group block read of ``k`` rows (``codegen/block_io.py``).

    >>> # offsets = pid * 1024 + arange(1024) on 4 subgroups: lane l, slot j -> pid*1024 + 256*sid + 16*j + l
    >>> runs(form, sg=16)      # doctest: +SKIP
    [(0, 8), (8, 8)]
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Value
from .poly import Poly, constant_of, padd, pmul, poly

# one slot: (uniform part, lane coefficient)
Slot = Tuple[Poly, int]
Form = Tuple[Slot, ...]

_UNIFORM_SOURCES = (ir.BlockIdOp, ir.GridDimOp, ir.SubgroupIdOp, ir.NumSubgroupsOp, ir.ConstantOp)
_UNIFORM_IF_OPERANDS = (ir.BinaryOp, ir.CastOp, ir.SelectOp, ir.CmpOp, ir.FmaOp, ir.UnaryOp)


class LaneAffine:
    """The forms of a function's integer values (memoized); ``form(v)`` is None where unknown."""

    def __init__(self, func: ir.FuncOp, sg: int):
        self.sg = sg
        self._uniform: Dict[Value, bool] = {}
        self._form: Dict[Value, Optional[Form]] = {}
        loops = [op for op in func.walk() if isinstance(op, ir.ForOp)]
        self._ivs = {op.iv for op in loops}
        self._carried = {arg: (op, i) for op in loops for i, arg in enumerate(op.iter_args)}
        self._args = set(func.args)
        self.atoms: Dict[int, Value] = {}   # id -> the uniform scalar a polynomial's atom stands for
        self._fresh = 0                     # the last atom made for one slot of a tile (negative ids)

    # ---- uniform scalars -------------------------------------------------------------------------
    def uniform(self, v: Value) -> bool:
        """Whether the scalar ``v`` is the same in every lane of the subgroup (conservatively)."""
        got = self._uniform.get(v)
        if got is None:
            op = v.op
            if v in self._args or v in self._ivs:
                got = True
            elif v in self._carried:
                got = self._carried_uniform(v, *self._carried[v])
            elif op is None or isinstance(getattr(v.type, "shape", None), tuple):
                got = False
            elif isinstance(op, _UNIFORM_SOURCES):
                got = not isinstance(op.result.type, ir.VectorType)
            elif isinstance(op, (*_UNIFORM_IF_OPERANDS, ir.AddPtrOp, ir.PtrCastOp)):
                got = all(self.uniform(x) for x in op.operands)
            else:
                got = False
            self._uniform[v] = got
        return got

    def _carried_uniform(self, v: Value, loop: ir.ForOp, i: int) -> bool:
        """A scalar a loop carries is uniform when its initial value is and the value yielded for it
        is, taking it as uniform (then it is in every iteration). What was decided meanwhile on that
        assumption is forgotten when it fails."""
        if isinstance(v.type, ir.VectorType) or not self.uniform(loop.inits[i]):
            return False
        body = loop.body.ops
        if not body or not body[-1].IS_TERMINATOR:
            return False
        before = set(self._uniform)
        self._uniform[v] = True
        if self.uniform(body[-1].operands[i]):
            return True
        for key in set(self._uniform) - before:
            del self._uniform[key]
        return False

    # ---- forms ---------------------------------------------------------------------------------
    def form(self, v: Value) -> Optional[Form]:
        if v not in self._form:
            self._form[v] = None          # (a cycle through a loop's carried value stays unknown)
            self._form[v] = self._compute(v)
        return self._form[v]

    def _scalar(self, poly: Poly, a: int = 0) -> Form:
        return ((poly, a),)

    def _compute(self, v: Value) -> Optional[Form]:
        op = v.op
        t = v.type
        is_vec = isinstance(t, ir.VectorType)
        if not is_vec and not getattr(t, "is_int", False):
            return None
        if isinstance(op, ir.ConstantOp):
            val = op.value
            if isinstance(val, tuple):
                return tuple((poly({(): int(x)}), 0) for x in val)
            if isinstance(val, bool) or not isinstance(val, int):
                return None
            return self._scalar(poly({(): val}))
        if isinstance(op, ir.LaneIdOp):
            return self._scalar((), 1)
        if op is None and v in self._carried and is_vec:
            return self._carried_form(v, *self._carried[v])
        if not is_vec and self.uniform(v):
            if isinstance(op, ir.BinaryOp) and op.kind in ("addi", "subi", "muli"):
                f = self._binary(op)           # (keeps sums of uniforms comparable)
                if f is not None:
                    return f
            self.atoms[id(v)] = v
            return self._scalar(poly({(id(v),): 1}))
        if isinstance(op, ir.BroadcastOp):
            f = self.form(op.operands[0])
            return f * t.shape[0] if f is not None and len(f) == 1 else None
        if isinstance(op, ir.SlotShuffleOp):
            srcs = [self.form(x) for x in op.operands]
            if any(f is None for f in srcs):
                return None
            flat = [s for f in srcs for s in f]
            return tuple(flat[i] for i in op.indices)
        if isinstance(op, ir.CastOp) and op.kind in ("extsi", "extui", "trunci", "index_cast"):
            return self.form(op.operands[0])
        if isinstance(op, ir.BinaryOp):
            f = self._binary(op)
            if f is not None:
                return f
        return self._slotwise_uniform(v)

    def _slotwise_uniform(self, v: Value) -> Optional[Form]:
        """A tile computed without side effects from tiles the same in every lane slot by slot
        (``(pid * BM + arange(BM)) % M`` along a tile's rows) is too, each slot an unknown uniform
        value of its own (an atom no other value shares)."""
        op = v.op
        if not isinstance(op, _UNIFORM_IF_OPERANDS) or not isinstance(v.type, ir.VectorType):
            return None
        forms = [self.form(x) for x in op.operands]
        if any(f is None or any(a for _, a in f) for f in forms):
            return None
        out = []
        for _ in range(v.type.shape[0] if v.type.rank == 1 else 0):
            self._fresh -= 1
            out.append((poly({(self._fresh,): 1}), 0))
        return tuple(out) or None

    def _carried_form(self, v: Value, loop: ir.ForOp, i: int) -> Optional[Form]:
        """A tile a loop carries and steps by a loop-invariant uniform amount (a pointer tile's
        ``a_ptrs += BLOCK_K * stride``): at iteration ``t`` of a loop from constant ``lb`` in steps
        of 1 it is ``init + t * delta``, ``t = iv - lb``: the initial form plus a uniform part.
        Anything else is unknown."""
        lb, step = (constant_of(self._scalar_poly(x)) for x in (loop.operands[0], loop.operands[2]))
        yielded = loop.body.ops[-1].operands[i] if loop.body.ops and loop.body.ops[-1].IS_TERMINATOR else None
        if lb is None or step != 1 or yielded is None:
            return None
        init = self.form(loop.inits[i])
        if yielded is v:
            return init
        op = yielded.op
        if init is None or not (isinstance(op, ir.BinaryOp) and op.kind == "addi" and v in op.operands):
            return None
        delta = op.operands[1] if op.operands[0] is v else op.operands[0]
        step_form = self.form(delta) if self._invariant(delta, loop) else None
        if step_form is None or any(a for _, a in step_form):
            return None
        t = padd(self._scalar_poly(loop.iv), poly({(): lb}), -1)
        if len(step_form) == 1:
            step_form = step_form * len(init)
        if len(step_form) != len(init):
            return None
        return tuple((padd(p, pmul(t, q)), a) for (p, a), (q, _) in zip(init, step_form))

    def _scalar_poly(self, v: Value) -> Optional[Poly]:
        f = self.form(v)
        return f[0][0] if f is not None and len(f) == 1 and f[0][1] == 0 else None

    def _invariant(self, v: Value, loop: ir.ForOp) -> bool:
        """Whether ``v`` has the same value in every iteration of ``loop``: defined outside it, or
        computed inside from such values without side effects (no block argument of it or of a loop
        in it)."""
        op = v.op
        if op is None:   # a block argument: of the loop's body or a block in it, or from outside
            return not self._inside(v.owner, loop)
        if not self._inside(op.parent, loop):
            return True
        return not (op.HAS_SIDE_EFFECTS or op.regions) and all(self._invariant(x, loop) for x in op.operands)

    @staticmethod
    def _inside(block, loop: ir.ForOp) -> bool:
        while block is not None:
            if block.parent is loop:
                return True
            block = block.parent.parent if block.parent is not None else None
        return False

    def _binary(self, op: ir.BinaryOp) -> Optional[Form]:
        x, y = (self.form(o) for o in op.operands)
        if x is None or y is None:
            return None
        if len(x) != len(y):
            x, y = (x * len(y), y) if len(x) == 1 else (x, y * len(x)) if len(y) == 1 else (None, None)
            if x is None:
                return None
        if op.kind in ("addi", "subi"):
            sign = 1 if op.kind == "addi" else -1
            return tuple((padd(p, q, sign), a + sign * b) for (p, a), (q, b) in zip(x, y))
        if op.kind == "muli":
            out = []
            for (p, a), (q, b) in zip(x, y):
                if a and b:
                    return None
                if a:                           # lane-dependent times a constant only
                    c = constant_of(q)
                    if c is None:
                        return None
                    out.append((pmul(p, q), a * c))
                elif b:
                    c = constant_of(p)
                    if c is None:
                        return None
                    out.append((pmul(p, q), b * c))
                else:
                    out.append((pmul(p, q), 0))
            return tuple(out)
        if op.kind in ("remui", "divui"):
            return self._lane_div(op.kind, x, y)
        return None

    def _lane_div(self, kind: str, x: Form, y: Form) -> Optional[Form]:
        """``(c + a * lane) % d`` and ``// d`` for constant ``c >= 0``, ``a >= 0``, ``d > 0`` when no lane
        crosses a multiple of ``d`` (the lane offsets of ``lane_layout`` splits)."""
        out = []
        for (p, a), (q, b) in zip(x, y):
            c, d = constant_of(p), constant_of(q)
            if c is None or d is None or d <= 0 or c < 0 or a < 0 or b != 0:
                return None
            lo, hi = c, c + a * (self.sg - 1)
            if lo // d != hi // d:
                return None
            out.append((poly({(): lo % d}), a) if kind == "remui" else (poly({(): lo // d}), 0))
        return tuple(out)


def slot_at(form: Form, s: int) -> Slot:
    """Slot ``s`` of ``form`` (a scalar's one slot stands for all)."""
    return form[s] if len(form) > 1 else form[0]


def uniform_over(form: Form, slots) -> bool:
    """Whether ``form`` is the same uniform value at every one of ``slots`` (no lane in it)."""
    first = slot_at(form, slots[0])
    return all(slot_at(form, s)[1] == 0 and slot_at(form, s)[0] == first[0] for s in slots)


def contiguous_over(form: Form, slots, sg: int) -> bool:
    """Whether lane ``l`` of ``slots[j]`` is ``base + j * sg + l`` (one block run in that order)."""
    first = slot_at(form, slots[0])
    return all(slot_at(form, s)[1] == 1 and constant_of(padd(slot_at(form, s)[0], first[0], -1)) == j * sg
               for j, s in enumerate(slots))


def add_forms(f: Form, g: Form) -> Form:
    """Slot by slot, the form of the sum of two values of the same slot count."""
    return tuple((padd(p, q), a + b) for (p, a), (q, b) in zip(f, g))


def runs(form: Optional[Form], sg: int, widths=(8, 4, 2)) -> List[Tuple[int, int]]:
    """(first slot, slot count) of each block read covering ``form``'s block runs (see the module
    docstring), widest first (``widths``); a slot left alone (a run of one) is in none."""
    if form is None:
        return []
    out, s, n = [], 0, len(form)
    while s < n:
        k = 1
        if form[s][1] == 1:
            while s + k < n and form[s + k][1] == 1 and \
                    constant_of(padd(form[s + k][0], form[s + k - 1][0], -1)) == sg:
                k += 1
        at, rest = s, k if form[s][1] == 1 else 0   # (a slot not along the lanes is in no run)
        while rest:
            w = next((w for w in widths if w <= rest), None)
            if w is None:
                break
            out.append((at, w))
            at, rest = at + w, rest - w
        s += k
    return out
