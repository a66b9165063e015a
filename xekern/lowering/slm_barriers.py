"""Pass ``slm-barriers``: the barriers of SLM layout exchanges in a loop body: which go, which merge,
which need no fence.

An exchange through SLM is: stores, barrier, loads, barrier (``WgToSg.through_slm``); when only the
exchange writes its matrix, its barriers carry ``exchange = "open"`` and ``"close"``. The second
barrier only keeps the next stores into the same matrix from overwriting what another subgroup
has not read yet. In a K loop with several exchanges into as many matrices (K steps per iteration,
each transposing its A tile through its own SLM matrix), four rules apply in turn; outside loops, a
fifth.

``drop_redundant``: a trailing barrier goes when, on the way from it to the next stores into its
matrix, every subgroup passes another barrier anyway::

    store m0; B; load m0; [B]; store m1; B; load m1; [B]      (next iteration: store m0; B; ...)

The rule, for a trailing barrier at the top level of a loop body, guarding a matrix that only its
own exchange writes: walk the body from it, wrapping around to the body's start (the next
iteration, or the loop's next run: either starts there), until a store into the matrix. It goes
if a barrier that stays is met first at the top level (nested regions may not run). A matrix other
code can write (``shuffle_tensor``'s) keeps its barriers.

``drop_final``: outside every loop a trailing barrier goes when another barrier comes before the next
store into its matrix (exchanges that take turns with two matrices: each is written again only after
the other's first barrier), or no store into it comes at all.

``batch``: the later exchanges' stores (with the loads and arithmetic that feed them) move up to
the first one's, one after the other, and their barriers go. The loads of all then follow one
barrier; when nothing else separates them from the next iteration's stores, a barrier joins the
body's end::

    store m0; store m1; store m2; B; load m0; load m1; load m2; ...; B'

``late_close``: a closing barrier that nothing after it in the body needs before the body's end
(no access to its matrix, no other barrier) moves there, so that the loads before it may sink to
their DPAS (pass ``sink-loads``; dg2's K loops) rather than all be read before it.

``fenceless``: B' still makes the next stores wait for every subgroup's loads, but since the
previous barrier this subgroup has only read SLM, and its DPAS have taken what it read: nothing of
its own is left to make visible or to finish, so B' needs no memory fence (``no_fence``). On pvc
that is 2 instructions (signal, wait) instead of 4 (codegen/visa_barrier.py): the K loop of the
flagship's tn GEMM (three K steps) has 1 fence and 6 barrier instructions per iteration; merged two
by two, its exchanges had 2 fences and 8 (IGC 2.40 on pvc: 158 instructions for 96 dpas, not 162).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from .. import ir
from ..ir.core import Block, Op, Value
from .rewrite import copy_func


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    """The rules above, in turn, on a copy of ``func`` (subgroup level)."""
    if not any(isinstance(op, ir.BarrierOp) and op.attrs.get("exchange") for op in func.walk()):
        return func   # (no private exchange: no copy)
    out = copy_func(func, ctx)
    trailing, exchanges = exchanges_of(out)
    drop_redundant(out, trailing)
    drop_final(out, trailing)
    batch(out, exchanges)
    late_close(out, trailing)
    fenceless(out)
    return out


def exchanges_of(func: ir.FuncOp) -> Tuple[Dict[Op, Value], List[Tuple[List[Op], Op]]]:
    """The private exchanges, read from their barriers' ``exchange`` marks: (closing barrier -> the
    matrix it guards, [(the exchange's stores, its opening barrier)] in program order). The loads
    between an opening and a closing barrier name the matrix; its stores are those since the
    barrier before the opening one."""
    trailing: Dict[Op, Value] = {}
    exchanges: List[Tuple[List[Op], Op]] = []
    for block in ir.blocks(func):
        since, opened = 0, None
        for i, op in enumerate(block.ops):
            if not isinstance(op, ir.BarrierOp):
                continue
            mark = op.attrs.get("exchange")
            if mark == "open":
                opened = i
                first_stores = since
            elif mark == "close" and opened is not None:
                mems = {o.operands[0] for o in block.ops[opened + 1:i] if isinstance(o, ir.LoadMatrixOp)}
                if len(mems) == 1:
                    mem = mems.pop()
                    trailing[op] = mem
                    exchanges.append(([o for o in block.ops[first_stores:opened]
                                       if isinstance(o, ir.StoreMatrixOp) and o.operands[1] is mem],
                                      block.ops[opened]))
                opened = None
            since = i + 1
    return trailing, exchanges


def _touch(op: Op):
    """(matrix, 'w') for an SLM store, (matrix, 'r') for an SLM load, else (None, '')."""
    if isinstance(op, ir.StoreMatrixOp):
        return op.operands[1], "w"
    if isinstance(op, ir.LoadMatrixOp):
        return op.operands[0], "r"
    return None, ""


def _access(op: Op, mem: Value) -> str:
    """'w' if ``op`` (or an op nested in it) stores into ``mem``, 'r' if it only loads from it, ''."""
    kinds = {kind for m, kind in map(_touch, op.walk()) if m is mem}
    return "w" if "w" in kinds else "r" if "r" in kinds else ""


def drop_redundant(func: ir.FuncOp, trailing: Dict[Op, Value]) -> int:
    """Erase the barriers of ``trailing`` (barrier -> the private SLM matrix it guards) that the
    rule above makes redundant; returns how many went."""
    dropped = 0
    for loop in _loops(func):
        ops = loop.body.ops
        for bar in [o for o in ops if o in trailing]:
            mem, i = trailing[bar], ops.index(bar)
            for op in ops[i + 1:] + ops[:i]:  # on to the body's end, then from its start
                if isinstance(op, ir.BarrierOp) and op not in trailing:
                    ops.remove(bar)
                    dropped += 1
                    break
                if _access(op, mem) == "w":
                    break
    return dropped


def drop_final(func: ir.FuncOp, trailing: Dict[Op, Value]) -> int:
    """Erase the trailing barriers of ``trailing`` outside every loop that another barrier follows
    before the next store into their matrix, or that no store into it follows at all (the walk goes
    on after the regions around the barrier, up to the function's end); the matrix's other writers
    are then ordered by that barrier (exchanges that take turns with two matrices). Returns how many
    went."""
    dropped = 0
    for bar in trailing:
        block = bar.parent
        if block is None or bar not in block.ops or _in_loop(block):
            continue
        if _barrier_first(bar, trailing[bar], trailing):
            block.ops.remove(bar)
            dropped += 1
    return dropped


def _barrier_first(bar: Op, mem: Value, trailing: Dict[Op, Value]) -> bool:
    """Whether, after ``bar``, every path meets a barrier that stays (not in ``trailing``, at the
    level of the walk) before a store into ``mem``: the ops after it in its block, then after each
    region's op in the block around it."""
    op = bar
    while op is not None and op.parent is not None and not isinstance(op, ir.FuncOp):
        ops = op.parent.ops
        for nxt in ops[ops.index(op) + 1:]:
            if isinstance(nxt, ir.BarrierOp) and nxt not in trailing:
                return True
            if _access(nxt, mem) == "w":
                return False
        op = op.parent.parent   # the op whose region this block is
    return True


def _in_loop(block: Block) -> bool:
    while block is not None and block.parent is not None:
        if isinstance(block.parent, (ir.ForOp, ir.WhileOp)):
            return True
        block = block.parent.parent
    return False


def _loops(func: ir.FuncOp) -> List[ir.ForOp]:
    return [o for o in func.walk() if isinstance(o, ir.ForOp)]


def _matrices(ops: List[Op]) -> List[Value]:
    """The SLM matrices ``ops`` (and the ops nested in them) store into or load from."""
    out: List[Value] = []
    for mem, _ in (_touch(o) for op in ops for o in op.walk()):
        if mem is not None and mem not in out:
            out.append(mem)
    return out


def ordered(ops: List[Op]) -> bool:
    """Whether a loop body ``ops``, run over and over by every subgroup, passes a top-level barrier
    between each access of an SLM matrix and the next access of the other kind (stores, then the
    loads of what other subgroups stored; loads, then stores over what other subgroups still read)."""
    for mem in _matrices(ops):
        kinds = [_access(op, mem) for op in ops]
        for i, k in enumerate(kinds):
            if not k:
                continue
            for j in list(range(i + 1, len(ops))) + list(range(i + 1)):  # on, then round from the start
                if isinstance(ops[j], ir.BarrierOp):
                    break
                if kinds[j] and kinds[j] != k:
                    return False
    return True


def batch(func: ir.FuncOp, exchanges: List[Tuple[List[Op], Op]]) -> int:
    """Exchanges of a loop body under one barrier (the rule above). ``exchanges``: (stores, first
    barrier) of the private exchanges, in program order. Each exchange joins the one before it (and
    so the first of a run) when what moves up is free of side effects (the stores aside) and
    ``ordered`` holds after it, with a barrier added at the body's end if it needs one. Returns how
    many barriers went."""
    dropped = 0
    for loop in _loops(func):
        ops = loop.body.ops
        mine = [e for e in exchanges if e[1] in ops and all(s in ops for s in e[0])]
        i = 0
        while i + 1 < len(mine):
            (_, bar_a), (stores, bar_b) = mine[i], mine[i + 1]
            new, added = _hoisted(ops, bar_a, bar_b, stores), 0
            if new is not None and not ordered(new):
                tail = ir.BarrierOp()
                tail.attrs["memory"] = "local"
                tail.parent = loop.body
                end = len(new) - (1 if new[-1].IS_TERMINATOR else 0)
                new, added = new[:end] + [tail] + new[end:], 1
            if new is not None and ordered(new):
                ops[:] = new
                dropped += 1 - added
                del mine[i + 1]   # the next exchange may join the same barrier
            else:
                i += 1
    return dropped


def _hoisted(ops: List[Op], bar_a: Op, bar_b: Op, stores: List[Op]):
    """``ops`` with ``stores`` (between ``bar_a`` and ``bar_b``), and the ops there that they need,
    moved just before ``bar_a``, and ``bar_b`` gone; None when one of those ops has side effects or
    regions, or is an SLM load."""
    ia, ib = ops.index(bar_a), ops.index(bar_b)
    moved, needed = [], {v for s in stores for v in s.operands}
    for op in reversed(ops[ia + 1:ib]):
        if op in stores or any(r in needed for r in op.results):
            moved.append(op)
            needed.update(op.operands)
    if not all(op in stores or not (op.HAS_SIDE_EFFECTS or op.regions or isinstance(op, ir.LoadMatrixOp))
               for op in moved):
        return None
    rest = [op for op in ops if op not in moved and op is not bar_b]
    at = rest.index(bar_a)
    return rest[:at] + moved[::-1] + rest[at:]


def late_close(func: ir.FuncOp, trailing: Dict[Op, Value]) -> int:
    """Move each closing barrier of ``trailing`` at the top level of a loop body down to the body's
    end when no op after it there touches its matrix or is a barrier: the next stores still wait
    for every subgroup's loads, and the loads before it may then sink to their DPAS (pass
    ``sink-loads``) instead of all being read before the barrier. Returns how many moved."""
    moved = 0
    for loop in _loops(func):
        ops = loop.body.ops
        for bar in [o for o in ops if o in trailing]:
            i = ops.index(bar)
            end = len(ops) - (1 if ops[-1].IS_TERMINATOR else 0)
            rest = ops[i + 1:end]
            if rest and not any(isinstance(o, ir.BarrierOp) for op in rest for o in op.walk()) and \
                    not any(_access(op, trailing[bar]) for op in rest):
                ops.insert(end - 1, ops.pop(i))
                moved += 1
    return moved


def fenceless(func: ir.FuncOp) -> int:
    """Mark ``no_fence`` the top-level SLM barriers (``memory = "local"``) of loop bodies that the
    rule above lets go without a memory fence: between the previous top-level barrier of the body
    (there must be one; the walk does not wrap round, as what comes before the loop is not seen)
    and it, no op writes memory or has any other side effect than a prefetch, and every result of
    every SLM load there is used, and only by DPAS there. Returns how many."""
    readers = ir.users(func)
    marked = 0
    for loop in _loops(func):
        ops = loop.body.ops
        bars = [i for i, op in enumerate(ops) if isinstance(op, ir.BarrierOp)]
        for prev, at in zip(bars, bars[1:]):
            if ops[at].attrs.get("memory") != "local":
                continue
            inner = {o for op in ops[prev + 1:at] for o in op.walk()}
            if all(_quiet(o) for o in inner) and all(
                    readers.get(r) and all(isinstance(u, ir.DpasOp) and u in inner for u, _ in readers[r])
                    for o in inner if isinstance(o, ir.LoadMatrixOp) for r in o.results):
                ops[at].attrs["no_fence"] = True
                marked += 1
    return marked


def _quiet(op: Op) -> bool:
    """Neither a store (into SLM or anywhere) nor any other side effect but a prefetch's."""
    return isinstance(op, ir.PrefetchNdOp) or not (op.HAS_SIDE_EFFECTS or isinstance(op, ir.StoreMatrixOp))
