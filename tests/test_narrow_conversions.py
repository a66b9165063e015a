"""Pass narrow-conversions: ``dot(exp(dot(q, k)).to(f16), v)`` (attention's chain) converts P to the
second dot's A layout after narrowing it, not before: the same result on the CPU device at ragged
sizes, and half the bytes through SLM (IR: every ``store_matrix`` of the exchange is 16-bit)."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import close, poisoned

P, I32 = xk.pointer, xl.int32


@xk.jit
def dot_chain(q_ptr, k_ptr, v_ptr, o_ptr, N, BM: xl.constexpr, BN: xl.constexpr, D: xl.constexpr):
    """O = exp(Q K) V over column blocks of K (D x N) and row blocks of V (N x D), P cast to V's
    dtype between the dots; the tail block of N is zero-padded (exp(0) V's zero rows: no effect)."""
    pid = xl.program_id(0)
    q_desc = xl.make_tensor_descriptor(q_ptr, shape=[BM * xl.num_programs(0), D], strides=[D, 1],
                                       block_shape=[BM, D])
    k_desc = xl.make_tensor_descriptor(k_ptr, shape=[D, N], strides=[N, 1], block_shape=[D, BN])
    v_desc = xl.make_tensor_descriptor(v_ptr, shape=[N, D], strides=[D, 1], block_shape=[BN, D])
    o_desc = xl.make_tensor_descriptor(o_ptr, shape=[BM * xl.num_programs(0), D], strides=[D, 1],
                                       block_shape=[BM, D])
    q = q_desc.load([pid * BM, 0])
    acc = xl.zeros((BM, D), dtype=xl.float32)
    for j in range(0, xl.cdiv(N, BN)):
        s = xl.dot(q, k_desc.load([0, j * BN]))
        p = xl.exp(s)
        acc = xl.dot(p.to(v_ptr.dtype.element_ty), v_desc.load([j * BN, 0]), acc)
    o_desc.store([pid * BM, 0], acc)


@pytest.mark.parametrize("N", [16, 83])
def test_chain_on_the_cpu_device(rng, N):
    BM, BN, D, programs = 32, 16, 32, 2
    q = (0.1 * rng.standard_normal((BM * programs, D))).astype(np.float16)
    k = (0.1 * rng.standard_normal((D, N))).astype(np.float16)
    v = rng.standard_normal((N, D)).astype(np.float16)
    o = poisoned((BM * programs, D), np.float32)
    launch = dot_chain[(programs,)](q, k, v, o, N, BM=BM, BN=BN, D=D, num_subgroups=4)
    p = np.exp(q.astype(np.float64) @ k.astype(np.float64)).astype(np.float16)
    close(o, p.astype(np.float64) @ v.astype(np.float64), rtol=2e-3, atol=2e-3 * np.sqrt(N))
    layout = launch.asm["narrow-conversions"]
    loop = layout.split("scf.for")[1]
    assert loop.index("arith.truncf") < loop.index("xegpu.convert_layout"), loop


def test_the_exchange_moves_16_bit_elements():
    sig = dict(q_ptr=P(xl.bfloat16), k_ptr=P(xl.bfloat16), v_ptr=P(xl.bfloat16), o_ptr=P(xl.float32), N=I32,
               BM=128, BN=64, D=64)
    c = dot_chain.compile_offline(sig, target="pvc", num_subgroups=8)
    stores = [line for line in c.asm["sg"].splitlines() if "xegpu.store_matrix" in line]
    assert stores and all("xbf16" in s.split(":", 1)[1] and "xf32" not in s.split(":", 1)[1] for s in stores), stores
