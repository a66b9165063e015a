"""Codegen rules shared by every target: constants, arithmetic, math, casts, slot shuffles,
subgroup reductions and shuffles, ids, barriers, and structured control flow."""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ... import ir
from ...ir import types as T
from ...ir.types import DType, VectorType, elem_of
from ..rewrite import PassError
from . import visa_barrier
from .recurrence import Loop
from .visa_dpas import loop_accumulators
from .core import CodeGen, VecSlots, f32_to_bf16_bits, ll_type, rule
from .ocl import F16, F32, F64, I1, I8, I16, I32, I64, mangle_scalar

# ---- 16-bit floats are computed in f32 ------------------------------------------------------------


def bf16_to_f32(cg: CodeGen, v):
    return cg.b.bitcast(cg.b.shl(cg.b.zext(v, I32), ll.Constant(I32, 16)), F32)


def f32_to_bf16(cg: CodeGen, v):
    """Round to nearest even; NaN stays a quiet NaN."""
    b = cg.b
    bits = b.bitcast(v, I32)
    lsb = b.and_(b.lshr(bits, ll.Constant(I32, 16)), ll.Constant(I32, 1))
    rounded = b.lshr(b.add(bits, b.add(lsb, ll.Constant(I32, 0x7FFF))), ll.Constant(I32, 16))
    isnan = b.fcmp_unordered("uno", v, v)
    out = b.select(isnan, ll.Constant(I32, 0x7FC0), rounded)
    return b.trunc(out, I16)


def widen(cg: CodeGen, v, t: DType):
    """A float value in the type arithmetic runs in (f32 for f16/bf16)."""
    if t.name == "bf16":
        return bf16_to_f32(cg, v)
    if t.name == "f16":
        return cg.b.fpext(v, F32)
    return v


def narrow(cg: CodeGen, v, t: DType):
    if t.name == "bf16":
        return f32_to_bf16(cg, v)
    if t.name == "f16":
        return cg.b.fptrunc(v, F16)
    return v


def _map(cg: CodeGen, op: ir.Op, fn) -> List:
    """Apply ``fn`` slot by slot over the operands (scalars are shared by every slot)."""
    vals = [cg.get(v) for v in op.operands]
    n = max([len(v) for v in vals if isinstance(v, list)] or [0])
    if n == 0:
        return [fn(*vals)]
    return [[fn(*[v[i] if isinstance(v, list) else v for v in vals]) for i in range(n)]]


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

_FBIN = {"addf": "fadd", "subf": "fsub", "mulf": "fmul", "divf": "fdiv", "remf": "frem"}
_IBIN = {"addi": "add", "subi": "sub", "muli": "mul", "andi": "and_", "ori": "or_", "xori": "xor",
         "shli": "shl", "shrsi": "ashr", "shrui": "lshr"}


def binop(cg: CodeGen, kind: str, a, c, t: DType):
    """One scalar ``a <kind> c`` of dtype ``t``."""
    b = cg.b
    if t.is_floating:
        x, y = widen(cg, a, t), widen(cg, c, t)
        ft = x.type
        suffix = {F32: "f32", F64: "f64"}[ft]
        if kind in _FBIN:
            r = getattr(b, _FBIN[kind])(x, y)
        elif kind in ("maxnumf", "minnumf"):
            r = cg.ocl.intrinsic(b, f"llvm.{kind[:6]}.{suffix}", ft, [x, y])
        elif kind in ("maximumf", "minimumf"):
            m = cg.ocl.intrinsic(b, f"llvm.{'maxnum' if kind == 'maximumf' else 'minnum'}.{suffix}", ft, [x, y])
            nan = b.fcmp_unordered("uno", x, y)
            r = b.select(nan, b.fadd(x, y), m)
        elif kind == "powf":
            r = cg.ocl.intrinsic(b, f"llvm.pow.{suffix}", ft, [x, y])
        elif kind in ("atan2", "copysignf"):
            name = {"atan2": "atan2", "copysignf": "copysign"}[kind]
            m = mangle_scalar(ft)
            r = cg.call(f"_Z{len(name)}{name}{m}{m}", ft, [x, y])
        else:
            raise PassError(f"codegen: no float rule for {kind}")
        return narrow(cg, r, t)
    if kind in _IBIN:
        return getattr(b, _IBIN[kind])(a, c)
    if kind in ("divsi", "divui", "remsi", "remui"):
        return _safe_div(cg, kind, a, c)
    if kind in ("maxsi", "minsi", "maxui", "minui"):
        signed = kind.endswith("si")
        op = ">" if kind.startswith("max") else "<"
        cmp = b.icmp_signed(op, a, c) if signed else b.icmp_unsigned(op, a, c)
        return b.select(cmp, a, c)
    if kind in ("mulhisi", "mulhiui"):
        w = a.type.width
        ext = b.sext if kind == "mulhisi" else b.zext
        wide = ll.IntType(2 * w)
        p = b.mul(ext(a, wide), ext(c, wide))
        return b.trunc(b.lshr(p, ll.Constant(wide, w)), a.type)
    raise PassError(f"codegen: no integer rule for {kind}")


