"""``attention.py --isa``: the attention kernels compiled offline for pvc and bmg with Intel's GPU
compiler (the toolchain of ``python -m xekern toolchain install``), and what their loops hold.

Per kernel and K/V loop (the forward has two: the blocks that need no mask, then those that cross
N_CTX or the diagonal): GRF mode, spill and scratch bytes of the kernel, and per loop iteration the
instructions, DPAS, 2D block loads, SLM messages, barriers and fences, the DPAS share, and the
throughput model's predicted share of matrix-engine peak (examples/gemm/isa_report.py: a DPAS
8x8 keeps the engine 8 cycles, one instruction issues per cycle).
"""
from __future__ import annotations

import os
import sys

import xekern as xk
import xekern.language as xl
from xekern.tools.isa import IsaError, compile_isa, find_loops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention import attn_bwd_dkdv, attn_bwd_dq, attn_fwd  # noqa: E402

DPAS_CYCLES = 8
P = xk.pointer


def signature(kernel, dt, d, bm, bn, causal):
    """``kernel``'s parameters (attn_fwd, attn_bwd_dkdv or attn_bwd_dq, by name) for ``dt`` inputs."""
    f32 = xl.float32
    if kernel.__name__ == "attn_fwd":
        return dict(Q=P(dt), K=P(dt), V=P(dt), O=P(dt), M=P(f32), sm_scale=f32, N_CTX=xl.int32,
                    D=d, BM=bm, BN=bn, CAUSAL=causal)
    common = dict(Q=P(dt), K=P(dt), V=P(dt), DO=P(dt), M=P(f32), DELTA=P(f32))
    outs = dict(DK=P(dt), DV=P(dt)) if kernel.__name__ == "attn_bwd_dkdv" else dict(DQ=P(dt))
    return dict(common, **outs, sm_scale=f32, N_CTX=xl.int32, D=d, BM=bm, BN=bn, CAUSAL=causal)


def loops(kernel, target, dt, d=64, bm=128, bn=64, ns=16, causal=False, compiler=None):
    """(kernel-wide figures, [per-loop figures in program order]) of one compiled kernel."""
    c = kernel.compile_offline(signature(kernel, dt, d, bm, bn, causal), target=target, num_subgroups=ns,
                               compiler=compiler)
    r = compile_isa(c.spirv, c.name, target, grf_mode=256, compiler=compiler)
    head = dict(grf=r.grf_mode, spill=r.spilled_around, scratch=r.scratch_bytes, compiler=r.compiler_version)
    rows = []
    for lp in sorted(find_loops(r.text), key=lambda lp: lp.start):
        n = lp.counts
        if not n.dpas:
            continue
        slm = sum(v for k, v in n.sends.items() if k.endswith(".slm") and not k.startswith("fence"))
        fences = sum(v for k, v in n.sends.items() if k.startswith("fence"))
        rows.append(dict(total=n.total, dpas=n.dpas, loads=n.load_block2d, slm=slm, barriers=n.barriers,
                         fences=fences, scratch=n.scratch_reads + n.scratch_writes,
                         share=n.dpas / n.total, model=min(1.0, DPAS_CYCLES * n.dpas / n.total)))
    return head, rows


CASES = [  # (kernel, label, BM, BN, subgroups)
    (attn_fwd, "forward", 128, 64, 16),
    (attn_fwd, "forward", 128, 64, 8),
    (attn_bwd_dkdv, "bwd dK dV", 32, 128, 16),
    (attn_bwd_dkdv, "bwd dK dV", 32, 128, 8),
    (attn_bwd_dq, "bwd dQ", 128, 32, 16),
    (attn_bwd_dq, "bwd dQ", 128, 32, 8),
]


def report(compiler=None, targets=("pvc", "bmg"), dtypes=(xl.bfloat16,), d=64):
    print("attention, offline ISA (per K/V loop iteration); model: predicted share of matrix-engine peak")
    print(f"{'target':6} {'kernel':10} {'causal':>6} {'BMxBN/sg':>12} {'GRF':>4} {'spill':>6} {'scratch':>7} | "
          f"{'loop':>4} {'instr':>6} {'dpas':>5} {'2Dload':>6} {'slm':>4} {'bar':>4} {'fence':>5} "
          f"{'dpas %':>7} {'model %':>7}")
    version = None
    for target in targets:
        for dt in dtypes:
            for kernel, label, bm, bn, ns in CASES:
                for causal in (False, True):
                    try:
                        head, rows = loops(kernel, target, dt, d, bm, bn, ns, causal, compiler)
                    except IsaError as e:
                        print(f"{target:6} {label:10} {str(causal):>6}  ISA unavailable: {e}")
                        continue
                    version = head["compiler"]
                    for i, row in enumerate(rows):
                        print(f"{target:6} {label:10} {str(causal):>6} {f'{bm}x{bn}/{ns}':>12} {head['grf']:>4} "
                              f"{head['spill']:>6} {head['scratch']:>7} | {i:>4} {row['total']:>6} {row['dpas']:>5} "
                              f"{row['loads']:>6} {row['slm']:>4} {row['barriers']:>4} {row['fences']:>5} "
                              f"{row['share']:>7.1%} {row['model']:>7.0%}")
    print(f"dtype {', '.join(dt.user_name for dt in dtypes)}, head dim {d}; compiler: {version}")
