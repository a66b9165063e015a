"""``gemm.py --isa``: the flagship GEMM compiled offline for pvc, bmg and dg2, and what IGC made of it.

The compiler is the current one of ``python -m xekern toolchain`` (IGC 2.x, what users run) unless
``--compiler 12504`` asks for Debian 12's; the code is emitted for that compiler's driver (the
emitter, ``lowering/emitters.py``, is printed). For each target x dtype x layout: GRF mode, spills
and scratch, the K-loop's instruction counts (dpas, 2D block loads, prefetches, SLM messages and
barriers of A^T's cooperative transpose, other), its dpas share, and a throughput model:

  * one ``dpas.8x8`` keeps a systolic array busy for 8 cycles (8 repeats x 8 deep; SIMD16 on pvc,
    SIMD8 on dg2), and a vector engine issues about one instruction per cycle from its threads;
  * so a K-iteration takes at least ``max(8 * dpas, instructions)`` cycles of one engine, and the
    predicted share of the matrix engine's peak is ``8 * dpas / max(8 * dpas, instructions)``;
  * it ignores memory bandwidth and latency (the prefetch distance is there to hide the latter),
    so it is an upper bound for a compute-bound shape.
"""
from __future__ import annotations

import os
import re
import sys
from collections import Counter

import xekern as xk
import xekern.language as xl
from xekern.tools.isa import IsaError, compile_isa, k_loop, loop_counts, parse_isa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm import configs_for, gemm_kernel  # noqa: E402

P = xk.pointer
DPAS_CYCLES = 8
def dg2_config(ab, layout: str) -> dict:
    """gemm.py's first dg2 config for operand dtype ``ab`` and ``layout`` (its parameters and
    num_subgroups)."""
    key = {"bfloat16": "bf16", "float16": "f16", "int8": "int8", "float32": "f32"}[ab.user_name]
    c = configs_for(key, "dg2", layout)[0]
    return dict(c.kwargs, num_subgroups=c.num_subgroups)


def pvc_config(ab, name: str) -> int:
    """Parameter ``name`` (BK, K_UNROLL) of gemm.py's first pvc config for operand dtype ``ab``
    (float32: tf32; the same for every layout)."""
    key = {"bfloat16": "bf16", "float16": "f16", "int8": "int8", "float32": "f32"}[ab.user_name]
    return configs_for(key, "pvc")[0].kwargs[name]


def signature(ab, acc, layout, BM, BN, BK, prefetch, k_unroll=1, swap=False):
    return dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(acc), bias_ptr=P(acc), M=xl.int32, N=xl.int32, K=xl.int32,
                stride_ab=xl.int32, stride_bb=xl.int32, stride_cb=xl.int32, BM=BM, BN=BN, BK=BK, GROUP_M=8,
                TRANS_A=layout[0] == "t", TRANS_B=layout[1] == "t", PREFETCH=prefetch, ACC=acc, HAS_BIAS=False,
                ACT=None, K_UNROLL=k_unroll, SWAP=swap)


def one(target, ab, layout, BM, BN, BK, ns, grf, k_unroll=1, compiler=None, swap=False):
    """One GEMM's K-loop figures; ``k_unroll`` K steps of BK per loop iteration (gemm.py's pvc
    configs take 3, tf32 2); ``swap``: C^T = B^T A^T (gemm.py's dg2 configs). ``compiler``: the
    offline compiler (``current``, the default, or ``12504``), which the code is emitted for and
    compiled by. The launch's specialization is the one of sizes that are multiples of 16 and
    16-byte aligned pointers (``compile_offline``'s default)."""
    acc = xl.int32 if ab.is_int else xl.float32
    c = gemm_kernel.compile_offline(signature(ab, acc, layout, BM, BN, BK, 2, k_unroll, swap), target=target,
                                    num_subgroups=ns, compiler=compiler)
    r = compile_isa(c.spirv, c.name, target, grf_mode=grf, compiler=compiler)
    lc = loop_counts(r)
    row = dict(target=target, dtype=ab.user_name, layout=layout, grf=r.grf_mode, spill=r.spilled_around,
               compiler=r.compiler_version, emitter=c.emitter.name,
               scratch=r.scratch_bytes, total=lc.total if lc else 0, dpas=lc.dpas if lc else 0,
               loads=lc.load_block2d if lc else 0, prefetch=lc.prefetch_block2d if lc else 0,
               density=lc.dpas_share if lc else 0.0, stores=r.counts.store_block2d,
               # C^T's rows (tt): one untyped store of up to 8 dwords per lane and run of columns
               row_stores=len(re.findall(r"store\.ugm\.d32x[248]\.", r.text)))
    # SLM messages (load/store/fence.slm: the cooperative transpose of tn's A^T) and barriers apart from
    # the other sends, which are global memory messages that are not 2D block IO (gathers, fences)
    # the K loop's messages by LSC description ("load.ugm.d32x8.a32"): gathers are d16u32 / d8u32
    loop = k_loop(r)
    instrs = parse_isa(r.text)[0][loop.start:loop.end + 1] if loop is not None else []
    row["messages"] = dict(Counter(i.comment.split(";")[-1].strip().split(".ca")[0].split(".wb")[0].split("[")[0]
                                   for i in instrs if i.base == "send"))
    sends = lc.sends if lc else {}
    row["slm"] = sum(n for k, n in sends.items() if k.endswith(".slm"))
    row["barriers"] = lc.barriers if lc else 0
    row["other_sends"] = sum(n for k, n in sends.items() if not k.endswith(".slm") and k != "barrier.signal")
    row["other"] = (row["total"] - row["dpas"] - row["loads"] - row["prefetch"] - row["other_sends"] - row["slm"]
                    - row["barriers"] - sends.get("barrier.signal", 0))
    xmx = DPAS_CYCLES * row["dpas"]
    row["model"] = xmx / max(xmx, row["total"]) if row["total"] else 0.0
    return row


