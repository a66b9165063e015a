"""Tile programming on the CPU device, in the 16- and 8-wide GPU models: tensor descriptors at
every edge, transposed and VNNI loads, prefetch and offset advances in loops, dot for every
dtype, gathers/scatters with masks and chunks, atomics under contention, SLM round trips,
layout conversions, cooperative transpose, named barriers, cross-subgroup reductions."""
import re

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned

ml_dtypes = pytest.importorskip("ml_dtypes")
GUARD = 64  # canary elements on each side of an output


def guarded(shape, dtype):
    """An output with poisoned canaries around it: returns (whole buffer, view of the output)."""
    n = int(np.prod(shape))
    buf = poisoned(n + 2 * GUARD, dtype)
    return buf, buf[GUARD:GUARD + n].reshape(shape)


def assert_canaries(buf, dtype):
    ref = poisoned(GUARD, dtype)
    for part in (buf[:GUARD], buf[-GUARD:]):
        assert np.array_equal(part.view(np.uint8), ref.view(np.uint8)), "a kernel wrote outside its output"


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---- descriptors ------------------------------------------------------------------------------------

@xk.jit
def copy_blocks(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr, TRANSPOSE: xl.constexpr):
    """Copy (or transpose) through 2D blocks; blocks hang over every edge of the matrix."""
    m0 = xl.program_id(0) * BM - BM // 2   # start half a block before the top/left edge
    n0 = xl.program_id(1) * BN - BN // 2
    x = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    if TRANSPOSE:
        o = xl.make_tensor_descriptor(o_ptr, shape=(N, M), strides=(M, 1), block_shape=(BN, BM))
        o.store((n0, m0), x.load((m0, n0), transpose=True))
    else:
        o = xl.make_tensor_descriptor(o_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
        o.store((m0, n0), x.load((m0, n0)) + 1)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int32])
@pytest.mark.parametrize("transpose", [False, True])
def test_descriptor_blocks_at_every_edge(rng, target, dtype, transpose):
    M, N = 37, 53
    BM, BN = 16, 32
    x = rand(rng, (M, N), dtype)
    buf, out = guarded((N, M) if transpose else (M, N), dtype)
    grid = (xk.cdiv(M, BM) + 1, xk.cdiv(N, BN) + 1)
    copy_blocks[grid](x, buf[GUARD:], M, N, BM=BM, BN=BN, TRANSPOSE=transpose, target=target)
    want = x.T if transpose else (x.astype(np.float64) + 1).astype(dtype)
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))
    assert_canaries(buf, dtype)


@xk.jit
def row_sums_advance(x_ptr, o_ptr, M, K, BM: xl.constexpr, BK: xl.constexpr):
    """Walk along K with update_nd_offset, prefetching the next block."""
    m0 = xl.program_id(0) * BM
    d = xl.make_tensor_descriptor(x_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    d = d.advance((m0, 0))
    acc = xl.zeros((BM, BK), xl.float32)
    for k in range(0, K, BK):
        d.prefetch((0, BK))
        acc += d.load().to(xl.float32)
        d = d.advance((0, BK))
    rows = m0 + xl.arange(0, BM)
    xl.store(o_ptr + rows, xl.sum(acc, axis=1), mask=rows < M)


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_prefetch_and_offset_advance_in_a_loop(rng, target):
    M, K = 45, 333
    x = rand(rng, (M, K), np.float16)
    out = poisoned(M, np.float32)
    row_sums_advance[(xk.cdiv(M, 16),)](x, out, M, K, BM=16, BK=64, target=target)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-3, atol=1e-2)


# ---- dot ----------------------------------------------------------------------------------------------

@xk.jit
def gemm_desc(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    m0 = xl.program_id(0) * BM
    n0 = xl.program_id(1) * BN
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), c_ptr.dtype.elem)
    for k0 in range(0, K, BK):
        acc = xl.dot(a_desc.load((m0, k0)), b_desc.load((k0, n0)), acc)
    c_desc.store((m0, n0), acc)


