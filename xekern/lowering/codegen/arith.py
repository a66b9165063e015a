"""Scalar arithmetic as LLVM IR, shared by every emitter: 16-bit floats computed in f32, binary
and unary operations, comparisons, casts, sub-group shuffles, and the workgroup barrier. The rule
tables (``rules_arith``) apply them slot by slot (``map_slots``)."""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ... import ir
from ...ir.types import DType
from ..rewrite import PassError
from .core import E4B15, E4B15_CLAMP, FP8, FP8_FNUZ, CodeGen, ll_type
from .ocl import F16, F32, F64, I8, I16, I32, mangle_scalar

# ---- 16-bit floats are computed in f32 ------------------------------------------------------------


def bf16_to_f32(cg: CodeGen, v):
    return cg.b.bitcast(cg.b.shl(cg.b.zext(v, I32), ll.Constant(I32, 16)), F32)


def f32_to_bf16(cg: CodeGen, v):
    """Round to nearest even; NaN stays a quiet NaN (the GPU's conversion, where the emitter has it,
    does the same: cl_intel_bfloat16_conversions)."""
    b = cg.b
    if cg.emitter.bf16_conversion:
        return cg.ocl.call(b, "_Z32intel_convert_bfloat16_as_ushortf", I16, [v])
    bits = b.bitcast(v, I32)
    lsb = b.and_(b.lshr(bits, ll.Constant(I32, 16)), ll.Constant(I32, 1))
    rounded = b.lshr(b.add(bits, b.add(lsb, ll.Constant(I32, 0x7FFF))), ll.Constant(I32, 16))
    isnan = b.fcmp_unordered("uno", v, v)
    out = b.select(isnan, ll.Constant(I32, 0x7FC0), rounded)
    return b.trunc(out, I16)


def fp8_to_f32(cg: CodeGen, v, t: DType):
    """An fp8 byte as f32, exactly. e5m2 is the upper byte of an f16; the others are rebuilt from
    their fields (subnormals as m * 2^(1 - bias - m bits); NaN 0x7f/0xff for e4m3fn, 0x80 for fnuz)."""
    b = cg.b
    c = lambda n: ll.Constant(I32, n)  # noqa: E731
    if t.name == "f8E5M2":
        return b.fpext(b.bitcast(b.shl(b.zext(v, I16), ll.Constant(I16, 8)), F16), F32)
    if t.name == E4B15:   # the f16 whose exponent's top bit is clear: sign, then 7 bits shifted by 7
        x = b.zext(v, I16)
        h = b.or_(b.shl(b.and_(x, ll.Constant(I16, 0x80)), ll.Constant(I16, 8)),
                  b.shl(b.and_(x, ll.Constant(I16, 0x7F)), ll.Constant(I16, 7)))
        return b.fpext(b.bitcast(h, F16), F32)
    mbits, bias, _ = FP8[t.name]
    x = b.zext(v, I32)
    sign = b.shl(b.and_(x, c(0x80)), c(24))
    e = b.and_(b.lshr(x, c(mbits)), c((1 << (7 - mbits)) - 1))
    m = b.and_(x, c((1 << mbits) - 1))
    normal = b.or_(sign, b.or_(b.shl(b.add(e, c(127 - bias)), c(23)), b.shl(m, c(23 - mbits))))
    tiny = b.or_(sign, b.bitcast(b.fmul(b.uitofp(m, F32), ll.Constant(F32, 2.0 ** (1 - bias - mbits))), I32))
    bits = b.select(b.icmp_unsigned("==", e, c(0)), tiny, normal)
    nan = b.icmp_unsigned("==", x, c(0x80)) if t.name in FP8_FNUZ else \
        b.icmp_unsigned("==", b.and_(x, c(0x7F)), c(0x7F))
    return b.bitcast(b.select(nan, b.or_(sign, c(0x7FC00000)), bits), F32)


