"""``xl.dot_scaled`` (language/scaled_dot.py) against a NumPy reference of Triton's: operands in
e2m1 (packed along K, or along M / N), e4m3, e5m2, bf16 and fp16, e8m0 scales per 32 elements of
K (0 scales to 0, 255 is NaN) or none, on the CPU device, its 8-wide model and the interpreter."""
import ml_dtypes
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


@xk.jit
def scaled(a_ptr, as_ptr, b_ptr, bs_ptr, o_ptr, M: xl.constexpr, N: xl.constexpr, K: xl.constexpr,
           A_ROWS: xl.constexpr, A_COLS: xl.constexpr, B_ROWS: xl.constexpr, B_COLS: xl.constexpr,
           AF: xl.constexpr, BF: xl.constexpr, A_KPACK: xl.constexpr, B_KPACK: xl.constexpr,
           A_SCALED: xl.constexpr, B_SCALED: xl.constexpr):
    ar, ac = xl.arange(0, A_ROWS), xl.arange(0, A_COLS)
    br, bc = xl.arange(0, B_ROWS), xl.arange(0, B_COLS)
    a = xl.load(a_ptr + ar[:, None] * A_COLS + ac[None, :])
    b = xl.load(b_ptr + br[:, None] * B_COLS + bc[None, :])
    g = xl.arange(0, K // 32)
    a_s = xl.load(as_ptr + xl.arange(0, M)[:, None] * (K // 32) + g[None, :]) if A_SCALED else None
    b_s = xl.load(bs_ptr + xl.arange(0, N)[:, None] * (K // 32) + g[None, :]) if B_SCALED else None
    acc = xl.full((M, N), 1.0, xl.float32)
    c = xl.dot_scaled(a, a_s, AF, b, b_s, BF, acc, lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    xl.store(o_ptr + xl.arange(0, M)[:, None] * N + xl.arange(0, N)[None, :], c)


def _operand(rng, fmt, rows, cols, packed_axis):
    """(array to pass, its float64 values [rows, cols] unpacked)."""
    if fmt == "e2m1":
        shape = (rows, cols // 2) if packed_axis == 1 else (rows // 2, cols)
        bits = rng.integers(0, 256, shape).astype(np.uint8)
        lo, hi = E2M1[bits & 15], E2M1[bits >> 4]
        vals = np.stack([lo, hi], axis=packed_axis + 1).reshape(rows, cols) if packed_axis == 1 else \
            np.stack([lo, hi], axis=1).reshape(rows, cols)
        return bits, vals
    t = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16,
         "fp16": np.float16}[fmt]
    v = (rng.standard_normal((rows, cols)) * 2).astype(t)
    if fmt in ("e4m3", "e5m2"):       # the bits, as uint8 (xl.dot_scaled bitcasts them)
        return v.view(np.uint8), v.astype(np.float64)
    return v, v.astype(np.float64)


def _scale(rng, rows, groups, special):
    s = rng.integers(122, 133, (rows, groups)).astype(np.uint8)
    if special:
        s[0, 0], s[1, -1] = 0, 255
    f = np.where(s == 255, np.nan, np.where(s == 0, 0.0, 2.0 ** (s.astype(np.float64) - 127)))
    return s, np.repeat(f, 32, axis=1)


CASES = [("e2m1", "e2m1", True, True, True, True), ("e4m3", "e5m2", True, True, True, False),
         ("bf16", "e2m1", True, True, False, True), ("fp16", "e4m3", True, True, True, True),
         ("e2m1", "e2m1", False, False, True, True)]


@pytest.mark.parametrize("af,bf,akp,bkp,a_scaled,b_scaled", CASES)
def test_dot_scaled(backend, rng, af, bf, akp, bkp, a_scaled, b_scaled):
    M, N, K = 16, 32, 64
    a, av = _operand(rng, af, M, K, 1 if akp else 0)
    b, bv = _operand(rng, bf, K, N, 0 if bkp else 1)
    a_s, af_ = _scale(rng, M, K // 32, special=True)
    b_s, bf_ = _scale(rng, N, K // 32, special=False)
    out = backend.run(scaled, (1,), [a, a_s, b, b_s, poisoned((M, N), np.float32)], M=M, N=N, K=K,
                      A_ROWS=a.shape[0], A_COLS=a.shape[1], B_ROWS=b.shape[0], B_COLS=b.shape[1], AF=af, BF=bf,
                      A_KPACK=akp, B_KPACK=bkp, A_SCALED=a_scaled, B_SCALED=b_scaled)[4]
    lo = np.float16 if "fp16" in (af, bf) else ml_dtypes.bfloat16
    x = (av * af_ if a_scaled else av).astype(lo).astype(np.float64)
    y = (bv * bf_.T if b_scaled else bv).astype(lo).astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = 1.0 + x @ y
        # float32 accumulation over K products: K roundings of at most 2^-24 of the running sum's size
        bound = K * 2.0 ** -24 * (1.0 + np.abs(x) @ np.abs(y))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    ok = ~np.isnan(want)
    assert (np.abs(out[ok] - want[ok]) <= bound[ok]).all(), np.max(np.abs(out[ok] - want[ok]) / bound[ok])
    if a_scaled:
        assert np.isnan(out[1]).all() and not np.isnan(out[2]).any()   # row 1 has a NaN scale


def test_dot_scaled_refusals():
    sig = dict(a_ptr=xk.pointer(xl.float32), as_ptr=xk.pointer(xl.uint8), b_ptr=xk.pointer(xl.uint8),
               bs_ptr=xk.pointer(xl.uint8), o_ptr=xk.pointer(xl.float32), M=16, N=32, K=64, A_ROWS=16,
               A_COLS=64, B_ROWS=64, B_COLS=32, AF="e4m3", BF="e4m3", A_KPACK=True, B_KPACK=True,
               A_SCALED=True, B_SCALED=True)
    with pytest.raises(xk.CompilationError, match="must be float8e4nv"):
        scaled.compile_offline(sig, target="cpu")
    with pytest.raises(xk.CompilationError, match="is not one of"):
        scaled.compile_offline(dict(sig, a_ptr=xk.pointer(xl.uint8), AF="e3m2"), target="cpu")
    with pytest.raises(xk.CompilationError, match="for e2m1 operands only"):
        scaled.compile_offline(dict(sig, a_ptr=xk.pointer(xl.uint8), A_KPACK=False), target="cpu")
