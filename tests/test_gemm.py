"""The flagship GEMM (examples/gemm) on the CPU device: every dtype x layout on ragged shapes,
batched, with epilogues, against float64 NumPy; outputs poisoned first."""
import os
import sys

import numpy as np
import pytest

import xekern as xk

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm"))
import gemm as G  # noqa: E402

pytest.importorskip("ml_dtypes")


def config(dtype, prefetch=1):
    bk = {"int8": 64, "bf16": 32, "f16": 32, "f32": 16}[dtype]
    return xk.Config(dict(BM=32, BN=32, BK=bk, GROUP_M=2, PREFETCH=prefetch), num_subgroups=4)


def run(rng, m, n, k, dtype, layout, batch=0, bias=False, act=None, target="cpu", out=None, cfg=None):
    a, b, sa, sb = G.make_inputs(rng, m, n, k, dtype, layout, batch)
    out_dt = {None: np.dtype(G.DTYPES[dtype][2]), "f16": np.dtype(np.float16), "bf16": G.np_dtype("bfloat16")}[out]
    c = np.full(((batch,) if batch else ()) + (m, n), np.nan if out_dt.kind == "f" or out == "bf16" else -1,
                dtype=out_dt)
    bvec = rng.standard_normal(n).astype(np.float32 if dtype != "int8" else np.int32) if bias else None
    if bias and dtype == "int8":
        bvec = rng.integers(-50, 50, n).astype(np.int32)
    if bias:
        bvec = bvec.astype(c.dtype) if c.dtype.kind != "f" else bvec.astype(np.float32 if out_dt != np.float16
                                                                            else np.float16)
    G.gemm(sa, sb, c, layout=layout, bias=bvec, act=act, config=cfg or config(dtype), target=target)
    ref = G.reference(a, b, bvec, act)
    return c.astype(np.float64), ref


CASES = [(d, l) for d in ("f32", "bf16", "f16", "int8") for l in ("nn", "nt", "tn", "tt")]


@pytest.mark.parametrize("dtype,layout", CASES, ids=[f"{d}-{l}" for d, l in CASES])
def test_every_dtype_and_layout_on_ragged_shapes(rng, dtype, layout):
    m, n, k = 67, 45, 150
    got, ref = run(rng, m, n, k, dtype, layout)
    tol = G.tolerance(dtype, k) * max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype,layout", [("bf16", "nn"), ("int8", "nt"), ("f16", "tt")])
def test_8_wide_model(rng, dtype, layout):
    got, ref = run(rng, 39, 50, 70, dtype, layout, target="cpu8")
    np.testing.assert_allclose(got, ref, rtol=0, atol=G.tolerance(dtype, 70) * max(1.0, np.abs(ref).max()))


DG2_CASES = [("bf16", 0, "nn"), ("bf16", 1, "tt"), ("f16", 0, "nt"), ("f16", 1, "tn"), ("int8", 0, "tn"),
             ("int8", 0, "nt")]


@pytest.mark.parametrize("dtype,which,layout", DG2_CASES, ids=[f"{d}-cfg{i}-{l}" for d, i, l in DG2_CASES])
def test_dg2_configs_on_the_8_wide_model(rng, dtype, which, layout):
    """gemm.py's dg2 autotuning configs (checked offline for spills only) run correctly on cpu8, the
    8-wide model of dg2's lowering, at a ragged shape (M, N and K not multiples of any tile)."""
    cfg = G.configs_for(dtype, "dg2", layout)[which]
    m, n, k = 45, 37, 70
    got, ref = run(rng, m, n, k, dtype, layout, target="cpu8", cfg=cfg)
    np.testing.assert_allclose(got, ref, rtol=0, atol=G.tolerance(dtype, k) * max(1.0, np.abs(ref).max()))


SPLIT_CASES = [("bf16", "nn", 528, 80, 112, 2), ("f16", "nt", 528, 48, 96, 2), ("bf16", "tn", 48, 80, 96, 2),
               ("int8", "nn", 272, 80, 160, 2), ("bf16", "nn", 64, 48, 97, 1), ("int8", "tt", 48, 33, 70, 1)]


@pytest.mark.parametrize("dtype,layout,m,n,k,inside", SPLIT_CASES,
                         ids=[f"{d}-{lay}-{m}x{n}x{k}" for d, lay, m, n, k, _ in SPLIT_CASES])
