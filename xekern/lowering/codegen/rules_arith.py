"""Codegen rules shared by every emitter (table ``common``): constants, arithmetic, math, casts,
slot shuffles, subgroup reductions and shuffles, ids, barriers, and structured control flow."""
from __future__ import annotations

from llvmlite import ir as ll

from ... import ir
from ...ir.types import VectorType, elem_of
from ..rewrite import PassError
from . import visa_barrier
from .arith import binop, castop, cmpop, map_slots, narrow, sub_group_shuffle, unop, widen, workgroup_barrier
from .control import flat_like, for_loop, phis, shape_like
from .core import CodeGen, VecSlots, ll_type, rule
from .ocl import F64, I32, I64

@rule(ir.ConstantOp)
def _constant(cg: CodeGen, op: ir.ConstantOp):
    t = op.result.type
    e = elem_of(t)
    if isinstance(t, VectorType):
        vals = op.value if isinstance(op.value, tuple) else (op.value,) * t.numel
        slots = [cg.const(e, v) for v in vals]
        if len(slots) > 1:
            return [VecSlots(slots, ll.Constant(ll.VectorType(slots[0].type, len(slots)), [x.constant for x in slots]))]
        return [slots]
    return [cg.const(e, op.value)]


# ---- binary ---------------------------------------------------------------------------------------

@rule(ir.BinaryOp)
def _binary(cg: CodeGen, op: ir.BinaryOp):
    t = elem_of(op.operands[0].type)
    return map_slots(cg, op, lambda a, c: binop(cg, op.kind, a, c, t))


@rule(ir.FmaOp)
def _fma(cg: CodeGen, op: ir.FmaOp):
    t = elem_of(op.result.type)

    def f(x, y, z):
        x, y, z = widen(cg, x, t), widen(cg, y, t), widen(cg, z, t)
        return narrow(cg, cg.ocl.intrinsic(cg.b, f"llvm.fma.{'f64' if x.type == F64 else 'f32'}", x.type, [x, y, z]), t)
    return map_slots(cg, op, f)


@rule(ir.InlineAsmOp)
def _inline_asm(cg: CodeGen, op: ir.InlineAsmOp):
    """The vISA text once per slot, on the slot's values (vISA sees each as the subgroup's variable)."""
    if not cg.emitter.driver.inline_visa:
        raise PassError(f"codegen: inline assembly needs a driver that compiles vISA; {cg.emitter.name} on "
                        f"{cg.target.name} has none", op)
    t = ll_type(elem_of(op.result.type))
    return map_slots(cg, op, lambda *xs: cg.asm(t, op.attrs["asm"], op.attrs["constraints"], list(xs)))


# ---- unary ---------------------------------------------------------------------------------------

@rule(ir.UnaryOp)
def _unary(cg: CodeGen, op: ir.UnaryOp):
    t = elem_of(op.operands[0].type)
    return map_slots(cg, op, lambda x: unop(cg, op.fn, x, t))


# ---- comparisons, selects, casts --------------------------------------------------------------------

@rule(ir.CmpOp)
def _cmp(cg: CodeGen, op: ir.CmpOp):
    t = elem_of(op.operands[0].type)
    return map_slots(cg, op, lambda a, c: cmpop(cg, op.pred, a, c, t))


@rule(ir.SelectOp)
def _select(cg: CodeGen, op: ir.SelectOp):
    return map_slots(cg, op, lambda c, a, d: cg.b.select(c, a, d))


@rule(ir.CastOp)
def _cast(cg: CodeGen, op: ir.CastOp):
    src, dst = elem_of(op.operands[0].type), elem_of(op.result.type)
    return map_slots(cg, op, lambda x: castop(cg, op.kind, x, src, dst))


# ---- slots ---------------------------------------------------------------------------------------

@rule(ir.BroadcastOp)
def _broadcast(cg: CodeGen, op: ir.BroadcastOp):
    src = cg.get(op.operands[0])
    n = op.result.type.numel
    if isinstance(src, list):
        if len(src) == 1:
            return [src * n]
        if len(src) == n:
            return [list(src)]
        raise PassError(f"codegen: lane-level broadcast of {len(src)} slots to {n}", op)
    return [[src] * n]


@rule(ir.SlotShuffleOp)
def _shuffle_slots(cg: CodeGen, op: ir.SlotShuffleOp):
    pool = [x for v in op.operands for x in cg.slots(v)]
    return [[pool[i] for i in op.indices]]


@rule(ir.ExtractOp)
def _extract(cg: CodeGen, op: ir.ExtractOp):
    return [cg.slots(op.operands[0])[op.attrs["index"]]]


@rule(ir.FromElementsOp)
def _from_elements(cg: CodeGen, op: ir.FromElementsOp):
    return [[cg.get(v) for v in op.operands]]


