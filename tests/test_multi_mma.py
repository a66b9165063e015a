"""Issue 7: dot on tiles with a leading batch dimension (seed 002's multi_mma): [B, M, K] x [B, K, N]
-> [B, M, N] lowered to one chain of DPAS per batch matrix, and a contraction over the outer
dimension (batched dot, then a sum over the batch). CPU device (16- and 8-wide models) and the
interpreter against np.einsum at odd sizes; pvc/dg2 offline compiles hold dpas."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned

ml_dtypes = pytest.importorskip("ml_dtypes")


@xk.jit
def bmm(a_ptr, b_ptr, c_ptr, B, M, N, K, BB: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr,
        BK: xl.constexpr, SUM_BATCH: xl.constexpr):
    b0 = xl.program_id(0) * BB
    m0 = xl.program_id(1) * BM
    n0 = xl.program_id(2) * BN
    rb = (b0 + xl.arange(0, BB))[:, None, None]
    rm = (m0 + xl.arange(0, BM))[None, :, None]
    rn = (n0 + xl.arange(0, BN))[None, None, :]
    ka = xl.arange(0, BK)[None, None, :]
    kb = xl.arange(0, BK)[None, :, None]
    acc = xl.zeros((BB, BM, BN), c_ptr.dtype.element_ty)
    for k0 in range(0, K, BK):
        a = xl.load(a_ptr + rb * M * K + rm * K + (k0 + ka), mask=(rb < B) & (rm < M) & (k0 + ka < K), other=0)
        b = xl.load(b_ptr + rb * K * N + (k0 + kb) * N + rn, mask=(rb < B) & (k0 + kb < K) & (rn < N), other=0)
        acc = xl.dot(a, b, acc)
    if SUM_BATCH:  # contraction over the outer dimension too: bmk,bkn->mn (one program along the batch)
        rm2 = (m0 + xl.arange(0, BM))[:, None]
        rn2 = (n0 + xl.arange(0, BN))[None, :]
        xl.store(c_ptr + rm2 * N + rn2, xl.sum(acc, axis=0), mask=(rm2 < M) & (rn2 < N))
    else:
        xl.store(c_ptr + rb * M * N + rm * N + rn, acc, mask=(rb < B) & (rm < M) & (rn < N))


DTYPES = {"bf16": (ml_dtypes.bfloat16, np.float32), "f16": (np.float16, np.float32),
          "f32": (np.float32, np.float32), "i8": (np.int8, np.int32)}


def operands(rng, dt, shape):
    if dt == np.int8:
        return rng.integers(-100, 100, shape).astype(np.int8)
    return rng.standard_normal(shape).astype(dt)


def check(out, want, dt):
    if dt == np.int8:
        np.testing.assert_array_equal(out, want)
    else:
        # f32 inputs are tf32 on GPUs only; the CPU device multiplies in f32
        np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("tiles", [(2, 16, 16, 32), (4, 32, 16, 32), (8, 8, 32, 64)],
                         ids=lambda t: "b{}m{}n{}k{}".format(*t))
def test_batched_dot_matches_einsum(backend, rng, dtype, tiles):
    ab_t, c_t = DTYPES[dtype]
    B, M, N, K = 5, 37, 21, 45
    BB, BM, BN, BK = tiles
    a, b = operands(rng, ab_t, (B, M, K)), operands(rng, ab_t, (B, K, N))
    c = poisoned((B, M, N), c_t)
    grid = (xk.cdiv(B, BB), xk.cdiv(M, BM), xk.cdiv(N, BN))
    kw = dict(BB=BB, BM=BM, BN=BN, BK=BK, SUM_BATCH=False)
    if backend.target == "cpu8" and dtype == "f32":  # the 8-wide model is DG2: no tf32 DPAS
        with pytest.raises(xk.CompilationError, match="no DPAS for float32"):
            backend.launch(bmm, grid, a, b, c, B, M, N, K, **kw)
        return
    backend.launch(bmm, grid, a, b, c, B, M, N, K, **kw)
    want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    check(c, want.astype(c_t) if dtype == "i8" else want, ab_t)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", ["bf16", "f32", "i8"])
def test_contraction_over_the_outer_dimension(rng, target, dtype):
    ab_t, c_t = DTYPES[dtype]
    B, M, N, K = 3, 19, 23, 40
    a, b = operands(rng, ab_t, (B, M, K)), operands(rng, ab_t, (B, K, N))
    c = poisoned((M, N), c_t)
    if target == "cpu8" and dtype == "f32":  # the 8-wide model is DG2: no tf32 DPAS
        with pytest.raises(xk.CompilationError, match="no DPAS for float32"):
            bmm[(1, 2, 2)](a, b, c, B, M, N, K, BB=4, BM=16, BN=16, BK=32, SUM_BATCH=True, target=target)
        return
    bmm[(1, xk.cdiv(M, 16), xk.cdiv(N, 16))](a, b, c, B, M, N, K, BB=4, BM=16, BN=16, BK=32, SUM_BATCH=True,
                                               target=target)
    want = np.einsum("bmk,bkn->mn", a.astype(np.float64), b.astype(np.float64))
    check(c, want.astype(c_t) if dtype == "i8" else want, ab_t)


def test_batched_dot_is_one_dpas_chain_per_matrix():
    P = xk.pointer
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), B=xl.int32, M=xl.int32,
               N=xl.int32, K=xl.int32, BB=8, BM=16, BN=32, BK=32, SUM_BATCH=False)
    c = bmm.compile_offline(sig, target="cpu", num_subgroups=4)
    # 8 matrices over 4 subgroups: 2 per subgroup, each 16x32 (K 32) -> 2 x (2 M-blocks x 2 N-blocks x 2 K-blocks)
    assert c.asm["inst"].count("xegpu.dpas") == 16, c.asm["inst"]
    assert "vector<8x16x32xbf16" in c.asm["xegpu"]


@pytest.mark.parametrize("target,dtype", [("pvc", xl.bfloat16), ("pvc", xl.float16), ("pvc", xl.int8),
                                          ("dg2", xl.bfloat16)])
def test_batched_dot_compiles_to_dpas(target, dtype):
    from xekern.tools.isa import compile_isa
    P = xk.pointer
    acc = xl.int32 if dtype == xl.int8 else xl.float32
    sig = dict(a_ptr=P(dtype), b_ptr=P(dtype), c_ptr=P(acc), B=xl.int32, M=xl.int32, N=xl.int32, K=xl.int32,
               BB=4, BM=16, BN=32, BK=64 if dtype == xl.int8 else 32, SUM_BATCH=False)
    c = bmm.compile_offline(sig, target=target)
    r = compile_isa(c.spirv, c.name, target)
    assert r.counts.calls == 0, r.summary()
    assert r.counts.dpas >= 4, r.summary()
