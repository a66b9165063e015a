"""The CPU device's DPAS micro-kernel over whole subgroup products (``lowering/fused_dots.py``,
``codegen/dpas_cpu.py``): the DPAS ops blocking cut one subgroup's dot into are marked as one group
and computed together, in one K loop per group of rows, reading operands from memory (fused
descriptor loads) or, when they are in registers, from the subgroup's own copy in SLM. The results
are bit for bit those of the same DPAS ops one by one (the same FMAs in the same order) and match
float64 NumPy on ragged sizes with poisoned outputs; the LLVM IR shows the compact form."""
import re

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS
from test_block_pointers import matmul_sig, ptr_matmul, run as ptr_run
from xekern.lowering import fused_dots
from xekern.lowering.codegen import dpas_cpu


def _groups(stage: str):
    """group -> the (row, column, k) places its DPAS ops carry in a printed stage."""
    out = {}
    for g, r, c, k in re.findall(r"fused_dot = \[(\d+), (\d+), (\d+), (\d+)\]", stage):
        out.setdefault(int(g), []).append((int(r), int(c), int(k)))
    return out


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_the_dpas_ops_of_a_subgroup_dot_are_one_group(target):
    """Tutorial 03's loop at 32 x 32 x 32 on 4 subgroups: on cpu the descriptor loop (block-pointers)
    and the loop as written (its fallback, operands gathered into registers) each hold one group
    covering the subgroup's 16 x 16 x 32 product; cpu8 (no 2D block IO) has the fallback only.
    The LLVM IR has a few K loops, no private arrays and no shuffles of operands."""
    c = ptr_matmul.compile_offline(matmul_sig(), target=target, num_subgroups=4)
    stage = c.asm["emitter-decisions"]
    groups = _groups(stage)
    assert len(groups) == (2 if target == "cpu" else 1), stage
    assert sum(map(len, groups.values())) == stage.count("xegpu.dpas"), "every DPAS in a group"
    for places in groups.values():
        rows, cols, ks = (sorted({p[d] for p in places}) for d in range(3))
        assert rows[-1] < 16 and cols[-1] < 16 and ks == [0, 16], places
        assert len(places) == len(rows) * len(cols) * len(ks)
    llir = c.asm["llir_unoptimized"]
    assert "alloca" not in llir and "sub_group_shuffle" not in llir
    assert len(re.findall(r"^dpas\.k[.\d]*:", llir, re.M)) <= 3, llir.count("dpas.k")


@pytest.fixture
def no_disk_cache(monkeypatch):
    """Kernels compiled here are compiled again (no on-disk cache): the tests change codegen."""
    monkeypatch.setenv("XEKERN_CACHE", "0")


def _product(target, rng, M, N, K, **kw):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    kernel = xk.jit(ptr_matmul.fn)   # a fresh kernel: its own in-memory cache
    kernel[(xk.cdiv(M, 32), xk.cdiv(N, 32))](a, b, c, M, N, K, K, 1, N, 1, N, BM=32, BN=32, BK=32, WRAP=True,
                                               OTHER=0.0, ODD_MASK=False, num_subgroups=4, target=target, **kw)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=2e-3, atol=2e-3 * np.sqrt(K))
    return c, list(kernel.cache.values())[-1].asm   # (the specialization the launch ran)


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_one_group_or_one_by_one_bit_for_bit(target, rng, no_disk_cache, monkeypatch):
    """The same products with the groups (the default), with register operands too big to stage
    (each DPAS alone, through SLM one block at a time), and with no groups at all: equal bit for bit,
    at sizes whose blocks wrap (the fallback loop runs) and a K tail."""
    seed = int(rng.integers(1 << 30))
    M, N, K = 67, 45, 100
    grouped, asm = _product(target, np.random.default_rng(seed), M, N, K)
    loops = len(re.findall(r"^dpas\.k[.\d]*:", asm["llir_unoptimized"], re.M))
    monkeypatch.setattr(dpas_cpu, "_STAGING_SHARE", 1 << 30)
    declined, asm = _product(target, np.random.default_rng(seed), M, N, K)
    assert len(re.findall(r"^dpas\.k[.\d]*:", asm["llir_unoptimized"], re.M)) > loops   # (one loop per DPAS)
    monkeypatch.setattr(fused_dots, "mark", lambda func, uses: 0)
    alone, asm = _product(target, np.random.default_rng(seed), M, N, K)
    assert "fused_dot" not in asm["emitter-decisions"]
    np.testing.assert_array_equal(grouped, declined)
    np.testing.assert_array_equal(grouped, alone)


