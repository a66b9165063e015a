"""The foundation's kernels on every backend (the ``backend`` fixture: the CPU device in its 16- and
8-wide GPU models, and the interpreter), compared with NumPy (float64 references) on fresh random
data at odd sizes, outputs poisoned; the interpreter's outputs also with the CPU device's
(``same=``), bit for bit where both compute alike."""
import numpy as np
import pytest

import xekern as xk
from conftest import c_div, close, poisoned
from kernels import (add_kernel, call_kernel, collatz_steps, int_ops_kernel, layer_norm_fwd, masked_rows_kernel,
                     softmax_kernel)

ml_dtypes = pytest.importorskip("ml_dtypes")  # the test extra installs it


@pytest.mark.parametrize("dtype,tol", [(np.float16, 1e-3), (ml_dtypes.bfloat16, 1e-2), (np.float32, 1e-6),
                                       (np.float64, 1e-12)])
def test_vector_add(backend, rng, dtype, tol):
    n = 98_765
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    out = backend.run(add_kernel, (xk.cdiv(n, 1024),), [x, y, poisoned(n, dtype), n], BLOCK=1024,
                      same={2: 0})[2]  # both add in f32
    close(out, x.astype(np.float64) + y.astype(np.float64), tol, tol)


@pytest.mark.parametrize("n_cols,block", [(781, 1024), (33, 64), (1, 16)])
def test_fused_softmax(backend, rng, n_cols, block):
    rows = 37
    x = rng.standard_normal((rows, n_cols)).astype(np.float32) * 4
    out = backend.run(softmax_kernel, (rows,), [poisoned((rows, n_cols), np.float32), x, n_cols, n_cols, n_cols],
                      BLOCK=block, same={0: (1e-5, 1e-7)})[0]
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    close(out, e / e.sum(1, keepdims=True), 1e-5, 1e-7)


def test_layer_norm_forward(backend, rng):
    M, N = 19, 1151
    X = rng.standard_normal((M, N)).astype(np.float32) * 2 + 0.5
    W = rng.standard_normal(N).astype(np.float32)
    B = rng.standard_normal(N).astype(np.float32)
    outs = [poisoned((M, N), np.float32), poisoned(M, np.float32), poisoned(M, np.float32)]
    got = backend.run(layer_norm_fwd, (M,), [X, outs[0], W, B, outs[1], outs[2], N, N, 1e-5], BLOCK_SIZE=256,
                      same={i: (1e-5, 1e-5) for i in (1, 4, 5)})
    x = X.astype(np.float64)
    mu, rs = x.mean(1), 1 / np.sqrt(x.var(1) + 1e-5)
    close(got[4], mu, 1e-5, 1e-6)
    close(got[5], rs, 1e-5)
    close(got[1], (x - mu[:, None]) * rs[:, None] * W + B, 1e-4, 1e-5)


def test_masked_reductions_and_atomic_max(backend, rng):
    M, N = 45, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    got = backend.run(masked_rows_kernel, (xk.cdiv(M, 16),),
                      [x, poisoned(M, np.float32), np.full(N, -np.inf, np.float32), poisoned(M, np.int32), M, N],
                      BM=16, BN=32, same={1: (1e-5, 1e-5), 2: 0, 3: 0})  # (summation orders differ)
    close(got[1], x.astype(np.float64).sum(1), 1e-5, 1e-5)
    np.testing.assert_array_equal(got[3], x.argmax(1))
    np.testing.assert_array_equal(got[2], x.max(0))


def test_while_and_if(backend, rng):
    x = rng.integers(1, 10_000, 67).astype(np.int32)
    out = backend.run(collatz_steps, (67,), [x, poisoned(67, np.int32), 1000], same={1: 0})[1]

    def steps(v):
        s = 0
        while v != 1 and s < 1000:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s
    np.testing.assert_array_equal(out, [steps(int(v)) for v in x])


def test_call_another_jit_function(backend, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = backend.run(call_kernel, (xk.cdiv(n, 256),), [x, poisoned(n, np.float32), n, 0.1], BLOCK=256,
                      same={1: 0})[1]
    close(out, np.where(x > 0, x, x * np.float32(0.1)) * 3, 1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_semantics(backend, rng, dtype):
    n = 333
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    if info.min < 0:
        a[:3] = info.min  # overflow corners: MIN // -1 wraps
        b[:3] = [-1, 7, -7]
    out = backend.run(int_ops_kernel, (xk.cdiv(n, 64),), [a, b, poisoned((n, 6), dtype), n], BLOCK=64,
                      same={2: 0})[2]
    with np.errstate(over="ignore"):
        if info.min < 0:
            q, r = c_div(a, b)
        else:
            q, r = a // b, a % b
        want = np.stack([a + b, a * b, q, r, (a << dtype(3)) ^ (b >> dtype(1)), ~a & (b | dtype(7))], 1)
    np.testing.assert_array_equal(out, want.astype(dtype))
