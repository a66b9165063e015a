"""Benchmarking helpers: ``do_bench`` (device time from SYCL event profiling) and ``sweep``.

Example::

    ms = xk.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
    lo, med, hi = xk.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from .runtime import device as dev


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


def sweep(title: str, xs: Sequence, lines: Dict[str, Callable], x_name: str = "size", unit: str = "GFLOP/s",
          metric: Optional[Callable] = None, png: Optional[str] = None, file=None) -> List[dict]:
    """Measure each line at each x and print a table; with ``png`` (and matplotlib) also a plot.

    ``lines`` maps a name to ``f(x) -> milliseconds``; ``metric(x, ms)`` turns a time into the unit
    shown (e.g. GFLOP/s), by default the time itself.
    """
    out = file or sys.stdout
    rows = []
    names = list(lines)
    out.write(f"{title}\n{x_name:>12} " + " ".join(f"{n:>14}" for n in names) + f"   ({unit})\n")
    for x in xs:
        row = {x_name: x}
        cells = []
        for n in names:
            try:
                ms = lines[n](x)
                v = metric(x, ms) if metric else ms
                row[n] = v
                cells.append(f"{v:14.2f}")
            except Exception as e:  # a line that cannot run at this size is reported, not fatal
                row[n] = None
                cells.append(f"{'n/a':>14}")
                out.write(f"  ({n} at {x}: {type(e).__name__}: {e})\n")
        rows.append(row)
        out.write(f"{str(x):>12} " + " ".join(cells) + "\n")
        out.flush()
    if png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            out.write(f"(no plot: matplotlib is not installed; pip install 'xekern[plot]')\n")
            return rows
        fig, ax = plt.subplots(figsize=(7, 4))
        for n in names:
            pts = [(r[x_name], r[n]) for r in rows if r[n] is not None]
            if pts:
                ax.plot([str(p[0]) for p in pts], [p[1] for p in pts], marker="o", label=n)
        ax.set_xlabel(x_name)
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=120)
        plt.close(fig)
        out.write(f"plot written to {png}\n")
    return rows