def _safe_div(cg: CodeGen, kind: str, a, c):
    """C-style integer division that cannot trap: x / 0 gives 0 (the CPU device would raise
    SIGFPE and take the process down), INT_MIN / -1 wraps."""
    b = cg.b
    t = a.type
    if isinstance(c, ll.Constant) and isinstance(c.constant, int) and c.constant != 0 and (
            kind in ("divui", "remui") or c.constant != -1 and c.constant != (1 << t.width) - 1):
        return {"divsi": b.sdiv, "divui": b.udiv, "remsi": b.srem, "remui": b.urem}[kind](a, c)
    zero = ll.Constant(t, 0)
    is_zero = b.icmp_unsigned("==", c, zero)
    one = ll.Constant(t, 1)
    d = b.select(is_zero, one, c)
    if kind in ("divsi", "remsi"):
        minus1 = ll.Constant(t, -1)
        is_m1 = b.icmp_signed("==", d, minus1)
        d = b.select(is_m1, one, d)
        q = b.sdiv(a, d) if kind == "divsi" else b.srem(a, d)
        q = b.select(is_m1, b.neg(a) if kind == "divsi" else zero, q)
    else:
        q = b.udiv(a, d) if kind == "divui" else b.urem(a, d)
    return b.select(is_zero, zero, q)


@rule(ir.BinaryOp)
def _binary(cg: CodeGen, op: ir.BinaryOp):
    t = elem_of(op.operands[0].type)
    return _map(cg, op, lambda a, c: binop(cg, op.kind, a, c, t))


@rule(ir.FmaOp)
def _fma(cg: CodeGen, op: ir.FmaOp):
    t = elem_of(op.result.type)

    def f(x, y, z):
        x, y, z = widen(cg, x, t), widen(cg, y, t), widen(cg, z, t)
        return narrow(cg, cg.ocl.intrinsic(cg.b, f"llvm.fma.{'f64' if x.type == F64 else 'f32'}", x.type, [x, y, z]), t)
    return _map(cg, op, f)


# ---- unary ---------------------------------------------------------------------------------------

_LLVM_MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "sin": "sin",
              "cos": "cos", "floor": "floor", "ceil": "ceil", "absf": "fabs", "trunc": "trunc",
              "round": "round"}
_OCL_MATH = {"rsqrt": "rsqrt", "tanh": "tanh", "erf": "erf", "tan": "tan"}


def unop(cg: CodeGen, fn: str, x, t: DType):
    b = cg.b
    if t.is_floating:
        v = widen(cg, x, t)
        suffix = "f64" if v.type == F64 else "f32"
        if fn in _LLVM_MATH:
            r = cg.ocl.intrinsic(b, f"llvm.{_LLVM_MATH[fn]}.{suffix}", v.type, [v])
        elif fn in _OCL_MATH:
            name = _OCL_MATH[fn]
            r = cg.call(f"_Z{len(name)}{name}{mangle_scalar(v.type)}", v.type, [v])
        elif fn == "negf":
            r = b.fneg(v)
        else:
            raise PassError(f"codegen: no rule for math.{fn}")
        return narrow(cg, r, t)
    if fn == "absi":
        return b.select(b.icmp_signed("<", x, ll.Constant(x.type, 0)), b.neg(x), x)
    if fn == "noti":
        return b.xor(x, ll.Constant(x.type, -1))
    if fn == "ctpop":
        return cg.ocl.intrinsic(b, f"llvm.ctpop.i{x.type.width}", x.type, [x])
    raise PassError(f"codegen: no rule for {fn} on {t}")


@rule(ir.UnaryOp)
def _unary(cg: CodeGen, op: ir.UnaryOp):
    t = elem_of(op.operands[0].type)
    return _map(cg, op, lambda x: unop(cg, op.fn, x, t))


