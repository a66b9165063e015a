"""Memory-bound kernels written the Triton way, against hand-written OpenCL C, on every GPU and the CPU.

    python benchmarks/memory_bound.py                       # ISA figures: pvc, bmg, dg2, f32 and bf16
    python benchmarks/memory_bound.py --cases add,softmax1024 --targets pvc --dtypes f32
    python benchmarks/memory_bound.py --cpu                 # effective GB/s on the CPU device vs NumPy
    python benchmarks/memory_bound.py --json out.json

The kernels are Triton tutorials 01 (vector add), 02 (fused softmax, rows of 1024 and 4096) and 05
(layer norm forward) as ported in examples/triton_ports, and, in the same pointer style, RMSNorm,
GELU over a 2D tile, a row sum and a 64 x 64 transpose (``memory_bound_kernels.py``).

ISA mode compiles each with xekern for the target and the current offline compiler
(``python -m xekern toolchain install``), and compiles the OpenCL C references of
``memory_bound_ref.cl`` (sub-group block reads ``_blk``, per-lane ``vload4`` ``_vec``) with the same
compiler, at the same work-group size and the same work per work-group. It prints, per work-group's
unit of work divided by its threads (elements per thread), the memory messages and the instructions
of the whole kernel (static counts: every path once), spills and scratch, and xekern's ratio to the
better reference. Targets of issue 20: messages and instructions <= 1.25x the better reference, no
spills or scratch, on pvc and bmg; dg2 reported.

CPU mode runs the same kernels on the OpenCL CPU device at realistic sizes and prints effective
GB/s (bytes a kernel must move / its time) against NumPy doing the same work in the same run.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import xekern as xk  # noqa: E402
import xekern.language as xl  # noqa: E402
import memory_bound_kernels as mk  # noqa: E402

P = xk.pointer
DTYPES = {"f32": xl.float32, "bf16": xl.bfloat16}
TARGETS = ("pvc", "bmg", "dg2")
REF = os.path.join(HERE, "memory_bound_ref.cl")


def example(name: str):
    """A module of examples/triton_ports (names start with digits)."""
    path = os.path.join(ROOT, "examples", "triton_ports", name + ".py")
    spec = importlib.util.spec_from_file_location("mb_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Case:
    """One kernel: its xekern function and compile signature (per dtype), the work-group's unit of
    work in elements, the references' names and defines, and the CPU run."""

    name: str
    kernel: Callable                       # () -> the @xk.jit function
    signature: Callable                    # (xl dtype) -> signature dict for compile_offline
    num_subgroups: int
    elements: int                          # elements one work-group's program handles (static counts)
    refs: Tuple[str, str]                  # OpenCL kernels: block-read, vload4
    defines: Dict[str, int] = field(default_factory=dict)
    cpu: Optional[Callable] = None         # (dtype name, rng) -> (xekern run, numpy run, bytes moved)


def _softmax_sig(block):
    return lambda t: dict(output_ptr=P(t), input_ptr=P(t), input_row_stride=xl.int32, output_row_stride=xl.int32,
                          n_rows=xl.int32, n_cols=xl.int32, BLOCK_SIZE=block, num_stages=1)


