"""The foundation's figures: compile times, warm-cache start-up, and host launch overhead.

    python benchmarks/foundation.py

Each measurement that depends on process state runs in a fresh process.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import fresh_process

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")

COLD = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {tests!r})
    t_import = time.perf_counter()
    import numpy as np
    import xekern as xk
    import xekern.language as xl
    t_import = time.perf_counter() - t_import
    from xekern.lowering import llvm as L
    from kernels import add_kernel, softmax_kernel
    {wait}
    out = {{"import_s": t_import}}
    x = np.random.rand(4096).astype(np.float32)
    o = np.empty_like(x)
    import xekern.runtime.jit as J
    orig = J.compile_kernel
    for name, launch in (
            ("vector_add", lambda: add_kernel[(4,)](x, x, o, 4096, BLOCK=1024)),
            ("softmax", lambda: softmax_kernel[(4,)](o, x, 1024, 1024, 1024, BLOCK=1024))):
        seen = {{}}
        def timed(*a, **k):
            t = time.perf_counter(); c = orig(*a, **k); seen["own"] = time.perf_counter() - t
            seen["stages"] = c.timings; return c
        J.compile_kernel = timed
        t = time.perf_counter(); launch().wait(); first = time.perf_counter() - t
        J.compile_kernel = orig
        out[name] = dict(own_ms=seen["own"] * 1e3, first_call_ms=first * 1e3,
                         stages_ms={{k: round(v * 1e3, 2) for k, v in seen["stages"].items()}})
    print(json.dumps(out))
""")

WARM = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {tests!r})
    import numpy as np
    import xekern as xk
    from kernels import add_kernel
    from xekern.runtime.cache import stats
    x = np.random.rand(4096).astype(np.float32)
    o = np.empty_like(x)
    q = xk.runtime.device.default_queue()   # device start-up is not xekern's time
    t = time.perf_counter()
    ck = add_kernel.warmup(x, x, o, 4096, BLOCK=1024)
    own = time.perf_counter() - t
    t = time.perf_counter(); add_kernel[(4,)](x, x, o, 4096, BLOCK=1024).wait(); first = time.perf_counter() - t
    print(json.dumps(dict(own_ms=own * 1e3, first_call_ms=first * 1e3, compiles=stats["compiles"],
                          disk_hits=stats["disk_hits"])))
""")

OVERHEAD = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {tests!r})
    import numpy as np
    import xekern as xk
    from kernels import add_kernel
    n = 16
    x, y, o = (xk.to_device(np.random.rand(n).astype(np.float32)) for _ in range(3))
    q = x.queue
    launch = add_kernel[(1,)]
    launch(x, y, o, n, BLOCK=16).wait()
    ck = add_kernel.last
    kernel = ck.kernel_for(q)
    import ctypes
    raw_args = [x._mem, y._mem, o._mem, ctypes.c_int32(n)]
    wg = ck.workgroup_size
    def raw():
        q.submit_async(kernel, raw_args, [wg], [wg])
    def ours():
        launch(x, y, o, n, BLOCK=16)
    res = {{}}
    for rep in range(3):
        for name, f in (("raw_dpctl_us", raw), ("xekern_us", ours)):
            N = 4000
            q.wait()
            t = time.perf_counter()
            for _ in range(N):
                f()
            q.wait()
            res.setdefault(name, []).append((time.perf_counter() - t) / N * 1e6)
    out = {{k: min(v) for k, v in res.items()}}
    out["ratio"] = out["xekern_us"] / out["raw_dpctl_us"]
    print(json.dumps(out))
""")


def main():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import xekern, xekern.lowering.codegen.core"], env=env, check=True)
    print(fresh_process.machine())
    with tempfile.TemporaryDirectory() as cache:
        ready = "import time as _t; _t.sleep(0.5)  # let the LLVM worker finish loading"
        cold = fresh_process.run(COLD.format(tests=TESTS, wait=ready), cache)
        print(f"\nimport xekern (with numpy): {cold['import_s'] * 1e3:.0f} ms")
        print("cold compile (fresh cache; LLVM worker already loaded):")
        for k in ("vector_add", "softmax"):
            v = cold[k]
            print(f"  {k:10s} xekern's own time {v['own_ms']:6.1f} ms   whole first call {v['first_call_ms']:7.1f} ms"
                  f"   stages {v['stages_ms']}")
    with tempfile.TemporaryDirectory() as cache:
        cold0 = fresh_process.run(COLD.format(tests=TESTS, wait=""), cache)
        print("cold compile right after import (the LLVM worker may still be loading):")
        for k in ("vector_add", "softmax"):
            v = cold0[k]
            print(f"  {k:10s} xekern's own time {v['own_ms']:6.1f} ms   whole first call {v['first_call_ms']:7.1f} ms")
        warm = fresh_process.run(WARM.format(tests=TESTS), cache)
        print(f"\nwarm disk cache, new process: xekern's own time {warm['own_ms']:.2f} ms (compiles={warm['compiles']}, "
              f"disk hits={warm['disk_hits']}); whole first call with the driver's build {warm['first_call_ms']:.1f} ms")
        ov = fresh_process.run(OVERHEAD.format(tests=TESTS), cache)
        print(f"\nlaunch overhead, 16 elements, 3 USM arrays: raw dpctl submit_async {ov['raw_dpctl_us']:.1f} us, "
              f"xekern {ov['xekern_us']:.1f} us  ->  {ov['ratio']:.2f}x")


if __name__ == "__main__":
    main()
