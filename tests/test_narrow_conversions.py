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


def run_chain(rng, N, target):
    """The chain on fresh data at K = N (ragged against BN 16), checked against float64 NumPy with
    P rounded to f16 as the kernel does; the launch (its stages) back."""
    BM, BN, D, programs = 32, 16, 32, 2
    q = (0.1 * rng.standard_normal((BM * programs, D))).astype(np.float16)
    k = (0.1 * rng.standard_normal((D, N))).astype(np.float16)
    v = rng.standard_normal((N, D)).astype(np.float16)
    o = poisoned((BM * programs, D), np.float32)
    launch = dot_chain[(programs,)](q, k, v, o, N, BM=BM, BN=BN, D=D, num_subgroups=4, target=target)
    p = np.exp(q.astype(np.float64) @ k.astype(np.float64)).astype(np.float16)
    close(o, p.astype(np.float64) @ v.astype(np.float64), rtol=2e-3, atol=2e-3 * np.sqrt(N))
    return launch


@pytest.mark.parametrize("N", [16, 83])
def test_chain_on_the_cpu_device(rng, N):
    """On ``cpu8`` (dg2's 8-wide DPAS: A packs two K elements per lane, C one) P still changes
    layout between the dots, after its cast."""
    launch = run_chain(rng, N, "cpu8")
    layout = launch.asm["narrow-conversions"]
    loop = layout.split("scf.for")[1]
    assert loop.index("arith.truncf") < loop.index("xegpu.convert_layout"), loop


def test_the_exchange_moves_16_bit_elements():
    """dg2 (8-wide DPAS: A packs two K elements per lane, C one): P changes layout, as bf16."""
    sig = dict(q_ptr=P(xl.bfloat16), k_ptr=P(xl.bfloat16), v_ptr=P(xl.bfloat16), o_ptr=P(xl.float32), N=I32,
               BM=128, BN=64, D=64)
    c = dot_chain.compile_offline(sig, target="dg2", num_subgroups=8)
    stores = [line for line in c.asm["sg"].splitlines() if "xegpu.store_matrix" in line]
    assert stores and all("xbf16" in s.split(":", 1)[1] and "xf32" not in s.split(":", 1)[1] for s in stores), stores


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_chained_dots_give_each_subgroup_whole_rows(target):
    """pass propagate-layout: both dots of the chain split only the rows (``sg_layout = [8, 1]``), so
    the row of P a subgroup computes is the row of A it multiplies: no conversion, no SLM, no
    barrier between the dots (pvc and bmg: C's and A's lane layouts agree for 16-bit A)."""
    sig = dict(q_ptr=P(xl.bfloat16), k_ptr=P(xl.bfloat16), v_ptr=P(xl.bfloat16), o_ptr=P(xl.float32), N=I32,
               BM=128, BN=64, D=64)
    c = dot_chain.compile_offline(sig, target=target, num_subgroups=8)
    dots = [line for line in c.asm["layout"].splitlines() if "xegpu.dpas" in line]
    assert len(dots) == 2 and all("sg_layout = [8, 1]" in d and "sg_layout = [4, 2]" not in d for d in dots), dots
    sg = c.asm["sg"]
    assert "convert_layout" not in c.asm["layout"].split("scf.for")[1]
    assert "store_matrix" not in sg and "gpu.barrier" not in sg, sg


def test_chain_without_a_conversion_on_the_cpu_device(rng):
    """The same chain on ``cpu`` (pvc's model): whole-row grids and no conversion, right at a ragged N."""
    launch = run_chain(rng, 83, "cpu")
    assert "convert_layout" not in launch.asm["layout"].split("scf.for")[1]
