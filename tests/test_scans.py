"""Scans (xl.cumsum, xl.cumprod, xl.associative_scan): inclusive, forward and reverse, along either
axis of 2-D tiles and of 1-D tiles, with Triton's input types (int8 scans in int32, bfloat16 in
float32), against NumPy on every backend, ragged data masked in."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def _larger(a, b):
    return xl.maximum(a, b)


@xk.jit
def scans_2d(x_ptr, o_ptr, M, N, AXIS: xl.constexpr, REVERSE: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = xl.load(x_ptr + r[:, None] * N + c[None, :], mask=m, other=0.0)
    out = o_ptr + (r[:, None] * N + c[None, :]) * 3
    xl.store(out, xl.cumsum(x, axis=AXIS, reverse=REVERSE), mask=m)
    xl.store(out + 1, xl.cumprod(x * 0.01 + 1.0, AXIS, REVERSE), mask=m)
    xl.store(out + 2, xl.associative_scan(x, AXIS, _larger, reverse=REVERSE), mask=m)


@pytest.mark.parametrize("axis,reverse", [(0, False), (1, False), (0, True), (1, True)])
def test_scans_of_a_2d_tile(backend, rng, axis, reverse):
    M, N = 13, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    o = backend.run(scans_2d, (1,), [x, poisoned((M, N, 3), np.float32), M, N], AXIS=axis, REVERSE=reverse,
                    BM=16, BN=32)[1]
    pad = np.zeros((16, 32), np.float32)     # the tile as the kernel holds it: 0 where masked off
    pad[:M, :N] = x

    def scan(f, v):
        v = np.flip(v, axis) if reverse else v
        r = f(v, axis)
        return (np.flip(r, axis) if reverse else r)[:M, :N]
    np.testing.assert_allclose(o[..., 0], scan(np.cumsum, pad.astype(np.float64)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o[..., 1], scan(np.cumprod, pad.astype(np.float64) * 0.01 + 1), rtol=1e-5)
    np.testing.assert_array_equal(o[..., 2], scan(np.maximum.accumulate, pad))


@xk.jit
def int_and_bf16_scans(a_ptr, b_ptr, s_ptr, t_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    a = xl.load(a_ptr + offs, mask=m, other=0)        # int8
    b = xl.load(b_ptr + offs, mask=m, other=0.0)      # bfloat16
    s = xl.cumsum(a)
    t = xl.cumsum(b)
    xl.static_assert(s.dtype == xl.int32)
    xl.static_assert(t.dtype == xl.float32)
    xl.store(s_ptr + offs, s, mask=m)
    xl.store(t_ptr + offs, t, mask=m)


def test_scan_types_follow_triton(backend, rng):
    import ml_dtypes
    n = 200
    a = rng.integers(-128, 128, n).astype(np.int8)            # the int32 sums pass int8's range
    b = (rng.integers(-8, 8, n) / 8).astype(ml_dtypes.bfloat16)
    s, t = backend.run(int_and_bf16_scans, (1,), [a, b, poisoned(n, np.int32), poisoned(n, np.float32), n],
                       BLOCK=256)[2:4]
    np.testing.assert_array_equal(s, a.astype(np.int64).cumsum())
    np.testing.assert_array_equal(t, b.astype(np.float64).cumsum())


@xk.jit
def _absmax(a, b):
    return xl.where(xl.abs(a) > xl.abs(b), a, b)


@xk.jit
def reduce_with_fn(x_ptr, o_ptr, p_ptr, q_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = xl.load(x_ptr + r[:, None] * N + c[None, :], mask=m, other=0.0)
    xl.store(o_ptr + r, xl.reduce(x, 1, _absmax), mask=r < M)
    xl.store(p_ptr + c, xl.reduce(x, 0, _larger), mask=c < N)
    xl.store(q_ptr, xl.reduce(x, None, _larger))


def test_reduce_with_a_combine_function(backend, rng):
    M, N = 13, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    o, p, q = backend.run(reduce_with_fn, (1,), [x, poisoned(M, np.float32), poisoned(N, np.float32),
                                                 poisoned(1, np.float32), M, N], BM=16, BN=32)[1:4]
    pad = np.zeros((16, 32), np.float32)
    pad[:M, :N] = x
    np.testing.assert_array_equal(o, x[np.arange(M), np.abs(x).argmax(1)])
    np.testing.assert_array_equal(p, pad.max(0)[:N])
    assert q[0] == pad.max()


@xk.jit
def flips(x_ptr, o_ptr, p_ptr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    xl.store(o_ptr + r[:, None] * BN + c[None, :], xl.flip(x))
    xl.store(p_ptr + r[:, None] * BN + c[None, :], xl.flip(x, 0))


@pytest.mark.parametrize("bm,bn", [(16, 32), (4, 64), (32, 2)])
def test_flip(backend, rng, bm, bn):
    x = rng.standard_normal((bm, bn)).astype(np.float32)
    o, p = backend.run(flips, (1,), [x, poisoned((bm, bn), np.float32), poisoned((bm, bn), np.float32)],
                       BM=bm, BN=bn)[1:3]
    np.testing.assert_array_equal(o, x[:, ::-1])
    np.testing.assert_array_equal(p, x[::-1, :])


@xk.jit
def cat_and_count(a_ptr, b_ptr, c_ptr, h_ptr, n, BLOCK: xl.constexpr, BINS: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    a = xl.load(a_ptr + offs)
    b = xl.load(b_ptr + offs)
    xl.store(c_ptr + xl.arange(0, 2 * BLOCK), xl.cat(a, b, can_reorder=True))
    xl.store(h_ptr + xl.arange(0, BINS), xl.histogram(a, BINS, mask=offs < n))


def test_cat_and_histogram(backend, rng):
    block, bins, n = 64, 16, 50
    a = rng.integers(-2, 20, block).astype(np.int32)      # some values outside the bins
    b = rng.integers(0, 100, block).astype(np.int32)
    c, h = backend.run(cat_and_count, (1,), [a, b, poisoned(2 * block, np.int32), poisoned(bins, np.int32), n],
                       BLOCK=block, BINS=bins)[2:4]
    np.testing.assert_array_equal(c, np.concatenate([a, b]))
    np.testing.assert_array_equal(h, np.bincount(a[:n][(a[:n] >= 0) & (a[:n] < bins)], minlength=bins))


@xk.jit
def sorts(x_ptr, a_ptr, d_ptr, c_ptr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    xl.store(a_ptr + r[:, None] * BN + c[None, :], xl.sort(x))
    xl.store(d_ptr + r[:, None] * BN + c[None, :], xl.sort(x, descending=True))
    xl.store(c_ptr + r[:, None] * BN + c[None, :], xl.sort(x, 0))


@pytest.mark.parametrize("bm,bn", [(16, 32), (4, 64), (32, 2), (8, 8)])
def test_sort(backend, rng, bm, bn):
    x = rng.integers(-20, 20, (bm, bn)).astype(np.float32)      # with ties
    a, d, c = backend.run(sorts, (1,), [x] + [poisoned((bm, bn), np.float32) for _ in range(3)], BM=bm, BN=bn)[1:4]
    np.testing.assert_array_equal(a, np.sort(x, 1))
    np.testing.assert_array_equal(d, np.sort(x, 1)[:, ::-1])
    np.testing.assert_array_equal(c, np.sort(x, 0))


@xk.jit
def top4(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr, K: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    xl.store(o_ptr + r[:, None] * K + xl.arange(0, K)[None, :], xl.topk(x, K))


def test_topk(backend, rng):
    x = rng.standard_normal((8, 32)).astype(np.float32)
    o = backend.run(top4, (1,), [x, poisoned((8, 4), np.float32)], BM=8, BN=32, K=4)[1]
    np.testing.assert_array_equal(o, np.sort(x, 1)[:, ::-1][:, :4])


@xk.jit
def gathers(x_ptr, i_ptr, j_ptr, o_ptr, p_ptr, BM: xl.constexpr, BN: xl.constexpr, K: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    k = xl.arange(0, K)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    rows = xl.load(i_ptr + k[:, None] * BN + c[None, :])       # (K, BN) row indices
    cols = xl.load(j_ptr + r[:, None] * K + k[None, :])        # (BM, K) column indices
    xl.store(o_ptr + k[:, None] * BN + c[None, :], xl.gather(x, rows, 0))
    xl.store(p_ptr + r[:, None] * K + k[None, :], xl.gather(x, cols, 1))


def test_gather(backend, rng):
    bm, bn, k = 16, 32, 8
    x = rng.standard_normal((bm, bn)).astype(np.float32)
    rows = rng.integers(0, bm, (k, bn)).astype(np.int32)
    cols = rng.integers(0, bn, (bm, k)).astype(np.int32)
    o, p = backend.run(gathers, (1,), [x, rows, cols, poisoned((k, bn), np.float32), poisoned((bm, k), np.float32)],
                       BM=bm, BN=bn, K=k)[3:5]
    np.testing.assert_array_equal(o, np.take_along_axis(x, rows, 0))
    np.testing.assert_array_equal(p, np.take_along_axis(x, cols, 1))


# ---- tuples of tiles (Triton's reduce / associative_scan of several inputs) -----------------------------

@xk.jit
def _argmax_pair(v1, i1, v2, i2):
    """The larger value and its index; of equal values the smaller index (associative)."""
    take2 = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return xl.where(take2, v2, v1), xl.where(take2, i2, i1)


@xk.jit
def _sum_and_count(s1, c1, s2, c2):
    return s1 + s2, c1 + c2


@xk.jit
def tuple_reduce_scan(x_ptr, vmax_ptr, imax_ptr, run_ptr, cnt_ptr, M: xl.constexpr, N: xl.constexpr):
    rows = xl.arange(0, M)[:, None]
    cols = xl.arange(0, N)[None, :]
    x = xl.load(x_ptr + rows * N + cols)
    idx = xl.broadcast_to(cols, (M, N))
    v, i = xl.reduce((x, idx), 1, _argmax_pair)
    xl.store(vmax_ptr + xl.arange(0, M), v)
    xl.store(imax_ptr + xl.arange(0, M), i)
    positive = (x > 0).to(xl.int32)
    s, c = xl.associative_scan((xl.where(x > 0, x, 0.0), positive), 1, _sum_and_count)
    xl.store(run_ptr + rows * N + cols, s)
    xl.store(cnt_ptr + rows * N + cols, c)


def test_reduce_and_scan_of_tuples(backend, rng):
    M, N = 4, 32
    x = rng.integers(-4, 5, (M, N)).astype(np.float32)   # many ties: the smallest index must win
    out = backend.run(tuple_reduce_scan, (1,), [x, poisoned(M, np.float32), poisoned(M, np.int32),
                                                poisoned((M, N), np.float32), poisoned((M, N), np.int32)], M=M, N=N)
    np.testing.assert_array_equal(out[1], x.max(1))
    np.testing.assert_array_equal(out[2], x.argmax(1))
    np.testing.assert_array_equal(out[3], np.cumsum(np.where(x > 0, x, 0), axis=1))
    np.testing.assert_array_equal(out[4], np.cumsum(x > 0, axis=1))


# ---- reshapes that move elements between dimensions (through SLM) ------------------------------------

@xk.jit
def reshapes(x_ptr, flat_ptr, other_ptr, M: xl.constexpr, N: xl.constexpr):
    rows = xl.arange(0, M)[:, None]
    cols = xl.arange(0, N)[None, :]
    x = xl.load(x_ptr + rows * N + cols)
    xl.store(flat_ptr + xl.arange(0, M * N), xl.ravel(x))
    t = xl.reshape(x, N // 2, 2 * M)                                   # (the *shape spelling)
    xl.store(other_ptr + xl.arange(0, N // 2)[:, None] * (2 * M) + xl.arange(0, 2 * M)[None, :], t + 1.0)


def test_ravel_and_general_reshape(backend, rng):
    M, N = 8, 32
    x = rng.standard_normal((M, N)).astype(np.float32)
    flat, other = backend.run(reshapes, (1,), [x, poisoned(M * N, np.float32), poisoned(M * N, np.float32)],
                              M=M, N=N)[1:]
    np.testing.assert_array_equal(flat, x.ravel())
    np.testing.assert_array_equal(other, x.reshape(N // 2, 2 * M).ravel() + 1)


def test_reshape_compiles_for_gpus():
    from xekern.tools.isa import compile_isa
    sig = dict(x_ptr=xk.pointer(xl.float32), flat_ptr=xk.pointer(xl.float32), other_ptr=xk.pointer(xl.float32),
               M=16, N=32)
    for target in ("pvc", "bmg"):
        c = reshapes.compile_offline(sig, target=target, num_subgroups=4)
        assert "xegpu.mem_desc_view" in c.asm["xegpu"]
        r = compile_isa(c.spirv, c.name, target)
        assert r.spilled_around == 0, (target, r.spilled_around)
