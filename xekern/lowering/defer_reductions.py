"""Pass ``defer-reductions``: a sum across lanes added into a loop's carried value every iteration
is carried as the lanes' partial sums instead, and reduced once after the loop.

Flash attention's row sum is the case: ``l_i = l_i * alpha + xl.sum(p, 1)``. At lane level ``p``
is a DPAS-layout tile (each lane holds one column of every row it owns), so ``xl.sum(p, 1)`` ends in
a ``gpu.subgroup_reduce <add>`` across the lanes of a row, every iteration: on pvc, about 45
instructions of shuffles and selects per 16 rows. Since ``alpha`` is the same in every lane of a
row, ``reduce(l) * alpha + reduce(x) == reduce(l * alpha + x)``: the loop can carry each lane's
share of ``l_i`` (a per-lane ``fma``, one instruction per register) and reduce it after the loop.

A carried value ``a`` (initial value ``a0``, next value ``y``) qualifies when, in the loop's body,

* ``y`` is ``a + r``, ``r + a``, ``fma(a, s, r)``, ``fma(s, a, r)`` or ``a * s + r`` (the multiply used
  only there), where ``r = gpu.subgroup_reduce <add> x`` is used only there;
* ``a`` and ``y`` have no other use in the body (the loop's own result may be used anywhere after it);
* ``s``, ``a0`` and the loop's bounds are the same in every lane of a cluster of the reduction
  (``varying_lanes``);
* ``a0`` does not come from another loop. Loops that follow one another carrying the same value are
  the body of a split iteration space and its remainder (attention's unmasked key blocks, then the
  masked ones): the remainder runs once or twice, so its per-iteration saving is small, while the
  partial sums' registers add to what its masking holds (attention's forward, deferred in both
  loops, spilled 192 bytes on pvc; deferred in the first only, nothing).

Then the loop carries ``select(first lane of its cluster, a0, -0)`` (zeros as they are), adds ``x``
instead of ``r``, and the loop's result is reduced right after the loop. Sums are reassociated (lanes first, then
iterations: as any change of a reduction's order, exact for integers, within rounding for floats).

Example (lane level, 16 lanes): ``%r = gpu.subgroup_reduce <add> %x {cluster_size = 16}`` and
``%y = math.fma %a, %alpha, %r`` in the body become ``%y = math.fma %a, %alpha, %x``, and
``%s = gpu.subgroup_reduce <add> %loop#0`` after the loop takes the place of ``%loop#0``.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from .. import ir
from ..ir.core import Op, Value
from ..ir.types import elem_of
from .rewrite import copy_func

ALL_LANES = (1 << 16) - 1   # the lane-id bits a value may vary with when nothing better is known


class Deferral(NamedTuple):
    loop: ir.ForOp
    index: int               # the carried value's position among the loop's carried values
    update: Op               # the add, fma or add-of-multiply that makes the next value
    reduce: ir.SubgroupReduceOp


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(o, ir.SubgroupReduceOp) and isinstance(o.parent.parent, ir.ForOp) for o in func.walk()):
        return func   # (no reduction in a loop body: no copy)
    out = copy_func(func, ctx)
    for loop in [o for o in out.walk() if isinstance(o, ir.ForOp)]:
        uses = ir.users(out)
        found = _candidates(loop, uses)
        if not found:
            continue
        lanes = varying_lanes(out)   # (again for each such loop: a deferral before it changed values)
        for d in [d for d, scale in found if _uniform(d, scale, lanes)]:
            _defer(d, uses)
            uses = ir.users(out)
    return out


def varying_lanes(func: ir.FuncOp) -> Dict[Value, int]:
    """Each value -> the bits of the lane id it may vary with within a subgroup (0: the same in every
    lane). Kernel arguments, ids other than the lane's, constants and loop counters vary with none; a
    ``gpu.subgroup_reduce`` removes its cluster's bits; elementwise ops and gathers vary with their
    operands; loop-carried values are solved to a fixpoint; anything else varies with every bit."""
    bits: Dict[Value, int] = {}
    for a in func.body.args:
        bits[a] = 0
    _block(func.body, bits)
    return bits


def _block(block: ir.Block, bits: Dict[Value, int]) -> None:
    for op in block.ops:
        if isinstance(op, ir.ForOp):
            _loop(op, bits)
            continue
        for r in op.regions:
            for a in r.args:
                bits[a] = ALL_LANES
            _block(r, bits)
        got = _op_bits(op, bits)
        if isinstance(op, ir.IfOp):
            got = bits.get(op.operands[0], ALL_LANES)
            for r in op.regions:
                if r.terminator is not None:
                    got |= _or(r.terminator.operands, bits)
        for res in op.results:
            bits[res] = got


def _loop(op: ir.ForOp, bits: Dict[Value, int]) -> None:
    bits[op.iv] = _or(op.operands[:3], bits)
    carried = [bits.get(v, ALL_LANES) for v in op.inits]
    while True:
        for a, b in zip(op.iter_args, carried):
            bits[a] = b
        _block(op.body, bits)
        ys = op.body.terminator.operands
        nxt = [b | bits.get(y, ALL_LANES) for b, y in zip(carried, ys)]
        if nxt == carried:
            break
        carried = nxt
    for res, b in zip(op.results, carried):
        bits[res] = b


# ops whose result in a lane depends only on their operands in that lane (a gather: on the addresses
# and the mask; lanes that read one address at once read one value)
_ELEMENTWISE = (ir.BinaryOp, ir.UnaryOp, ir.FmaOp, ir.CmpOp, ir.SelectOp, ir.CastOp, ir.BroadcastOp, ir.ConstantOp,
                ir.SlotShuffleOp, ir.ExtractOp, ir.FromElementsOp, ir.ShapeCastOp, ir.AddPtrOp, ir.CreateTDescOp,
                ir.LoadGatherOp)
_UNIFORM_IDS = (ir.BlockIdOp, ir.GridDimOp, ir.SubgroupIdOp, ir.NumSubgroupsOp)


def _or(values, bits: Dict[Value, int]) -> int:
    out = 0
    for v in values:
        out |= bits.get(v, ALL_LANES)
    return out


def _op_bits(op: Op, bits: Dict[Value, int]) -> int:
    if isinstance(op, _UNIFORM_IDS):
        return 0
    if isinstance(op, _ELEMENTWISE) and not op.regions:
        return _or(op.operands, bits)
    if isinstance(op, ir.SubgroupReduceOp):
        return bits.get(op.operands[0], ALL_LANES) & ~_cluster_bits(op)
    if isinstance(op, ir.ShuffleOp) and op.mode == "idx" and bits.get(op.operands[1], ALL_LANES) == 0:
        return 0
    if isinstance(op, ir.ShuffleOp) and op.mode == "xor":
        return _or(op.operands, bits)
    return ALL_LANES


def _cluster_bits(op: ir.SubgroupReduceOp) -> int:
    """The lane-id bits that tell the lanes of one of ``op``'s clusters apart."""
    return (op.attrs["cluster_size"] - 1) * op.attrs["cluster_stride"]