def test_dg2_config_steps_inside_and_at_the_edges(rng, dtype, layout, m, n, k, inside):
    """gemm.py's first dg2 config for the layout on cpu8 with the cpu emitter's DPAS taking their operands
    from registers (no fused loads), so that the operands are read as on dg2: C^T = B^T A^T for nn
    and nt (A^T's rows per lane; B^T through SLM as VNNI rows, packed from row pairs or as it lies;
    16-bit: the 512 x 32 tile with K 64), C = A B for tn and tt (A^T through SLM; B through SLM, or
    B^T's rows per lane). At sizes that are multiples of 16 pass split-edges runs the K steps whose
    tiles lie inside in a loop of their own, without bounds tests: workgroups inside and one cut by
    M (rows past M read as zeros per lane), K cut inside the last step (112 = 1.75 x 64, 96 = 1.5 x
    64, int8 160 = 2.5 x 64: a 32-wide int8 run there is read element by element); the loop of the
    edge steps computes its addresses in its body (``CodeGen.lane_scope``). With K = 97 (odd rows of
    A, no dwords) only B's loads are split for; int8 tt at K = 70 splits for A's alone (B's rows of
    70 bytes are not dword-aligned)."""
    import dataclasses
    from xekern.lowering import emitters
    cpu8 = xk.get_target("cpu8")
    emitter = dataclasses.replace(emitters.choose(cpu8, emitters.default_driver(cpu8)), fused_dpas_loads=False)
    a, b, sa, sb = G.make_inputs(rng, m, n, k, dtype, layout)
    c = np.full((m, n), np.nan if dtype != "int8" else -1, np.dtype(G.DTYPES[dtype][2]))
    G.gemm(sa, sb, c, layout=layout, config=G.configs_for(dtype, "dg2", layout)[0], target="cpu8", emitter=emitter)
    ref = G.reference(a, b)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=0,
                               atol=G.tolerance(dtype, k) * max(1.0, np.abs(ref).max()))
    stage = list(G.gemm_kernel.cache.values())[-1].asm["split-edges"]
    assert stage.count("inside = true") == inside, stage   # (workgroup-level loads marked)


UNROLLED = [("bf16", "nn", 150, 2), ("int8", "nt", 150, 2), ("f16", "tn", 96, 2), ("int8", "tn", 200, 2),
            ("f32", "tt", 33, 2), ("bf16", "tn", 150, 3), ("f16", "nn", 100, 3), ("int8", "tn", 200, 3)]


