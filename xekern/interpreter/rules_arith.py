"""Interpreter rules for values: constants, arithmetic, math, comparisons, casts, tile shapes,
reductions, structured control flow, ids and the synchronization ops (no-ops here)."""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.types import DType, VectorType, elem_of
from . import numerics as N
from .core import rule, to_value

# ---- constants -----------------------------------------------------------------------------------

@rule(ir.ConstantOp)
def _constant(ctx, op, args):
    cache = ctx.launch.plan.constants  # made once per kernel, read-only
    v = cache.get(op)
    if v is None:
        t = op.result.type
        e = elem_of(t)
        make = N.float_const if e.is_floating else N.int_const
        if isinstance(op.value, tuple):
            a = np.stack([make(x, e) for x in op.value]).reshape(t.shape)
        else:
            a = make(op.value, e)
        v = to_value(t, a)
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
        cache[op] = v
    return [v]


# ---- binary --------------------------------------------------------------------------------------

_FLOAT = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide, "remf": np.fmod,
          "maxnumf": np.fmax, "minnumf": np.fmin, "maximumf": np.maximum, "minimumf": np.minimum,
          "powf": np.power, "atan2": np.arctan2, "copysignf": np.copysign}
_WRAPPING = {"addi": np.add, "subi": np.subtract, "muli": np.multiply, "andi": np.bitwise_and,
             "ori": np.bitwise_or, "xori": np.bitwise_xor}


def binary(kind: str, a, b, t: DType):
    """One elementwise ``a <kind> b`` of dtype ``t``, as the device computes it."""
    if t.is_floating:
        return N.narrow(_FLOAT[kind](N.widen(a, t), N.widen(b, t)), t)
    if type(a) is not np.ndarray and type(b) is not np.ndarray:
        return N.scalar_int_binary(kind, a, b, t)
    if kind in _WRAPPING:  # two's complement: the unsigned bits are the answer for every signedness
        return N.from_bits(_WRAPPING[kind](N.as_unsigned(a, t), N.as_unsigned(b, t)), t)
    if kind in ("divsi", "divui", "remsi", "remui"):
        return N.safe_div(kind, a, b, t)
    if kind in ("shli", "shrsi", "shrui"):
        return N.shift(kind, a, b, t)
    if kind in ("maxsi", "minsi", "maxui", "minui"):
        view = N.as_signed if kind.endswith("si") else N.as_unsigned
        x, y = view(a, t), view(b, t)
        r = np.maximum(x, y) if kind.startswith("max") else np.minimum(x, y)
        return np.where(r == x, np.asarray(a), np.asarray(b))
    if kind in ("mulhisi", "mulhiui"):
        return N.mulhi(kind, a, b, t)
    raise NotImplementedError(f"binary kind {kind}")


@rule(ir.BinaryOp)
def _binary(ctx, op, args):
    t = elem_of(op.operands[0].type)
    return [to_value(op.result.type, binary(op.kind, args[0], args[1], t))]


@rule(ir.FmaOp)
def _fma(ctx, op, args):
    """``a * b + c``: f32 (and f16/bf16, computed in f32) through f64, where the product is exact;
    f64 operands round twice (NumPy has no fused multiply-add)."""
    t = elem_of(op.result.type)
    a, b, c = (np.asarray(N.widen(x, t)).astype(np.float64) for x in args)
    r = a * b + c
    if t.bits < 64:
        r = r.astype(np.float32)
    return [to_value(op.result.type, N.narrow(r, t))]


# ---- unary ---------------------------------------------------------------------------------------

_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
         "absf": np.abs, "negf": np.negative, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
         "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": N.round_half_away, "erf": N.erf,
         "rsqrt": lambda x: (np.ones_like(x) / np.sqrt(x))}


def unary(fn: str, x, t: DType):
    if t.is_floating:
        return N.narrow(_MATH[fn](N.widen(x, t)), t)
    if fn == "absi":
        s = N.as_signed(x, t)
        return N.from_bits(np.where(s < 0, np.negative(s), s).astype(s.dtype), t)
    if fn == "noti":
        return N.from_bits(np.invert(N.as_unsigned(x, t)), t)
    if fn == "ctpop":
        return N.popcount(x, t)
    if fn == "ctlz":
        return N.count_leading_zeros(x, t)
    raise NotImplementedError(f"unary function {fn}")


@rule(ir.UnaryOp)
def _unary(ctx, op, args):
    return [to_value(op.result.type, unary(op.fn, args[0], elem_of(op.result.type)))]


# ---- comparisons, selects, casts ---------------------------------------------------------------------

_ORDERED = {"oeq": np.equal, "olt": np.less, "ole": np.less_equal, "ogt": np.greater, "oge": np.greater_equal}
_INT_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}