DOT_CASES = [("bf16", ml_dtypes.bfloat16, np.float32, 32, 1e-4), ("f16", np.float16, np.float32, 32, 1e-4),
             ("tf32", np.float32, np.float32, 16, 1e-4), ("i8", np.int8, np.int32, 64, 0),
             ("u8", np.uint8, np.int32, 64, 0)]


# DG2's 8-wide DPAS has no tf32 (HARDWARE.md), and the cpu8 model follows DG2: that pair is an error
DOT_RUNS = [(t, *c) for t in CPU_TARGETS for c in DOT_CASES if not (t == "cpu8" and c[0] == "tf32")]


@pytest.mark.parametrize("target,name,dtype,acc,BK,tol", DOT_RUNS, ids=[f"{r[0]}-{r[1]}" for r in DOT_RUNS])
def test_dot_every_dtype(rng, target, name, dtype, acc, BK, tol):
    M, N, K = 67, 45, 2 * BK + 5
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    buf, c = guarded((M, N), acc)
    gemm_desc[(xk.cdiv(M, 32), xk.cdiv(N, 32))](a, b, buf[GUARD:], M, N, K, BM=32, BN=32, BK=BK, target=target)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * max(1, np.abs(ref).max()))
    assert_canaries(buf, acc)


@pytest.mark.parametrize("target", ["dg2", "cpu8"])
def test_dot_on_a_target_without_that_dpas_is_a_clear_error(target):
    P = xk.pointer
    with pytest.raises(xk.CompilationError, match=f"{target} has no DPAS for float32"):
        gemm_desc.compile_offline(dict(a_ptr=P(xl.float32), b_ptr=P(xl.float32), c_ptr=P(xl.float32), M=xl.int32,
                                       N=xl.int32, K=xl.int32, BM=32, BN=32, BK=8), target=target)


# ---- scattered access ----------------------------------------------------------------------------------

@xk.jit
def gather_chunks(x_ptr, idx_ptr, o_ptr, n, R: xl.constexpr, C: xl.constexpr):
    rows = xl.program_id(0) * R + xl.arange(0, R)
    idx = xl.load(idx_ptr + rows, mask=rows < n, other=0)
    d = xl.create_tdesc(x_ptr, idx * C, chunk_size=C)
    v = d.load(mask=rows < n, other=-1.0)
    e = xl.create_tdesc(o_ptr, rows * C, chunk_size=C)
    e.store(v * 2.0, mask=(rows < n) & (idx % 3 != 0))
    d2 = d.update_offset(xl.full((R,), C, xl.int32))
    d2.prefetch()


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("chunk", [1, 2, 4, 8])
def test_gather_scatter_with_masks_and_chunks(rng, target, chunk):
    n, rows = 77, 200
    x = rand(rng, (rows, chunk), np.float32)
    idx = rng.integers(0, rows, n).astype(np.int32)
    buf, out = guarded((n, chunk), np.float32)
    gather_chunks[(xk.cdiv(n, 32),)](x, idx, buf[GUARD:], n, R=32, C=chunk, target=target)
    keep = idx % 3 != 0
    np.testing.assert_array_equal(out[keep], 2 * x[idx[keep]])
    assert np.isnan(out[~keep]).all()
    assert_canaries(buf, np.float32)