@xk.jit
def half_x_times_v(x_ptr, v_ptr, o_ptr, M, N, D: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    """o = (x / 2) @ v, block by block along N: A computed in registers, B a descriptor load read
    as it lies (attention's P @ V)."""
    m0 = xl.program_id(0) * BM
    x_desc = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    v_desc = xl.make_tensor_descriptor(v_ptr, shape=(N, D), strides=(D, 1), block_shape=(BN, D))
    o_desc = xl.make_tensor_descriptor(o_ptr, shape=(M, D), strides=(D, 1), block_shape=(BM, D))
    acc = xl.zeros((BM, D), xl.float32)
    for n0 in range(0, N, BN):
        p = (x_desc.load((m0, n0)) * 0.5).to(xl.float16)
        acc = xl.dot(p, v_desc.load((n0, 0)), acc)
    o_desc.store((m0, 0), acc)


def _half_x_times_v(target, seed, M, N, D=64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float16)
    v = rng.standard_normal((N, D)).astype(np.float16)
    o = np.full((M, D), np.nan, np.float32)
    kernel = xk.jit(half_x_times_v.fn)   # a fresh kernel: its own in-memory cache
    kernel[(xk.cdiv(M, 32),)](x, v, o, M, N, D=D, BM=32, BN=32, num_subgroups=2, target=target)
    want = (x.astype(np.float64) * 0.5) @ v.astype(np.float64)
    np.testing.assert_allclose(o, want, rtol=2e-3, atol=2e-3 * np.sqrt(N))
    return o, list(kernel.cache.values())[-1].asm


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_registers_times_memory_is_one_group_bit_for_bit(target, rng, no_disk_cache, monkeypatch):
    """A in registers, B a descriptor load: B's load is fused (no register copy: the micro-kernel
    reads it from memory, checked at the tensor's edge, N = 45 cuts the last block) and the DPAS ops
    of a step form one group that copies only A to SLM. Equal bit for bit to the DPAS ops one by
    one (each copying its A block) and to a declined group, and close to float64 NumPy."""
    seed = int(rng.integers(1 << 30))
    M, N = 37, 45
    grouped, asm = _half_x_times_v(target, seed, M, N)
    stage = asm["emitter-decisions"]
    assert re.search(r"xegpu.load_nd [^\n]*\{[^\n]*fused = true[^\n]*packed = true", stage), stage
    groups = _groups(stage)
    assert len(groups) == stage.count("scf.for") and sum(map(len, groups.values())) == stage.count("xegpu.dpas"), \
        stage
    llir = asm["llir_unoptimized"]
    assert "dpas.inside" in llir and "dpas.edge" in llir   # (B's tile tested once: unchecked or checked loops)
    monkeypatch.setattr(dpas_cpu, "_STAGING_SHARE", 1 << 30)
    declined, _ = _half_x_times_v(target, seed, M, N)
    monkeypatch.setattr(fused_dots, "mark", lambda func, uses: 0)
    alone, asm = _half_x_times_v(target, seed, M, N)
    assert "fused_dot" not in asm["emitter-decisions"] and "fused = true" in asm["emitter-decisions"]
    np.testing.assert_array_equal(grouped, declined)
    np.testing.assert_array_equal(grouped, alone)
