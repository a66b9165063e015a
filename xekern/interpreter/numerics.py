"""Device arithmetic on NumPy values: 16-bit floats computed in f32, C-like integers.

The device (``lowering/codegen/rules_arith.py``) widens f16/bf16 to f32, computes and rounds back
to nearest even; integers wrap; ``x / 0`` and ``x % 0`` give 0 on purpose (``_safe_div``), and
``INT_MIN / -1`` wraps to ``INT_MIN``. These helpers do the same on scalars and arrays alike
(NumPy's 0-d arrays stand in for scalars; ``core.to_value`` turns results back into scalars).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.types import DType

SIGNED = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}
UNSIGNED = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
F32 = np.dtype(np.float32)
_NP = {}


def npdt(t: DType) -> np.dtype:
    """``t.np_dtype``, memoized (the property builds a dtype on every call)."""
    d = _NP.get(t.name)
    if d is None:
        d = _NP[t.name] = t.np_dtype
    return d


# ---- floats ------------------------------------------------------------------------------------

E4B15 = "f8E4M3B15"   # float8e4b15: held as its bits (uint8), as no NumPy type has it


def widen(x, t: DType) -> np.ndarray:
    """A float value in the type the device computes it in (f32 for fp8, f16 and bf16)."""
    a = np.asarray(x)
    if t.name == E4B15:   # the f16 whose exponent's top bit is clear (codegen/arith.fp8_to_f32)
        u = a.astype(np.uint16)
        return (((u & 0x80) << 8) | ((u & 0x7F) << 7)).astype(np.uint16).view(np.float16).astype(F32)
    return a.astype(F32) if t.bits < 32 else a


# largest finite fp8 values: conversions saturate to them (Triton's cvt.rn.satfinite)
FP8_MAX = {"f8E5M2": 57344.0, "f8E4M3FN": 448.0, "f8E4M3FNUZ": 240.0, "f8E5M2FNUZ": 57344.0}


def narrow(x, t: DType) -> np.ndarray:
    """Round a computed float back to ``t`` (nearest even, like the device; fp8 saturates)."""
    a = np.asarray(x)
    if t.name == E4B15:   # through f16, clamped at 1.75, rounded half away (codegen/core.e4b15_bits)
        with np.errstate(over="ignore"):   # (beyond f16: inf, then clamped)
            h = a.astype(np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)
        mag = np.minimum(h & 0x7FFF, 0x3F00)
        return (((h >> 8) & 0x80) | (((mag << 1) + 0x80) >> 8)).astype(np.uint8)
    if t.is_fp8:
        top = FP8_MAX[t.name]
        a = np.where(np.isnan(a), a, np.clip(a, -top, top))
    return a.astype(npdt(t))


def float_const(value: float, t: DType):
    """A float constant as the device materializes it: bf16 and fp8 through f32 (``f32_to_bf16_bits``,
    ``fp8_bits``)."""
    if t.name == "bf16" or t.is_fp8:
        return narrow(np.float32(value), t)
    return np.asarray(value, dtype=npdt(t))


def int_const(value: int, t: DType):
    if t.is_bool:
        return np.asarray(bool(value))
    return np.asarray(int(value) & ((1 << t.bits) - 1), dtype=UNSIGNED[t.bits]).view(npdt(t))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """``llvm.round``: halves round away from zero (NumPy's ``round`` goes to even)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf as _erf
    except ImportError:  # scipy is optional: Python's math.erf per element
        _erf = np.vectorize(math.erf, otypes=[np.float64])
    return np.asarray(_erf(x.astype(np.float64))).astype(x.dtype)


# ---- integers ----------------------------------------------------------------------------------

def as_signed(x, t: DType) -> np.ndarray:
    """The bits of ``x`` read as a signed integer of ``t``'s width (i1: true is -1)."""
    a = np.asarray(x)
    if t.is_bool:
        return -(a.astype(np.int8))
    return a.view(SIGNED[t.bits])


def as_unsigned(x, t: DType) -> np.ndarray:
    a = np.asarray(x)
    if t.is_bool:
        return a.astype(np.uint8)
    return a.view(UNSIGNED[t.bits])


def from_bits(a: np.ndarray, t: DType) -> np.ndarray:
    """Integer bits computed at ``t``'s width (or wider, for i1) read back as ``t``."""
    a = np.asarray(a)
    if t.is_bool:
        return (a & 1).astype(bool)
    return a.view(npdt(t))


def safe_div(kind: str, a, b, t: DType) -> np.ndarray:
    """``divsi``/``divui``/``remsi``/``remui`` exactly as the device's ``_safe_div``: C truncation,
    ``x / 0 == x % 0 == 0``, ``INT_MIN / -1 == INT_MIN`` and ``INT_MIN % -1 == 0``."""
    if kind in ("divsi", "remsi"):
        x, y = as_signed(a, t), as_signed(b, t)
        zero, minus1 = y == 0, y == -1
        d = np.where(zero | minus1, np.ones_like(y), y)
        r = np.fmod(x, d)                       # C remainder: the sign of the dividend
        if kind == "remsi":
            out = np.where(zero | minus1, np.zeros_like(x), r)
        else:
            q = (x - r) // d                    # exact: x - r is a multiple of d
            out = np.where(minus1, np.negative(x), np.where(zero, np.zeros_like(x), q))
        return from_bits(out.astype(x.dtype), t)
    x, y = as_unsigned(a, t), as_unsigned(b, t)
    zero = y == 0
    d = np.where(zero, np.ones_like(y), y)
    out = x // d if kind == "divui" else x % d
    return from_bits(np.where(zero, np.zeros_like(x), out).astype(x.dtype), t)


def shift(kind: str, a, b, t: DType) -> np.ndarray:
    """``shli``/``shrsi``/``shrui``. A shift by the width or more is poison on the device (LLVM);
    here it gives 0 (``shli``, ``shrui``) or the sign (``shrsi``), as if shifted one bit at a time."""
    bits = 1 if t.is_bool else t.bits
    amt = as_unsigned(b, t).astype(np.uint64)
    big = amt >= bits
    n = np.where(big, np.zeros_like(amt), amt)
    if kind == "shrsi":
        x = as_signed(a, t)
        out = np.where(big, x >> (bits - 1) if bits > 1 else x, x >> n.astype(x.dtype))
        return from_bits(out.astype(x.dtype), t)
    x = as_unsigned(a, t)
    r = (x << n.astype(x.dtype)) if kind == "shli" else (x >> n.astype(x.dtype))
    return from_bits(np.where(big, np.zeros_like(x), r).astype(x.dtype), t)


def mulhi(kind: str, a, b, t: DType) -> np.ndarray:
    """The high half of the double-width product (``mulhisi``/``mulhiui``)."""
    signed = kind == "mulhisi"
    x = as_signed(a, t) if signed else as_unsigned(a, t)
    y = as_signed(b, t) if signed else as_unsigned(b, t)
    if t.bits <= 32:
        wide = np.int64 if signed else np.uint64
        p = (x.astype(wide) * y.astype(wide)) >> t.bits
        return from_bits(p.astype(x.dtype), t)
    flat = [(int(p) * int(q)) >> 64 for p, q in zip(np.ravel(x), np.ravel(y))]  # Python ints: exact
    hi = np.array([v & ((1 << 64) - 1) for v in flat], dtype=np.uint64).reshape(np.shape(x))
    return from_bits(hi, t)


def popcount(a, t: DType) -> np.ndarray:
    x = as_unsigned(a, t)
    return from_bits(np.bitwise_count(x).astype(x.dtype), t)


def count_leading_zeros(a, t: DType) -> np.ndarray:
    x = as_unsigned(a, t).astype(np.uint64)
    n = np.zeros(x.shape, np.uint64)
    for s in (32, 16, 8, 4, 2, 1):
        hit = x >= np.uint64(1 << s)
        n = np.where(hit, n + np.uint64(s), n)
        x = np.where(hit, x >> np.uint64(s), x)
    length = n + (x > 0)
    return from_bits((np.uint64(t.bits) - length).astype(UNSIGNED[t.bits]), t)


# ---- scalars: Python ints (a loop's counters and conditions are scalars; NumPy is slow there) ----

def _bits(x, t: DType, signed: bool) -> int:
    bits = 1 if t.is_bool else t.bits
    u = int(x) & ((1 << bits) - 1)
    return u - (1 << bits) if signed and u >> (bits - 1) else u


def scalar_int(v: int, t: DType):
    """The NumPy scalar of ``t`` holding ``v`` wrapped to ``t``'s width."""
    if t.is_bool:
        return np.bool_(v & 1)
    return npdt(t).type(_bits(v, t, t.is_signed))


def _c_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def scalar_int_binary(kind: str, a, b, t: DType):
    """``binary`` on two integer scalars, with Python ints (same results as the array path)."""
    signed = kind.endswith("si")
    x, y = _bits(a, t, signed), _bits(b, t, signed)
    if kind in ("addi", "subi", "muli", "andi", "ori", "xori"):
        r = {"addi": x + y, "subi": x - y, "muli": x * y, "andi": x & y, "ori": x | y, "xori": x ^ y}[kind]
    elif kind in ("divsi", "divui", "remsi", "remui"):
        if y == 0 or (signed and y == -1):
            r = 0 if y == 0 or kind == "remsi" else -x
        else:
            q = _c_div(x, y) if signed else x // y
            r = q if kind.startswith("div") else x - q * y
    elif kind in ("shli", "shrsi", "shrui"):
        bits = 1 if t.is_bool else t.bits
        n = _bits(b, t, False)
        if kind == "shrsi":
            r = _bits(a, t, True) >> min(n, bits - 1)
        else:
            r = 0 if n >= bits else (x << n if kind == "shli" else x >> n)
    elif kind in ("maxsi", "minsi", "maxui", "minui"):
        r = max(x, y) if kind.startswith("max") else min(x, y)
    elif kind in ("mulhisi", "mulhiui"):
        r = (x * y) >> t.bits
    else:
        raise NotImplementedError(f"binary kind {kind}")
    return scalar_int(r, t)


def scalar_int_compare(pred: str, a, b, t: DType) -> np.bool_:
    signed = pred[0] == "s"
    x, y = _bits(a, t, signed), _bits(b, t, signed)
    p = pred if pred in ("eq", "ne") else pred[1:]
    return np.bool_({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[p])
