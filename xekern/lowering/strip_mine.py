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
"""
from __future__ import annotations

from typing import Dict, List, Set

from .. import ir
from ..ir.core import Op, Value
from ..ir.types import TensorDescType, VectorType
from .rewrite import copy_func

CHUNK = 8          # slots per piece: a block run's longest message (codegen/block_io.WIDTHS)
MIN_SLOTS = 16     # up to here a lane's values fit in registers as they are

_SLOTWISE = (ir.BinaryOp, ir.UnaryOp, ir.CastOp, ir.CmpOp, ir.SelectOp, ir.FmaOp, ir.ConstantOp, ir.BroadcastOp,
             ir.CreateTDescOp, ir.UpdateOffsetOp, ir.LoadGatherOp)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(_root(op) for op in func.walk()):
        return func   # (nothing long enough: no copy)
    out = copy_func(func, ctx)
    uses = ir.users(out)
    for block in ir.blocks(out):
        for root in [op for op in block.ops if _root(op)]:
            _strip(block, root, uses)
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


def _strip(block: ir.Block, root: Op, uses) -> None:
    n = _slots(root.operands[0].type)
    at = block.ops.index(root)
    region: Set[Op] = {root}
    for op in reversed(block.ops[:at]):
        if not _slotwise(op, n):
            continue
        readers = [u for r in op.results for u, _ in uses.get(r, [])]
        if readers and all(u in region for u in readers):
            region.add(op)
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
