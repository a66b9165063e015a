"""Launch overhead by argument kind, against a raw dpctl submit of the same SPIR-V, in one run.

    python benchmarks/launch.py                 # 16-element add, 3 arrays + n, launch + wait
    python benchmarks/launch.py --n 4096 --reps 7

Each row launches the same compiled kernel (``add``: ``o = x + y`` over ``n`` elements) and waits
for it; the time is the median over ``--reps`` batches of ``--iters`` launches, per launch, the rows' batches
taking turns. ``raw``
is ``queue.submit_async(kernel, [mem, mem, mem, c_int32], ...).wait()`` with the dpctl memory
objects prepared once: no Python work a launch could skip (dpctl's blocking ``submit`` is shown
too: it costs more than ``submit_async`` plus a wait). The other rows pass the same buffers as
``xk.DeviceArray``, dpnp arrays, dpctl/dpnp ``usm_ndarray``, a plain object exposing
``__sycl_usm_array_interface__``, and NumPy arrays (copied in and out, with guard checks). Issue 23's
target: every device-array kind within 1.5x of raw on an idle machine.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xekern as xk  # noqa: E402
from launch_kernels import add  # noqa: E402


class PlainUSM:
    """Any object with ``__sycl_usm_array_interface__``: ``fresh`` builds a new dict per access (as
    dpnp does: ~2 us each, the producer's cost, paid by every consumer), else returns one dict."""

    def __init__(self, base: xk.DeviceArray, fresh: bool):
        self._base, self._fresh = base, fresh
        self._iface = dict(base.__sycl_usm_array_interface__)

    @property
    def __sycl_usm_array_interface__(self):
        return dict(self._base.__sycl_usm_array_interface__) if self._fresh else self._iface


def _time_all(rows, iters: int, reps: int) -> list:
    """Median microseconds per launch of each row; the rows' batches alternate (round robin), so
    a change in the machine's speed during the run weighs on every row alike."""
    for _, fn in rows:
        for _ in range(max(20, iters // 10)):
            fn()
    runs = [[] for _ in rows]
    for _ in range(reps):
        for k, (_, fn) in enumerate(rows):
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            runs[k].append((time.perf_counter() - t0) / iters)
    return [statistics.median(r) * 1e6 for r in runs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args(argv)
    n, block = a.n, max(16, 1 << (a.n - 1).bit_length())
    rng = np.random.default_rng(0)
    hx, hy = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y, o = xk.to_device(hx), xk.to_device(hy), xk.empty(n, np.float32)
    q = x.queue
    launch = add[(1,)](x, y, o, n, BLOCK=block)
    launch.wait()
    assert np.allclose(o.numpy(), hx + hy)
    ck = launch.kernel
    kernel = ck.kernel_for(q)
    wg = ck.workgroup_size
    raw_args = [x._mem, y._mem, o._mem, ctypes.c_int32(n)]

    rows = [("raw dpctl submit_async", lambda: q.submit_async(kernel, raw_args, [wg], [wg]).wait()),
            ("  (dpctl submit)", lambda: q.submit(kernel, raw_args, [wg], [wg]).wait())]
    rows.append(("xk.DeviceArray", lambda: add[(1,)](x, y, o, n, BLOCK=block).wait()))
    try:
        import dpnp
        dx, dy, do = (dpnp.asarray(v, sycl_queue=q) for v in (hx, hy, np.zeros(n, np.float32)))
        rows.append(("dpnp array", lambda: add[(1,)](dx, dy, do, n, BLOCK=block).wait()))
        ux, uy, uo = dx.get_array(), dy.get_array(), do.get_array()
        rows.append(("usm_ndarray", lambda: add[(1,)](ux, uy, uo, n, BLOCK=block).wait()))
    except ImportError:
        print("(dpnp is not installed: its rows are skipped)")
    px, py, po = PlainUSM(x, False), PlainUSM(y, False), PlainUSM(o, False)
    rows.append(("__sycl_usm_array_interface__", lambda: add[(1,)](px, py, po, n, BLOCK=block).wait()))
    fx, fy, fo = PlainUSM(x, True), PlainUSM(y, True), PlainUSM(o, True)
    rows.append(("  (a new dict per access)", lambda: add[(1,)](fx, fy, fo, n, BLOCK=block).wait()))
    no = np.zeros(n, np.float32)
    rows.append(("NumPy (copied, guarded)", lambda: add[(1,)](hx, hy, no, n, BLOCK=block)))

    print(f"add over {n} float32, launch + wait, median of {a.reps} x {a.iters} launches "
          f"({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, device: {q.sycl_device.name})")
    print(f"{'arguments':32} {'us/launch':>10} {'x raw':>7}")
    times = _time_all(rows, a.iters, a.reps)
    for (name, _), us in zip(rows, times):
        print(f"{name:32} {us:10.1f} {us / times[0]:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
