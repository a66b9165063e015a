"""``gemm.py --bench``: f32 GEMM on the default device against NumPy (and dpnp when installed),
over square sizes; a table, and with ``--png`` (matplotlib) a plot."""
from __future__ import annotations

import platform
import time

import numpy as np

import xekern as xk

from gemm import gemm


def bench(args, sizes=(512, 1024, 2048)):
    rng = np.random.default_rng(0)
    q = xk.runtime.device.queue_for(args.device)
    data = {}

    def inputs(n):
        if n not in data:
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            data[n] = (a, b, xk.to_device(a, queue=q), xk.to_device(b, queue=q), xk.empty((n, n), np.float32, queue=q))
        return data[n]

    def xekern_ms(n):
        a, b, da, db, dc = inputs(n)
        gemm(da, db, dc, target=args.target).wait()  # tune + compile
        return xk.testing.do_bench(lambda: gemm(da, db, dc, target=args.target), warmup=2, rep=args.rep)

    def numpy_ms(n):
        a, b = inputs(n)[:2]
        a @ b
        ts = []
        for _ in range(args.rep):
            t = time.perf_counter()
            a @ b
            ts.append((time.perf_counter() - t) * 1e3)
        return float(np.median(ts))

    lines = {"xekern": xekern_ms, "numpy": numpy_ms}
    try:
        import dpnp

        def dpnp_ms(n):
            a, b = inputs(n)[:2]
            da, db = dpnp.asarray(a), dpnp.asarray(b)
            dpnp.matmul(da, db)
            # dpnp returns before the device finishes: wait for its queue inside the timed call
            return xk.testing.do_bench(lambda: dpnp.matmul(da, db).sycl_queue.wait(), warmup=1, rep=args.rep,
                                       timer="wall")
        lines["dpnp"] = dpnp_ms
    except ImportError:
        pass
    print(f"device: {q.sycl_device.name}; {platform.node()}, {time.strftime('%Y-%m-%d')}")
    rows = xk.testing.sweep("f32 GEMM, square", sizes, lines, x_name="n", unit="GFLOP/s",
                            metric=lambda n, ms: 2.0 * n ** 3 / ms / 1e6, png=args.png)
    for r in rows:
        if r.get("numpy"):
            print(f"  n={r['n']}: xekern / numpy = {r['xekern'] / r['numpy']:.2f}")
    return rows