@rule(ir.ShapeCastOp)
def _shape_cast(cg: CodeGen, op: ir.ShapeCastOp):
    v = cg.get(op.operands[0])
    if not isinstance(op.result.type, VectorType):
        return [v[0] if isinstance(v, list) else v]
    return [v if isinstance(v, list) else [v]]


# ---- subgroup operations ---------------------------------------------------------------------------

@rule(ir.SubgroupReduceOp)
def _subgroup_reduce(cg: CodeGen, op: ir.SubgroupReduceOp):
    from ..distribute import combine_kind
    t = elem_of(op.operands[0].type)
    kind = combine_kind(op.kind, t)
    size, stride = op.attrs["cluster_size"], op.attrs["cluster_stride"]
    vals = cg.get(op.operands[0])
    if isinstance(vals, list) and len(vals) >= 2 and not len(vals) & (len(vals) - 1) and size >= 2:
        return [_transposed_reduce(cg, kind, t, list(vals), size, stride)]

    def red(v):
        k = 1
        while k < size:
            other = sub_group_shuffle(cg, "xor", v, cg.i32(k * stride))
            v = binop(cg, kind, v, other, t)
            k *= 2
        return v
    return map_slots(cg, op, red)


def _transposed_reduce(cg: CodeGen, kind: str, t, vals: list, size: int, stride: int) -> list:
    """Several slots (rows) reduced across a cluster of ``size`` lanes at once: at each step (lane
    distance ``d`` = size / 2, size / 4, ...) a lane and its partner (``lane ^ d``) split the rows they
    hold, the lane without bit ``d`` keeping the first half and its partner the second; each sends the
    half it gives up (one shuffle per kept row) and combines what it receives with what it keeps. A
    butterfly finishes when a lane is down to one row; then every row is read back from a lane that
    holds it (a uniform index: a broadcast on the full subgroup). ``n - 1`` shuffles and combines per
    ``n`` rows where the row-by-row butterfly takes ``n log2(size)``."""
    n, lane = len(vals), cg.lane_id()
    owner = [0] * n                # position bits of the lanes that hold each row (at vals[row % len(vals)])
    d = size // 2
    while d >= 1:
        if len(vals) > 1:
            half = len(vals) // 2
            upper = cg.b.icmp_unsigned("!=", cg.b.and_(lane, cg.i32(d * stride)), cg.i32(0))
            nxt = []
            whole = d * 2 == size == cg.target.sg_size and stride == 1
            for i in range(half):
                lo, hi = vals[i], vals[i + half]
                keep = cg.b.select(upper, hi, lo)
                if whole:   # (the first step on a whole subgroup: lane p < d reads p + d's lo, the others p - d's hi)
                    got = sub_group_shuffle(cg, "down", lo, cg.i32(d), nxt=hi)
                else:
                    got = sub_group_shuffle(cg, "xor", cg.b.select(upper, lo, hi), cg.i32(d * stride))
                nxt.append(binop(cg, kind, keep, got, t))
            for r in range(n):      # a row in the second half of the list goes to the lanes with bit d
                if (r % len(vals)) >= half:
                    owner[r] |= d
            vals = nxt
        else:
            vals = [binop(cg, kind, vals[0], sub_group_shuffle(cg, "xor", vals[0], cg.i32(d * stride)), t)]
        d //= 2
    base = cg.b.sub(lane, cg.b.and_(lane, cg.i32((size - 1) * stride))) if size * stride < cg.target.sg_size \
        or stride > 1 else None
    out = []
    for r in range(n):
        at = cg.i32(owner[r] * stride)
        out.append(sub_group_shuffle(cg, "idx", vals[r % len(vals)], at if base is None else cg.b.add(base, at)))
    return out


@rule(ir.ShuffleOp)
def _shuffle(cg: CodeGen, op: ir.ShuffleOp):
    lane = cg.get(op.operands[1])
    vals = cg.get(op.operands[0])
    nxts = cg.get(op.operands[2]) if len(op.operands) > 2 else None
    if isinstance(vals, list):
        return [[sub_group_shuffle(cg, op.mode, v, lane, nxt=nxts[i] if nxts else None) for i, v in enumerate(vals)]]
    return [sub_group_shuffle(cg, op.mode, vals, lane, nxt=nxts)]


# ---- ids and synchronization -------------------------------------------------------------------------

@rule(ir.BlockIdOp)
def _block_id(cg: CodeGen, op):
    return [cg.b.trunc(cg.call("_Z12get_group_idj", I64, [cg.i32(op.dim)]), I32)]


@rule(ir.GridDimOp)
def _grid_dim(cg: CodeGen, op):
    return [cg.b.trunc(cg.call("_Z14get_num_groupsj", I64, [cg.i32(op.dim)]), I32)]


@rule(ir.SubgroupIdOp)
def _sg_id(cg: CodeGen, op):
    return [cg.sg_id()]


