"""Pass block-pointers: pointer tiles that are blocks of row-strided matrices, feeding ``xl.dot``,
loaded through tensor descriptors (2D block messages). On every backend at ragged sizes against
float64 NumPy with poisoned outputs: the K tail (the mask becomes the descriptor's width), blocks
that wrap (``% M``: the loop as written runs instead), odd row strides (the surface check fails:
the descriptor goes element by element), masks on both axes, a non-zero ``other``, and a mask no
bound describes. In pvc's ISA (IGC 2.x), tutorial 03's K loop becomes 2D block loads and DPAS."""
import importlib.util
import os

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import close, poisoned
from xekern.tools.isa import compile_isa, find_loops

P, I32 = xk.pointer, xl.int32
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@xk.jit
def ptr_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
               BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr, WRAP: xl.constexpr, OTHER: xl.constexpr,
               ODD_MASK: xl.constexpr):
    """Tutorial 03's loop. WRAP: rows and columns ``% M`` / ``% N`` (else masked on M and N too);
    OTHER: masked-off A elements read as OTHER (B's as 0); ODD_MASK: A's mask is ``K - 1 - k * BK >=
    offs_k``, B's adds a conjunct no descriptor bound describes (``2 * offs_k < 2 * (K - k * BK)``)."""
    pid_m = xl.program_id(0)
    pid_n = xl.program_id(1)
    if WRAP:
        offs_am = (pid_m * BM + xl.arange(0, BM)) % M
        offs_bn = (pid_n * BN + xl.arange(0, BN)) % N
    else:
        offs_am = pid_m * BM + xl.arange(0, BM)
        offs_bn = pid_n * BN + xl.arange(0, BN)
    offs_k = xl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = xl.zeros((BM, BN), dtype=xl.float32)
    for k in range(0, xl.cdiv(K, BK)):
        if ODD_MASK:
            a_mask = K - 1 - k * BK >= offs_k[None, :]
            b_mask = (offs_k[:, None] < K - k * BK) & (offs_k[:, None] * 2 < 2 * (K - k * BK))
        else:
            a_mask = offs_k[None, :] < K - k * BK
            b_mask = offs_k[:, None] < K - k * BK
        if not WRAP:
            a_mask = a_mask & (offs_am[:, None] < M)
            b_mask = b_mask & (offs_bn[None, :] < N)
        a = xl.load(a_ptrs, mask=a_mask, other=OTHER)
        b = xl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = xl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    offs_cm = pid_m * BM + xl.arange(0, BM)
    offs_cn = pid_n * BN + xl.arange(0, BN)
    xl.store(c_ptr + stride_cm * offs_cm[:, None] + offs_cn[None, :], acc,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def run(backend, rng, M, N, K, lda=None, ldb=None, BM=32, BN=32, BK=32, WRAP=True, OTHER=0.0, ODD_MASK=False,
        dtype=np.float16):
    lda, ldb = lda or K, ldb or N
    a = rng.standard_normal((M, lda)).astype(dtype)
    b = rng.standard_normal((K, ldb)).astype(dtype)
    c = poisoned((M, N), np.float32)
    c = backend.run(ptr_matmul, (xk.cdiv(M, BM), xk.cdiv(N, BN)),
                    [a, b, c, M, N, K, lda, 1, ldb, 1, N], BM=BM, BN=BN, BK=BK, WRAP=WRAP, OTHER=OTHER,
                    ODD_MASK=ODD_MASK, num_subgroups=4)[2]
    # (a masked-off A element reads OTHER: a column past K meets B's zero rows, a row past M is not stored)
    want = a[:, :K].astype(np.float64) @ b[:, :N].astype(np.float64)
    tol = 2e-3 if dtype == np.float16 else 1e-5
    close(c, want, rtol=tol, atol=tol * np.sqrt(K))


@pytest.mark.parametrize("M,N,K", [(64, 96, 64), (64, 64, 77), (67, 45, 100), (33, 70, 31)])
def test_pointer_matmul(backend, rng, M, N, K):
    """Whole blocks, a K tail, blocks that wrap (and K below one block)."""
    run(backend, rng, M, N, K)


@pytest.mark.parametrize("lda,ldb", [(71, 64), (64, 45)])
def test_odd_strides(backend, rng, lda, ldb):
    """Row strides whose pitch breaks the surface rules: those descriptors read element by element."""
    run(backend, rng, 64, 45 if ldb == 45 else 64, 64, lda=lda, ldb=ldb)


def test_masks_on_both_axes_nonzero_other_and_odd_masks(backend, rng):
    run(backend, rng, 45, 70, 83, WRAP=False, OTHER=2.0)
    run(backend, rng, 45, 70, 83, ODD_MASK=True)
    if backend.target != "cpu8":   # (dg2's model has no tf32 DPAS)
        run(backend, rng, 64, 64, 83, ODD_MASK=True, dtype=np.float32)


def stage(kernel, sig, name, target="pvc", ns=4):
    return kernel.compile_offline(sig, target=target, num_subgroups=ns).asm[name]


def matmul_sig(**kw):
    f16 = xl.float16
    sig = dict(a_ptr=P(f16), b_ptr=P(f16), c_ptr=P(xl.float32), M=I32, N=I32, K=I32, stride_am=I32, stride_ak=1,
               stride_bk=I32, stride_bn=1, stride_cm=I32, BM=32, BN=32, BK=32, WRAP=True, OTHER=0.0, ODD_MASK=False)
    sig.update(kw)
    return sig


def test_what_the_pass_makes():
    ir_ = stage(ptr_matmul, matmul_sig(), "block-pointers")
    loop = ir_[ir_.index("scf.if"):]
    # unswitched: the first loop's loads are descriptor loads (A: [BM, K] at column k * BK), the
    # second loop is the kernel as written
    first, second = loop.split("scf.for")[1:3]
    assert first.count("xegpu.load_nd") == 2 and "load_gather" not in first, first
    assert second.count("xegpu.load_gather") == 2 and "load_nd" not in second, second
    # a column stride that is not 1 (not specialized): that tile's loads stay gathers
    one = stage(ptr_matmul, matmul_sig(stride_ak=I32), "block-pointers")
    assert one.count("create_nd_tdesc") == 1 and one.count("xegpu.load_gather") == 3, one
    assert "create_nd_tdesc" not in stage(ptr_matmul, matmul_sig(stride_ak=I32, stride_bn=I32), "block-pointers")
    # no 2D block IO (dg2): nothing to raise
    assert "create_nd_tdesc" not in stage(ptr_matmul, matmul_sig(), "block-pointers", target="dg2")
    # masks on both axes become the descriptors' bounds (A: [M, K], no condition); a conjunct no bound
    # describes, changing in the loop: a branch per load (B) instead of an unswitch
    odd = stage(ptr_matmul, matmul_sig(ODD_MASK=True, WRAP=False), "block-pointers")
    assert odd.count("scf.for") == 1 and odd.count("xegpu.load_nd") == 2 and odd.count("load_gather") == 1, odd
    assert "create_nd_tdesc %a_ptr, %M, %K, %stride_am" in odd, odd


def load_port(name):
    spec = importlib.util.spec_from_file_location(f"port_{name}_bp", os.path.join(ROOT, "examples", "triton_ports",
                                                                                   name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("BM,BN,ns", [(64, 64, 4), (256, 256, 32)])
def test_tutorial_03_k_loop_on_pvc(BM, BN, ns):
    """Tutorial 03 (strides of 1 specialized, as a launch with contiguous arrays does): the hot K loop
    has only 2D block loads, no gather, SLM message or barrier, no spill, dpas >= 40% (IGC 2.40:
    55.2% and 61.5%; before the pass 0.6% and 0.7%, 128 and 192 gathers per iteration). The loop as
    written remains for blocks that wrap."""
    kernel = load_port("03_matrix_multiplication").matmul_kernel
    while not hasattr(kernel, "compile_offline"):   # (through @xk.autotune)
        kernel = kernel.fn
    f16 = xl.float16
    sig = dict(a_ptr=P(f16), b_ptr=P(f16), c_ptr=P(f16), M=I32, N=I32, K=I32, stride_am=I32, stride_ak=1,
               stride_bk=I32, stride_bn=1, stride_cm=I32, stride_cn=1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
               BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")
    c = kernel.compile_offline(sig, target="pvc", num_subgroups=ns)
    r = compile_isa(c.spirv, c.name, "pvc", grf_mode=c.grf_mode)
    hot = [loop.counts for loop in find_loops(r.text) if loop.counts.load_block2d]
    assert len(hot) == 1, r.summary()
    lc = hot[0]
    assert not lc.sends and lc.barriers == 0 and lc.scratch == 0, r.summary()
    assert lc.dpas >= 0.4 * lc.total, r.summary()