def f32_to_fp8(cg: CodeGen, v, t: DType):
    """f32 to fp8: nearest even, saturated to the largest finite value, NaN 0x7f (Triton's
    cvt.rn.satfinite; ``core.fp8_bits`` is the same in Python). Below the smallest normal the
    result is a count of subnormal steps, ``rint(|x| * 2^(bias - 1 + m))``."""
    b = cg.b
    c = lambda n: ll.Constant(I32, n)  # noqa: E731
    if t.name == E4B15:   # through f16, clamped at 1.75, the f16 bits rounded half away (core.e4b15_bits)
        h = b.zext(b.bitcast(b.fptrunc(v, F16), I16), I32)
        mag = b.and_(h, c(0x7FFF))
        mag = b.select(b.icmp_unsigned(">", mag, c(E4B15_CLAMP)), c(E4B15_CLAMP), mag)
        byte = b.lshr(b.add(b.shl(mag, c(1)), c(0x80)), c(8))
        return b.trunc(b.or_(b.and_(b.lshr(h, c(8)), c(0x80)), byte), I8)
    mbits, bias, top = FP8[t.name]
    bits = b.bitcast(v, I32)
    sign = b.and_(b.lshr(bits, c(24)), c(0x80))
    a = b.and_(bits, c(0x7FFFFFFF))
    sh = 23 - mbits
    r = b.add(a, b.add(b.and_(b.lshr(a, c(sh)), c(1)), c((1 << (sh - 1)) - 1)))
    normal = b.sub(b.lshr(r, c(sh)), c((127 - bias) << mbits))
    normal = b.select(b.icmp_signed(">", normal, c(top)), c(top), normal)
    scaled = b.fmul(cg.ocl.intrinsic(b, "llvm.fabs.f32", F32, [v]), ll.Constant(F32, 2.0 ** (bias - 1 + mbits)))
    tiny = b.fptoui(cg.ocl.intrinsic(b, "llvm.rint.f32", F32, [scaled]), I32)
    byte = b.select(b.icmp_unsigned("<", a, c((127 - bias + 1) << 23)), tiny, normal)
    if t.name in FP8_FNUZ:   # no negative zero; the one NaN is 0x80
        out = b.select(b.icmp_unsigned("==", byte, c(0)), c(0), b.or_(byte, sign))
        return b.trunc(b.select(b.fcmp_unordered("uno", v, v), c(0x80), out), I8)
    byte = b.select(b.fcmp_unordered("uno", v, v), c(0x7F), byte)
    return b.trunc(b.or_(byte, sign), I8)


def widen(cg: CodeGen, v, t: DType):
    """A float value in the type arithmetic runs in (f32 for fp8, f16 and bf16): the f32 value
    ``v`` was exactly narrowed from, when there is one (``_exact_narrow``), else a conversion."""
    exact = cg.exact_wide.get(id(v))
    if exact is not None and exact[0] is v:
        return exact[1]
    if t.is_fp8:
        return fp8_to_f32(cg, v, t)
    if t.name == "bf16":
        return bf16_to_f32(cg, v)
    if t.name == "f16":
        return cg.b.fpext(v, F32)
    return v


def narrow(cg: CodeGen, v, t: DType):
    if t.is_fp8:
        return f32_to_fp8(cg, v, t)
    if t.name == "bf16":
        return f32_to_bf16(cg, v)
    if t.name == "f16":
        return cg.b.fptrunc(v, F16)
    return v


def map_slots(cg: CodeGen, op: ir.Op, fn) -> List:
    """Apply ``fn`` slot by slot over the operands (scalars are shared by every slot)."""
    vals = [cg.get(v) for v in op.operands]
    n = max([len(v) for v in vals if isinstance(v, list)] or [0])
    if n == 0:
        return [fn(*vals)]
    return [[fn(*[v[i] if isinstance(v, list) else v for v in vals]) for i in range(n)]]


_FBIN = {"addf": "fadd", "subf": "fsub", "mulf": "fmul", "divf": "fdiv", "remf": "frem"}
_IBIN = {"addi": "add", "subi": "sub", "muli": "mul", "andi": "and_", "ori": "or_", "xori": "xor",
         "shli": "shl", "shrsi": "ashr", "shrui": "lshr"}


