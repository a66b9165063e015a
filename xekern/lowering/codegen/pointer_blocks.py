"""Pointer-tile slots moved by sub-group block messages (``block_runs``, pass ``coalesce``).

A run of ``k`` slots whose lane ``l`` holds elements ``base + j * sg + l`` is one
``intel_sub_group_block_read/write`` of ``k`` rows when, at run time, every lane of the run is
unmasked and the run's first element is 16-byte aligned (``block_io.ALIGN_BYTES``): one uniform test
per run (``run_masks``: a scalar bound check, or a vote of the lanes) chooses the message; otherwise
the run's slots go one by one in a loop (an edge of the tile, where code size matters more):

    if (mask holds on the whole run && (addr & 15) == 0)  v = block_read_k(addr)
    else  for j in 0..k-1: if (mask_j) v[j] = base[off_0 + j * sg]      (a loop, not unrolled)

Slot ``j``'s offset is the first slot's plus ``j * sg`` (the run's definition), so the loop needs
none of the other slots' offsets, and its mask comes from the plan (or the slots' masks). Loads,
elementwise ops and a store that share their runs and mask take this choice once per run for all of
them (``run_chains``, with the helpers here).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

from llvmlite import ir as ll

from ... import ir
from ...ir.types import DType
from . import block_io, run_masks
from .control import counted_loop
from .core import CodeGen, ScatterDesc, ll_type, mem_type
from .cpu_tiles import lane_index
from .memory import load_elem, store_elem, zero
from .ocl import I32, I64

_BROADCAST_LONG = "_Z19sub_group_broadcastlj"   # long sub_group_broadcast(long, uint)


def from_int(cg: CodeGen, v, t: DType):
    lt = ll_type(t)
    return v if lt == v.type else cg.b.bitcast(v, lt)


def to_int(cg: CodeGen, v, t: DType):
    it = ll.IntType(t.bits)
    return v if v.type == it else cg.b.bitcast(v, it)


def run_pointer(cg: CodeGen, d: ScatterDesc, first: int, aligned: bool):
    """The run's first element, lane 0's (the block message reads its pointer from one lane), as a
    pointer to integers of the element's width (the block builtins' type), and whether it is 16-byte
    aligned (``aligned``: proved, pass ``coalesce``; else tested)."""
    off0 = cg.call(_BROADCAST_LONG, I64, [d.offsets[first], cg.i32(0)], convergent=True)
    p = cg.gep(d.base, ll.IntType(d.type.elem.bits), off0)
    if aligned:
        return p, None
    low = cg.b.and_(cg.b.ptrtoint(p, I64), ll.Constant(I64, block_io.ALIGN_BYTES - 1))
    return p, cg.b.icmp_unsigned("==", low, ll.Constant(I64, 0))


def lane_linear(cg: CodeGen, d: ScatterDesc, slot: int):
    """The address of ``slot`` of a run (lane ``l`` at the uniform ``base + l``) as the CPU device's
    vectorizer recognizes a vector access: lane 0's element, broadcast, plus the lane id in i64
    (``cpu_tiles``). Behind the slot's mask it becomes one masked vector load or store instead of
    one access per lane (the emitters with ``lane_linear_runs``). Measured on the OpenCL CPU
    runtime 2026.22: tutorial 05's layer norm builds in 0.7 s, 1.4 s with block reads, a test per
    run and a slot loop for its edges; tutorial 03's loop as written in 1.6 s, 3.4 s with 16
    gathers per row of A."""
    off0 = cg.call(_BROADCAST_LONG, I64, [d.offsets[slot], cg.i32(0)], convergent=True)
    return cg.gep(cg.gep(d.base, mem_type(d.type.elem), off0), mem_type(d.type.elem), lane_index(cg))


def choose(cg: CodeGen, ok, block: Callable[[], List], element: Callable[[], List]) -> List:
    """``ok ? block() : element()`` as a branch; the values of both, merged (phis). ``ok`` None:
    ``block()``."""
    if ok is None:
        return block()
    fn = cg.fn
    on, off, done = (fn.append_basic_block(x) for x in ("block_io", "by_slot", "runs_done"))
    cg.b.cbranch(ok, on, off)
    cg.b.position_at_end(on)
    a = block()
    a_end = cg.b.block
    cg.b.branch(done)
    cg.b.position_at_end(off)
    b = element()
    b_end = cg.b.block
    cg.b.branch(done)
    cg.b.position_at_end(done)
    out = []
    for x, y in zip(a or [], b or []):
        phi = cg.b.phi(x.type)
        phi.add_incoming(x, a_end)
        phi.add_incoming(y, b_end)
        out.append(phi)
    return out


def _unknowable_zero(cg: CodeGen):
    """0, as a value the driver's compiler cannot fold: an inline-vISA ``mov`` where the driver takes
    inline vISA (IGC knows the sub-group id's range and would fold ``sub_group_id >> 31``), else that."""
    def make():
        if cg.emitter.driver.inline_visa:
            return cg.asm(I32, "mov (M1_NM, 1) $0(0,0)<1> 0x0:ud", "=rw", [])
        return cg.b.lshr(cg.sg_id(), cg.i32(31))
    return cg.cached("unknowable_zero", make)


def slot_loop(cg: CodeGen, k: int, body: Callable, acc=None):
    """``for j in 0..k-1: acc = body(j, acc)`` as a loop whose trip count the driver's compiler cannot
    see (``k`` plus a zero it cannot prove), so that it is not unrolled back into ``k`` copies."""
    n = cg.b.add(cg.i32(k), _unknowable_zero(cg))
    start = [] if acc is None else [acc]

    def step(j, carried):
        out = body(j, carried[0] if carried else None)
        return [out] if carried else []
    out = counted_loop(cg, n, start, step, ("slot_loop", "slot_loop_done"))
    return out[0] if out else None

def as_elements(cg: CodeGen, v, t: DType):
    """A vector of ``t.bits``-bit integers as a vector of ``t`` where ``t`` is a float type (one
    bitcast of the whole vector)."""
    lt = ll_type(t)
    if not isinstance(lt, (ll.HalfType, ll.FloatType, ll.DoubleType)):
        return v
    return cg.b.bitcast(v, ll.VectorType(lt, v.type.count))


def vector(cg: CodeGen, vals: Sequence, t: ll.Type):
    v = ll.Constant(ll.VectorType(t, len(vals)), None)
    for j, x in enumerate(vals):
        v = cg.b.insert_element(v, x, cg.i32(j))
    return v


def slot_masks(cg: CodeGen, p, masks, slots):
    """``j -> this lane's mask at the run's slot j``: from the plan, or from the slots' masks."""
    if p is not None:
        return lambda j: run_masks.slot_mask(cg, p, j)
    vec = vector(cg, [masks[s] for s in slots], ll.IntType(1))
    return lambda j: cg.b.extract_element(vec, j)


def slot_address(cg: CodeGen, d: ScatterDesc, first: int, j):
    step = cg.b.mul(cg.b.zext(j, I64), ll.Constant(I64, cg.target.sg_size))
    return cg.gep(d.base, mem_type(d.type.elem), cg.b.add(d.offsets[first], step))


def _loop_loads(cg: CodeGen, d: ScatterDesc, p, masks, other, slots: Sequence[int]):
    """The run's slots one by one, each behind its mask (masked-off: ``other`` or zero): a vector of
    the run's ``k`` values (as integers of the element's width)."""
    t = d.type.elem
    it = ll.IntType(t.bits)
    mask_at = slot_masks(cg, p, masks, slots) if p is not True else None
    fills = [to_int(cg, other[s] if other is not None else zero(t), t) for s in slots]
    # one constant fill for every slot (no other, or a scalar one): each iteration writes its slot,
    # the loaded value or the fill, and the vector starts undefined (no initial moves); else it
    # starts as the fills and an iteration writes only a loaded slot
    same = all(isinstance(f, ll.Constant) and str(f) == str(fills[0]) for f in fills)
    init = ll.Constant(ll.VectorType(it, len(slots)), None) if same or mask_at is None else vector(cg, fills, it)

    def body(j, acc):
        def load():
            return cg.b.load(slot_address(cg, d, slots[0], j), typ=it, align=max(1, t.itemsize))
        if mask_at is None:
            return cg.b.insert_element(acc, load(), j)
        if same:
            return cg.b.insert_element(acc, cg.masked(mask_at(j), load, fills[0]), j)
        return cg.masked(mask_at(j), lambda: cg.b.insert_element(acc, load(), j), acc)
    return slot_loop(cg, len(slots), body, init)


def _loop_stores(cg: CodeGen, d: ScatterDesc, vals, p, masks, slots: Sequence[int]) -> None:
    t = d.type.elem
    mask_at = slot_masks(cg, p, masks, slots) if p is not True else None
    valv = vector(cg, [vals[s] for s in slots], ll_type(t))

    def body(j, _):
        def store():
            store_elem(cg, cg.b.extract_element(valv, j), slot_address(cg, d, slots[0], j), t)
        if mask_at is None:
            store()
        else:
            cg.masked(mask_at(j), store)
    slot_loop(cg, len(slots), body)


def _test(cg: CodeGen, d: ScatterDesc, mask: Optional[ir.Value], masks, slots, aligned: bool):
    """(the run's pointer, whether the block message may move the run (None: always), the mask's
    plan)."""
    ptr, ok = run_pointer(cg, d, slots[0], aligned)
    unmasked, p = run_masks.run_test(cg, mask, masks, slots)
    if unmasked is not None:
        ok = unmasked if ok is None else cg.b.and_(ok, unmasked)
    return ptr, ok, p


def load_runs(cg: CodeGen, d: ScatterDesc, mask: Optional[ir.Value], masks, other, runs, aligned: bool) -> dict:
    """slot -> loaded value for the slots of ``runs`` (each ``(first, count)``); ``mask`` is the
    load's mask (its lane-level IR value, None: none), ``masks`` its slots; ``aligned``: every run
    starts 16-byte aligned (proved by pass ``coalesce``)."""
    t = d.type.elem
    out = {}
    if cg.emitter.lane_linear_runs:
        # slot by slot, one branch per mask value (loads keep no order): the slots of a lane's row,
        # or of a mask uniform over the tile, load behind one test. The addresses come first: a
        # sub-group broadcast may not sit behind a lane's branch.
        groups: Dict[int, List[int]] = {}
        for first, k in runs:
            for s in range(first, first + k):
                groups.setdefault(id(masks[s]), []).append(s)
        for slots in groups.values():
            ptrs = [lane_linear(cg, d, s) for s in slots]
            fills = [other[s] if other is not None else zero(t) for s in slots]
            out.update(zip(slots, cg.masked_all(masks[slots[0]], lambda ptrs=ptrs: [load_elem(cg, p, t) for p in ptrs],
                                                fills)))
        return out
    for first, k in runs:
        slots = list(range(first, first + k))
        ptr, ok, p = _test(cg, d, mask, masks, slots, aligned)
        # both paths give the run as one vector of k integers, merged by one phi: the slots are its
        # elements (register regions). A float run is then bitcast as one vector: IGC copied every
        # register of the run when each element was bitcast on its own (tutorial 01's add: 8 movs
        # per run and access); bitcasting on each path before the phi instead cost loops that
        # accumulate loads (row sum, layer norm) more movs than it saved
        block = lambda: block_io.read_vector(cg, ptr, t.bits, k, block_io.GLOBAL)  # noqa: E731
        element = lambda: _loop_loads(cg, d, p, masks, other, slots)  # noqa: E731
        vec = as_elements(cg, choose(cg, ok, lambda: [block()], lambda: [element()])[0], t)
        out.update((s, from_int(cg, cg.b.extract_element(vec, cg.i32(j)), t)) for j, s in enumerate(slots))
    return out


def store_runs(cg: CodeGen, d: ScatterDesc, vals, mask: Optional[ir.Value], masks, runs, aligned: bool) -> set:
    """Store the slots of ``runs``; returns the slots stored (``aligned``: as for ``load_runs``)."""
    t = d.type.elem
    done = set()
    for first, k in runs:
        if cg.emitter.lane_linear_runs:
            # slot by slot, in order, consecutive slots of one mask value behind one branch
            at = first
            while at < first + k:
                end = at + 1
                while end < first + k and masks[end] is masks[at]:
                    end += 1
                ptrs = [(s, lane_linear(cg, d, s)) for s in range(at, end)]

                def store(ptrs=ptrs):
                    for s, p in ptrs:
                        store_elem(cg, vals[s], p, t)
                cg.masked(masks[at], store)
                done.update(range(at, end))
                at = end
            continue
        slots = list(range(first, first + k))
        ptr, ok, p = _test(cg, d, mask, masks, slots, aligned)
        choose(cg, ok,
               lambda: block_io.write(cg, ptr, [to_int(cg, vals[s], t) for s in slots], t.bits, block_io.GLOBAL),
               lambda: _loop_stores(cg, d, vals, p, masks, slots))
        done.update(slots)
    return done
