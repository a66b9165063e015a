"""``do_bench``: a function's time in milliseconds, the device's own (SYCL event profiling) where it
can be had. The autotuner measures its configs with it; users reach it as ``xk.testing.do_bench``.

Example::

    ms = xk.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
    lo, med, hi = xk.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, List, Optional, Sequence

from . import device as dev


def _event_ms(result) -> Optional[float]:
    """Device time of what ``fn`` returned (a Launch, a SYCL event, or a list of them), if profiled."""
    events = result if isinstance(result, (list, tuple)) else [result]
    total = 0.0
    for r in events:
        ev = getattr(r, "event", r)
        if ev is None or not hasattr(ev, "profiling_info_end"):
            return None
        ev.wait()
        try:
            total += (ev.profiling_info_end - ev.profiling_info_start) * 1e-6
        except Exception:
            return None
    return total


def do_bench(fn: Callable, warmup: int = 5, rep: int = 20, quantiles: Optional[Sequence[float]] = None,
             return_mode: str = "median", timer: str = "auto"):
    """Run ``fn`` ``warmup`` times, then ``rep`` times, and return its time in milliseconds.

    The time is the device's own (SYCL event profiling) when ``fn`` returns a ``Launch`` or event
    from a queue with profiling (xekern's queues have it), else wall time around ``fn`` and a
    synchronize. ``quantiles`` returns those quantiles instead; ``return_mode`` is one of
    ``median``, ``mean``, ``min``, ``max``, ``all``.
    """
    if return_mode not in ("median", "mean", "min", "max", "all"):
        raise ValueError(f"return_mode must be median, mean, min, max or all, got {return_mode!r}")
    for _ in range(max(0, warmup)):
        r = fn()
        _event_ms(r)
    dev.synchronize()
    times: List[float] = []
    for _ in range(max(1, rep)):
        t0 = time.perf_counter()
        r = fn()
        ms = _event_ms(r) if timer in ("auto", "event") else None
        if ms is None:
            if timer == "event":
                raise ValueError("timer='event' needs fn to return a Launch or a profiled SYCL event")
            dev.synchronize()
            ms = (time.perf_counter() - t0) * 1e3
        times.append(ms)
    if quantiles is not None:
        s = sorted(times)
        return [s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] for q in quantiles]
    if return_mode == "all":
        return times
    return {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max}[return_mode](times)