def _candidates(loop: ir.ForOp, uses) -> List[tuple]:
    """(deferral, its factor or None) for each carried value of ``loop`` that has one of the forms,
    before the lanes are looked at."""
    body = loop.body
    out = []
    for i, (a, a0, y) in enumerate(zip(loop.iter_args, loop.inits, body.terminator.operands)):
        readers = uses.get(a, [])
        if len(readers) != 1 or readers[0][0].parent is not body:
            continue
        found = _update(readers[0][0], a, y, uses)
        if found is None or [u for u, _ in uses.get(y, [])] != [body.terminator] or _from_loop(a0):
            continue
        update, red, scale = found
        out.append((Deferral(loop, i, update, red), scale))
    return out


def _uniform(d: Deferral, scale: Optional[Value], lanes: Dict[Value, int]) -> bool:
    """Whether the factor, the initial value and the loop's bounds are the same in every lane of a
    cluster of the reduction."""
    cluster = _cluster_bits(d.reduce)
    values = [d.loop.inits[d.index], *d.loop.operands[:3]] + ([scale] if scale is not None else [])
    # (lanes of a cluster that ran different numbers of iterations would not add one sum per iteration)
    return not any(lanes.get(v, ALL_LANES) & cluster for v in values)


def _from_loop(v: Value) -> bool:
    """Whether ``v`` is a loop's result, or the sum this pass makes of one after the loop."""
    op = v.op
    if isinstance(op, ir.SubgroupReduceOp):
        op = op.operands[0].op
    return isinstance(op, ir.ForOp)


