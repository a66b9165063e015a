"""xekern's flagship GEMM: C = act(A @ B + bias), with tensor descriptors, layouts and DPAS.

    python examples/gemm/gemm.py                       # a correct default GEMM and a short table
    python examples/gemm/gemm.py --dtype bf16 --layout nt --m 1000 --n 999 --k 777 --check
    python examples/gemm/gemm.py --bench               # sizes 512, 1024, 2048 against NumPy
    python examples/gemm/gemm.py --isa                 # pvc / bmg / dg2 ISA with the current IGC (offline)
    python examples/gemm/gemm.py --isa --compiler 12504 # the same with Debian 12's IGC 12504

dtypes: f32 (tf32 DPAS on GPUs, float32 on the CPU device), bf16 and f16 (float32 accumulation,
output bf16/f16/f32), int8 -> int32. Layouts: nn, nt, tn, tt — t means the operand is stored
transposed (A as K x M, B as N x K) and loaded with transposed 2D block loads (on pvc a 16-bit or
int8 A^T is loaded as stored and transposed through SLM: pass slm-transpose), except tt, which
computes C^T = B^T A^T from both operands as stored and transposes C^T once. Any M, N, K. On dg2
(no 2D block IO) nn and nt compute C^T = B^T A^T and tn and tt C = A B (the SWAP parameter, see
configs_for), so that one operand reads its rows per lane and the other goes through SLM.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional

import numpy as np

import xekern as xk
import xekern.language as xl

try:
    import ml_dtypes
except ImportError:  # bf16 needs it; the rest does not
    ml_dtypes = None


@xk.jit
def gelu(x):
    """GELU, tanh approximation."""
    return 0.5 * x * (1.0 + xl.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@xk.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_ab, stride_bb, stride_cb,
                BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr, GROUP_M: xl.constexpr,
                TRANS_A: xl.constexpr, TRANS_B: xl.constexpr, PREFETCH: xl.constexpr, ACC: xl.constexpr,
                HAS_BIAS: xl.constexpr, ACT: xl.constexpr, K_UNROLL: xl.constexpr = 1, SWAP: xl.constexpr = False):
    # grouped ordering: GROUP_M row-blocks share their B columns while they run
    pid = xl.program_id(0)
    batch = xl.program_id(1)
    num_m = xl.cdiv(M, BM)
    num_n = xl.cdiv(N, BN)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    group_m = xl.minimum(num_m - first_m, GROUP_M)
    m0 = (first_m + (pid % in_group) % group_m) * BM
    n0 = ((pid % in_group) // group_m) * BN

    a_base = a_ptr + batch * stride_ab
    b_base = b_ptr + batch * stride_bb
    if TRANS_A:   # A stored K x M
        a_desc = xl.make_tensor_descriptor(a_base, shape=(K, M), strides=(M, 1), block_shape=(BK, BM))
    else:
        a_desc = xl.make_tensor_descriptor(a_base, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    if TRANS_B:   # B stored N x K
        b_desc = xl.make_tensor_descriptor(b_base, shape=(N, K), strides=(K, 1), block_shape=(BN, BK))
    else:
        b_desc = xl.make_tensor_descriptor(b_base, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr + batch * stride_cb, shape=(M, N), strides=(N, 1),
                                       block_shape=(BM, BN))

    # C^T = B^T A^T, where B^T (N x K) is DPAS's row operand and A^T (K x M) its VNNI operand; C^T is
    # transposed once, after the loop. With 2D block IO: when A and B are both stored transposed
    # (both read as stored, no transposed load). SWAP (the configs of targets without 2D block IO):
    # when A is stored M x K (nn, nt), so that A^T's lane m reads row m of A as it lies (one per-lane
    # vector load); tn and tt keep C = A B, whose B operand reads B^T's rows (tt) or goes through
    # SLM (tn); A's DPAS operand goes through SLM in every layout (pass slm-transpose)
    SWAP = (not TRANS_A) if SWAP else (TRANS_A and TRANS_B)
    if SWAP:
        acc = xl.zeros((BN, BM), ACC)
    else:
        acc = xl.zeros((BM, BN), ACC)
    # K_UNROLL steps of BK per iteration: the loop's own instructions (counter, branch, waits) are
    # shared by more DPAS. A step past K reads zeros (descriptor loads are bounds-checked), so the
    # last iteration may run over the end.
    # prefetches cover the K_UNROLL steps of an iteration at once (one message per subgroup); block
    # shapes are powers of 2, so 3 steps prefetch 4 (the fourth is the next iteration's first)
    KP = BK * K_UNROLL
    if K_UNROLL == 3:
        KP = BK * 4
    if TRANS_A:
        a_pf = xl.make_tensor_descriptor(a_base, shape=(K, M), strides=(M, 1), block_shape=(KP, BM))
    else:
        a_pf = xl.make_tensor_descriptor(a_base, shape=(M, K), strides=(K, 1), block_shape=(BM, KP))
    if TRANS_B:
        b_pf = xl.make_tensor_descriptor(b_base, shape=(N, K), strides=(K, 1), block_shape=(BN, KP))
    else:
        b_pf = xl.make_tensor_descriptor(b_base, shape=(K, N), strides=(N, 1), block_shape=(KP, BN))
    for k_outer in range(0, K, BK * K_UNROLL):
        if PREFETCH > 0:
            kp = k_outer + PREFETCH * BK
            if TRANS_A:
                a_pf.prefetch((kp, m0))
            else:
                a_pf.prefetch((m0, kp))
            if TRANS_B:
                b_pf.prefetch((n0, kp))
            else:
                b_pf.prefetch((kp, n0))
        for u in xl.static_range(K_UNROLL):
            k0 = k_outer + u * BK
            if SWAP:
                if TRANS_B:
                    bt = b_desc.load((n0, k0))
                else:
                    bt = b_desc.load((k0, n0), transpose=True)
                if TRANS_A:
                    at = a_desc.load((k0, m0))
                else:
                    at = a_desc.load((m0, k0), transpose=True)
                acc = xl.dot(bt, at, acc)
            else:
                if TRANS_A:
                    a = a_desc.load((k0, m0), transpose=True)
                else:
                    a = a_desc.load((m0, k0))
                if TRANS_B:
                    b = b_desc.load((n0, k0), transpose=True)
                else:
                    b = b_desc.load((k0, n0))
                acc = xl.dot(a, b, acc)
    if SWAP:
        acc = xl.trans(acc)

    if HAS_BIAS:
        cols = n0 + xl.arange(0, BN)
        acc = acc + xl.load(bias_ptr + cols, mask=cols < N, other=0).to(ACC)[None, :]
    if ACT == "relu":
        acc = xl.maximum(acc, 0)
    elif ACT == "gelu":
        acc = gelu(acc)
    c_desc.store((m0, n0), acc)   # converted to C's dtype


# ---- configurations ---------------------------------------------------------------------------------

def configs_for(dtype: str, target: str, layout: Optional[str] = None):
    """Autotuning candidates (tile shapes and subgroups) per operand dtype and target family; with
    ``layout`` (nn, nt, tn, tt) only those made for it, else all (tn's transposed A goes through
    SLM, pass slm-transpose; tt reads both operands as stored, see gemm_kernel)."""
    gpu = target in ("pvc", "bmg", "dg2")
    bk = {"int8": 64, "bf16": 32, "f16": 32, "f32": 16}[dtype]
    if target == "dg2" and dtype != "f32":
        # no 2D block IO: C^T = B^T A^T where A is stored M x K (SWAP: nn, nt). A^T is DPAS's B
        # operand, whose lane m holds K values of row m of A: one per-lane 32-byte load of A as it
        # lies. B^T is its A operand: the workgroup loads B's tile with per-lane vectors of two (int8:
        # four) rows, packs them into VNNI dwords (nt: takes the dwords as they lie) and stages them
        # through SLM, where each lane reads its 8 dwords back at once (pass slm-transpose); tn and tt
        # keep C = A B, A^T through SLM, B through SLM (tn) or read per lane (tt). The K steps whose
        # tiles lie inside run without bounds tests (split-edges). First for nn and nt (16-bit): a
        # 512 x 32 tile with K 64 per iteration, each subgroup 32 x 16 of C^T (64 accumulator
        # registers), 32 dpas per iteration for one SLM exchange (4 KiB); tn and tt stage A^T through
        # SLM too, past dg2's 64 KiB at that tile. K loop with IGC 2.40, bf16 (`--isa`): nn 126
        # instructions for 32 dpas (25.4%, no spill), nt 122 (26.2%, no spill); at 256 x 64
        # with K 32: nn 77 for 16 (20.8%), nt 73 (21.9%), tt 108 (14.8%), tn 146 (11.0%). int8 takes
        # the 512 x 32 tile (K 128) for nt only: 117 for 32 (27.4%, no spill); its nn spills 64 bytes there
        wide = [xk.Config(dict(BM=512, BN=32, BK=2 * bk, GROUP_M=8, PREFETCH=0, SWAP=True), num_subgroups=32)]
        wide_for = ("nt",) if dtype == "int8" else ("nn", "nt")
        return (wide if layout is None or layout in wide_for else []) + [
            xk.Config(dict(BM=256, BN=64, BK=bk, GROUP_M=8, PREFETCH=0, SWAP=True), num_subgroups=32),
            xk.Config(dict(BM=128, BN=64, BK=bk, GROUP_M=8, PREFETCH=0, SWAP=True), num_subgroups=16)]
    if target == "dg2":
        # f32: no tf32 DPAS on dg2; gathered element by element (these tiles compile without spills)
        return [xk.Config(dict(BM=64, BN=32, BK=16, GROUP_M=8, PREFETCH=0), num_subgroups=8),
                xk.Config(dict(BM=32, BN=32, BK=16, GROUP_M=8, PREFETCH=0), num_subgroups=4)]
    if gpu:
        # three K steps per loop iteration (K_UNROLL), sharing the loop's counter, branch and waits: with
        # IGC 2.40 the bf16 K loop is then 73.8% dpas on pvc for nn and tt, 64.9% for nt, 60.8% for tn,
        # whose three SLM exchanges share one fenced barrier plus one without a fence (`--isa`; two
        # steps: 71.1, 63.4, 57.7). tf32 keeps two: with three its tn spills.
        ku = 2 if dtype == "f32" else 3
        return [xk.Config(dict(BM=256, BN=256, BK=bk, GROUP_M=8, PREFETCH=2, K_UNROLL=ku), num_subgroups=32),
                xk.Config(dict(BM=128, BN=256, BK=bk, GROUP_M=8, PREFETCH=2, K_UNROLL=ku), num_subgroups=16)]
    if dtype == "f32" and target == "cpu":
        # the CPU's f32 dot is an FMA micro-kernel per lane (the cpu emitter's fma_dot): one subgroup per
        # workgroup; its K loops run over groups of rows whose accumulators fit the registers, so a
        # larger tile only reuses more of what it loads (64 x 64: A and B tiles stay in L1)
        return [xk.Config(dict(BM=64, BN=64, BK=32, GROUP_M=4, PREFETCH=0), num_subgroups=1),
                xk.Config(dict(BM=32, BN=64, BK=32, GROUP_M=8, PREFETCH=0), num_subgroups=1),
                xk.Config(dict(BM=16, BN=32, BK=32, GROUP_M=8, PREFETCH=0), num_subgroups=1)]
    return [xk.Config(dict(BM=128, BN=128, BK=bk, GROUP_M=4, PREFETCH=0), num_subgroups=8),
            xk.Config(dict(BM=64, BN=128, BK=bk, GROUP_M=4, PREFETCH=0), num_subgroups=8),
            xk.Config(dict(BM=128, BN=64, BK=bk, GROUP_M=4, PREFETCH=0), num_subgroups=8),
            xk.Config(dict(BM=64, BN=64, BK=bk, GROUP_M=4, PREFETCH=0), num_subgroups=4)]


_TUNERS = {}


def tuned_kernel(dtype: str, target: str, layout: str = "nn"):
    """gemm_kernel autotuned over ``configs_for`` the layout; the best config is kept per shape and
    layout (the autotune key)."""
    key = (dtype, target, layout)
    if key not in _TUNERS:
        _TUNERS[key] = xk.autotune(configs=configs_for(dtype, target, layout),
                                   key=["M", "N", "K", "TRANS_A", "TRANS_B"],
                                   verbose=bool(os.environ.get("XEKERN_AUTOTUNE_VERBOSE", "1") != "0"))(gemm_kernel)
    return _TUNERS[key]


DTYPES = {  # name -> (operand numpy dtype, accumulator xl dtype, default output numpy dtype)
    "f32": (np.float32, xl.float32, np.float32),
    "bf16": ("bfloat16", xl.float32, np.float32),
    "f16": (np.float16, xl.float32, np.float32),
    "int8": (np.int8, xl.int32, np.int32),
}


def np_dtype(name):
    if name == "bfloat16":
        if ml_dtypes is None:
            raise SystemExit("bf16 needs ml_dtypes: pip install ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def gemm(a, b, c, *, layout="nn", bias=None, act=None, config=None, target=None, queue=None, emitter=None):
    """C = act(A @ B + bias) for device (or NumPy) arrays. ``layout`` says how A and B are stored:
    'n' as given (A: M x K, B: K x N), 't' transposed (A: K x M, B: N x K). Leading batch dims allowed.
    ``emitter``: the launch's emitter (an ``xekern.lowering.emitters.Emitter``; None: the target's)."""
    ta, tb = layout[0] == "t", layout[1] == "t"
    batch = a.shape[0] if len(a.shape) == 3 else 1
    M, K = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    N = b.shape[-2] if tb else b.shape[-1]
    kind = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int8): "int8"}.get(
        np.dtype(a.dtype), "bf16")
    acc = DTYPES[kind][1]
    stride = lambda x, r, s: (r * s if len(x.shape) == 3 else 0)  # noqa: E731
    args = (a, b, c, bias if bias is not None else c, M, N, K, stride(a, M, K), stride(b, K, N), stride(c, M, N))
    consts = dict(TRANS_A=ta, TRANS_B=tb, ACC=acc, HAS_BIAS=bias is not None, ACT=act)
    opts = {k: v for k, v in (("target", target), ("queue", queue), ("emitter", emitter)) if v is not None}

    def grid(meta):
        return (xk.cdiv(M, meta["BM"]) * xk.cdiv(N, meta["BN"]), batch)
    if config is not None:
        return gemm_kernel[grid](*args, **consts, **config.launch_kwargs(), **opts)
    t = target or xk.target_for(queue.sycl_device if queue is not None else None).name
    return tuned_kernel(kind, t, layout)[grid](*args, **consts, **opts)


def make_inputs(rng, m, n, k, dtype, layout, batch=0):
    opd = np_dtype(DTYPES[dtype][0])
    lead = (batch,) if batch else ()
    if dtype == "int8":
        a = rng.integers(-64, 64, lead + (m, k)).astype(opd)
        b = rng.integers(-64, 64, lead + (k, n)).astype(opd)
    else:
        a = rng.standard_normal(lead + (m, k)).astype(opd)
        b = rng.standard_normal(lead + (k, n)).astype(opd)
    sa = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if layout[0] == "t" else a
    sb = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if layout[1] == "t" else b
    return a, b, sa, sb


def reference(a, b, bias=None, act=None):
    r = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if bias is not None:
        r = r + bias.astype(np.float64)
    if act == "relu":
        r = np.maximum(r, 0)
    elif act == "gelu":
        r = 0.5 * r * (1 + np.tanh(0.7978845608028654 * (r + 0.044715 * r ** 3)))
    return r


def tolerance(dtype: str, k: int) -> float:
    return {"f32": 1e-4, "bf16": 1e-2, "f16": 2e-3, "int8": 0.0}[dtype] * (1 if dtype == "int8" else math.sqrt(k))


def run_once(args, rng, m, n, k, dtype, layout, check=True):
    a, b, sa, sb = make_inputs(rng, m, n, k, dtype, layout, args.batch)
    q = xk.runtime.device.queue_for(args.device)
    da, db = xk.to_device(sa, queue=q), xk.to_device(sb, queue=q)
    out_dt = np_dtype(DTYPES[dtype][2])
    dc = xk.empty(((args.batch,) if args.batch else ()) + (m, n), out_dt, queue=q)
    dc.fill_bytes(0xFF)  # poisoned: unwritten elements read as NaN / -1
    config = configs_for(dtype, args.target or xk.target_for(q.sycl_device).name, layout)[0] if args.no_tune else None
    run = lambda: gemm(da, db, dc, layout=layout, target=args.target, config=config)  # noqa: E731
    run().wait()
    ms = xk.testing.do_bench(run, warmup=1, rep=args.rep)
    err = float("nan")
    if check:
        ref = reference(a, b)
        got = dc.numpy().astype(np.float64)
        err = float(np.abs(got - ref).max() / max(1.0, np.abs(ref).max()))
    return ms, err, q.sycl_device.name


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, default=1000)
    p.add_argument("--n", type=int, default=999)
    p.add_argument("--k", type=int, default=511)
    p.add_argument("--batch", type=int, default=0, help="batched GEMM over this many matrices")
    p.add_argument("--dtype", default=None, choices=sorted(DTYPES), help="operand dtype (default f32; with "
                   "--check: every dtype unless given)")
    p.add_argument("--layout", default=None, choices=["nn", "nt", "tn", "tt"], help="storage of A and B (default "
                   "nn; with --check: every layout unless given)")
    p.add_argument("--device", default=None, help="dpctl filter string, e.g. opencl:cpu")
    p.add_argument("--target", default=None, help="xekern target (default: the device's)")
    p.add_argument("--check", action="store_true", help="check every dtype x layout (or the given ones) on "
                   "ragged sizes")
    p.add_argument("--bench", action="store_true", help="f32 sweep over 512, 1024, 2048 against NumPy")
    p.add_argument("--isa", action="store_true", help="compile for pvc, bmg and dg2 offline and report the ISA "
                   "(the toolchain of `python -m xekern toolchain install`)")
    p.add_argument("--compiler", default=None, choices=["current", "12504"], help="with --isa: the offline "
                   "compiler (default: current, IGC 2.x)")
    p.add_argument("--rep", type=int, default=5)
    p.add_argument("--no-tune", action="store_true", help="use the first config instead of autotuning "
                                                            "(implied by --check)")
    p.add_argument("--png", default=None, help="with --bench: write a plot (needs matplotlib)")
    args = p.parse_args(argv)
    rng = np.random.default_rng()
    if args.isa:
        from isa_report import report
        report(args.compiler)
        return 0
    if args.bench:
        from bench import bench
        return bench(args)
    cases = [(args.dtype or "f32", args.layout or "nn")]
    if args.check:
        cases = [(d, l) for d in ([args.dtype] if args.dtype else ("f32", "bf16", "f16", "int8"))
                 for l in ([args.layout] if args.layout else ("nn", "nt", "tn", "tt"))]
        args.no_tune = True
    print(f"{'shape':>18} {'dtype':>5} {'layout':>6} {'time ms':>9} {'GFLOP/s':>9} "
          f"{'max rel err':>12}  device")
    bad = []
    for dtype, layout in cases:
        ms, err, devname = run_once(args, rng, args.m, args.n, args.k, dtype, layout)
        flops = 2.0 * args.m * args.n * args.k * max(1, args.batch)
        shape = (f"{args.batch}x" if args.batch else "") + f"{args.m}x{args.n}x{args.k}"
        print(f"{shape:>18} {dtype:>5} {layout:>6} {ms:9.3f} {flops / ms / 1e6:9.1f} {err:12.2e}  {devname}",
              flush=True)
        if not err <= tolerance(dtype, args.k):
            bad.append((dtype, layout, err))
    if bad:
        raise SystemExit(f"wrong results: {bad}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
