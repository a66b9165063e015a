"""The long-run benchmark (benchmarks/long_run.py) in miniature, so it cannot rot; the full run is
``python benchmarks/long_run.py`` (10,000 launches, 1,000 compilations)."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_long_run_benchmark_smoke():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "long_run.py"), "--launches", "200",
                        "--compiles", "20", "--json",
                        "--kernel-cache-size", "8", "--calibrate", "4"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    run = out["compiles_run"]
    # the in-memory cache is bounded (XEKERN_KERNEL_CACHE_SIZE=8): of the calibration's C=0 and the 20
    # specializations, the 13 least recently used were dropped
    assert run["compiled"] == 20 and run["memory_cache"] == 8 and run["evictions"] == 13, run
    assert run["driver_builds"] == 20
    # each build handed back the references dpctl 0.22 leaks (xekern/runtime/driver_refs.py)
    assert run["driver_refs_returned"] == 20, run
    assert run["cache_entries"] == 22 and run["cache_bytes"] > 0  # 20 specializations, C=0, the add kernel
    assert out["device_launches"]["rss_after_kib"] > 0
    # launches on device arrays allocate nothing that stays: allow 16 MiB of allocator noise
    assert out["device_launches"]["growth_kib"] < 16 * 1024, out["device_launches"]
