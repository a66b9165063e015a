"""Long runs: does a process that launches and compiles for hours keep its memory?

    python benchmarks/long_run.py                      # 10,000 launches, 1,000 compilations
    python benchmarks/long_run.py --launches 200 --compiles 20 --json   # the smoke run of the tests

Three phases, each printing resident memory (VmRSS from /proc/self/status) before and after:

1. ``--launches`` launches of a small kernel on device arrays (the fast path),
2. ``--launches // 10`` launches with NumPy arguments (a device copy in and out per launch),
3. ``--compiles`` compilations of distinct specializations (a constexpr varied 1..N), each
   launched once and checked, with ``XEKERN_CACHE_DIR`` in a fresh temporary directory; then the
   disk cache's entry count and size, and the LLVM worker's own RSS.

Growth per launch or per compile is what to watch: a leak shows as a steady slope, while the
first phase's warm-up allocations do not recur.

Phase 3 runs with ``XEKERN_KERNEL_CACHE_SIZE`` (default here: 64), so xekern keeps a bounded
number of specializations, each with its driver program: the RSS grows while that cache fills,
then should stay flat. The report gives the growth per compile after the cache is full
(``per_compile_after_cache_full_kib``), which is what a leak would show.

dpctl 0.22's OpenCL interop leaks a ``cl_program`` and a ``cl_kernel`` per build (2-3 MiB on the
CPU runtime); xekern hands those references back (``xekern/runtime/driver_refs.py``). Before
phase 3 the memory one build keeps after it is dropped is measured in this process
(``--calibrate`` probe programs built and dropped), and the report subtracts ``driver builds x that
cost`` from the RSS growth. Run with ``XEKERN_DRIVER_REFS=0`` to see the leak.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time


def rss_kib(pid="self") -> int:
    """Resident set size in KiB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--compiles", type=int, default=1_000)
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end")
    ap.add_argument("--calibrate", type=int, default=20, help="probe programs built to measure the driver's "
                    "retained memory per program")
    ap.add_argument("--kernel-cache-size", type=int, default=64, help="XEKERN_KERNEL_CACHE_SIZE for phase 3")
    args = ap.parse_args(argv)

    cache_dir = tempfile.mkdtemp(prefix="xekern-long-run-")
    os.environ["XEKERN_CACHE_DIR"] = cache_dir  # read at each compile, so setting it here is enough
    os.environ["XEKERN_KERNEL_CACHE_SIZE"] = str(args.kernel_cache_size)

    import numpy as np
    import xekern as xk
    from kernels_long_run import add_kernel, scale_kernel
    from xekern.lowering import llvm as llvm_stage
    from xekern.runtime.cache import disk_cache, stats

    say = (lambda *a: None) if args.json else print
    out = {"machine": f"{platform.node()} {os.cpu_count()} cores, {platform.platform()}",
           "date": time.strftime("%Y-%m-%d"), "launches": args.launches, "compiles": args.compiles}

    n = 4096
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dx, dy = xk.to_device(x), xk.to_device(x)
    dout = xk.empty(n, np.float32, queue=dx.queue)
    grid = (xk.cdiv(n, 1024),)
    for _ in range(100):  # warm-up: compile, build for the queue, fill the launch caches
        add_kernel[grid](dx, dy, dout, n, BLOCK=1024)
    xk.synchronize()

    # 1. device-array launches
    r0, t0 = rss_kib(), time.perf_counter()
    for _ in range(args.launches):
        add_kernel[grid](dx, dy, dout, n, BLOCK=1024)
    xk.synchronize()
    dt, r1 = time.perf_counter() - t0, rss_kib()
    assert np.array_equal(dout.numpy(), 2 * x)
    out["device_launches"] = dict(rss_before_kib=r0, rss_after_kib=r1, growth_kib=r1 - r0,
                                  per_launch_bytes=round((r1 - r0) * 1024 / max(1, args.launches), 1),
                                  us_per_launch=round(dt * 1e6 / max(1, args.launches), 1))
    say(f"{args.launches} launches on device arrays: RSS {r0} -> {r1} KiB ({r1 - r0:+d} KiB), "
        f"{out['device_launches']['us_per_launch']} us per launch")

    # 2. NumPy-argument launches (allocate, copy in, launch, wait, copy back)
    o = np.empty_like(x)
    m = max(1, args.launches // 10)
    r0, t0 = rss_kib(), time.perf_counter()
    for _ in range(m):
        add_kernel[grid](x, x, o, n, BLOCK=1024)
    dt, r1 = time.perf_counter() - t0, rss_kib()
    assert np.array_equal(o, 2 * x)
    out["numpy_launches"] = dict(count=m, rss_before_kib=r0, rss_after_kib=r1, growth_kib=r1 - r0,
                                 per_launch_bytes=round((r1 - r0) * 1024 / m, 1),
                                 us_per_launch=round(dt * 1e6 / m, 1))
    say(f"{m} launches with NumPy arguments: RSS {r0} -> {r1} KiB ({r1 - r0:+d} KiB), "
        f"{out['numpy_launches']['us_per_launch']} us per launch")

    # the driver's retained memory per program built (and dropped) through dpctl, measured here on
    # the SPIR-V of one of phase 3's own specializations (the cost grows with the kernel's code)
    import gc
    import driver_program_memory as dpm
    from xekern.runtime.device import build_kernel
    probe = scale_kernel.warmup(dx, dout, n, C=0, BLOCK=1024)
    gc.collect()
    dpm.malloc_trim()
    c0 = rss_kib()
    for i in range(args.calibrate):
        k = build_kernel(dx.queue, probe.spirv, probe.name)
        del k
    gc.collect()
    dpm.malloc_trim()
    per_build_kib = (rss_kib() - c0) / max(1, args.calibrate)
    out["driver_retained_per_program_kib"] = round(per_build_kib, 1)
    say(f"driver memory kept per program built and dropped through dpctl: {per_build_kib:.0f} KiB "
        f"({args.calibrate} builds of one specialization)")

    # 3. distinct specializations, each compiled, cached on disk, built and launched once
    from xekern.runtime import driver_refs
    compiles0, builds0, evict0 = stats["compiles"], stats["driver_builds"], stats["evictions"]
    returned0 = driver_refs.stats["returned"]
    r0, t0 = rss_kib(), time.perf_counter()
    checkpoints = []
    for c in range(1, args.compiles + 1):
        scale_kernel[grid](dx, dout, n, C=c, BLOCK=1024)
        if c % max(1, args.compiles // 10) == 0:
            checkpoints.append((c, rss_kib()))
            say(f"  {c} compilations: RSS {checkpoints[-1][1]} KiB")
    xk.synchronize()
    gc.collect()
    dpm.malloc_trim()
    dt, r1 = time.perf_counter() - t0, rss_kib()
    assert np.array_equal(dout.numpy(), np.float32(args.compiles) * x)
    builds = stats["driver_builds"] - builds0
    full = next(((c, r) for c, r in checkpoints if c >= args.kernel_cache_size), None)  # the cache is full
    after = (r1 - full[1], round((r1 - full[1]) / max(1, args.compiles - full[0]), 1)) if full and \
        full[0] < args.compiles else (None, None)
    driver_kib = round(builds * per_build_kib)
    info = disk_cache().info()
    worker = getattr(llvm_stage._worker, "proc", None)
    out["compiles_run"] = dict(rss_before_kib=r0, rss_after_kib=r1, growth_kib=r1 - r0,
                               per_compile_kib=round((r1 - r0) / max(1, args.compiles), 1),
                               growth_after_cache_full_kib=after[0], per_compile_after_cache_full_kib=after[1],
                               s_per_compile=round(dt / max(1, args.compiles), 3),
                               compiled=stats["compiles"] - compiles0, memory_cache=len(scale_kernel.cache),
                               evictions=stats["evictions"] - evict0, driver_builds=builds,
                               driver_retained_kib=driver_kib, growth_minus_driver_kib=r1 - r0 - driver_kib,
                               driver_refs_returned=driver_refs.stats["returned"] - returned0,
                               cache_entries=info["entries"], cache_bytes=info["bytes"], cache_dir=cache_dir,
                               llvm_worker_rss_kib=rss_kib(worker.pid) if worker is not None else None,
                               checkpoints=checkpoints)
    say(f"{args.compiles} compilations: RSS {r0} -> {r1} KiB ({r1 - r0:+d} KiB, "
        f"{out['compiles_run']['per_compile_kib']} KiB each), {out['compiles_run']['s_per_compile']} s each; "
        f"disk cache {info['entries']} entries, {info['bytes'] / 1024:.0f} KiB in {cache_dir}; "
        f"LLVM worker RSS {out['compiles_run']['llvm_worker_rss_kib']} KiB")
    if full and after[0] is not None:
        say(f"  after the in-memory cache filled ({full[0]} compilations, RSS {full[1]} KiB): {after[0]:+d} KiB "
            f"over {args.compiles - full[0]} compilations, {after[1]} KiB each")
    say(f"  of which the driver keeps {builds} programs x {per_build_kib:.0f} KiB = {driver_kib} KiB; growth "
        f"without them {r1 - r0 - driver_kib:+d} KiB, mostly the {len(scale_kernel.cache)} specializations in memory "
        f"with their driver programs; "
        f"{out['compiles_run']['evictions']} evicted")
    if args.json:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