@pytest.mark.parametrize("dtype,layout,k,unroll", UNROLLED, ids=[f"{d}-{lay}-K{k}-x{u}" for d, lay, k, u in UNROLLED])
def test_k_steps_per_iteration(rng, dtype, layout, k, unroll):
    """K_UNROLL steps of BK per iteration (gemm.py's pvc configs: 3, tf32 2): with K not a multiple of
    K_UNROLL * BK the last iteration's later steps lie partly or wholly past K, where descriptor loads
    read zeros; prefetch blocks are K_UNROLL * BK wide (4 * BK for 3). K = 96 with BK = 32 and 2 steps:
    the second half of the last iteration is past K entirely; K = 100 with 3 steps: the second
    iteration's first step is cut at 4 of 32, its others are past K. tn's A^T passes through SLM once
    per step, every step's stores under one barrier (lowering/slm_barriers.py)."""
    cfg = config(dtype)
    cfg = xk.Config(dict(cfg.kwargs, K_UNROLL=unroll), num_subgroups=cfg.num_subgroups)
    got, ref = run(rng, 37, 45, k, dtype, layout, cfg=cfg)
    np.testing.assert_allclose(got, ref, rtol=0, atol=G.tolerance(dtype, k) * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_batched(rng, dtype):
    got, ref = run(rng, 33, 47, 65, dtype, "nt", batch=3)
    np.testing.assert_allclose(got, ref, rtol=0, atol=G.tolerance(dtype, 65) * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("dtype,act,out", [("f32", "relu", None), ("bf16", "gelu", None), ("f16", None, "f16"),
                                           ("bf16", "relu", "bf16"), ("int8", "relu", None)])
def test_epilogues_bias_activation_and_output_cast(rng, dtype, act, out):
    got, ref = run(rng, 50, 70, 64, dtype, "nn", bias=True, act=act, out=out)
    cast_tol = {None: 0, "f16": 1e-3, "bf16": 8e-3}[out] * np.abs(ref).max()
    tol = G.tolerance(dtype, 64) * max(1.0, np.abs(ref).max()) + cast_tol
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


def test_cli_default_run_is_correct():
    import subprocess
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm", "gemm.py")
    r = subprocess.run([sys.executable, here, "--m", "70", "--n", "65", "--k", "40", "--no-tune", "--rep", "1"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "70x65x40" in r.stdout and "f32" in r.stdout


def test_autotune_keeps_the_best_config_on_disk(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("XEKERN_CACHE_DIR", str(tmp_path))
    a, b = rng.standard_normal((40, 30)).astype(np.float32), rng.standard_normal((30, 20)).astype(np.float32)
    bad = xk.Config(dict(BM=32, BN=32, BK=3, GROUP_M=1, PREFETCH=0), num_subgroups=4)  # BK not a power of 2
    tuner = xk.autotune(configs=[bad, config("f32", 0), xk.Config(dict(BM=64, BN=32, BK=16, GROUP_M=1, PREFETCH=0),
                                                                  num_subgroups=4)],
                        key=["M", "N", "K"], verbose=True)(G.gemm_kernel)
    c = np.full((40, 20), np.nan, np.float32)
    grid = lambda meta: (xk.cdiv(40, meta["BM"]) * xk.cdiv(20, meta["BN"]), 1)  # noqa: E731
    args = (a, b, c, c, 40, 20, 30, 0, 0, 0)
    consts = dict(TRANS_A=False, TRANS_B=False, ACC=xk.language.float32, HAS_BIAS=False, ACT=None)
    tuner[grid](*args, **consts)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    (key, timings), = tuner.timings.items()
    assert len(timings) == 2, timings   # the bad config was skipped, the two good ones timed
    files = list((tmp_path / "autotune").glob("*.json"))
    assert len(files) == 1
    fresh = xk.autotune(configs=tuner.configs, key=["M", "N", "K"])(G.gemm_kernel)
    fresh[grid](*args, **consts)
    assert fresh.timings == {}, "a second tuner reuses the stored choice without benchmarking"


CPU_F32 = G.configs_for("f32", "cpu")


@pytest.mark.parametrize("cfg", CPU_F32, ids=[f"{c.kwargs['BM']}x{c.kwargs['BN']}" for c in CPU_F32])
def test_cpu_f32_configs_inside_and_at_the_edges(rng, cfg):
    """The example's CPU f32 configs (the unchecked micro-kernel inside the tensors, the checked
    loop and the row-loop store at the edges) on a shape with whole and ragged tiles."""
    m, n, k = 2 * cfg.kwargs["BM"] + 13, 2 * cfg.kwargs["BN"] + 5, 3 * cfg.kwargs["BK"] + 7
    for layout in ("nn", "tt"):
        a, b, sa, sb = G.make_inputs(rng, m, n, k, "f32", layout)
        c = np.full((m, n), np.nan, np.float32)
        G.gemm(sa, sb, c, layout=layout, config=cfg, target="cpu")
        ref = G.reference(a, b)
        np.testing.assert_allclose(c, ref, rtol=0, atol=G.tolerance("f32", k) * max(1.0, np.abs(ref).max()))


def test_cpu_f32_micro_kernel_llvm_ir():
    """What the OpenCL CPU compiler needs to emit vector loads and broadcasts (cpu_tiles): the
    unchecked K loops hold at most the cpu emitter's fma_dot_slots accumulators and contain no bounds test
    (select, min, max; one compare: the loop's), with addresses from a broadcast tile base (the
    x86 then has vector loads and broadcasts, no gather: checked with CL_CONFIG_DUMP_ASM)."""
    import re
    P, F32 = xk.pointer, xk.language.float32
    sig = dict(a_ptr=P(F32), b_ptr=P(F32), c_ptr=P(F32), bias_ptr=P(F32), M=xk.language.int32,
               N=xk.language.int32, K=xk.language.int32, stride_ab=xk.language.int32,
               stride_bb=xk.language.int32, stride_cb=xk.language.int32, BM=64, BN=64, BK=32, GROUP_M=4,
               TRANS_A=False, TRANS_B=False, PREFETCH=0, ACC=F32, HAS_BIAS=False, ACT=None)
    c = G.gemm_kernel.compile_offline(sig, target="cpu", num_subgroups=1, opt_level=0)
    ir = c.asm["llir"]
    assert "_Z19sub_group_broadcastmj" in ir and "_Z16get_sub_group_idv" not in ir
    blocks = re.split(r"\n(?=[\w.]+:)", ir)
    loops = [bl for bl in blocks if bl.startswith("dpas.k")]
    fast = [bl for bl in loops if "select" not in bl]
    slots = c.emitter.fma_dot_slots
    assert len(fast) == len(loops) // 2 >= 64 * 64 // 16 // slots, "one unchecked loop per row group"
    for bl in fast:
        assert 0 < bl.count("phi float") <= slots
        assert bl.count("icmp") == 1 and not re.search(r"\b(select|smin|smax)\b", bl), bl
