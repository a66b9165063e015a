"""Tensor descriptors of 3 to 5 dimensions (frontend/semantic_nd.py): a batched GEMM through
``(1, BM, BK)`` blocks, a copy through ``(2, BM, BN)`` blocks over a ragged batch, and a 4-D one, on
the CPU device, its 8-wide model and the interpreter, outputs poisoned; on pvc the batched GEMM's K
loop is 2D block loads and DPAS with no SLM."""
import numpy as np

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def bmm(a_ptr, b_ptr, c_ptr, B, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    pid_m, pid_n, bat = xl.program_id(0), xl.program_id(1), xl.program_id(2)
    a_d = xl.make_tensor_descriptor(a_ptr, shape=[B, M, K], strides=[M * K, K, 1], block_shape=[1, BM, BK])
    b_d = xl.make_tensor_descriptor(b_ptr, shape=[B, K, N], strides=[K * N, N, 1], block_shape=[1, BK, BN])
    c_d = xl.make_tensor_descriptor(c_ptr, shape=[B, M, N], strides=[M * N, N, 1], block_shape=[1, BM, BN])
    acc = xl.zeros((BM, BN), dtype=xl.float32)
    for k in range(0, K, BK):
        a = a_d.load([bat, pid_m * BM, k]).reshape(BM, BK)
        b = b_d.load([bat, k, pid_n * BN]).reshape(BK, BN)
        acc = xl.dot(a, b, acc)
    c_d.store([bat, pid_m * BM, pid_n * BN], acc.reshape(1, BM, BN))


@xk.jit
def copy_blocks(x_ptr, y_ptr, A, B, M, N, BB: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    """Y = 2 X for 4-D X (A, B, M, N) through (1, BB, BM, BN) blocks."""
    a, b0, m0 = xl.program_id(0), xl.program_id(1) * BB, xl.program_id(2) * BM
    x_d = xl.make_tensor_descriptor(x_ptr, shape=[A, B, M, N], strides=[B * M * N, M * N, N, 1],
                                    block_shape=[1, BB, BM, BN])
    y_d = xl.make_tensor_descriptor(y_ptr, shape=[A, B, M, N], strides=[B * M * N, M * N, N, 1],
                                    block_shape=[1, BB, BM, BN])
    assert x_d.block_shape == (1, BB, BM, BN)
    y_d.store([a, b0, m0, 0], x_d.load([a, b0, m0, 0]) * 2.0)


def test_batched_gemm(backend, rng):
    B, M, N, K = 3, 45, 37, 50
    a = rng.standard_normal((B, M, K)).astype(np.float16)   # (f16: the 8-wide model has no tf32)
    b = rng.standard_normal((B, K, N)).astype(np.float16)
    c = backend.run(bmm, (xk.cdiv(M, 32), xk.cdiv(N, 32), B), [a, b, poisoned((B, M, N), np.float32), B, M, N, K],
                    BM=32, BN=32, BK=16)[2]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_blocks_over_a_ragged_batch_in_4d(backend, rng):
    A, B, M, N = 2, 3, 21, 40
    x = rng.standard_normal((A, B, M, N)).astype(np.float32)
    y = backend.run(copy_blocks, (A, xk.cdiv(B, 2), xk.cdiv(M, 16)), [x, poisoned(x.shape, np.float32), A, B, M, N],
                    BB=2, BM=16, BN=64)[1]
    np.testing.assert_array_equal(y, 2 * x)


def test_batched_gemm_k_loop_on_pvc():
    from xekern.tools.isa import compile_isa, loop_counts
    P = xk.pointer
    c = bmm.compile_offline(dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), B=xl.int32,
                                 M=xl.int32, N=xl.int32, K=xl.int32, BM=64, BN=64, BK=32), target="pvc",
                            num_subgroups=4)
    assert "convert_layout" not in c.asm["layout"]
    lc = loop_counts(compile_isa(c.spirv, c.name, "pvc"))
    assert lc.dpas > 0 and lc.load_block2d > 0 and not any(k.endswith(".slm") for k in lc.sends), lc
