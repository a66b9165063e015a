"""Pointer-tile loads, the elementwise ops on them and the store they feed, versioned together per
block run (tutorial 01's ``output = x + y``).

Pass ``coalesce`` marks each pointer load and store with its block runs, and ``pointer_blocks``
chooses, per access and run, a sub-group block message or a slot-by-slot loop behind a uniform test.
For ``x = load(px, mask)``, ``y = load(py, mask)``, ``store(po, f(x, y), mask)`` that is one test,
one branch and one merge per access and run; IGC then copies each block read into the registers of
its merge (a phi) and zeroes each slot loop's vector first (tutorial 01's add on pvc: 299
instructions for 1,024 elements on 4 subgroups where the OpenCL C reference with block reads has
136). Hand-written code tests once per run for the whole chain, and so does this:

    if (mask holds on the whole run && every access's run is aligned)
        block reads, f on the run's slots, block write
    else
        for j in 0..k-1: if (mask_j) po[j] = f(px[j], py[j])      (one loop, not unrolled)

A chain is a ``store_scatter`` whose block runs cover its slots, the ``load_gather``s with the same
runs and the same mask (the same IR value) its stored value comes from, and the slot-wise ops
between them (``SLOTWISE``), each used only inside the chain; no op with an effect may lie between
the chain's first load and its store (the loads are emitted at the store); a division or a
transcendental function in the chain keeps the accesses apart (``_LONG``). Masked-off slots are not
read or written, as before; their values never reach memory, since the store has the loads' mask.
Other accesses keep ``pointer_blocks``' form.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Set

from ... import ir
from ...ir.core import Op, Value
from ...ir.types import VectorType
from . import block_io, run_masks
from .core import CodeGen
from .memory import load_elem, store_elem
from .pointer_blocks import as_elements, choose, from_int, run_pointer, slot_address, slot_loop, slot_masks, \
    to_int, vector

SLOTWISE = (ir.BinaryOp, ir.UnaryOp, ir.FmaOp, ir.CastOp, ir.CmpOp, ir.SelectOp)
# the slot loop repeats the chain's ops, so a chain with one of these (long expansions: a division,
# a transcendental function) keeps the per-access form. Measured on pvc: GELU over a 2D tile (tanh)
# versioned went from 11.1 to 12.0 instructions per element
_LONG = {"divf", "remf", "divsi", "divui", "remsi", "remui", "powf", "atan2"} | \
    (ir.ops_arith.FLOAT_UNARY - {"absf", "negf"})


class _Long(Exception):
    """A chain op the slot loop should not repeat (``_LONG``)."""


@dataclass
class Chain:
    store: ir.StoreScatterOp
    loads: List[ir.LoadGatherOp]    # in block order
    ops: List[Op]                   # the slot-wise ops, in block order


def chains(cg: CodeGen) -> Dict[Op, Chain]:
    """store -> its chain, for every chain of the function (computed once); the chains' loads and ops
    go to ``cg.deferred``: the store's rule emits them."""
    def make():
        out: Dict[Op, Chain] = {}
        if cg.emitter.lane_linear_runs:   # (no test per run to share: pointer_blocks.lane_linear)
            return out
        uses = ir.users(cg.func)
        for block in ir.blocks(cg.func):
            pos = {op: i for i, op in enumerate(block.ops)}
            for op in block.ops:
                ch = _chain(op, block, pos, uses) if isinstance(op, ir.StoreScatterOp) else None
                if ch is not None:
                    out[op] = ch
                    cg.deferred.update(ch.loads + ch.ops)
        return out
    return cg.analysis("run_chains", make)


def _slots(t) -> int:
    return t.shape[0] if isinstance(t, VectorType) and len(t.shape) == 1 else 0


def _chain(s: ir.StoreScatterOp, block: ir.Block, pos: Dict[Op, int], uses) -> Optional[Chain]:
    runs = s.attrs.get("block_runs")
    n = _slots(s.operands[0].type)
    if not runs or sorted(x for first, k in runs for x in range(first, first + k)) != list(range(n)):
        return None
    mask = s.operands[2]
    member: Dict[Op, bool] = {}

    def visit(v: Value) -> bool:   # whether v's op is on a path from a chain load to the store
        op = v.op
        if op is None or op.parent is not block:
            return False
        if op not in member:
            member[op] = False
            if isinstance(op, ir.LoadGatherOp):
                member[op] = (op.attrs.get("block_runs") == runs and op.operands[1] is mask
                              and _slots(op.result.type) == n)
            elif isinstance(op, SLOTWISE) and _slots(op.result.type) == n:
                member[op] = any([visit(x) for x in op.operands])
                if member[op] and op.attrs.get("kind", op.attrs.get("fn")) in _LONG:
                    raise _Long()
        return member[op]
    try:
        if not visit(s.operands[0]):
            return None
    except _Long:
        return None
    members = [op for op, yes in member.items() if yes]
    if any(u is not s and not member.get(u) for op in members for r in op.results for u, _ in uses.get(r, [])):
        return None
    first = min(pos[op] for op in members)
    if any((op.HAS_SIDE_EFFECTS or op.regions) for op in block.ops[first:pos[s]] if not member.get(op)):
        return None
    members.sort(key=pos.get)
    return Chain(s, [op for op in members if isinstance(op, ir.LoadGatherOp)],
                 [op for op in members if not isinstance(op, ir.LoadGatherOp)])


