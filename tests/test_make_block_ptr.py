"""``xl.make_block_ptr`` / ``xl.advance`` / ``xl.load`` / ``xl.store`` on block pointers (Triton's
block-pointer API, tutorial 06's forward): row-major views, transposed views (the first stride 1,
``order=(0, 1)``), advancing inside a loop, ragged edges (padded with zero, stores skipped), on the
CPU device, its 8-wide model and the interpreter, outputs poisoned; and the errors."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def transpose_copy(X, Y, M, N, stride_xm, stride_xn, BM: xl.constexpr, BN: xl.constexpr):
    """Y (N x M) = 2 X^T: X read through a transposed view of it (stride_xn == 1 comes first)."""
    pid_m, pid_n = xl.program_id(0), xl.program_id(1)
    xt = xl.make_block_ptr(X, shape=(N, M), strides=(stride_xn, stride_xm), offsets=(pid_n * BN, 0),
                           block_shape=(BN, BM), order=(0, 1))
    xt = xl.advance(xt, (0, pid_m * BM))
    y = xl.make_block_ptr(Y, shape=(N, M), strides=(M, 1), offsets=(pid_n * BN, pid_m * BM),
                          block_shape=(BN, BM), order=(1, 0))
    xl.store(y, xl.load(xt, boundary_check=(0, 1)) * 2.0, boundary_check=(0, 1))


@xk.jit
def store_transposed(X, Y, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """Y = X + 1 where Y is M x N stored column-major: stores through a transposed view."""
    pid_m, pid_n = xl.program_id(0), xl.program_id(1)
    x = xl.make_block_ptr(X, shape=(M, N), strides=(N, 1), offsets=(pid_m * BM, pid_n * BN),
                          block_shape=(BM, BN), order=(1, 0))
    y = xl.make_block_ptr(Y, shape=(M, N), strides=(1, M), offsets=(pid_m * BM, pid_n * BN),
                          block_shape=(BM, BN), order=(0, 1))
    xl.store(y, xl.load(x) + 1.0)


@xk.jit
def row_sums(X, S, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """S[m] = sum of row m, walking the columns with xl.advance in a loop (a loop-carried pointer)."""
    pid = xl.program_id(0)
    p = xl.make_block_ptr(X, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0), block_shape=(BM, BN),
                          order=(1, 0))
    acc = xl.zeros((BM,), dtype=xl.float32)
    for _ in range(0, N, BN):
        acc += xl.sum(xl.load(p, boundary_check=(1,), padding_option="zero"), axis=1)
        p = xl.advance(p, (0, BN))
    s = xl.make_block_ptr(S, shape=(M,), strides=(1,), offsets=(pid * BM,), block_shape=(BM,), order=(0,))
    xl.store(s, acc, boundary_check=(0,))


def test_transposed_view_reads(backend, rng):
    M, N = 37, 45
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = backend.run(transpose_copy, (xk.cdiv(M, 16), xk.cdiv(N, 16)), [x, poisoned((N, M), np.float32), M, N, N, 1],
                    BM=16, BN=16)[1]
    np.testing.assert_array_equal(y, 2 * x.T)


def test_transposed_view_writes(backend, rng):
    M, N = 33, 50
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = backend.run(store_transposed, (xk.cdiv(M, 16), xk.cdiv(N, 16)), [x, poisoned((N, M), np.float32), M, N],
                    BM=16, BN=16)[1]
    np.testing.assert_array_equal(y.T, x + 1)


def test_advance_in_a_loop(backend, rng):
    M, N = 29, 83
    x = rng.standard_normal((M, N)).astype(np.float32)
    s = backend.run(row_sums, (xk.cdiv(M, 16),), [x, poisoned(M, np.float32), M, N], BM=16, BN=32)[1]
    np.testing.assert_allclose(s, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


@xk.jit
def bad(X, Y, N, CASE: xl.constexpr):
    if CASE == "no unit stride":
        xl.make_block_ptr(X, shape=(N, N), strides=(N, N), offsets=(0, 0), block_shape=(16, 16), order=(1, 0))
    if CASE == "order":
        xl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 16), order=(1, 1))
    if CASE == "nan padding":
        p = xl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 16), order=(1, 0))
        xl.load(p, padding_option="nan")
    if CASE == "boundary":
        p = xl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 16), order=(1, 0))
        xl.load(p, boundary_check=(2,))
    if CASE == "advance":
        p = xl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0, 0), block_shape=(16, 16), order=(1, 0))
        xl.advance(p, (1,))


@pytest.mark.parametrize("case,message", [
    ("no unit stride", "the contiguous dimension's stride must be 1"),
    ("order", "order [1, 1] is not a permutation of [0, 1]"),
    ("nan padding", "padding_option 'nan': block pointers pad with zero"),
    ("boundary", "boundary_check [2] names dimensions outside 0..1"),
    ("advance", "xl.advance of a 2-D block pointer needs 2 offsets"),
])
def test_errors_name_the_rule(case, message):
    sig = dict(X=xk.pointer(xl.float32), Y=xk.pointer(xl.float32), N=xl.int32, CASE=case)
    with pytest.raises(xk.CompilationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        bad.compile_offline(sig, target="cpu")
