"""``xl.math``: Triton's ``tl.math`` spellings and the libdevice-style functions, on every backend,
against float64 NumPy (relative error in units of float32's epsilon) at a ragged size."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned

EPS = np.finfo(np.float32).eps


@xk.jit
def math_table(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    x = xl.load(x_ptr + offs, mask=m, other=1.0)
    y = xl.load(y_ptr + offs, mask=m, other=1.0)
    row = o_ptr + offs * 7
    xl.store(row + 0, xl.math.exp2(x), mask=m)
    xl.store(row + 1, xl.math.log1p(xl.abs(x)), mask=m)
    xl.store(row + 2, xl.math.expm1(x), mask=m)
    xl.store(row + 3, xl.math.pow(xl.abs(x), y), mask=m)
    xl.store(row + 4, xl.math.div_rn(x, y), mask=m)
    xl.store(row + 5, xl.math.sqrt_rn(xl.abs(x)), mask=m)
    xl.store(row + 6, xl.math.fdiv(x, y, ieee_rounding=True), mask=m)


def test_math_functions(backend, rng):
    n = 301
    x = (rng.standard_normal(n) * 1e-4).astype(np.float32)
    x[::3] *= 3e4                                   # small and ordinary magnitudes
    y = rng.uniform(0.5, 2.0, n).astype(np.float32)
    o = backend.run(math_table, (1,), [x, y, poisoned((n, 7), np.float32), n], BLOCK=512)[2]
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    want = np.stack([np.exp2(xd), np.log1p(np.abs(xd)), np.expm1(xd), np.abs(xd) ** yd, xd / yd,
                     np.sqrt(np.abs(xd)), xd / yd], 1)
    ulps = np.abs(o - want) / (np.abs(want) * EPS)
    limits = [4, 4, 4, 8, 1, 1, 1]   # (division and sqrt are correctly rounded)
    for col, limit in enumerate(limits):
        assert ulps[:, col].max() <= limit, (col, ulps[:, col].max())


@xk.jit
def softmax_cols(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    xl.store(o_ptr + r[:, None] * BN + c[None, :], xl.math.softmax(x))


def test_softmax_is_along_axis_0(backend, rng):
    x = rng.standard_normal((32, 16)).astype(np.float32)
    o = backend.run(softmax_cols, (1,), [x, poisoned((32, 16), np.float32)], BM=32, BN=16)[1]
    e = np.exp(x.astype(np.float64) - x.max(0))
    np.testing.assert_allclose(o, e / e.sum(0), rtol=4e-6)


@xk.jit
def high_product(a_ptr, b_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    xl.store(o_ptr + offs, xl.math.umulhi(xl.load(a_ptr + offs, mask=m), xl.load(b_ptr + offs, mask=m)), mask=m)


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
def test_umulhi_is_the_unsigned_high_half(backend, rng, dtype):
    n = 77
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(dtype)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(dtype)
    o = backend.run(high_product, (1,), [a, b, poisoned(n, dtype), n], BLOCK=128)[2]
    want = (a.view(np.uint32).astype(np.uint64) * b.view(np.uint32).astype(np.uint64)) >> np.uint64(32)
    np.testing.assert_array_equal(o.view(np.uint32), want.astype(np.uint32))
