"""Pass transpose-loads: ``desc.load(...).T`` (and ``xl.trans``, ``xl.permute``) feeding a ``dot``
is computed as the transposed load ``transpose=True`` gives: right on the CPU device at ragged
sizes, left alone where the transposed tile has another use, and in pvc's ISA (IGC 2.x) a K loop
of 2D block loads only (tutorial 09's persistent descriptor matmul, port 03a)."""
import importlib.util
import os

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import close, poisoned
from xekern.tools.isa import compile_isa, loop_counts

P, I32 = xk.pointer, xl.int32
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@xk.jit
def dot_of_transposed_loads(a_ptr, b_ptr, c_ptr, t_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr,
                            BK: xl.constexpr, TA: xl.constexpr, TB: xl.constexpr, KEEP: xl.constexpr):
    """C = A @ B with A stored K x M when TA (read as ``a.T``) and B stored N x K when TB (read as
    ``xl.permute(b, (1, 0))``); KEEP also stores each transposed B tile to T (BK x N: the last K
    block remains), a second use that keeps the transpose as written."""
    pid_m = xl.program_id(0)
    pid_n = xl.program_id(1)
    if TA:
        a_desc = xl.make_tensor_descriptor(a_ptr, shape=[K, M], strides=[M, 1], block_shape=[BK, BM])
    else:
        a_desc = xl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    if TB:
        b_desc = xl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    else:
        b_desc = xl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = xl.zeros((BM, BN), dtype=xl.float32)
    for k in range(0, xl.cdiv(K, BK)):
        if TA:
            a = a_desc.load([k * BK, pid_m * BM]).T
        else:
            a = a_desc.load([pid_m * BM, k * BK])
        if TB:
            b = xl.permute(b_desc.load([pid_n * BN, k * BK]), (1, 0))
        else:
            b = b_desc.load([k * BK, pid_n * BN])
        acc = xl.dot(a, b, acc)
        if KEEP:
            t_desc = xl.make_tensor_descriptor(t_ptr, shape=[BK, N], strides=[N, 1], block_shape=[BK, BN])
            t_desc.store([0, pid_n * BN], b)
    c_desc.store([pid_m * BM, pid_n * BN], acc)


def run_case(rng, dtype, M, N, K, TA, TB, KEEP=False, BM=32, BN=32, BK=32, ns=4):
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = poisoned((M, N), np.float32)
    t = poisoned((BK, N), dtype)
    a_in = np.ascontiguousarray(a.T) if TA else a
    b_in = np.ascontiguousarray(b.T) if TB else b
    launch = dot_of_transposed_loads[(xk.cdiv(M, BM), xk.cdiv(N, BN))](
        a_in, b_in, c, t, M, N, K, BM=BM, BN=BN, BK=BK, TA=TA, TB=TB, KEEP=KEEP, num_subgroups=ns)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=tol, atol=tol * np.sqrt(K))
    return launch, t, b


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("TA,TB", [(False, True), (True, False), (True, True)])
def test_transposed_operands_on_the_cpu_device(rng, dtype, TA, TB):
    """Ragged M, N and K (a K tail cut in the middle of a block, zero-padded by the descriptor)."""
    launch, _, _ = run_case(rng, dtype, 45, 70, 83, TA, TB)
    text = launch.asm["transpose-loads"]
    assert "vector.transpose" not in text, text
    assert text.count("transpose = [1, 0]") == TA + TB, text


def test_a_transposed_tile_with_another_use_is_left_as_written(rng):
    launch, t, b = run_case(rng, np.float32, 40, 33, 64, False, True, KEEP=True)
    assert "vector.transpose" in launch.asm["transpose-loads"]
    np.testing.assert_array_equal(t, b[32:64])   # (the last K block of B, as the dot saw it)


def load_03a():
    path = os.path.join(ROOT, "examples", "triton_ports", "03a_matrix_multiplication_descriptor.py")
    spec = importlib.util.spec_from_file_location("port_03a_isa", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = mod.matmul_kernel_descriptor_persistent
    while not hasattr(kernel, "compile_offline"):   # (through @xk.autotune)
        kernel = kernel.fn
    return kernel


@pytest.mark.parametrize("BN,BK,ns", [(128, 32, 8), (256, 64, 32)])
def test_03a_k_loop_is_2d_block_loads_and_dpas_on_pvc(BN, BK, ns):
    """Tutorial 09's ``xl.dot(a, b.T, acc)`` at two of its configs (BLOCK_SIZE_M = 128): every K-loop
    load a 2D block load, no gather, no SLM, no barrier, no spill, dpas >= 40% of the loop (IGC
    2.40: 62.7% and 54.2%; before the pass 1.2% and 1.3%, 128 and 256 gathers per iteration)."""
    bf16 = xl.bfloat16
    sig = dict(a_ptr=P(bf16), b_ptr=P(bf16), c_ptr=P(bf16), M=I32, N=I32, K=I32, BLOCK_SIZE_M=128,
               BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8, EPILOGUE_SUBTILE=False, NUM_SMS=64,
               WARP_SPECIALIZE=False)
    c = load_03a().compile_offline(sig, target="pvc", num_subgroups=ns)
    r = compile_isa(c.spirv, c.name, "pvc", grf_mode=c.grf_mode)
    lc = loop_counts(r)
    assert lc is not None and lc.dpas > 0, r.summary()
    assert lc.load_block2d > 0 and not lc.sends and lc.barriers == 0, r.summary()
    assert lc.scratch == 0 and r.scratch_bytes == 0 and not r.spills, r.summary()
    assert lc.dpas >= 0.4 * lc.total, r.summary()
