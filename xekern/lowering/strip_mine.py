"""Pass ``strip-mine``: long elementwise chains from pointer loads to a store, computed in pieces.

At lane level an elementwise op is one op over all of a lane's slots, and codegen emits it for all
of them before the next op: a GELU over a 32 x 128 tile on 4 subgroups holds 64 slots per lane of
every intermediate value at once, which IGC cannot keep in registers (it spilled 2 to 16 KB per
thread). A hand-written kernel loops over chunks instead. This pass does the same to the lane IR:
a ``store_scatter`` of more than ``MIN_SLOTS`` slots, with the loads and slot-wise ops that feed it
and nothing else, is rewritten as ``CHUNK``-slot copies, one chunk after the other, each from its
loads to its store: only one chunk's values are live at a time. Values that also feed something
else stay whole and are read in pieces (``vector.shuffle``). Runs of sub-group block messages
(``coalesce``, next) fall within the chunks.

Example: ``%x = xegpu.load_gather ... -> vector<64xf32>``, 20 arithmetic ops, ``xegpu.store_scatter``
become eight groups of a ``vector<8xf32>`` load, the 20 ops and a store.

A second rule reads a value in pieces where it is used: loads (and the slot-wise ops after them)
whose value only ``vector.shuffle`` ops read, and which would fill more than half of a 128-register
file, are read ``CHUNK`` slots at a time, each piece just before the first shuffle that takes one
of its slots. A reduction across a lane's slots is such shuffles and adds, one slot of each row
after the other: a row sum of a 16 x 256 f32 tile on 4 subgroups holds 128 slots per lane at
SIMD8 (dg2: all 128 registers, 672 bytes spilled), read whole before the first add.
"""
from __future__ import annotations

from math import prod
from typing import Dict, List, Set

from .. import ir
from ..ir.core import Op, Value
from ..ir.types import TensorDescType, VectorType, shape_of
from .rewrite import copy_func

CHUNK = 8          # slots per piece: a block run's longest message (codegen/block_io.WIDTHS)
MIN_SLOTS = 16     # up to here a lane's values fit in registers as they are
HALF_FILE = 64     # registers: a value read whole past this is read in pieces at its uses

_SLOTWISE = (ir.BinaryOp, ir.UnaryOp, ir.CastOp, ir.CmpOp, ir.SelectOp, ir.FmaOp, ir.ConstantOp, ir.BroadcastOp,
             ir.CreateTDescOp, ir.UpdateOffsetOp, ir.LoadGatherOp)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    budget = HALF_FILE * ctx.target.grf_bytes // ctx.target.sg_size   # bytes per lane
    uses = ir.users(func)
    if not any(_root(op) or _shuffled(op, uses, budget) for op in func.walk()):
        return func   # (nothing long enough: no copy)
    out = copy_func(func, ctx)
    uses = ir.users(out)
    for block in ir.blocks(out):
        for root in [op for op in block.ops if _root(op)]:
            _strip(block, root, uses)
            uses = ir.users(out)
        for op in [op for op in block.ops if _shuffled(op, uses, budget)]:
            _read_at_uses(block, op, uses)
            uses = ir.users(out)
    return out


def _slots(t) -> int:
    if isinstance(t, VectorType):
        return t.shape[0] if len(t.shape) == 1 else 0
    if isinstance(t, TensorDescType) and t.scattered:
        return t.shape[0] if len(t.shape) == 1 else 0
    return -1   # a scalar: the same in every piece


def _root(op: Op) -> bool:
    if not isinstance(op, ir.StoreScatterOp) or op.operands[1].type.chunk_size != 1:
        return False
    n = _slots(op.operands[0].type)
    return n > MIN_SLOTS and n % CHUNK == 0


def _slotwise(op: Op, n: int) -> bool:
    """Whether ``op`` computes slot ``s`` of its results from slot ``s`` of its operands alone (or
    from scalars), all of ``n`` slots."""
    if not isinstance(op, _SLOTWISE) or op.regions or len(op.results) != 1:
        return False
    if isinstance(op, ir.LoadGatherOp) and op.operands[0].type.chunk_size != 1:
        return False
    if isinstance(op, ir.ConstantOp) and not isinstance(op.result.type, VectorType):
        return False
    if _slots(op.result.type) != n:
        return False
    return all(_slots(v.type) in (n, -1) for v in op.operands)


def _region(block: ir.Block, root: Op, n: int, uses) -> Set[Op]:
    """``root`` and the slot-wise ops of ``n`` slots before it in ``block`` that feed only it (and
    each other)."""
    region: Set[Op] = {root}
    for op in reversed(block.ops[:block.ops.index(root)]):
        if not _slotwise(op, n):
            continue
        readers = [u for r in op.results for u, _ in uses.get(r, [])]
        if readers and all(u in region for u in readers):
            region.add(op)
    return region