@xk.jit
def atomics_kernel(xi_ptr, xf_ptr, slots_i, slots_f, xchg_ptr, lock_ptr, counter_ptr, n, S: xl.constexpr,
                   BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    vi = xl.load(xi_ptr + offs, mask=mask, other=0)
    vf = xl.load(xf_ptr + offs, mask=mask, other=0.0)
    s = offs % S
    xl.atomic_add(slots_i + s, vi, mask=mask)
    xl.atomic_max(slots_i + S + s, vi, mask=mask)
    xl.atomic_min(slots_i + 2 * S + s, vi, mask=mask)
    xl.atomic_and(slots_i + 3 * S + s, vi | 0x70000000, mask=mask)
    xl.atomic_or(slots_i + 4 * S + s, vi & 0xFF, mask=mask)
    xl.atomic_xor(slots_i + 5 * S + s, vi, mask=mask)
    xl.atomic_add(slots_f + s, vf, mask=mask)
    xl.atomic_max(slots_f + S + s, vf, mask=mask)
    xl.atomic_min(slots_f + 2 * S + s, vf, mask=mask)
    xl.atomic_xchg(xchg_ptr + s, offs, mask=mask)
    # a counter incremented with compare-and-swap retries
    old = xl.atomic_add(counter_ptr + s, 0, mask=mask)
    done = ~mask
    for _ in range(64):
        prev = xl.atomic_cas(lock_ptr + s, old, old + 1, mask=~done)
        done = done | (prev == old)
        old = xl.where(done, old, prev)


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_every_atomic_kind_under_contention(rng, target):
    n, S = 5000, 7
    xi = rng.integers(-1000, 1000, n).astype(np.int32)
    xf = rng.standard_normal(n).astype(np.float32)
    slots_i = np.concatenate([np.zeros(S), np.full(S, -2**31), np.full(S, 2**31 - 1), np.full(S, -1),
                              np.zeros(S), np.zeros(S)]).astype(np.int32)
    slots_f = np.concatenate([np.zeros(S), np.full(S, -np.inf), np.full(S, np.inf)]).astype(np.float32)
    xchg = np.full(S, -1, np.int32)
    lock = np.zeros(S, np.int32)
    counter = np.zeros(S, np.int32)
    atomics_kernel[(xk.cdiv(n, 256),)](xi, xf, slots_i, slots_f, xchg, lock, counter, n, S=S, BLOCK=256,
                                       target=target)
    g = [np.arange(n) % S == j for j in range(S)]
    si = slots_i.reshape(6, S)
    np.testing.assert_array_equal(si[0], [xi[m].sum() for m in g])
    np.testing.assert_array_equal(si[1], [xi[m].max() for m in g])
    np.testing.assert_array_equal(si[2], [xi[m].min() for m in g])
    np.testing.assert_array_equal(si[3], [np.bitwise_and.reduce(xi[m] | 0x70000000) & -1 for m in g])
    np.testing.assert_array_equal(si[4], [np.bitwise_or.reduce(xi[m] & 0xFF) for m in g])
    np.testing.assert_array_equal(si[5], [np.bitwise_xor.reduce(xi[m]) for m in g])
    sf = slots_f.reshape(3, S)
    np.testing.assert_allclose(sf[0], [xf[m].astype(np.float64).sum() for m in g], rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(sf[1], [xf[m].max() for m in g])
    np.testing.assert_array_equal(sf[2], [xf[m].min() for m in g])
    for j in range(S):  # xchg leaves one of the writers' values
        assert xchg[j] in np.nonzero(g[j])[0]
    np.testing.assert_array_equal(lock, [m.sum() for m in g])  # every CAS increment landed once


# ---- shared local memory ----------------------------------------------------------------------------------

@xk.jit
def slm_round_trip(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr, BLOCKED: xl.constexpr,
                   STRIDED: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    x = xl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    if BLOCKED:
        m = xl.alloc_slm((BM, BN), xl.float32, block=(8, 16))
    elif STRIDED:
        m = xl.alloc_slm((BM, BN), xl.float32, strides=(1, BM))   # column-major
    else:
        m = xl.alloc_slm((BM, BN), xl.float32)
    m.store((0, 0), x * 3.0)
    xl.barrier()
    lay = xl.Layout(sg_layout=[1, 4], sg_data=[BM, BN // 4], lane_layout=[16, 1], lane_data=[1, 1], order=[0, 1])
    y = m.load((0, 0), shape=(BM, BN), layout=lay)
    xl.store(o_ptr + rm[:, None] * BN + rn[None, :], y)


@pytest.mark.parametrize("target", ["cpu"])
@pytest.mark.parametrize("kind", ["linear", "blocked", "strided"])
def test_slm_round_trips(rng, target, kind):
    x = rand(rng, (32, 64), np.float32)
    out = poisoned((32, 64), np.float32)
    slm_round_trip[(1,)](x, out, BM=32, BN=64, BLOCKED=kind == "blocked", STRIDED=kind == "strided", target=target)
    np.testing.assert_array_equal(out, x * 3)


@xk.jit
def slm_block_io(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr, DT: xl.constexpr, SG: xl.constexpr,
                 ROW: xl.constexpr, BLOCK_IO: xl.constexpr):
    """Rows of SG lanes into a @block matrix whose blocks are rows of SG elements: sub-group block
    writes and reads (the tile at SLM row ROW, a runtime-free multiple of the block)."""
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    rows = xl.Layout(sg_layout=[4, 1], sg_data=[BM // 4, BN], lane_layout=[1, SG], lane_data=[1, 1])
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    x = xl.convert_layout(xl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=inside, other=0), rows)
    m = xl.alloc_slm((2 * BM, BN), DT, block=(8, SG))
    m.store((ROW, 0), x, subgroup_block_io=BLOCK_IO)
    xl.barrier()
    y = m.load((ROW, 0), shape=(BM, BN), layout=rows, subgroup_block_io=BLOCK_IO)
    xl.store(o_ptr + rm[:, None] * N + rn[None, :], y, mask=inside)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_slm_subgroup_block_io_round_trips(rng, target, dtype):
    M, N = 29, 61
    x = rand(rng, (M, N), dtype)
    out = poisoned((M, N), dtype)
    sg = 8 if target == "cpu8" else 16
    dt = {np.float32: xl.float32, np.float16: xl.float16, np.int8: xl.int8}[dtype]
    launch = slm_block_io[(1,)](x, out, M, N, BM=32, BN=64, DT=dt, SG=sg, ROW=8, BLOCK_IO=True, target=target)
    np.testing.assert_array_equal(out, x)
    llir = launch.asm["llir"]
    assert "intel_sub_group_block_write" in llir and "intel_sub_group_block_read" in llir


def test_slm_subgroup_block_io_refuses_a_layout_it_cannot_serve():
    with pytest.raises(xk.CompilationError, match="subgroup_block_io: .*origin is not provably"):
        slm_block_io.compile_offline(dict(x_ptr=xk.pointer(xl.float32), o_ptr=xk.pointer(xl.float32), M=xl.int32,
                                          N=xl.int32, BM=32, BN=64, DT=xl.float32, SG=16, ROW=3, BLOCK_IO=True),
                                     target="cpu")


@xk.jit
def convert_and_transpose(x_ptr, o_ptr, t_ptr, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    rows = xl.Layout(sg_layout=[4, 1], sg_data=[BM // 4, BN], lane_layout=[1, 16], lane_data=[1, 1])
    cols = xl.Layout(sg_layout=[1, 4], sg_data=[BM, BN // 4], lane_layout=[4, 4], lane_data=[1, 1])
    x = xl.convert_layout(xl.load(x_ptr + rm[:, None] * BN + rn[None, :]), rows)
    y = xl.convert_layout(x * 2.0, cols)           # unrelated layouts: through SLM
    xl.store(o_ptr + rm[:, None] * BN + rn[None, :], y)
    t = xl.convert_layout(xl.trans(x), xl.Layout(sg_layout=[4, 1], sg_data=[BN // 4, BM], lane_layout=[1, 16],
                                                 lane_data=[1, 1]))   # cooperative transpose
    xl.store(t_ptr + rn[:, None] * BM + rm[None, :], t)


@pytest.mark.parametrize("target", ["cpu"])
def test_convert_layout_and_cooperative_transpose(rng, target):
    x = rand(rng, (32, 64), np.float32)
    out, tr = poisoned((32, 64), np.float32), poisoned((64, 32), np.float32)
    launch = convert_and_transpose[(1,)](x, out, tr, BM=32, BN=64, target=target)
    assert launch.asm["sg"].count("xegpu.store_matrix") >= 2
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(tr, x.T)


@xk.jit
def nbarrier_exchange(x_ptr, o_ptr, ROUNDS: xl.constexpr):
    """Subgroups exchange data through SLM, synchronized by two named barriers in turn."""
    xl.alloc_nbarrier(2)
    nb0 = xl.init_nbarrier(0, 4)
    nb1 = xl.init_nbarrier(1, 4)
    r = xl.arange(0, 64)
    m = xl.alloc_slm((64,), xl.float32)
    v = xl.load(x_ptr + r)
    mine = xl.Layout(sg_layout=[4], sg_data=[16], lane_layout=[16], lane_data=[1])
    other = xl.Layout(sg_layout=[4], sg_data=[16], lane_layout=[16], lane_data=[1], order=[0])
    for i in xl.static_range(ROUNDS):
        m.store((0,), xl.convert_layout(v, mine))
        nb0.arrive()
        nb0.wait()
        w = m.load((0,), shape=(64,), layout=xl.Layout(sg_layout=[4], sg_data=[16], lane_layout=[16],
                                                        lane_data=[1]))
        nb1.arrive()
        nb1.wait()
        v = xl.convert_layout(w, other) + 1.0
    xl.store(o_ptr + r, v)


@pytest.mark.parametrize("target", ["cpu"])
def test_named_barriers_order_slm_exchanges(rng, target):
    x = rand(rng, 64, np.float32)
    out = poisoned(64, np.float32)
    nbarrier_exchange[(1,)](x, out, ROUNDS=3, target=target)
    want = x.copy()
    for _ in range(3):
        want = want + np.float32(1)
    np.testing.assert_array_equal(out, want)


@xk.jit
def colsum_kernel(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = xl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    xl.store(o_ptr + rn, xl.sum(x, axis=0) + xl.max(xl.max(x, axis=1), axis=0), mask=rn < N)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("num_subgroups", [2, 4, 8])
def test_reductions_across_subgroups(rng, target, num_subgroups):
    M, N = 61, 29
    x = rand(rng, (M, N), np.float32)
    out = poisoned(N, np.float32)
    colsum_kernel[(1,)](x, out, M, N, BM=64, BN=32, num_subgroups=num_subgroups, target=target)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(0) + x.max(), rtol=1e-5, atol=1e-5)


@xk.jit
def slm_rows_to_cols(x_ptr, t_ptr, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    rows = xl.Layout(sg_layout=[4, 1], sg_data=[BM // 4, BN], lane_layout=[16, 1], lane_data=[1, 1])
    x = xl.convert_layout(xl.load(x_ptr + rm[:, None] * BN + rn[None, :]), rows)
    t = xl.convert_layout(x, xl.Layout(sg_layout=[1, 4], sg_data=[BM, BN // 4], lane_layout=[1, 16],
                                       lane_data=[1, 1]))
    xl.store(t_ptr + rm[:, None] * BN + rn[None, :], t)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int8])
def test_slm_wide_accesses_every_width(rng, dtype):
    """A lane holding a whole row stores it to SLM in accesses of up to 32 bytes (at most 16 elements:
    more would be a vector LLVM's SPIR-V backend cannot split), 64-bit elements one by one."""
    x = rand(rng, (64, 64), dtype)
    t = poisoned((64, 64), dtype)
    launch = slm_rows_to_cols[(1,)](x, t, BM=64, BN=64)
    assert np.array_equal(t, x)
    wide = re.findall(r"store (<\d+ x i32>|i32|i16) %[^,]+, ptr addrspace\(3\)", launch.asm["llir"])
    assert bool(wide) == (np.dtype(dtype).itemsize < 8), wide