@rule(ir.LaneIdOp)
def _lane_id(cg: CodeGen, op):
    return [cg.lane_id()]


@rule(ir.NumSubgroupsOp)
def _num_sg(cg: CodeGen, op):
    return [cg.i32(cg.options.num_subgroups)]


@rule(ir.BarrierOp)
def _barrier(cg: CodeGen, op):
    if visa_barrier.applies(cg, op):   # (emitter-decisions' mark: emitters with visa_barriers)
        visa_barrier.barrier(cg, fence=not op.attrs.get("no_fence"))
    else:
        workgroup_barrier(cg, op)
    return []


@rule(ir.ValueBarrierOp)
def _value_barrier(cg: CodeGen, op):
    """The barrier stands after the operands' producers (they come first in the block) and before every
    user of the results, which are the operands' values: the call is convergent and clobbers memory,
    so LLVM moves no load or store across it."""
    workgroup_barrier(cg, op)
    return [cg.get(v) for v in op.operands]


_SCOPE = {"gpu": 1, "workgroup": 2}                   # SPIR-V Device, Workgroup
_SEMANTICS = {"global": 0x200 | 0x8, "shared": 0x100 | 0x8}  # Cross-workgroup / Workgroup memory, AcqRel


@rule(ir.FenceOp)
def _fence(cg: CodeGen, op):
    cg.call("_Z21__spirv_MemoryBarrierii", ll.VoidType(),
            [cg.i32(_SCOPE[op.attrs["scope"]]), cg.i32(_SEMANTICS[op.attrs["memory_kind"]])])
    return []


@rule(ir.CompileHintOp)
def _compile_hint(cg: CodeGen, op):
    return []  # the CPU device's compiler has no scheduling barrier to give (docs/language.md)


@rule(ir.ReturnOp)
def _return(cg: CodeGen, op):
    cg.b.ret_void()
    return []


# ---- structured control flow -----------------------------------------------------------------------

@rule(ir.ForOp)
def _for(cg: CodeGen, op: ir.ForOp):
    return for_loop(cg, op, {})


@rule(ir.YieldOp, ir.ConditionOp)
def _yield(cg: CodeGen, op):
    vals = [cg.get(v) for v in op.operands]
    cg.yielded = vals[1:] if isinstance(op, ir.ConditionOp) else vals
    if isinstance(op, ir.ConditionOp):
        cg.condition = vals[0]
    return []


@rule(ir.IfOp)
def _if(cg: CodeGen, op: ir.IfOp):
    b = cg.b
    cond = cg.get(op.operands[0])
    then_bb = cg.fn.append_basic_block("if.then")
    else_bb = cg.fn.append_basic_block("if.else")
    merge = cg.fn.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    ends = []
    for bb, region in ((then_bb, op.then_block), (else_bb, op.else_block)):
        b.position_at_end(bb)
        cg.block(region)
        ends.append((b.block, list(cg.yielded)))
    if not op.results:
        for blk, _ in ends:
            b.position_at_end(blk)
            b.branch(merge)
        b.position_at_end(merge)
        return []
    template = ends[0][1]
    flats = []
    for blk, vals in ends:
        b.position_at_end(blk)
        flat = flat_like(cg, template, vals)
        if flats:   # (one branch's 16-bit floats may be another's raw bits: a block read's i16)
            flat = [y if y.type == x.type else b.bitcast(y, x.type) for x, y in zip(flats[0][1], flat)]
        flats.append((b.block, flat))
        b.branch(merge)
    b.position_at_end(merge)
    phis = []
    for (tb, tf), (eb, ef) in [(flats[0], flats[1])]:
        for x, y in zip(tf, ef):
            p = b.phi(x.type)
            p.add_incoming(x, tb)
            p.add_incoming(y, eb)
            phis.append(p)
    return shape_like(cg, template, phis)


@rule(ir.WhileOp)
def _while(cg: CodeGen, op: ir.WhileOp):
    b = cg.b
    inits = [cg.get(v) for v in op.operands]
    init_flat = flat_like(cg, inits, inits)
    pre = b.block
    before = cg.fn.append_basic_block("while.cond")
    after = cg.fn.append_basic_block("while.body")
    exit_ = cg.fn.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    carried = phis(cg, init_flat, pre)
    for a, v in zip(op.before.args, shape_like(cg, inits, carried)):
        cg.values[a] = v
    cg.block(op.before)
    cond, passed = cg.condition, list(cg.yielded)
    b.cbranch(cond, after, exit_)
    b.position_at_end(after)
    for a, v in zip(op.after.args, passed):
        cg.values[a] = v
    cg.block(op.after)
    ys = flat_like(cg, inits, cg.yielded)
    latch = b.block
    b.branch(before)
    for p, y in zip(carried, ys):
        p.add_incoming(y, latch)
    b.position_at_end(exit_)
    return passed