# ---- comparisons, selects, casts --------------------------------------------------------------------

_FCMP = {"oeq": ("==", True), "one": ("!=", True), "olt": ("<", True), "ole": ("<=", True), "ogt": (">", True),
         "oge": (">=", True), "une": ("!=", False), "uno": ("uno", False), "ord": ("ord", True)}
_ICMP = {"eq": ("==", True), "ne": ("!=", True), "slt": ("<", True), "sle": ("<=", True), "sgt": (">", True),
         "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False), "uge": (">=", False)}


def cmpop(cg: CodeGen, pred: str, a, c, t: DType):
    b = cg.b
    if t.is_floating:
        x, y = widen(cg, a, t), widen(cg, c, t)
        p, ordered = _FCMP[pred]
        return b.fcmp_ordered(p, x, y) if ordered else b.fcmp_unordered(p, x, y)
    p, signed = _ICMP[pred]
    return b.icmp_signed(p, a, c) if signed else b.icmp_unsigned(p, a, c)


@rule(ir.CmpOp)
def _cmp(cg: CodeGen, op: ir.CmpOp):
    t = elem_of(op.operands[0].type)
    return _map(cg, op, lambda a, c: cmpop(cg, op.pred, a, c, t))


@rule(ir.SelectOp)
def _select(cg: CodeGen, op: ir.SelectOp):
    return _map(cg, op, lambda c, a, d: cg.b.select(c, a, d))


def castop(cg: CodeGen, kind: str, x, src: DType, dst: DType):
    b = cg.b
    dt = ll_type(dst)
    if kind == "bitcast":
        return x if x.type == dt else b.bitcast(x, dt)
    if kind in ("extf", "truncf"):
        v = widen(cg, x, src)
        if dst.name in ("bf16", "f16") and v.type == F64:
            v = b.fptrunc(v, F32)
        if dst.name in ("bf16", "f16"):
            return narrow(cg, v, dst)
        if v.type == dt:
            return v
        return b.fpext(v, dt) if dst.bits > 32 or v.type == F16 else b.fptrunc(v, dt)
    if kind in ("sitofp", "uitofp"):
        ft = F32 if dst.name in ("bf16", "f16") else dt
        v = b.sitofp(x, ft) if kind == "sitofp" else b.uitofp(x, ft)
        return narrow(cg, v, dst)
    if kind in ("fptosi", "fptoui"):
        v = widen(cg, x, src)
        return b.fptosi(v, dt) if kind == "fptosi" else b.fptoui(v, dt)
    if kind == "extsi":
        return b.sext(x, dt)
    if kind == "extui":
        return b.zext(x, dt)
    if kind == "trunci":
        return b.trunc(x, dt)
    raise PassError(f"codegen: no rule for cast {kind}")


@rule(ir.CastOp)
def _cast(cg: CodeGen, op: ir.CastOp):
    src, dst = elem_of(op.operands[0].type), elem_of(op.result.type)
    return _map(cg, op, lambda x: castop(cg, op.kind, x, src, dst))


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

def sub_group_shuffle(cg: CodeGen, mode: str, v, lane):
    """``intel_sub_group_shuffle[_xor|_down|_up]`` of one value; narrow types go through 32 bits."""
    t = v.type
    wide = t
    if isinstance(t, ll.IntType) and t.width < 32:
        wide, v = I32, cg.b.zext(v, I32)
    elif t == F16:
        wide, v = I32, cg.b.zext(cg.b.bitcast(v, I16), I32)
    m = mangle_scalar(wide)
    if mode == "idx":
        r = cg.call(f"_Z23intel_sub_group_shuffle{m}j", wide, [v, lane], convergent=True)
    elif mode == "xor":
        r = cg.call(f"_Z27intel_sub_group_shuffle_xor{m}j", wide, [v, lane], convergent=True)
    elif mode == "down":
        r = cg.call(f"_Z28intel_sub_group_shuffle_down{m}{m}j", wide, [v, v, lane], convergent=True)
    elif mode == "up":
        r = cg.call(f"_Z26intel_sub_group_shuffle_up{m}{m}j", wide, [v, v, lane], convergent=True)
    else:
        raise PassError(f"codegen: unknown shuffle mode {mode}")
    if wide != t:
        if t == F16:
            return cg.b.bitcast(cg.b.trunc(r, I16), F16)
        return cg.b.trunc(r, t)
    return r


@rule(ir.SubgroupReduceOp)
def _subgroup_reduce(cg: CodeGen, op: ir.SubgroupReduceOp):
    from ..distribute import combine_kind
    t = elem_of(op.operands[0].type)
    kind = combine_kind(op.kind, t)
    size, stride = op.attrs["cluster_size"], op.attrs["cluster_stride"]

    def red(v):
        k = 1
        while k < size:
            other = sub_group_shuffle(cg, "xor", v, cg.i32(k * stride))
            v = binop(cg, kind, v, other, t)
            k *= 2
        return v
    return _map(cg, op, red)


@rule(ir.ShuffleOp)
def _shuffle(cg: CodeGen, op: ir.ShuffleOp):
    lane = cg.get(op.operands[1])
    vals = cg.get(op.operands[0])
    if isinstance(vals, list):
        return [[sub_group_shuffle(cg, op.mode, v, lane) for v in vals]]
    return [sub_group_shuffle(cg, op.mode, vals, lane)]


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
    if visa_barrier.applies(cg, op):
        visa_barrier.barrier(cg, fence=not op.attrs.get("no_fence"))
        return []
    # CLK_LOCAL_MEM_FENCE for barriers that only order SLM (memory = "local"), else also CLK_GLOBAL_MEM_FENCE
    flags = 1 if op.attrs.get("memory") == "local" else 3
    cg.call("_Z7barrierj", ll.VoidType(), [cg.i32(flags)], convergent=True)
    return []


@rule(ir.ValueBarrierOp)
def _value_barrier(cg: CodeGen, op):
    """The barrier stands after the operands' producers (they come first in the block) and before every
    user of the results, which are the operands' values: the call is convergent and clobbers memory,
    so LLVM moves no load or store across it."""
    _barrier(cg, op)
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


@rule(ir.CompileHintOp, family="gpu")
def _compile_hint_gpu(cg: CodeGen, op):
    """vISA's software fence ``fence_sw`` as inline vISA: IGC's scheduler moves no instruction across
    it and it emits no instruction itself. Measured with IGC 12504 on pvc (tests/test_gpu_isa.py):
    ``a = load; a = a*a+1; hint; b = load`` keeps the multiply before the second load's messages,
    which IGC otherwise issues together with the first ones. It has no operands, so IGC's
    dropping of statements with unprovably-uniform operands (``rules_block._inline_asm``) cannot hit it."""
    cg.asm(ll.VoidType(), "fence_sw", "", [])
    return []


@rule(ir.ReturnOp)
def _return(cg: CodeGen, op):
    cg.b.ret_void()
    return []


# ---- structured control flow -----------------------------------------------------------------------

def _carried(cg: CodeGen, v):
    """How a loop or branch carries a value: on GPUs a slot list as one vector (so IGC keeps it in
    place across iterations instead of copying every element; SPIR-V vectors hold at most 16), on
    the CPU device as separate scalars (its vectorizer widens each lane scalar into one SIMD
    register; a lane's vector would become a 16 x 16 transpose in every iteration), a descriptor
    as its fields."""
    if cg.family == "gpu" and isinstance(v, list) and 1 < len(v) <= 16 and len({x.type for x in v}) == 1 and \
            isinstance(v[0].type, (ll.IntType, ll.FloatType, ll.HalfType, ll.DoubleType)):
        return "vec"
    if isinstance(v, list):
        return "list"
    if hasattr(v, "parts"):
        return "record"
    return "scalar"


def _as_vector(cg: CodeGen, v):
    if isinstance(v, VecSlots) and v.per == 1:
        return v.vec
    vec = ll.Constant(ll.VectorType(v[0].type, len(v)), None)
    for i, x in enumerate(v):
        vec = cg.b.insert_element(vec, x, cg.i32(i))
    return vec


def _flat_like(cg: CodeGen, templates: List, values: List) -> List:
    """The LLVM values that carry ``values``, in the form ``templates`` (the loop's inits) chose."""
    out = []
    for t, v in zip(templates, values):
        kind = _carried(cg, t)
        if kind == "vec":
            out.append(_as_vector(cg, v))
        elif kind == "list":
            out.extend(v)
        elif kind == "record":
            out.extend(v.parts())
        else:
            out.append(v)
    return out


def _shape_like(cg: CodeGen, templates: List, flat: List) -> List:
    """Values shaped like ``templates`` made of the LLVM values ``flat`` (inverse of ``_flat_like``)."""
    out, i = [], 0
    for t in templates:
        kind = _carried(cg, t)
        if kind == "vec":
            vec = flat[i]
            i += 1
            out.append(VecSlots([cg.b.extract_element(vec, cg.i32(j)) for j in range(len(t))], vec))
        elif kind in ("list", "record"):
            n = len(t) if kind == "list" else len(t.parts())
            chunk = flat[i:i + n]
            i += n
            out.append(chunk if kind == "list" else t.with_parts(chunk))
        else:
            out.append(flat[i])
            i += 1
    return out


def _phis(cg: CodeGen, flat: List, incoming_block) -> List:
    phis = [cg.b.phi(v.type) for v in flat]
    for p, v in zip(phis, flat):
        p.add_incoming(v, incoming_block)
    return phis


@rule(ir.ForOp)
def _for(cg: CodeGen, op: ir.ForOp):
    """A header-tested loop (IGC rotates it; a loop LLVM-rotated here spills on dg2). DPAS
    accumulators that ``loop_accumulators`` keeps in vISA registers are set before it and read
    after it instead of being carried by phis."""
    b = cg.b
    lb, ub, step = (cg.get(v) for v in op.operands[:3])
    regs = loop_accumulators(cg, op)  # DPAS accumulators in vISA registers: not carried by phis
    everything = [cg.get(v) for v in op.inits]
    for i, reg in regs.items():
        reg.define(cg, everything[i])
    phied = [i for i in range(len(everything)) if i not in regs]
    inits = [everything[i] for i in phied]
    init_flat = _flat_like(cg, inits, inits)
    pre = b.block
    header = cg.fn.append_basic_block("for.header")
    body = cg.fn.append_basic_block("for.body")
    exit_ = cg.fn.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    carried = _phis(cg, init_flat, pre)
    signed = op.operands[0].type.is_signed
    cond = b.icmp_signed("<", iv, ub) if signed else b.icmp_unsigned("<", iv, ub)
    b.cbranch(cond, body, exit_)
    b.position_at_end(body)
    cg.values[op.iv] = iv
    loop = Loop(iv, lb, step, pre, header, cg.fn.blocks.index(header))
    cg.loops.append(loop)
    for i, v in zip(phied, _shape_like(cg, inits, carried)):
        cg.values[op.iter_args[i]] = v
    for i, reg in regs.items():
        cg.values[op.iter_args[i]] = reg
    cg.block(op.body)  # ends with scf.yield, which records the yielded values
    ys = _flat_like(cg, inits, [cg.yielded[i] for i in phied])
    nxt = b.add(iv, step)
    latch = b.block
    b.branch(header)
    iv.add_incoming(nxt, latch)
    for p, y in zip(carried, ys):
        p.add_incoming(y, latch)
    cg.loops.pop().close(cg, latch)
    b.position_at_end(exit_)
    results = dict(zip(phied, _shape_like(cg, inits, carried)))
    results.update({i: reg.read(cg) for i, reg in regs.items()})
    return [results[i] for i in range(len(everything))]


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
        flats.append((b.block, _flat_like(cg, template, vals)))
        b.branch(merge)
    b.position_at_end(merge)
    phis = []
    for (tb, tf), (eb, ef) in [(flats[0], flats[1])]:
        for x, y in zip(tf, ef):
            p = b.phi(x.type)
            p.add_incoming(x, tb)
            p.add_incoming(y, eb)
            phis.append(p)
    return _shape_like(cg, template, phis)


@rule(ir.WhileOp)
def _while(cg: CodeGen, op: ir.WhileOp):
    b = cg.b
    inits = [cg.get(v) for v in op.operands]
    init_flat = _flat_like(cg, inits, inits)
    pre = b.block
    before = cg.fn.append_basic_block("while.cond")
    after = cg.fn.append_basic_block("while.body")
    exit_ = cg.fn.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    carried = _phis(cg, init_flat, pre)
    for a, v in zip(op.before.args, _shape_like(cg, inits, carried)):
        cg.values[a] = v
    cg.block(op.before)
    cond, passed = cg.condition, list(cg.yielded)
    b.cbranch(cond, after, exit_)
    b.position_at_end(after)
    for a, v in zip(op.after.args, passed):
        cg.values[a] = v
    cg.block(op.after)
    ys = _flat_like(cg, inits, cg.yielded)
    latch = b.block
    b.branch(before)
    for p, y in zip(carried, ys):
        p.add_incoming(y, latch)
    b.position_at_end(exit_)
    return passed