def report(compiler=None, targets=("pvc", "bmg", "dg2")):
    """Print one row per target x dtype x layout (dg2 at its own configs) and return the rows."""
    from xekern.tools.isa import ocloc_version
    from xekern.tools import toolchain
    rows = []
    plan = [(t, d, l, 256, 256, pvc_config(d, "BK"), 32, 256, pvc_config(d, "K_UNROLL"))
            for t in targets if t != "dg2"
            for d in (xl.bfloat16, xl.float16, xl.int8, xl.float32) for l in ("nn", "nt", "tn", "tt")]
    if "dg2" in targets:
        for d in (xl.bfloat16, xl.int8):
            for lay in ("nn", "nt", "tn", "tt"):
                g = dg2_config(d, lay)
                plan.append(("dg2", d, lay, g["BM"], g["BN"], g["BK"], g["num_subgroups"], 128, 1))
    try:
        inst = toolchain.get(compiler)
        version = f"{inst.name} compiler: {inst.label} (ocloc {ocloc_version(compiler)})"
    except toolchain.ToolchainError as e:
        print(f"no offline compiler: {e}")
        return rows
    print(f"flagship GEMM, offline, {version}")
    print("pvc/bmg: 256x256 tile (BK 32, int8 64, float32 as tf32 16), 32 subgroups, 256 GRF, "
          f"K steps per K-loop iteration {pvc_config(xl.bfloat16, 'K_UNROLL')} (tf32 "
          f"{pvc_config(xl.float32, 'K_UNROLL')}); dg2 at gemm.py's first dg2 config of each layout, "
          "nn and nt C^T = B^T A^T (BM, BN, BK, subgroups): " + ", ".join(
              f"{d.user_name} {lay} {tuple(dg2_config(d, lay)[k] for k in ('BM', 'BN', 'BK', 'num_subgroups'))}"
              for d in (xl.bfloat16, xl.int8) for lay in ("nn", "tn")))
    print(f"{'target':6} {'dtype':9} {'lay':3} {'emitter':12} {'GRF':>4} {'spill':>5} {'scratch':>7} | K-loop: "
          f"{'total':>5} {'dpas':>4} {'2Dload':>6} {'prefetch':>8} {'slm':>4} {'bar':>3} {'other':>5} {'dpas %':>7} "
          f"{'model %':>8}")
    for target, ab, layout, BM, BN, BK, ns, grf, unroll in plan:
        try:
            r = one(target, ab, layout, BM, BN, BK, ns, grf, unroll, compiler=compiler,
                    swap=target == "dg2" and dg2_config(ab, layout).get("SWAP", False))
        except (IsaError, xk.CompilationError, xk.LaunchError) as e:
            print(f"{target:6} {ab.user_name:9} {layout:3}  failed: {str(e).splitlines()[-1]}")
            continue
        rows.append(r)
        print(f"{r['target']:6} {r['dtype']:9} {r['layout']:3} {r['emitter']:12} {r['grf']:>4} {r['spill']:>5} "
              f"{r['scratch']:>7} |         {r['total']:>5} {r['dpas']:>4} {r['loads']:>6} {r['prefetch']:>8} "
              f"{r['slm']:>4} {r['barriers']:>3} {r['other']:>5} {100 * r['density']:6.1f}% "
              f"{100 * r['model']:7.0f}%", flush=True)
    print("model: predicted share of matrix-engine peak = 8*dpas / max(8*dpas, K-loop instructions) "
          "(see isa_report.py)")
    return rows


if __name__ == "__main__":
    report(sys.argv[1] if len(sys.argv) > 1 else None)
