"""Workgroup-level axis analysis: an integer tile as an affine function of its element indices.

At workgroup level a scalar is one value for the whole workgroup, so every integer scalar is a
*uniform* term. This analysis writes element ``(i0, i1, ...)`` of an integer tile as

    U + c0 * i0 + c1 * i1 + ...

with ``U`` and each ``ck`` polynomials in uniform scalars (``poly.py``), valid under *guards*
(uniform conditions ``g >= 0``). ``xl.arange`` (``vector.step``), broadcasts, unit-dimension
shape casts, sums, products with uniforms and integer casts keep that form; ``x % M`` keeps ``x``
when every element of ``x`` is in ``[0, M)`` (two guards: Triton's ``(pid * BM + arange(BM)) % M``
is the identity wherever the block does not wrap); a loop's carried tile that each iteration
moves by a uniform amount (``a_ptrs += BK * stride_ak``) is its initial form plus the iteration
count times that amount. A boolean tile is *all true* under conditions derived the same way:
``x < y`` over the tile holds when the largest ``x - y`` does (Triton's ``offs_k[None, :] < K - k
* BK``).

    >>> # offs = (pid_m * 64 + arange(64)) % M; offs[:, None] * s + arange(32)[None, :]
    >>> # -> U = 64 * pid_m * s, coefficients (s, 1); guards 64 * pid_m >= 0, M - 64 * pid_m - 64 >= 0
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Tuple

from .. import ir
from ..ir.core import Value
from ..ir.types import VectorType
from .poly import Poly, const, constant_of, padd, pmul, poly


class Tile(NamedTuple):
    """``U + sum(coeffs[k] * i_k)`` over a tile's indices, valid when every guard is ``>= 0``."""
    base: Poly
    coeffs: Tuple[Poly, ...]
    guards: Tuple[Poly, ...] = ()


# a condition for a whole boolean tile to be true: ("ge0", poly) or ("true", i1 scalar value)
Condition = Tuple[str, object]

_ORDERED = {"slt": (-1, 1), "sle": (0, 1), "sgt": (1, -1), "sge": (0, -1)}   # pred -> (offset, sign)
# x <pred> y as e < 0 with e = sign * (x - y) + add: d < 0, d - 1 < 0, -d < 0, -d - 1 < 0
_NEGATIVE = {"slt": (1, 0), "sle": (1, -1), "sgt": (-1, 0), "sge": (-1, -1)}


def _scale(t: Tile, p: Poly) -> Tile:
    return Tile(pmul(t.base, p), tuple(pmul(c, p) for c in t.coeffs), t.guards)


def _sum(a: Tile, b: Tile, sign: int = 1) -> Tile:
    return Tile(padd(a.base, b.base, sign), tuple(padd(x, y, sign) for x, y in zip(a.coeffs, b.coeffs)),
                a.guards + b.guards)