def _strip(block: ir.Block, root: Op, uses) -> None:
    n = _slots(root.operands[0].type)
    at = block.ops.index(root)
    region = _region(block, root, n, uses)
    ordered = [op for op in block.ops[:at + 1] if op in region]
    # the pieces go where the root was: every outside value they read is defined before it; a load
    # must not move past a write (or any other side effect) that came after it
    first_load = next((i for i, op in enumerate(block.ops) if op in region and isinstance(op, ir.LoadGatherOp)), at)
    if any(op.HAS_SIDE_EFFECTS or op.regions for op in block.ops[first_load:at] if op not in region):
        return
    pieces: List[Op] = []
    for c in range(0, n, CHUNK):
        vmap: Dict[Value, Value] = {}
        for op in ordered:
            pieces += _piece(op, c, n, vmap)
    block.ops[:] = [op for op in block.ops[:at] if op not in region] + pieces + block.ops[at + 1:]
    for op in pieces:
        op.parent = block


def _piece(op: Op, c: int, n: int, vmap: Dict[Value, Value]) -> List[Op]:
    """``op`` on slots ``c .. c+CHUNK-1``: the new ops (slices of outside values, then the piece)."""
    out: List[Op] = []

    def piece_of(v: Value) -> Value:
        if v in vmap:
            return vmap[v]
        if _slots(v.type) == -1:
            return v
        sl = ir.SlotShuffleOp([v], list(range(c, c + CHUNK)), v.type.with_shape((CHUNK,)), loc=op.loc)
        out.append(sl)
        vmap[v] = sl.result
        return sl.result
    if isinstance(op, ir.ConstantOp):
        val = op.value
        new = op.clone_with([], [op.result.type.with_shape((CHUNK,))],
                            dict(op.attrs, value=val[c:c + CHUNK] if isinstance(val, tuple) else val))
    else:
        operands = [piece_of(v) for v in op.operands]
        types = [r.type.with_shape((CHUNK,)) if _slots(r.type) == n else r.type for r in op.results]
        new = op.clone_with(operands, types)
    new.loc = op.loc
    out.append(new)
    for r, nr in zip(op.results, new.results):
        vmap[r] = nr
    return out


def _shuffled(op: Op, uses, budget: int) -> bool:
    """Whether the second rule reads ``op``'s value in pieces: slot-wise, of more than ``MIN_SLOTS``
    slots (a multiple of ``CHUNK``) and more than ``budget`` bytes per lane, read by shuffles of
    its block alone, and fed by a load among the slot-wise ops that feed only it."""
    if len(op.results) != 1 or not isinstance(op.result.type, VectorType):
        return False
    n = _slots(op.result.type)
    if n <= MIN_SLOTS or n % CHUNK or n * op.result.type.elem.itemsize <= budget or not _slotwise(op, n):
        return False
    readers = [u for u, _ in uses.get(op.result, [])]
    if not readers or not all(isinstance(u, ir.SlotShuffleOp) and u.parent is op.parent for u in readers):
        return False
    block = op.parent
    region = _region(block, op, n, uses)
    if not any(isinstance(o, ir.LoadGatherOp) for o in region):
        return False
    # the pieces move down to the shuffles: nothing between may write memory or hold other code
    span = block.ops[min(block.ops.index(o) for o in region):max(block.ops.index(u) for u in readers)]
    return not any((o.HAS_SIDE_EFFECTS or o.regions) and o not in region for o in span)


def _read_at_uses(block: ir.Block, root: Op, uses) -> None:
    """``root`` and the region that feeds it as ``CHUNK``-slot pieces, each just before the first
    shuffle that takes one of its slots; the shuffles take their slots from the pieces."""
    n = _slots(root.result.type)
    region = _region(block, root, n, uses)
    ordered = [op for op in block.ops if op in region]
    readers = sorted({u for u, _ in uses[root.result]}, key=block.ops.index)
    pieces = []   # (its ops, its value) per CHUNK slots
    for c in range(0, n, CHUNK):
        vmap: Dict[Value, Value] = {}
        ops: List[Op] = []
        for op in ordered:
            ops += _piece(op, c, n, vmap)
        pieces.append((ops, vmap[root.result]))
    placed: Dict[Op, List[Op]] = {}   # reader -> the pieces' ops that go just before it
    done: Set[int] = set()
    for u in readers:
        sources, index = [], {}
        start = 0
        for v in u.operands:
            size = _numel(v)
            if v is root.result:
                for k in sorted({(i - start) // CHUNK for i in u.indices if start <= i < start + size}):
                    if k not in done:
                        placed.setdefault(u, []).extend(pieces[k][0])
                        done.add(k)
                    index.update({start + k * CHUNK + j: _width(sources) + j for j in range(CHUNK)})
                    sources.append(pieces[k][1])
            else:
                index.update({start + j: _width(sources) + j for j in range(size)})
                sources.append(v)
            start += size
        u.operands = tuple(sources)
        u.attrs["indices"] = tuple(index[i] for i in u.indices)
    block.ops[:] = [x for op in block.ops if op not in region for x in placed.get(op, []) + [op]]
    for ops, _ in pieces:
        for op in ops:
            op.parent = block


def _numel(v: Value) -> int:
    return prod(shape_of(v.type)) or 1


def _width(values: List[Value]) -> int:
    return sum(_numel(v) for v in values)
