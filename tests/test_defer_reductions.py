"""Pass defer-reductions on the device: loops that add a sum across lanes into a carried value carry the
lanes' partial sums and reduce once after the loop. The results must match NumPy (float64 reference,
ragged sizes, outputs poisoned) whether the pass takes the loop or not; the lane IR after the pass
shows which loops it took. Pass files: tests/passes/defer-reductions/."""
import re

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned

P = xk.pointer


@xk.jit
def row_sums(x_ptr, out_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    acc = xl.zeros([BM], dtype=xl.float32)
    for k in range(0, N, BN):
        cols = k + xl.arange(0, BN)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        acc += xl.sum(xl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), 1)
    xl.store(out_ptr + rows, acc, mask=rows < M)


@xk.jit
def decayed_sums(x_ptr, out_ptr, M, N, decay, BM: xl.constexpr, BN: xl.constexpr):
    """out = sum over column blocks b of decay^(blocks after b) * rowsum(block b), starting from out."""
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    acc = xl.load(out_ptr + rows, mask=rows < M, other=0.0)
    for k in range(0, N, BN):
        cols = k + xl.arange(0, BN)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = xl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        acc = acc * decay + xl.sum(x * x, 1)
    xl.store(out_ptr + rows, acc, mask=rows < M)


@xk.jit
def online_softmax_sums(x_ptr, l_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """Flash attention's row statistics: the running maximum and the sum of exp(x - max), rescaled."""
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    m_i = xl.zeros([BM], dtype=xl.float32) - float("inf")
    l_i = xl.zeros([BM], dtype=xl.float32)
    for k in range(0, N, BN):
        cols = k + xl.arange(0, BN)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = xl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=-float("inf"))
        m_new = xl.maximum(m_i, xl.max(x, 1))
        l_i = l_i * xl.exp(m_i - m_new) + xl.sum(xl.exp(x - m_new[:, None]), 1)
        m_i = m_new
    xl.store(l_ptr + rows, l_i, mask=rows < M)


@xk.jit
def int_sums_two_loops(x_ptr, out_ptr, M, N, H, BM: xl.constexpr, BN: xl.constexpr):
    """Integer row sums over [0, H) then [H, N): the first loop carries partial sums, the second not."""
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    acc = xl.zeros([BM], dtype=xl.int32) + 7
    for k in range(0, H, BN):
        cols = k + xl.arange(0, BN)
        acc += xl.sum(xl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < H),
                              other=0), 1)
    for k in range(H, N, BN):
        cols = k + xl.arange(0, BN)
        acc += xl.sum(xl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N),
                              other=0), 1)
    xl.store(out_ptr + rows, acc, mask=rows < M)


def _loop_bodies(text):
    """The text of each scf.for body in lane IR (nesting ignored: these kernels have none)."""
    return re.findall(r"scf\.for .*?\{\n(.*?)\n  \}", text, re.S)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("M,N,BM,BN,ns", [(37, 203, 16, 32, 1), (21, 77, 8, 64, 4), (5, 0, 8, 16, 1)])
def test_row_sums(target, M, N, BM, BN, ns):
    rng = np.random.default_rng()
    x = rng.standard_normal((M, max(N, 1))).astype(np.float32)[:, :N].copy()
    out = poisoned(M, np.float32)
    launch = row_sums[(M + BM - 1) // BM,](x, out, M, N, BM=BM, BN=BN, target=target, num_subgroups=ns)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    lane = launch.asm["defer-reductions"]
    assert all("gpu.subgroup_reduce" not in body for body in _loop_bodies(lane)), lane


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_scaled_sums_from_a_loaded_start(target):
    M, N, BM, BN, decay = 29, 150, 16, 32, 0.75
    rng = np.random.default_rng()
    x = rng.standard_normal((M, N)).astype(np.float32)
    start = rng.standard_normal(M).astype(np.float32)
    out = start.copy()
    launch = decayed_sums[(M + BM - 1) // BM,](x, out, M, N, decay, BM=BM, BN=BN, target=target)
    ref = start.astype(np.float64)
    for k in range(0, N, BN):
        ref = ref * decay + (x[:, k:k + BN].astype(np.float64) ** 2).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
    bodies = _loop_bodies(launch.asm["defer-reductions"])
    assert bodies and all("gpu.subgroup_reduce" not in b for b in bodies)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("M,N", [(19, 333), (64, 64)])
def test_online_softmax_sums(target, M, N):
    """The rescaled sum (its factor a loop-carried maximum) is deferred; the maximum cannot be."""
    BM, BN = 16, 64
    rng = np.random.default_rng()
    x = (rng.standard_normal((M, N)) * 4).astype(np.float32)
    out = poisoned(M, np.float32)
    launch = online_softmax_sums[(M + BM - 1) // BM,](x, out, M, N, BM=BM, BN=BN, target=target, num_subgroups=2)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(1, keepdims=True)).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    bodies = _loop_bodies(launch.asm["defer-reductions"])
    assert len(bodies) == 1 and "gpu.subgroup_reduce <add>" not in bodies[0] \
        and "gpu.subgroup_reduce <maxnumf>" in bodies[0], bodies


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("H", [0, 40, 97])
def test_int_sums_two_loops(target, H):
    M, N, BM, BN = 23, 97, 8, 16
    rng = np.random.default_rng()
    x = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    out = poisoned(M, np.int32)
    launch = int_sums_two_loops[(M + BM - 1) // BM,](x, out, M, N, H, BM=BM, BN=BN, target=target)
    np.testing.assert_array_equal(out, x.astype(np.int64).sum(1) + 7)
    bodies = _loop_bodies(launch.asm["defer-reductions"])
    assert len(bodies) == 2 and "gpu.subgroup_reduce" not in bodies[0] and "gpu.subgroup_reduce" in bodies[1]


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_gpu_lane_ir_defers_the_fused_form(target):
    """On GPUs fp-fusion makes ``l * alpha + sum`` one fma first; the pass takes that form too."""
    c = online_softmax_sums.compile_offline(dict(x_ptr=P(xl.float32), l_ptr=P(xl.float32), M=xl.int32, N=xl.int32,
                                                 BM=16, BN=64), target=target, num_subgroups=2)
    bodies = _loop_bodies(c.asm["defer-reductions"])
    assert len(bodies) == 1 and "gpu.subgroup_reduce <add>" not in bodies[0] and "math.fma" in bodies[0], bodies
