"""Cold compile time (source -> SPIR-V) of the GEMMs and the foundation kernels, per stage.

    python benchmarks/compile_time.py                 # median of 3 fresh processes per kernel
    python benchmarks/compile_time.py --reps 5 --json out.json

Each measurement is the kernel's first compile in a new Python process with an empty
``XEKERN_CACHE_DIR``. Two start states are measured:

* ``ready``: the LLVM worker (started at import) has finished loading LLVM before the compile;
* ``import``: the compile starts right after ``import xekern`` (the worker may still be loading).

"own" is xekern's own time (``compile_kernel``: frontend, passes, codegen, LLVM in the worker),
"own cpu" the CPU time of the user's process in it (the LLVM worker's is not included); the
driver's build of the SPIR-V (dpctl/OpenCL, at the first launch) is in neither. A last process
checks that a second process finds the kernel in the disk cache (``warmup`` on the CPU device).
The kernels' generated code is checked by benchmarks/spirv_hashes.py, not here.
The machine's load average is printed: figures taken while other work runs are noisy.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

import fresh_process

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (python expression building the Compiled object; `gemm_kernel`, `sig`, kernels are in scope)
KERNELS = {
    "pvc gemm bf16 256x256x32 sg32": "gemm_kernel.compile_offline(sig(xl.bfloat16, 256, 256, 32, 2), "
                                     "target='pvc', num_subgroups=32)",
    # gemm.py's pvc config: three K steps per loop iteration
    "pvc gemm bf16 256x256x32 sg32 K_UNROLL=3": "gemm_kernel.compile_offline(dict(sig(xl.bfloat16, 256, 256, 32, 2), "
                                                "K_UNROLL=3), target='pvc', num_subgroups=32)",
    "cpu gemm f32 128x128x16 sg8": "gemm_kernel.compile_offline(sig(xl.float32, 128, 128, 16, 0), "
                                   "target='cpu', num_subgroups=8)",
    "cpu gemm bf16 128x128x32 sg8": "gemm_kernel.compile_offline(sig(xl.bfloat16, 128, 128, 32, 0), "
                                    "target='cpu', num_subgroups=8)",
    "cpu vector_add": "add_kernel.compile_offline(dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), "
                      "out_ptr=P(xl.float32), n=xl.int32, BLOCK=1024), target='cpu')",
    "cpu softmax": "softmax_kernel.compile_offline(dict(out_ptr=P(xl.float32), in_ptr=P(xl.float32), "
                   "in_stride=xl.int32, out_stride=xl.int32, n_cols=xl.int32, BLOCK=1024), target='cpu')",
}

STAGES = ("frontend", "layout", "sg", "inst", "lane", "codegen", "llir_text", "llvm")

COLD = textwrap.dedent("""
    import json, sys, time
    sys.path[:0] = [{root!r} + "/tests", {root!r} + "/examples/gemm"]
    import xekern as xk
    import xekern.language as xl
    from xekern.lowering import llvm as L
    from gemm import gemm_kernel
    from kernels import add_kernel, softmax_kernel
    P = xk.pointer
    def sig(ab, BM, BN, BK, pf):
        acc = xl.float32
        return dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(acc), bias_ptr=P(acc), M=xl.int32, N=xl.int32,
                    K=xl.int32, stride_ab=xl.int32, stride_bb=xl.int32, stride_cb=xl.int32, BM=BM, BN=BN,
                    BK=BK, GROUP_M=8, TRANS_A=False, TRANS_B=False, PREFETCH=pf, ACC=acc, HAS_BIAS=False,
                    ACT=None)
    if {ready}:
        getattr(L, "wait_ready", lambda: time.sleep(1.0))()  # (older xekern: sleep)
    t, cpu = time.perf_counter(), time.process_time()
    c = {expr}
    own, cpu = time.perf_counter() - t, time.process_time() - cpu
    print(json.dumps(dict(own=own, cpu=cpu, stages=c.timings, spirv=len(c.spirv), llir_lines=c.asm["llir_unoptimized"].count("\\n"))))
""")

DISK = textwrap.dedent("""
    import json, sys, time
    sys.path[:0] = [{root!r} + "/tests"]
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    from kernels import add_kernel
    x = np.random.rand(4096).astype(np.float32)
    o = np.empty_like(x)
    xk.runtime.device.default_queue()
    t = time.perf_counter()
    add_kernel.warmup(x, x, o, 4096, BLOCK=1024)
    print(json.dumps(dict(own=time.perf_counter() - t, compiles=stats["compiles"], disk_hits=stats["disk_hits"])))
""")


def run(script: str, cache: str) -> dict:
    return fresh_process.run(script, cache, PYTHONPATH=ROOT)


def measure(expr: str, ready: bool, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            runs.append(run(COLD.format(root=ROOT, expr=expr, ready=ready), cache))
    med = {"own": statistics.median(r["own"] for r in runs) * 1e3, "cpu": statistics.median(r["cpu"] for r in runs) * 1e3}
    for s in STAGES:
        med[s] = statistics.median(r["stages"].get(s, 0.0) for r in runs) * 1e3
    med["spirv"] = runs[0]["spirv"]
    med["llir_lines"] = runs[0]["llir_lines"]
    med["all_own"] = [round(r["own"] * 1e3, 1) for r in runs]
    return med


def main(argv=None):
    args = fresh_process.arguments(__doc__, 3, "kernel names", argv)
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import xekern, xekern.lowering.codegen.core"], env=env, check=True)
    print(fresh_process.machine())
    print(f"medians of {args.reps} fresh processes, ms (stages: wall time); own = xekern's compile_kernel "
          f"(no driver build), own cpu = this process's CPU time in it")
    out = {}
    head = f"{'kernel':30} {'start':6} " + " ".join(f"{s:>9}" for s in STAGES) + f" {'own':>7} {'own cpu':>7}  llir lines  all own"
    print(head)
    for name, expr in KERNELS.items():
        if args.only and args.only not in name:
            continue
        for ready in (True, False):
            m = measure(expr, ready, args.reps)
            out[f"{name} / {'ready' if ready else 'import'}"] = m
            print(f"{name:30} {'ready' if ready else 'import':6} " + " ".join(f"{m[s]:9.1f}" for s in STAGES)
                  + f" {m['own']:7.1f} {m['cpu']:7.1f}  {m['llir_lines']:10d}  {m['all_own']}", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        first = run(DISK.format(root=ROOT), cache)
        second = run(DISK.format(root=ROOT), cache)
    print(f"disk cache, vector_add on the CPU device: first process compiles={first['compiles']} "
          f"({first['own'] * 1e3:.1f} ms), second process compiles={second['compiles']} "
          f"disk_hits={second['disk_hits']} ({second['own'] * 1e3:.2f} ms)")
    out["disk_cache"] = dict(first=first, second=second)
    fresh_process.finish(out, args.json)


if __name__ == "__main__":
    main()