def _update(op: Op, a: Value, y: Value, uses):
    """(the op making ``y``, the reduction it adds, the factor ``a`` is scaled by or None) when ``op``,
    the one reader of ``a``, starts one of the forms this pass takes; else None."""
    def only_use(v: Value, reader: Op) -> bool:
        return [u for u, _ in uses.get(v, [])] == [reader]

    def reduction(v: Value, reader: Op) -> Optional[ir.SubgroupReduceOp]:
        r = v.op
        ok = (isinstance(r, ir.SubgroupReduceOp) and r.kind == "add" and r.parent is op.parent
              and only_use(v, reader))
        return r if ok else None
    if isinstance(op, ir.BinaryOp) and op.kind in ("addf", "addi") and op.result is y:
        other = op.operands[1] if op.operands[0] is a else op.operands[0]
        r = reduction(other, op)
        return (op, r, None) if r is not None else None
    if isinstance(op, ir.FmaOp) and op.result is y and a in op.operands[:2] and op.operands[2] is not a:
        r = reduction(op.operands[2], op)
        scale = op.operands[1] if op.operands[0] is a else op.operands[0]
        return (op, r, scale) if r is not None else None
    if isinstance(op, ir.BinaryOp) and op.kind == "mulf" and len(uses.get(op.result, [])) == 1:
        add = uses[op.result][0][0]
        if isinstance(add, ir.BinaryOp) and add.kind == "addf" and add.result is y and add.parent is op.parent:
            other = add.operands[1] if add.operands[0] is op.result else add.operands[0]
            r = reduction(other, add)
            scale = op.operands[1] if op.operands[0] is a else op.operands[0]
            return (add, r, scale) if r is not None else None
    return None


def _defer(d: Deferral, uses) -> None:
    loop, a0 = d.loop, d.loop.inits[d.index]
    if isinstance(a0.op, ir.ConstantOp) and a0.op.value in (0, 0.0):
        _finish(d, uses, [])    # (zeros in every lane already sum to zero)
        return
    # the initial value in the first lane of each cluster, -0 (x + -0 == x) in the others
    lane = ir.LaneIdOp(loc=loop.loc)
    i32 = elem_of(lane.result.type)
    mask = ir.ConstantOp(_cluster_bits(d.reduce), i32, loc=loop.loc)
    zero32 = ir.ConstantOp(0, i32, loc=loop.loc)
    pos = ir.BinaryOp("andi", lane.result, mask.result, loc=loop.loc)
    first = ir.CmpOp("eq", pos.result, zero32.result, loc=loop.loc)
    filler = ir.ConstantOp(-0.0 if elem_of(a0.type).is_floating else 0, a0.type, loc=loop.loc)
    init = ir.SelectOp(first.result, a0, filler.result, loc=loop.loc)
    ops = list(loop.operands)
    ops[3 + d.index] = init.result
    loop.operands = tuple(ops)
    _finish(d, uses, [lane, mask, zero32, pos, first, filler, init])


def _finish(d: Deferral, uses, before: List[Op]) -> None:
    """The body adds the lanes' own values; ``before`` goes before the loop, the sum after it."""
    loop, red = d.loop, d.reduce
    outer = loop.parent
    at = outer.ops.index(loop)
    # in the body, the lanes' own values instead of their sum
    x = red.operands[0]
    d.update.operands = tuple(x if v is red.result else v for v in d.update.operands)
    loop.body.ops.remove(red)
    # after the loop, the sum
    res = loop.results[d.index]
    total = ir.SubgroupReduceOp("add", res, red.attrs["cluster_size"], red.attrs["cluster_stride"], loc=red.loc)
    for reader, k in uses.get(res, []):
        ops = list(reader.operands)
        ops[k] = total.result
        reader.operands = tuple(ops)
    outer.ops[at:at + 1] = before + [loop, total]
    for o in before + [total]:
        o.parent = outer