def compare(pred: str, a, b, t: DType):
    if t.is_floating:
        x, y = N.widen(a, t), N.widen(b, t)
        if pred in _ORDERED:
            return _ORDERED[pred](x, y)
        uno = np.isnan(x) | np.isnan(y)
        return {"one": (x != y) & ~uno, "une": x != y, "uno": uno, "ord": ~uno}[pred]
    if type(a) is not np.ndarray and type(b) is not np.ndarray:
        return N.scalar_int_compare(pred, a, b, t)
    if pred in ("eq", "ne"):
        return _INT_CMP[pred](N.as_unsigned(a, t), N.as_unsigned(b, t))
    view = N.as_signed if pred[0] == "s" else N.as_unsigned
    return _INT_CMP[pred[1:]](view(a, t), view(b, t))


@rule(ir.CmpOp)
def _cmp(ctx, op, args):
    return [to_value(op.result.type, compare(op.pred, args[0], args[1], elem_of(op.operands[0].type)))]


@rule(ir.SelectOp)
def _select(ctx, op, args):
    c, a, b = args
    return [to_value(op.result.type, np.where(c, a, b))]


def cast(kind: str, x, src: DType, dst: DType):
    """One ``arith`` cast as the device does it (fp8 and 16-bit floats go through f32; fp8 saturates)."""
    if kind == "bitcast":
        return np.asarray(x).view(N.npdt(dst))
    if kind in ("extf", "truncf"):
        v = np.asarray(x)
        if src.is_fp8:
            v = N.widen(v, src)
        if dst.computed_in_f32 and v.dtype.itemsize == 8:
            v = v.astype(np.float32)  # the device rounds f64 -> fp8/f16/bf16 through f32
        return N.narrow(v, dst)
    if kind in ("sitofp", "uitofp"):
        v = N.as_signed(x, src) if kind == "sitofp" else N.as_unsigned(x, src)
        f = v.astype(np.float32 if dst.computed_in_f32 else N.npdt(dst))
        return N.narrow(f, dst)
    if kind in ("fptosi", "fptoui"):  # out of range is poison on the device; NumPy's C cast here
        v = N.widen(x, src)
        if dst.is_bool:
            return v.astype(np.int64) & 1 != 0
        w = N.SIGNED[dst.bits] if kind == "fptosi" else N.UNSIGNED[dst.bits]
        return v.astype(w).view(N.npdt(dst))
    if kind in ("extsi", "extui"):
        if kind == "extsi":
            v = N.as_signed(x, src).astype(N.SIGNED[dst.bits])
        else:
            v = N.as_unsigned(x, src).astype(N.UNSIGNED[dst.bits])
        return N.from_bits(v, dst)
    if kind == "trunci":
        v = N.as_unsigned(x, src).astype(N.UNSIGNED[max(dst.bits, 8)])
        return N.from_bits(v, dst)
    raise NotImplementedError(f"cast {kind}")


@rule(ir.CastOp)
def _cast(ctx, op, args):
    src, dst = elem_of(op.operands[0].type), elem_of(op.result.type)
    return [to_value(op.result.type, cast(op.kind, args[0], src, dst))]


# ---- tile shapes ------------------------------------------------------------------------------------

@rule(ir.StepOp)
def _step(ctx, op, args):
    t = op.result.type
    return [np.arange(t.shape[0], dtype=N.npdt(t.elem))]


@rule(ir.BroadcastOp)
def _broadcast(ctx, op, args):
    t = op.result.type
    return [np.broadcast_to(args[0], t.shape).copy()]


@rule(ir.ShapeCastOp)
def _shape_cast(ctx, op, args):
    t = op.result.type
    a = np.asarray(args[0])
    if isinstance(t, VectorType):
        return [a.reshape(t.shape)]
    return [a.reshape(())[()]]


@rule(ir.TransposeOp)
def _transpose(ctx, op, args):
    return [np.ascontiguousarray(np.transpose(args[0], op.perm))]


@rule(ir.ConvertLayoutOp)
def _convert_layout(ctx, op, args):
    return [args[0]]  # a layout is a distribution; the workgroup's tile is the same


@rule(ir.ExtractOp)
def _extract(ctx, op, args):
    return [np.asarray(args[0]).reshape(-1)[op.attrs["index"]]]


@rule(ir.FromElementsOp)
def _from_elements(ctx, op, args):
    return [to_value(op.result.type, np.array(args, dtype=N.npdt(op.result.type.elem)).reshape(op.result.type.shape))]


@rule(ir.SlotShuffleOp)
def _slot_shuffle(ctx, op, args):
    pool = np.concatenate([np.asarray(a).reshape(-1) for a in args])
    return [to_value(op.result.type, pool[list(op.indices)].reshape(op.result.type.shape))]


@rule(ir.TileShuffleOp)
def _tile_shuffle(ctx, op, args):
    a = np.asarray(args[0])
    n, d = a.shape[op.axis], op.distance
    if op.mode == "xor":
        return [np.take(a, np.arange(n) ^ d, axis=op.axis)]
    both = np.concatenate([a, np.asarray(args[-1])], axis=op.axis)
    return [np.take(both, np.arange(n) + d, axis=op.axis)]