def cases() -> List[Case]:
    ex01, ex02, ex05 = (lambda: example("01_vector_add")), (lambda: example("02_fused_softmax")), \
        (lambda: example("05_layer_norm"))
    return [
        Case("add", lambda: ex01().add_kernel,
             lambda t: dict(x_ptr=P(t), y_ptr=P(t), output_ptr=P(t), n_elements=xl.int32, BLOCK_SIZE=1024),
             4, 1024, ("add_blk", "add_vec"), dict(ADD_BLOCK=1024), cpu=mk.cpu_add),
        Case("softmax1024", lambda: ex02().softmax_kernel, _softmax_sig(1024), 4, 1024,
             ("softmax_blk", "softmax_vec"), dict(SM_BLOCK=1024), cpu=mk.cpu_softmax(1024)),
        Case("softmax4096", lambda: ex02().softmax_kernel, _softmax_sig(4096), 16, 4096,
             ("softmax_blk", "softmax_vec"), dict(SM_BLOCK=4096), cpu=mk.cpu_softmax(4096)),
        Case("layer_norm", lambda: ex05()._layer_norm_fwd_fused,
             lambda t: dict(X=P(t), Y=P(t), W=P(t), B=P(t), Mean=P(xl.float32), Rstd=P(xl.float32),
                            stride=xl.int32, N=xl.int32, eps=xl.float32, BLOCK_SIZE=1024),
             4, 1024, ("layer_norm_blk", "layer_norm_vec"), dict(LN_BLOCK=1024), cpu=mk.cpu_layer_norm),
        Case("rmsnorm", lambda: mk.rmsnorm_kernel,
             lambda t: dict(X=P(t), Y=P(t), W=P(t), stride=xl.int32, N=xl.int32, eps=xl.float32, BLOCK_SIZE=1024),
             4, 1024, ("rmsnorm_blk", "rmsnorm_vec"), dict(RMS_BLOCK=1024), cpu=mk.cpu_rmsnorm),
        Case("gelu", lambda: mk.gelu_kernel,
             lambda t: dict(x_ptr=P(t), y_ptr=P(t), M=xl.int32, N=xl.int32, stride=xl.int32, BM=32, BN=128),
             4, 32 * 128, ("gelu_blk", "gelu_vec"), dict(GE_BM=32, GE_BN=128), cpu=mk.cpu_gelu),
        Case("row_sum", lambda: mk.row_sum_kernel,
             lambda t: dict(x_ptr=P(t), out_ptr=P(xl.float32), M=xl.int32, N=xl.int32, stride=xl.int32,
                            BM=16, BN=256),
             4, 16 * 256, ("row_sum_blk", "row_sum_vec"), dict(RS_BM=16, RS_BN=256), cpu=mk.cpu_row_sum),
        Case("transpose", lambda: mk.transpose_kernel,
             lambda t: dict(x_ptr=P(t), y_ptr=P(t), M=xl.int32, N=xl.int32, x_stride=xl.int32, y_stride=xl.int32,
                            B=64),
             4, 64 * 64, ("transpose_blk", "transpose_vec"), dict(TR=64), cpu=mk.cpu_transpose),
    ]


# ---- ISA ---------------------------------------------------------------------------------------------

def messages(counts) -> int:
    """Memory messages: loads, stores, atomics and 2D block messages (not fences, barriers, end of thread)."""
    n = counts.load_block2d + counts.store_block2d + counts.prefetch_block2d
    return n + sum(v for k, v in counts.sends.items()
                   if k.split(".")[0] in ("load", "store", "prefetch") or k.startswith("atomic"))


# a global memory message of more than one element per lane (a vector or block message): a reference's
# work, as opposed to its per-lane edge loops
_WORK_MESSAGE = re.compile(r"(load|store)\.ugm\.d(8|16|32|64)(u32)?x\d+|_block2d")


def rolled(report) -> bool:
    """Whether a loop of ``report``'s kernel holds a vector or block message, or four global messages
    or more (an edge loop moves one element per lane: a load per operand and a store): a work loop the
    compiler left rolled despite its ``#pragma unroll`` (memory_bound_ref.cl), whose body the static
    counts take once however often it runs; its figures are then lower bounds."""
    from xekern.tools.isa import find_loops, parse_isa
    instrs, _ = parse_isa(report.text)
    for lp in find_loops(report.text):
        sends = [i.comment for i in instrs[lp.start:lp.end + 1] if i.op.startswith("send")]
        if any(_WORK_MESSAGE.search(c) for c in sends) or sum(".ugm." in c for c in sends) >= 4:
            return True
    return False


def figures(report, per_thread: float, reference: bool = False) -> dict:
    """Per element: memory messages and instructions (static counts: xekern's code is straight-line and
    the references' work loops unrolled), spills, and for a reference whether a work loop stayed rolled."""
    c = report.counts
    return dict(msgs=messages(c) / per_thread, instrs=c.total / per_thread, spill=report.spilled_around,
                scratch=report.scratch_bytes, grf=report.grf_mode, rolled=reference and rolled(report))


def isa_rows(case: Case, dtype: str, target: str, compiler=None) -> dict:
    from xekern.tools.isa import IsaError, OpenCLSource, compile_isa
    from xekern.targets import get_target
    t = get_target(target)
    threads = case.num_subgroups
    per_thread = case.elements / threads
    row = dict(case=case.name, dtype=dtype, target=target)
    try:
        c = case.kernel().compile_offline(case.signature(DTYPES[dtype]), target=target,
                                          num_subgroups=case.num_subgroups, compiler=compiler)
        r = compile_isa(c.spirv, c.name, target, grf_mode=c.grf_mode, compiler=compiler)
        row["xekern"] = figures(r, per_thread)
        row["compiler"] = r.compiler_version
    except (xk.CompilationError, IsaError) as e:
        row["xekern"] = dict(error=str(e).splitlines()[0])
    src = OpenCLSource(open(REF).read())
    defines = dict(case.defines, WG=threads * t.sg_size)
    opts = "-cl-std=CL2.0 " + " ".join(f"-D{k}={v}" for k, v in defines.items()) + \
        (" -DT_BF16" if dtype == "bf16" else "")
    opts += f" -DSG={t.sg_size}"
    for ref in case.refs:
        try:
            r = compile_isa(src, ref, target, options=opts, compiler=compiler)
            row[ref] = figures(r, per_thread, reference=True)
        except IsaError as e:
            row[ref] = dict(error=str(e).splitlines()[0])
    return row


