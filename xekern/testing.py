"""Benchmarking helpers: ``do_bench`` (device time from SYCL event profiling) and ``sweep``.

Example::

    ms = xk.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))
    lo, med, hi = xk.testing.do_bench(fn, quantiles=[0.2, 0.5, 0.8])
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional, Sequence

from .runtime.bench import do_bench

__all__ = ["do_bench", "sweep"]


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
