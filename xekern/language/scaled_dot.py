"""``xl.dot_scaled``: Triton's microscaled matrix product, ``acc + (lhs * 2^(lhs_scale - 127)) @
(rhs * 2^(rhs_scale - 127))``, with the operands in the OCP microscaling formats.

No Intel GPU here has a matrix engine for these formats (e2m1, e8m0 scales), so the product is
computed as Triton's reference computes it: each operand decoded to float32, multiplied by its
scales (one e8m0 byte per 32 elements along K), rounded to bfloat16 (float16 when either operand
is fp16) and multiplied on the matrix engine (``xl.dot``) with float32 accumulation.

Formats: ``e2m1`` (two values per uint8, the first in the low nibble: 0, 0.5, 1, 1.5, 2, 3, 4, 6
and their negatives), ``e4m3`` and ``e5m2`` (``xl.float8e4nv`` / ``xl.float8e5`` tiles, or uint8
bits), ``bf16`` and ``fp16`` (or their 16-bit integer bits). A scale byte ``s`` is ``2^(s - 127)``
(as Triton's reference builds it: ``s << 23`` as float32 bits, so 0 scales to 0), and 255 is NaN.

    acc = xl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e4m3", acc)
    # a: [M, K // 2] uint8, a_scale: [M, K // 32] uint8, b: [K, N] float8e4nv, b_scale: [N, K // 32]
"""
from __future__ import annotations

from ..ir import types as T
from .core import builtin, unwrap

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
GROUP = 32                                         # elements along K one scale byte covers
_FLOATS = {"e4m3": T.float8e4nv, "e5m2": T.float8e5, "bf16": T.bfloat16, "fp16": T.float16}


def _e2m1(_sem, n):
    """float32 values of the e2m1 nibbles ``n`` (int32 0..15): sign, 2 exponent bits, 1 mantissa bit."""
    b = lambda op, x, y: _sem.binary(op, x, y)  # noqa: E731
    sign = _sem.compare("ne", b("and", n, 8), 0)
    e = b("and", b("rshift", n, 1), 3)
    m = _sem.cast(b("and", n, 1), T.float32)
    half_m = b("mul", m, 0.5)
    pow2 = b("mul", _sem.cast(b("lshift", 1, e), T.float32), 0.5)     # 2^(e - 1)
    mag = _sem.where(_sem.compare("eq", e, 0), half_m, b("mul", b("add", half_m, 1.0), pow2))
    return _sem.where(sign, b("sub", 0.0, mag), mag)


def _decode(_sem, x, fmt: str, packed_axis: int, what: str):
    """``x`` in ``fmt`` as float32 values; e2m1 unpacked along ``packed_axis`` (its size doubles)."""
    x = _sem.to_tensor(x)
    if not x.is_tile or len(x.shape) != 2:
        raise ValueError(f"dot_scaled: {what} must be a 2-D tile, got {x.type}")
    if fmt == "e2m1":
        if x.dtype not in (T.uint8, T.int8):
            raise ValueError(f"dot_scaled: an e2m1 {what} holds two values per byte (uint8), got {x.dtype.user_name}")
        bits = _sem.cast(_sem.cast(x, T.uint8, bitcast=True), T.int32)
        lo = _e2m1(_sem, _sem.binary("and", bits, 15))
        hi = _e2m1(_sem, _sem.binary("rshift", bits, 4))
        pairs = _sem.join(lo, hi)                                   # [r, c, 2]: the low nibble first
        r, c = x.shape
        if packed_axis == 1:
            return _sem.reshape(pairs, [r, 2 * c])
        return _sem.reshape(_sem.permute(pairs, [0, 2, 1]), [2 * r, c])
    want = _FLOATS[fmt]
    if x.dtype != want:
        if x.dtype.is_int and not x.dtype.is_bool and x.dtype.bits == want.bits:
            x = _sem.cast(x, want, bitcast=True)
        else:
            raise ValueError(f"dot_scaled: a {fmt} {what} must be {want.user_name} (or its bits as "
                             f"{want.bits}-bit integers), got {x.dtype.user_name}")
    return _sem.cast(x, T.float32)


def _scales(_sem, s, rows: int, k: int, k_axis: int, what: str):
    """The e8m0 scales ``s`` ([rows, k // 32] uint8) as float32 per element of the decoded operand
    (``k_axis``: where K lies in it)."""
    s = _sem.to_tensor(s)
    if s.dtype not in (T.uint8, T.int8) or list(s.shape) != [rows, k // GROUP]:
        raise ValueError(f"dot_scaled: {what} must be [{rows}, {k // GROUP}] uint8 (one e8m0 byte per {GROUP} "
                         f"elements along K), got {s.type}")
    e = _sem.cast(_sem.cast(s, T.uint8, bitcast=True), T.int32)
    f = _sem.cast(_sem.binary("lshift", e, 23), T.float32, bitcast=True)   # 2^(e - 127); 0 for e = 0
    f = _sem.where(_sem.compare("eq", e, 255), float("nan"), f)
    group = _sem.binary("floordiv", _sem.arange(0, k), GROUP)
    if k_axis == 1:                                   # lhs [M, K]: scale[m, k // 32]
        index = _sem.broadcast_to(_sem.expand_dims(group, 0), [rows, k])
        return _sem.gather(f, index, 1)
    index = _sem.broadcast_to(_sem.expand_dims(group, 1), [k, rows])   # rhs [K, N]: scale[n, k // 32]
    return _sem.gather(_sem.permute(f, [1, 0]), index, 0)


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=T.float32, _sem=None):
    """Triton's ``tl.dot_scaled`` (see the module docstring): ``lhs`` [M, K] (e2m1: [M, K // 2], or
    [M // 2, K] with ``lhs_k_pack=False``), ``rhs`` [K, N] (e2m1: [K // 2, N], or [K, N // 2]),
    scales [M, K // 32] and [N, K // 32] uint8 or None; float32 result."""
    lf, rf = unwrap(lhs_format), unwrap(rhs_format)
    for fmt, what in ((lf, "lhs_format"), (rf, "rhs_format")):
        if fmt not in FORMATS:
            raise ValueError(f"dot_scaled: {what} {fmt!r} is not one of {', '.join(FORMATS)}")
    if unwrap(out_dtype) != T.float32:
        raise ValueError(f"dot_scaled: out_dtype must be float32, got {unwrap(out_dtype)!r}")
    for pack, fmt, what in ((lhs_k_pack, lf, "lhs_k_pack"), (rhs_k_pack, rf, "rhs_k_pack")):
        if not unwrap(pack) and fmt != "e2m1":
            raise ValueError(f"dot_scaled: {what}=False is for e2m1 operands only")
    a = _decode(_sem, lhs, lf, 1 if unwrap(lhs_k_pack) else 0, "lhs")
    b = _decode(_sem, rhs, rf, 0 if unwrap(rhs_k_pack) else 1, "rhs")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"dot_scaled: lhs has K = {k} and rhs K = {k2} (after unpacking e2m1)")
    if unwrap(lhs_scale) is not None:
        a = _sem.binary("mul", a, _scales(_sem, lhs_scale, m, k, 1, "lhs_scale"))
    if unwrap(rhs_scale) is not None:
        b = _sem.binary("mul", b, _scales(_sem, rhs_scale, n, k, 0, "rhs_scale"))
    compute = T.float16 if "fp16" in (lf, rf) else T.bfloat16
    return _sem.dot(_sem.cast(a, compute), _sem.cast(b, compute), unwrap(acc), out_dtype=T.float32)
