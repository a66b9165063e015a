"""The foundation's kernels on the CPU device, for both the 16-wide and 8-wide GPU models,
compared with NumPy (float64 references) on fresh random data at odd sizes, outputs poisoned."""
import numpy as np
import pytest

import xekern as xk
from conftest import CPU_TARGETS, c_div, poisoned
from kernels import (add_kernel, call_kernel, collatz_steps, int_ops_kernel, layer_norm_fwd, masked_rows_kernel,
                     softmax_kernel)

ml_dtypes = pytest.importorskip("ml_dtypes")  # the test extra installs it


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype,tol", [(np.float16, 1e-3), (ml_dtypes.bfloat16, 1e-2), (np.float32, 1e-6),
                                       (np.float64, 1e-12)])
def test_vector_add(rng, target, dtype, tol):
    n = 98_765
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    out = poisoned(n, dtype)
    add_kernel[(xk.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, target=target)
    ref = x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n_cols,block", [(781, 1024), (33, 64), (1, 16)])
def test_fused_softmax(rng, target, n_cols, block):
    rows = 37
    x = rng.standard_normal((rows, n_cols)).astype(np.float32) * 4
    out = poisoned((rows, n_cols), np.float32)
    softmax_kernel[(rows,)](out, x, n_cols, n_cols, n_cols, BLOCK=block, target=target)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_layer_norm_forward(rng, target):
    M, N = 19, 1151
    X = rng.standard_normal((M, N)).astype(np.float32) * 2 + 0.5
    W = rng.standard_normal(N).astype(np.float32)
    B = rng.standard_normal(N).astype(np.float32)
    Y, Mean, Rstd = poisoned((M, N), np.float32), poisoned(M, np.float32), poisoned(M, np.float32)
    layer_norm_fwd[(M,)](X, Y, W, B, Mean, Rstd, N, N, 1e-5, BLOCK_SIZE=256, target=target)
    x = X.astype(np.float64)
    mu, rs = x.mean(1), 1 / np.sqrt(x.var(1) + 1e-5)
    np.testing.assert_allclose(Mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Rstd, rs, rtol=1e-5)
    np.testing.assert_allclose(Y, (x - mu[:, None]) * rs[:, None] * W + B, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_masked_reductions(rng, target):
    M, N = 45, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    sums, args = poisoned(M, np.float32), poisoned(M, np.int32)
    maxes = np.full(N, -np.inf, np.float32)
    masked_rows_kernel[(xk.cdiv(M, 16),)](x, sums, maxes, args, M, N, BM=16, BN=32, target=target)
    np.testing.assert_allclose(sums, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(args, x.argmax(1))
    np.testing.assert_array_equal(maxes, x.max(0))


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_while_and_if(rng, target):
    x = rng.integers(1, 10_000, 67).astype(np.int32)
    out = poisoned(67, np.int32)
    collatz_steps[(67,)](x, out, 1000, target=target)

    def steps(v):
        s = 0
        while v != 1 and s < 1000:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s
    np.testing.assert_array_equal(out, [steps(int(v)) for v in x])


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_call_another_jit_function(rng, target):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    call_kernel[(xk.cdiv(n, 256),)](x, out, n, 0.1, BLOCK=256, target=target)
    np.testing.assert_allclose(out, np.where(x > 0, x, x * np.float32(0.1)) * 3, rtol=1e-6)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_semantics(rng, target, dtype):
    n = 333
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    if info.min < 0:
        a[:3] = info.min  # overflow corners: MIN // -1 wraps
        b[:3] = [-1, 7, -7]
    out = poisoned((n, 6), dtype)
    int_ops_kernel[(xk.cdiv(n, 64),)](a, b, out, n, BLOCK=64, target=target)
    with np.errstate(over="ignore"):
        if info.min < 0:
            q, r = c_div(a, b)
        else:
            q, r = a // b, a % b
        want = np.stack([a + b, a * b, q, r, (a << dtype(3)) ^ (b >> dtype(1)), ~a & (b | dtype(7))], 1)
    np.testing.assert_array_equal(out, want.astype(dtype))