@rule(ir.TileGatherOp)
def _tile_gather(ctx, op, args):
    src = np.concatenate([np.asarray(a) for a in args[1:]], axis=op.axis)
    index = np.asarray(args[0]).astype(np.int64)
    inside = (index >= 0) & (index < src.shape[op.axis])
    got = np.take_along_axis(src, np.where(inside, index, 0), axis=op.axis)
    none = np.array(-0.0 if elem_of(op.result.type).is_floating else 0).astype(src.dtype)
    return [np.where(inside, got, none)]


# ---- reductions ---------------------------------------------------------------------------------------

_REDUCE_FLOAT = {"add": np.add, "mul": np.multiply, "maxnumf": np.fmax, "minnumf": np.fmin,
                 "maximumf": np.maximum, "minimumf": np.minimum}
_REDUCE_BITS = {"add": np.add, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
                "xor": np.bitwise_xor}


def reduce(kind: str, x, axis: int, t: DType):
    """``vector.multi_reduction``. Floats are combined in f32 (f16/bf16) and rounded once at the
    end; the device rounds after each combine and in another order, so sums differ in the last bits."""
    if t.is_floating:
        if kind not in _REDUCE_FLOAT:
            raise NotImplementedError(f"reduction {kind} on {t}")
        # a float sum starts from -0.0, the identity of IEEE addition (NumPy's +0.0 would turn a sum
        # of -0.0s into +0.0; the device adds the elements themselves)
        extra = {"initial": -0.0} if _REDUCE_FLOAT[kind] is np.add else {}
        return N.narrow(_REDUCE_FLOAT[kind].reduce(N.widen(x, t), axis=axis, **extra), t)
    if kind in _REDUCE_BITS:
        u = N.as_unsigned(x, t)
        return N.from_bits(_REDUCE_BITS[kind].reduce(u, axis=axis, dtype=u.dtype), t)
    view = N.as_signed if kind.endswith("si") else N.as_unsigned
    v = view(x, t)
    r = np.max(v, axis=axis) if kind.startswith("max") else np.min(v, axis=axis)
    return N.from_bits(r, t) if not t.is_bool else np.asarray(r) != 0


@rule(ir.ReduceOp)
def _reduce(ctx, op, args):
    return [to_value(op.result.type, reduce(op.kind, args[0], op.axis, elem_of(op.result.type)))]


# ---- structured control flow -------------------------------------------------------------------------

@rule(ir.ForOp)
def _for(ctx, op: ir.ForOp, args):
    lb, ub, step = args[:3]
    carried = list(args[3:])
    t: DType = op.operands[0].type
    less = "slt" if t.is_signed else "ult"
    iv = lb
    while N.scalar_int_compare(less, iv, ub, t):
        carried = ctx.run(op.body, [iv] + carried)
        iv = N.scalar_int_binary("addi", iv, step, t)
    return carried


@rule(ir.IfOp)
def _if(ctx, op: ir.IfOp, args):
    return ctx.run(op.then_block if args[0] else op.else_block)


@rule(ir.WhileOp)
def _while(ctx, op: ir.WhileOp, args):
    carried = list(args)
    while True:
        out = ctx.run(op.before, carried)
        if not out[0]:
            return out[1:]
        carried = ctx.run(op.after, out[1:])


# ---- ids and synchronization ----------------------------------------------------------------------------

@rule(ir.BlockIdOp)
def _block_id(ctx, op, args):
    return [np.int32(ctx.program_id[op.dim])]


@rule(ir.GridDimOp)
def _grid_dim(ctx, op, args):
    return [np.int32(ctx.grid[op.dim])]


@rule(ir.NumSubgroupsOp)
def _num_subgroups(ctx, op, args):
    return [np.int32(ctx.launch.num_subgroups)]


_ID_TILES: dict = {}


@rule(ir.IdTileOp)
def _id_tile(ctx, op, args):
    """The ids of the holders of each element, from the layout's ownership model (the frontend
    pinned a complete layout and checked that every copy of an element agrees)."""
    from ..layouts import ownership
    t = op.result.type
    layout, which = op.attrs["layout"], op.which
    key = (layout, tuple(t.shape), which)
    if key not in _ID_TILES:
        out = np.zeros(t.shape, np.int32)
        for coords, owners in ownership(layout, t.shape).items():
            out[coords] = getattr(owners[0], "sg" if which == "subgroup" else "lane")
        _ID_TILES[key] = out
    return [_ID_TILES[key]]


@rule(ir.BarrierOp, ir.FenceOp, ir.CompileHintOp, ir.AllocNBarrierOp, ir.NBarrierArriveOp, ir.NBarrierWaitOp)
def _no_op(ctx, op, args):
    """One program runs at a time, in order: every write is visible to every later read."""
    return None


@rule(ir.ValueBarrierOp)
def _value_barrier(ctx, op, args):
    """Programs run one at a time: every work item has produced the values already."""
    return list(args)


@rule(ir.InitNBarrierOp)
def _init_nbarrier(ctx, op, args):
    return [("nbarrier", int(args[0]), int(args[1]))]
