"""What the benchmarks that time first calls share: ``run`` runs a script in a fresh Python process
with its own ``XEKERN_CACHE_DIR`` and returns the JSON object the script printed last; ``machine``
is the line their reports start with (the machine, the date and its load: figures taken while other
work runs are noise); ``arguments`` and ``finish`` are their command line (``--reps``, ``--only``,
``--json``) and their last lines (the load at the end, the figures written as JSON)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time


def run(script: str, cache: str, timeout: float = 600, what: str = "", **env) -> dict:
    """Run ``script`` (``python -c``) with ``XEKERN_CACHE_DIR=cache`` and ``env`` added to this
    process's environment; exit naming ``what`` with its stderr if it fails."""
    e = dict(os.environ, XEKERN_CACHE_DIR=cache, **env)
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with bytecode, as an installed package has
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=e, timeout=timeout)
    if r.returncode:
        raise SystemExit(f"{what}:\n{r.stderr}" if what else r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def machine() -> str:
    return (f"machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}")


def arguments(doc: str, reps: int, what: str, argv=None) -> argparse.Namespace:
    """``--reps`` (default ``reps``), ``--only`` (a substring of ``what``), ``--json``."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=reps)
    p.add_argument("--only", default=None, help=f"substring of the {what} to run")
    p.add_argument("--json", default=None, help="also write the figures here")
    return p.parse_args(argv)


def finish(out: dict, path) -> None:
    """The load average at the end; ``out`` written to ``path`` as JSON when one is given."""
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
