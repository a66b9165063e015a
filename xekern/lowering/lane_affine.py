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
        self._ivs = {op.iv for op in func.walk() if isinstance(op, ir.ForOp)}
        self._args = set(func.args)
        self.atoms: Dict[int, Value] = {}   # id -> the uniform scalar a polynomial's atom stands for

    # ---- uniform scalars -------------------------------------------------------------------------
    def uniform(self, v: Value) -> bool:
        """Whether the scalar ``v`` is the same in every lane of the subgroup (conservatively)."""
        got = self._uniform.get(v)
        if got is None:
            op = v.op
            if v in self._args or v in self._ivs:
                got = True
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
            return self._binary(op)
        return None

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
        at, rest = s, k
        while rest:
            w = next((w for w in widths if w <= rest), None)
            if w is None:
                break
            out.append((at, w))
            at, rest = at + w, rest - w
        s += k
    return out