class TileAffine:
    """The forms of a workgroup-level function's integer values (memoized; None where unknown)."""

    def __init__(self, func: ir.FuncOp):
        self.values: Dict[int, Value] = {}          # id -> the scalar a monomial names
        self._form: Dict[Value, Optional[Tile]] = {}
        self._carried: Dict[Value, Tuple[ir.ForOp, int]] = {}
        self._inside: Dict[ir.ForOp, set] = {}
        self._loops = [op for op in func.walk() if isinstance(op, ir.ForOp)]
        for op in self._loops:
            for k, a in enumerate(op.iter_args):
                self._carried[a] = (op, k)

    # ---- integer values ---------------------------------------------------------------------------
    def form(self, v: Value) -> Optional[Tile]:
        if v not in self._form:
            self._form[v] = None            # (a cycle stays unknown)
            self._form[v] = self._compute(v)
        return self._form[v]

    def _atom(self, v: Value) -> Tile:
        self.values[id(v)] = v
        return Tile(poly({(id(v),): 1}), ())

    def _compute(self, v: Value) -> Optional[Tile]:
        t = v.type
        if isinstance(t, VectorType):
            return self._tile(v) if t.elem.is_int and not t.elem.is_bool else None
        if not getattr(t, "is_int", False) or getattr(t, "is_bool", False):
            return None
        op = v.op
        if isinstance(op, ir.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
            return Tile(const(op.value), ())
        if isinstance(op, ir.BinaryOp) and op.kind in ("addi", "subi", "muli"):
            x, y = (self.form(o) for o in op.operands)
            if x is not None and y is not None:
                if op.kind == "muli":
                    return Tile(pmul(x.base, y.base), (), x.guards + y.guards)
                return _sum(x, y, 1 if op.kind == "addi" else -1)
        if isinstance(op, ir.CastOp) and op.kind in ("extsi", "extui", "trunci"):
            f = self.form(op.operands[0])
            if f is not None:
                return f
        return self._atom(v)

    def _tile(self, v: Value) -> Optional[Tile]:
        op = v.op
        t: VectorType = v.type
        zero = tuple(() for _ in t.shape)
        if op is None:
            return self._carried_form(v)
        if isinstance(op, ir.StepOp):
            return Tile((), (const(1),))
        if isinstance(op, ir.ConstantOp):
            val = op.value
            return Tile(const(val), zero) if isinstance(val, int) and not isinstance(val, bool) else None
        if isinstance(op, ir.BroadcastOp):
            src = op.operands[0]
            f = self.form(src)
            if f is None:
                return None
            if not isinstance(src.type, VectorType):
                return Tile(f.base, zero, f.guards)
            return Tile(f.base, tuple(c if n == m else () for c, n, m in zip(f.coeffs, src.type.shape, t.shape)),
                        f.guards)
        if isinstance(op, ir.ShapeCastOp):
            f = self.form(op.operands[0])
            if f is None:
                return None
            kept = [c for c, n in zip(f.coeffs, op.operands[0].type.shape) if n != 1]
            coeffs = []
            for n in t.shape:
                coeffs.append(kept.pop(0) if n != 1 else ())
            return Tile(f.base, tuple(coeffs), f.guards)
        if isinstance(op, ir.CastOp) and op.kind in ("extsi", "extui", "trunci"):
            return self.form(op.operands[0])
        if isinstance(op, ir.BinaryOp):
            return self._binary(op, t)
        return None

    def _binary(self, op: ir.BinaryOp, t: VectorType) -> Optional[Tile]:
        x, y = (self.form(o) for o in op.operands)
        if x is None or y is None:
            return None
        if op.kind in ("addi", "subi"):
            return _sum(x, y, 1 if op.kind == "addi" else -1)
        if op.kind == "muli":
            if not any(y.coeffs):
                return _scale(Tile(x.base, x.coeffs, x.guards + y.guards), y.base)
            if not any(x.coeffs):
                return _scale(Tile(y.base, y.coeffs, x.guards + y.guards), x.base)
            return None
        if op.kind in ("remsi", "remui") and not any(y.coeffs):
            lo, hi = self.bounds(x, t.shape)
            if lo is None:
                return None
            # the identity when 0 <= x <= M - 1 over the whole tile
            return Tile(x.base, x.coeffs, x.guards + y.guards + (lo, padd(padd(y.base, hi, -1), const(-1))))
        return None

    def _carried_form(self, v: Value) -> Optional[Tile]:
        """A loop's carried tile that the body moves by a loop-invariant uniform amount ``d`` each
        iteration: its initial form plus ``(iv - lb) / step * d``."""
        if v not in self._carried:
            return None
        loop, k = self._carried[v]
        nxt = loop.body.terminator.operands[k]
        op = nxt.op
        if not isinstance(op, ir.BinaryOp) or op.kind not in ("addi", "subi") or v not in op.operands:
            return None
        other = op.operands[1] if op.operands[0] is v else op.operands[0]
        if op.kind == "subi" and other is op.operands[0]:
            return None
        init, step = self.form(loop.inits[k]), self.form(other)
        if init is None or step is None or any(step.coeffs) or step.guards or \
                not self.invariant(step.base, loop):
            return None
        if op.kind == "subi":
            step = Tile(padd((), step.base, -1), step.coeffs)
        s = constant_of(self.form(loop.operands[2]).base)
        if s is None or s <= 0 or any(c % s for _, c in step.base):
            return None
        per_iv = tuple((m, c // s) for m, c in step.base)
        lb = self.form(loop.operands[0]).base
        moved = padd(pmul(self._atom(loop.iv).base, per_iv), pmul(lb, per_iv), -1)
        return Tile(padd(init.base, moved), init.coeffs, init.guards)

    def invariant(self, p: Poly, loop: ir.ForOp) -> bool:
        """Whether every scalar in ``p`` is defined outside ``loop``."""
        inside = self._inside.get(loop)
        if inside is None:
            inside = self._inside[loop] = {id(r) for o in loop.walk() for r in o.results} | \
                {id(a) for o in loop.walk() for blk in o.regions for a in blk.args}
        return not any(x in inside for m, _ in p for x in m)

    def nonnegative(self, p: Poly) -> bool:
        """Whether ``p`` is provably >= 0: non-negative coefficients over scalars that are (program
        ids, and counters of loops that start at a non-negative constant and count up)."""
        return all(c >= 0 and all(self._nonnegative_scalar(self.values.get(x)) for x in m) for m, c in p)

    def _nonnegative_scalar(self, v: Optional[Value]) -> bool:
        if v is None:
            return False
        if isinstance(v.op, ir.BlockIdOp):
            return True
        for op in self._loops:
            if v is op.iv:
                lb, st = (constant_of(self.form(x).base) for x in op.operands[0:3:2])
                return lb is not None and lb >= 0 and st is not None and st > 0
        return False

    # ---- bounds and boolean tiles -----------------------------------------------------------------
    @staticmethod
    def bounds(f: Tile, shape) -> Tuple[Optional[Poly], Optional[Poly]]:
        """(least, greatest) value over a tile of ``shape``; (None, None) unless each coefficient is
        a constant."""
        lo, hi = f.base, f.base
        for c, n in zip(f.coeffs, shape):
            k = constant_of(c)
            if k is None:
                return None, None
            lo = padd(lo, const(min(0, k) * (n - 1)))
            hi = padd(hi, const(max(0, k) * (n - 1)))
        return lo, hi

    def bounds_by_axis(self, v: Optional[Value]) -> Optional[Tuple[Dict[int, Poly], List[Condition]]]:
        """The mask ``v`` as bounds on index axes and other conditions: ({axis: E}, conditions) where
        element ``idx`` is true when ``idx[axis] + E < 0`` for each listed axis, provided every
        condition holds (a conjunct of another shape becomes a condition for its whole tile).
        Triton's ``offs_k[None, :] < K - k * BK`` is ``{1: 32*k - K}``. None: unknown."""
        if v is None:
            return {}, []
        op = v.op
        if isinstance(op, ir.BroadcastOp) and isinstance(op.operands[0].type, VectorType):
            return self.bounds_by_axis(op.operands[0])
        if isinstance(op, ir.BinaryOp) and op.kind == "andi":
            a, b = (self.bounds_by_axis(o) for o in op.operands)
            if a is None or b is None or set(a[0]) & set(b[0]):
                return None
            return {**a[0], **b[0]}, a[1] + b[1]
        if isinstance(op, ir.CmpOp) and op.pred in _ORDERED and isinstance(v.type, VectorType):
            x, y = (self.form(o) for o in op.operands)
            if x is not None and y is not None and not x.guards and not y.guards:
                sign, add = _NEGATIVE[op.pred]
                e = _scale(_sum(x, y, -1), const(sign))
                e = Tile(padd(e.base, const(add)), e.coeffs)
                axes = [k for k, c in enumerate(e.coeffs) if c]
                if len(axes) == 1 and constant_of(e.coeffs[axes[0]]) == 1:
                    return {axes[0]: e.base}, []
        conds = self.all_true(v)
        return None if conds is None else ({}, conds)

    def all_true(self, v: Optional[Value]) -> Optional[List[Condition]]:
        """Conditions under which every element of the boolean tile ``v`` is true (None: unknown)."""
        if v is None:
            return []
        op = v.op
        if not isinstance(v.type, VectorType):
            return [("true", v)]
        if isinstance(op, ir.ConstantOp):
            return [] if op.value is True or op.value == 1 else None
        if isinstance(op, (ir.BroadcastOp, ir.ShapeCastOp)):
            return self.all_true(op.operands[0])
        if isinstance(op, ir.BinaryOp) and op.kind == "andi":
            a, b = (self.all_true(o) for o in op.operands)
            return None if a is None or b is None else a + b
        if isinstance(op, ir.CmpOp) and op.pred in _ORDERED:
            x, y = (self.form(o) for o in op.operands)
            if x is None or y is None:
                return None
            d = _sum(x, y, -1)
            lo, hi = self.bounds(d, v.type.shape)
            if lo is None:
                return None
            offset, sign = _ORDERED[op.pred]
            # slt: hi < 0 -> -hi - 1 >= 0; sle: -hi >= 0; sgt: lo - 1 >= 0; sge: lo >= 0
            g = padd(pmul(hi, const(-1)), const(offset)) if sign == 1 else padd(lo, const(-offset))
            return [("ge0", p) for p in d.guards] + [("ge0", g)]
        return None