# float ops whose result is one of their operands (or NaN): narrowing it back to a 16-bit type is exact
_SELECTING = ("maxnumf", "minnumf", "maximumf", "minimumf")


def _exact_narrow(cg: CodeGen, r, t: DType):
    """``narrow(r)``, for an ``r`` that ``t`` holds exactly (the max of two widened bf16 values): the
    next ``widen`` of the narrow value takes ``r`` itself, so a chain of 16-bit maxima (a row max of
    a bf16 tile) converts each element once instead of narrowing and widening at every step. (A NaN
    keeps its f32 payload; it is NaN either way.)"""
    v = narrow(cg, r, t)
    if v is not r and t.name in ("bf16", "f16"):
        cg.exact_wide[id(v)] = (v, r)
    return v


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
        if kind in _SELECTING:
            return _exact_narrow(cg, r, t)
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


def castop(cg: CodeGen, kind: str, x, src: DType, dst: DType):
    b = cg.b
    dt = ll_type(dst)
    if kind == "bitcast":
        return x if x.type == dt else b.bitcast(x, dt)
    if kind in ("extf", "truncf"):
        v = widen(cg, x, src)
        if dst.computed_in_f32 and v.type == F64:
            v = b.fptrunc(v, F32)
        if dst.computed_in_f32:
            return narrow(cg, v, dst)
        if v.type == dt:
            return v
        return b.fpext(v, dt) if dst.bits > 32 or v.type == F16 else b.fptrunc(v, dt)
    if kind in ("sitofp", "uitofp"):
        ft = F32 if dst.computed_in_f32 else dt
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


def sub_group_shuffle(cg: CodeGen, mode: str, v, lane, nxt=None):
    """``intel_sub_group_shuffle[_xor|_down|_up]`` of one value; narrow types go through 32 bits.
    ``nxt``: for ``down``, the value lanes past the subgroup's end read (``v`` itself if None)."""
    t = v.type
    narrow = isinstance(t, ll.IntType) and t.width < 32

    def widen(x):
        if narrow:
            return cg.b.zext(x, I32)
        return cg.b.zext(cg.b.bitcast(x, I16), I32) if t == F16 else x
    wide = I32 if narrow or t == F16 else t
    v, nxt = widen(v), widen(nxt) if nxt is not None else None
    m = mangle_scalar(wide)
    if mode == "idx":
        r = cg.call(f"_Z23intel_sub_group_shuffle{m}j", wide, [v, lane], convergent=True)
    elif mode == "xor":
        r = cg.call(f"_Z27intel_sub_group_shuffle_xor{m}j", wide, [v, lane], convergent=True)
    elif mode == "down":
        r = cg.call(f"_Z28intel_sub_group_shuffle_down{m}{m}j", wide, [v, v if nxt is None else nxt, lane],
                    convergent=True)
    elif mode == "up":
        r = cg.call(f"_Z26intel_sub_group_shuffle_up{m}{m}j", wide, [v, v, lane], convergent=True)
    else:
        raise PassError(f"codegen: unknown shuffle mode {mode}")
    if wide != t:
        if t == F16:
            return cg.b.bitcast(cg.b.trunc(r, I16), F16)
        return cg.b.trunc(r, t)
    return r


def workgroup_barrier(cg: CodeGen, op) -> None:
    """``barrier(CLK_LOCAL_MEM_FENCE)`` for a barrier that only orders SLM (``memory = "local"``),
    else with ``CLK_GLOBAL_MEM_FENCE`` too; ``barrier(0)`` (no fence: IGC's signal and wait only)
    for one pass ``slm-barriers`` found needs none (``no_fence``)."""
    flags = 0 if op.attrs.get("no_fence") else 1 if op.attrs.get("memory") == "local" else 3
    cg.call("_Z7barrierj", ll.VoidType(), [cg.i32(flags)], convergent=True)