class _Bindings:
    """Values the chain's ops read, set for one run or one slot and put back afterwards."""

    def __init__(self, cg: CodeGen):
        self.cg, self.saved = cg, {}

    def set(self, v: Value, vals) -> None:
        if v not in self.saved:
            self.saved[v] = self.cg.values.get(v)
        self.cg.values[v] = vals

    def restore(self) -> None:
        for v, old in self.saved.items():
            if old is None:
                self.cg.values.pop(v, None)
            else:
                self.cg.values[v] = old


def _outside(ch: Chain) -> List[Value]:
    """The tiles (vectors) the chain's ops read from outside the chain."""
    inside: Set[Value] = {r for op in ch.loads + ch.ops for r in op.results}
    out: List[Value] = []
    for op in ch.ops:
        for v in op.operands:
            if v not in inside and isinstance(v.type, VectorType) and v not in out:
                out.append(v)
    return out


def emit(cg: CodeGen, ch: Chain) -> None:
    """The chain, run by run: the uniform test, the block messages, or the slot loop."""
    s = ch.store
    mask, masks = s.operands[2], cg.slots(s.operands[2])
    accesses = ch.loads + [s]
    descs = {a: cg.get(a.operands[0] if isinstance(a, ir.LoadGatherOp) else a.operands[1]) for a in accesses}
    outside = _outside(ch)
    for first, k in s.attrs["block_runs"]:
        slots = list(range(first, first + k))
        ok, ptrs = None, {}
        for a in accesses:
            ptrs[a], aligned = run_pointer(cg, descs[a], first, bool(a.attrs.get("runs_aligned")))
            if aligned is not None:
                ok = aligned if ok is None else cg.b.and_(ok, aligned)
        unmasked, p = run_masks.run_test(cg, mask, masks, slots)
        if unmasked is not None:
            ok = unmasked if ok is None else cg.b.and_(ok, unmasked)
        choose(cg, ok, lambda: _by_block(cg, ch, descs, ptrs, outside, slots),
               lambda: _by_slot(cg, ch, descs, outside, p, masks, slots))


def _by_block(cg: CodeGen, ch: Chain, descs, ptrs, outside: List[Value], slots: List[int]) -> List:
    bound = _Bindings(cg)
    k = len(slots)
    for ld in ch.loads:
        t = descs[ld].type.elem
        vec = as_elements(cg, block_io.read_vector(cg, ptrs[ld], t.bits, k, block_io.GLOBAL), t)
        bound.set(ld.result, [from_int(cg, cg.b.extract_element(vec, cg.i32(j)), t) for j in range(k)])
    for v in outside:
        whole = cg.slots(v)
        bound.set(v, [whole[i] for i in slots])
    for op in ch.ops:
        cg.op(op, deferred=True)
    s = ch.store
    t = descs[s].type.elem
    block_io.write(cg, ptrs[s], [to_int(cg, x, t) for x in cg.slots(s.operands[0])], t.bits, block_io.GLOBAL)
    bound.restore()
    return []


def _by_slot(cg: CodeGen, ch: Chain, descs, outside: List[Value], p, masks, slots: List[int]) -> List:
    bound = _Bindings(cg)
    first = slots[0]
    mask_at = slot_masks(cg, p, masks, slots) if p is not True else None
    columns = {v: vector(cg, [cg.slots(v)[i] for i in slots], cg.slots(v)[0].type) for v in outside}

    def body(j, _):
        def work():
            for ld in ch.loads:
                d = descs[ld]
                bound.set(ld.result, [load_elem(cg, slot_address(cg, d, first, j), d.type.elem)])
            for v, col in columns.items():
                bound.set(v, [cg.b.extract_element(col, j)])
            for op in ch.ops:
                cg.op(op, deferred=True)
            d = descs[ch.store]
            store_elem(cg, cg.slots(ch.store.operands[0])[0], slot_address(cg, d, first, j), d.type.elem)
        if mask_at is None:
            work()
        else:
            cg.masked(mask_at(j), work)
    slot_loop(cg, len(slots), body)
    bound.restore()
    return []