def print_isa(rows: List[dict]) -> None:
    head = (f"{'case':<12} {'dtype':<5} {'target':<6} | {'xekern msg/el':>13} {'instr/el':>8} {'spill':>5} "
            f"{'scr':>5} | {'blk msg/el':>10} {'instr/el':>8} | {'vec msg/el':>10} {'instr/el':>8} | "
            f"{'msg x':>6} {'instr x':>7}")
    print(head)
    print("-" * len(head))
    for row in rows:
        x = row["xekern"]
        blk, vec = (row[r] for r in [k for k in row if k.endswith(("_blk", "_vec"))])
        if "error" in x:
            print(f"{row['case']:<12} {row['dtype']:<5} {row['target']:<6} | xekern: {x['error'][:100]}")
            continue
        refs = [r for r in (blk, vec) if "error" not in r]
        best_m = min((r["msgs"] for r in refs), default=float("nan"))
        best_i = min((r["instrs"] for r in refs), default=float("nan"))

        def ref(r):
            mark = "*" if r.get("rolled") else " "
            return f"{r['msgs']:>10.3f} {r['instrs']:>7.2f}{mark}" if "error" not in r else f"{'error':>10} {'':>8}"
        print(f"{row['case']:<12} {row['dtype']:<5} {row['target']:<6} | {x['msgs']:>13.3f} {x['instrs']:>8.2f} "
              f"{x['spill']:>5} {x['scratch']:>5} | {ref(blk)} | {ref(vec)} | {x['msgs'] / best_m:>6.2f} "
              f"{x['instrs'] / best_i:>7.2f}")
    if any(r.get("rolled") for row in rows for r in row.values() if isinstance(r, dict)):
        print("* a reference's work loop stayed rolled (its body counted once): that figure is a lower bound")


# ---- CPU ---------------------------------------------------------------------------------------------

def cpu_rows(case: Case, dtype: str, rng) -> Optional[dict]:
    if case.cpu is None:
        return None
    run_xk, run_np, nbytes = case.cpu(dtype, rng)
    t_xk = xk.testing.do_bench(run_xk, warmup=3, rep=20)
    t_np = xk.testing.do_bench(run_np, warmup=3, rep=20, timer="wall") if run_np is not None else float("nan")
    return dict(case=case.name, dtype=dtype, xekern_ms=t_xk, numpy_ms=t_np, xekern_gbs=nbytes / t_xk / 1e6,
                numpy_gbs=nbytes / t_np / 1e6)


def print_cpu(rows: List[dict]) -> None:
    print(f"{'case':<12} {'dtype':<5} | {'xekern GB/s':>11} {'NumPy GB/s':>10} {'ratio':>6}")
    for r in rows:
        print(f"{r['case']:<12} {r['dtype']:<5} | {r['xekern_gbs']:>11.2f} {r['numpy_gbs']:>10.2f} "
              f"{r['xekern_gbs'] / r['numpy_gbs']:>6.2f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=None, help="comma list of case names (default: all)")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--compiler", default=None, choices=["current", "12504"])
    p.add_argument("--cpu", action="store_true", help="run on the CPU device against NumPy instead")
    p.add_argument("--json", default=None, help="also write the rows to this file")
    args = p.parse_args(argv)
    chosen = [c for c in cases() if args.cases is None or c.name in args.cases.split(",")]
    dtypes = args.dtypes.split(",")
    rows = []
    if args.cpu:
        rng = np.random.default_rng(0)
        for c in chosen:
            for d in dtypes:
                r = cpu_rows(c, d, rng)
                if r is not None:
                    rows.append(r)
        print_cpu(rows)
    else:
        for c in chosen:
            for d in dtypes:
                for t in args.targets.split(","):
                    rows.append(isa_rows(c, d, t, args.compiler))
        if rows and "compiler" in rows[0]:
            print(f"compiler: {rows[0]['compiler']}")
        print_isa(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
