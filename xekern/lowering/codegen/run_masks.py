"""The mask of a block run of a pointer tile (``pointer_blocks``), from what it is made of.

Triton's masks are bounds: ``offs < n``, ``(rows < M)[:, None] & (cols < N)[None, :]``. Over one block
run (slots whose lane ``l`` holds ``x_0 + j * sg + l``), such a mask needs no per-slot test:

* ``x < n`` with ``x`` contiguous over the run and ``n`` uniform holds everywhere iff it holds for the
  run's last element, ``x_0 + k * sg - 1`` in lane 0: one scalar compare;
* a mask that is uniform over the run (``rows < M`` on one row) is its value in lane 0;
* ``&`` of such is the ``and`` of theirs.

``plan`` reads the mask's IR (through broadcasts and slot shuffles) into such a tree, or None for any
other mask (then the lanes vote, ``sub_group_all``). The tree is evaluated twice: for the whole run
(``all_of``: the block message's test) and per lane for slot ``j`` (``slot_mask``: the loop that takes
the run slot by slot when the block message cannot).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from llvmlite import ir as ll

from ... import ir
from ..lane_affine import LaneAffine, contiguous_over, uniform_over
from .core import CodeGen

_BOUND = {"slt": "<", "ult": "<", "sle": "<=", "ule": "<="}   # x < n, x <= n: the largest x decides
_BROADCAST = {32: "_Z19sub_group_broadcastij", 64: "_Z19sub_group_broadcastlj"}


@dataclass
class Bound:
    """``x < n`` (or ``<=``) with ``x`` contiguous over the run; ``x0`` this lane's value at its first
    slot, ``n`` uniform."""

    x0: object
    n: object
    pred: str


@dataclass
class Uniform:
    """A mask value that is the same in every lane and slot of the run (this lane's first one)."""

    value: object


@dataclass
class And:
    parts: Tuple[object, ...]


def _slot(cg: CodeGen, v: ir.Value, s: int):
    vals = cg.slots(v)
    return vals[s] if len(vals) > 1 else vals[0]


def plan(cg: CodeGen, mask: ir.Value, slots: Sequence[int]):
    """The mask over ``slots`` (one block run) as a tree of ``Bound``, ``Uniform``, ``And``; True for
    a mask that always holds; None when it is of another kind."""
    info = cg.analysis("lane_affine", lambda: LaneAffine(cg.func, cg.target.sg_size))
    op = mask.op
    if isinstance(op, ir.ConstantOp) and (op.value is True or (isinstance(op.value, tuple) and all(op.value))):
        return True
    if isinstance(op, ir.BinaryOp) and op.kind == "andi":
        parts = [plan(cg, x, slots) for x in op.operands]
        if any(p is None for p in parts):
            return None
        parts = [p for p in parts if p is not True]
        return And(tuple(parts)) if parts else True
    if isinstance(op, ir.SlotShuffleOp):
        srcs = [(x, i) for x in op.operands for i in range(len(cg.slots(x)))]
        picked = [srcs[op.indices[s]] for s in slots]
        if len({id(x) for x, _ in picked}) != 1:
            return None
        return plan(cg, picked[0][0], [i for _, i in picked])
    if isinstance(op, ir.BroadcastOp):
        return plan(cg, op.operands[0], [0] * len(slots))
    if isinstance(op, ir.CmpOp) and op.pred in _BOUND:
        lhs, rhs = op.operands
        lf, rf = info.form(lhs), info.form(rhs)
        if lf is None or rf is None or not uniform_over(rf, slots):
            return None
        if uniform_over(lf, slots):
            return Uniform(_slot(cg, mask, slots[0]))
        if contiguous_over(lf, slots, cg.target.sg_size):
            return Bound(_slot(cg, lhs, slots[0]), _slot(cg, rhs, slots[0]), op.pred)
    return None


def _cmp(cg: CodeGen, pred: str, x, n):
    f = cg.b.icmp_signed if pred.startswith("s") else cg.b.icmp_unsigned
    return f(_BOUND[pred], x, n)


def _fold(cg: CodeGen, p, leaf):
    """The planned mask as an i1: ``leaf(Bound)`` for each bound, ``and`` over ``And``."""
    if p is True:
        return ll.Constant(ll.IntType(1), 1)
    if isinstance(p, And):
        out = None
        for q in p.parts:
            v = _fold(cg, q, leaf)
            out = v if out is None else cg.b.and_(out, v)
        return out
    if isinstance(p, Uniform):
        return p.value
    return leaf(p)


def all_of(cg: CodeGen, p, k: int):
    """Whether the planned mask holds in every lane of the run's ``k`` slots (uniform)."""
    def last(b: Bound):
        lane0 = cg.call(_BROADCAST[b.x0.type.width], b.x0.type, [b.x0, cg.i32(0)], convergent=True)
        return _cmp(cg, b.pred, cg.b.add(lane0, ll.Constant(b.x0.type, k * cg.target.sg_size - 1)), b.n)
    return _fold(cg, p, last)


def slot_mask(cg: CodeGen, p, j):
    """This lane's mask at the run's slot ``j`` (an LLVM i32, possibly not a constant)."""
    def at(b: Bound):
        step = cg.b.mul(cg.b.zext(j, b.x0.type) if b.x0.type.width > 32 else j,
                        ll.Constant(b.x0.type, cg.target.sg_size))
        return _cmp(cg, b.pred, cg.b.add(b.x0, step), b.n)
    return _fold(cg, p, at)


def vote(cg: CodeGen, masks: List):
    """Whether every one of ``masks`` (i1 slots) holds in every lane: a vote of the lanes."""
    m = masks[0]
    for x in masks[1:]:
        m = cg.b.and_(m, x)
    if isinstance(m, ll.Constant):
        return m
    votes = cg.call("_Z13sub_group_alli", ll.IntType(32), [cg.b.zext(m, ll.IntType(32))], convergent=True)
    return cg.b.icmp_unsigned("!=", votes, cg.i32(0))


def run_test(cg: CodeGen, mask: Optional[ir.Value], masks, slots: Sequence[int]):
    """(the run's unmasked test, the plan for its slots one by one: a tree, or None: ``masks``)."""
    if mask is None:
        return None, True
    p = plan(cg, mask, slots)
    if p is None:
        return vote(cg, [masks[s] for s in slots]), None
    return all_of(cg, p, len(slots)), p
