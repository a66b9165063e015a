"""examples/attention: flash attention forward (O and the log-sum-exp) and backward (dQ, dK, dV)
against a float64 NumPy reference on fresh random data, at sequence lengths that are not multiples
of the blocks, outputs poisoned (``run_case``). The interpreter runs every dtype x causal x head dim;
the CPU device one case per dtype and f32 at both head dims (its driver takes 15-70 s to build the
four kernels of one case; the suite's time is counted). The GPU code is
checked offline: whole-row layouts, no SLM and no barrier in the K/V loop, no spill in the
forward's ISA."""
import importlib.util
import os
import sys

import pytest

import xekern as xk
import xekern.language as xl
from conftest import interpreted

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                                "attention"))
import attention as A  # noqa: E402

KERNELS = ("attn_fwd", "attn_bwd_preprocess", "attn_bwd_dkdv", "attn_bwd_dq")
SMALL = xk.Config(dict(BM=16, BN=16), num_subgroups=1)


def check(errs, dtype):
    assert max(errs.values()) <= A.tolerance(dtype), errs


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_interpreter(rng, monkeypatch, dtype, causal, d):
    for name in KERNELS:
        monkeypatch.setattr(A, name, interpreted(getattr(A, name)))
    errs, _ = A.run_case(rng, dtype, causal, d, 45, z=2, h=1, config=SMALL, target="cpu")
    check(errs, dtype)


@pytest.mark.parametrize("causal,d", [(False, 64), (True, 128)])
def test_f32_on_the_cpu_device(rng, causal, d):
    errs, _ = A.run_case(rng, "f32", causal, d, 77, config=SMALL)
    check(errs, "f32")


@pytest.mark.parametrize("dtype,causal,d", [("bf16", True, 64), ("f16", False, 64)])
def test_16_bit_on_the_cpu_device(rng, dtype, causal, d):
    errs, _ = A.run_case(rng, dtype, causal, d, 50, config=SMALL)
    check(errs, dtype)


def test_two_subgroups_share_the_rows_of_a_block(rng):
    """BM 32 on 2 subgroups: each owns 16 whole rows of S, P and O (the GPU configs' shape)."""
    errs, _ = A.run_case(rng, "f32", True, 64, 70, config=xk.Config(dict(BM=32, BN=16), num_subgroups=2), bwd=False)
    check(errs, "f32")


def _fwd_sig(dt):
    P = xk.pointer
    return dict(Q=P(dt), K=P(dt), V=P(dt), O=P(dt), M=P(xl.float32), sm_scale=xl.float32, N_CTX=xl.int32,
                D=64, BM=128, BN=64, CAUSAL=False)


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_forward_layouts_keep_rows_in_subgroups(target):
    """The dots of both K/V loops (unmasked, masked) on a whole-row grid ([8, 1]: 16 rows per
    subgroup), and nothing in the kernel goes through SLM or waits at a barrier."""
    c = A.attn_fwd.compile_offline(_fwd_sig(xl.bfloat16), target=target, num_subgroups=8)
    dots = [line for line in c.asm["layout"].splitlines() if "xegpu.dpas" in line]
    assert len(dots) == 4 and all("sg_layout = [8, 1]" in d for d in dots), dots
    sg = c.asm["sg"]
    assert sg.count("scf.for") == 2 and "store_matrix" not in sg and "load_matrix" not in sg and \
        "gpu.barrier" not in sg, sg


def _isa_report():
    """examples/attention/isa_report.py, by its path: examples/gemm has a module of the same name, which
    another test may have imported first."""
    path = os.path.join(os.path.dirname(A.__file__), "isa_report.py")
    spec = importlib.util.spec_from_file_location("attention_isa_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("subgroups", [8, 16])
def test_forward_isa_has_no_spill_and_one_mad_per_score(target, subgroups):
    """The current IGC's ISA of the forward at tutorial 06's blocks (bf16, D 64, 128 x 64): no spill
    and no scratch; on 8 subgroups at most 700 instructions per iteration of the unmasked loop; in
    each K/V loop DPAS (IGC's own: the loop computes between its products), no
    SLM message, barrier or fence, and ``qk * qk_scale - m`` as one ``mad`` per 16 scores (fp-fusion)."""
    head, rows = _isa_report().loops(A.attn_fwd, target, xl.bfloat16, ns=subgroups)
    assert head["spill"] == 0 and head["scratch"] == 0, head
    assert len(rows) == 2, rows
    # issue 21's goal: at most 700 instructions per 64 dpas in the unmasked loop (the row sums are
    # carried per lane there, pass defer-reductions; 719 on pvc without)
    if subgroups == 8:
        assert rows[0]["total"] <= 700, rows[0]
    for r in rows:
        assert r["dpas"] == 512 // subgroups and r["slm"] == r["barriers"] == r["fences"] == 0, r
    c = A.attn_fwd.compile_offline(_fwd_sig(xl.bfloat16), target=target, num_subgroups=subgroups)
    lane = c.asm["emitter-decisions"]
    assert lane.count('flavour = "builtin"') == lane.count("xegpu.dpas"), "inline-vISA DPAS in the K/V loops"
    assert "math.fma" in c.asm["fp-fusion"]


@xk.jit
def _one_product(a_ptr, b_ptr, c_ptr, M: xl.constexpr, N: xl.constexpr, K: xl.constexpr):
    a = xl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[M, K]).load([0, 0])
    b = xl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[K, N]).load([0, 0])
    xl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[M, N]).store([0, 0], xl.dot(a, b))


def _dpas_b_operands(c):
    """The B operand of each instruction-level dpas, in program order (inst stage)."""
    return [line.split("xegpu.dpas ")[1].split(",")[1].strip() for line in c.asm["inst"].splitlines()
            if "xegpu.dpas " in line]


def test_dpas_walks_c_by_columns_when_b_has_more_blocks():
    """pass inst (blocking): a subgroup's 16 x 64 product over K 64 has 2 x 4 C blocks and 16 B blocks
    to 8 of A: C is walked column by column, so each column of B's blocks is used by both row blocks
    one after the other and then dies (attention's K^T and V, which every subgroup holds whole)."""
    P = xk.pointer
    c = _one_product.compile_offline(dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32),
                                          M=16, N=64, K=64), target="pvc", num_subgroups=1)
    bs = _dpas_b_operands(c)
    assert len(bs) == 32 and bs[:4] == bs[4:8] and bs[8:12] == bs[12:16] and bs[:4] != bs[8:12], bs
    # as many B blocks as A's (a GEMM's 32 x 64 per subgroup): row by row, as before
    c = _one_product.compile_offline(dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32),
                                          M=64, N=64, K=32), target="pvc", num_subgroups=1)
    bs = _dpas_b_operands(c)
    assert bs[:2] != bs[2:4] and bs[:2] == bs[8:10], bs
