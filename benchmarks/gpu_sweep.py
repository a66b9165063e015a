"""Every kernel the tests and examples launch, compiled for every GPU family with the current compiler.

    python benchmarks/gpu_sweep.py                       # the whole test suite's launches, 5 families
    python benchmarks/gpu_sweep.py -k softmax --targets pvc,bmg --json sweep.json

The test suite runs (in this process, on the CPU device, as ``python -m pytest tests`` would) with
every compilation recorded: the kernel, its signature (argument types, constexpr values, what the
launch's specialization found of the integers' divisibility) and its number of subgroups. Each
distinct one is then compiled for each GPU target (``pvc bmg dg2 lnl ptl`` unless ``--targets``)
with the current offline compiler (``python -m xekern toolchain install``), as a launch on that
GPU would compile it: xekern's emitter for the target and IGC 2.x, then ``ocloc`` to ISA.

Each outcome is one of:

- ``built``: ocloc built it (spills and scratch, if any, are listed: they are not failures here);
- ``refused``: xekern refused it with its own error before the compiler ran (the message is kept:
  it must name the rule, e.g. no DPAS on the family);
- ``FAILED``: the compiler failed on xekern's code, or xekern raised something that is not its own
  error. Any of these is a bug; the script exits 1.

Test outcomes on the CPU device do not matter here (``-x`` is not used; a failing test's
launches up to the failure are still recorded).
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import pytest  # noqa: E402

from xekern.errors import XekernError  # noqa: E402
from xekern.lowering import emitters  # noqa: E402
from xekern.compiler import compile_kernel  # noqa: E402
from xekern.runtime import jit as jitmod  # noqa: E402
from xekern.targets import get_target  # noqa: E402
from xekern.tools.isa import IsaError, compile_isa  # noqa: E402

TARGETS = ("pvc", "bmg", "dg2", "lnl", "ptl")


class Recorder:
    """A pytest plugin that records each compilation of the session (``_load_or_compile``)."""

    def __init__(self):
        self.seen = {}                      # key -> (jit, sig, num_subgroups, first test)
        self.test = None

    def pytest_runtest_setup(self, item):
        self.test = item.nodeid

    def pytest_configure(self, config):
        real = jitmod.JITFunction._load_or_compile
        rec = self

        def recording(jit, key, sig, options):
            if not options.target.is_cpu or options.target.name == "cpu":
                k = (jit.dependencies_hash(), repr(sorted((n, repr(v)) for n, v in sig.items())),
                     options.num_subgroups)
                rec.seen.setdefault(k, (jit, sig, options.num_subgroups, rec.test))
            return real(jit, key, sig, options)
        jitmod.JITFunction._load_or_compile = recording


def compile_one(jit, sig, num_subgroups: int, target: str):
    """(outcome, detail) of one kernel signature on one GPU target."""
    t = get_target(target)
    try:
        options = jit.options({"num_subgroups": num_subgroups}, t, emitters.OFFLINE["current"])
        c = compile_kernel(jit, sig, options)
    except XekernError as e:  # (a CompilationError's message without its location and source line)
        return "refused", " ".join(getattr(e, "message", str(e)).split())[:300]
    except Exception as e:  # noqa: BLE001 (a crash of xekern's: reported, not raised)
        return "FAILED", "xekern crashed: " + "".join(traceback.format_exception_only(type(e), e)).strip()[:600]
    try:
        r = compile_isa(c.spirv, c.name, target, grf_mode=c.grf_mode, compiler="current")
    except IsaError as e:
        return "FAILED", f"[{options.emitter.name}] " + str(e)[:1500]
    notes = [options.emitter.name]
    if r.spills:
        notes.append("spills: " + "; ".join(map(str, r.spills))[:200])
    if r.scratch_bytes:
        notes.append(f"scratch {r.scratch_bytes} B")
    return "built", ", ".join(notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default=None, help="pytest -k expression (default: every test)")
    ap.add_argument("--tests", default=os.path.join(ROOT, "tests"), help="test path(s), comma-separated")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--jobs", type=int, default=2, help="ocloc processes at once")
    ap.add_argument("--json", default=None, help="write every outcome here")
    args = ap.parse_args()
    targets = args.targets.split(",")

    rec = Recorder()
    t0 = time.perf_counter()
    pytest_args = ["-q", "-p", "no:cacheprovider", "--no-header", "-rN", *args.tests.split(",")]
    if args.k:
        pytest_args += ["-k", args.k]
    pytest.main(pytest_args, plugins=[rec])
    t_tests = time.perf_counter() - t0
    print(f"\n{len(rec.seen)} distinct kernel signatures recorded in {t_tests:.0f} s; compiling for "
          f"{', '.join(targets)} with the current compiler", flush=True)

    jobs = [(k, t) for k in rec.seen for t in targets]
    results = {}
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(compile_one, *rec.seen[k][:3], t): (k, t) for k, t in jobs}
        for n, f in enumerate(cf.as_completed(futs), 1):
            results[futs[f]] = f.result()
            if n % 50 == 0:
                print(f"  {n}/{len(jobs)}", flush=True)

    by = collections.Counter((t, results[(k, t)][0]) for k, t in jobs)
    print(f"\n{'target':8} {'built':>6} {'refused':>8} {'FAILED':>7}")
    for t in targets:
        print(f"{t:8} {by[(t, 'built')]:6} {by[(t, 'refused')]:8} {by[(t, 'FAILED')]:7}")
    spilling = [(k, t) for (k, t), (o, d) in results.items() if o == "built" and ("spills" in d or "scratch" in d)]
    print(f"\nbuilt with spills or scratch: {len(spilling)}")
    for k, t in sorted(spilling, key=lambda x: (x[1], rec.seen[x[0]][0].__name__)):
        print(f"  {t:4} {rec.seen[k][0].__name__:32} {results[(k, t)][1]}  ({rec.seen[k][3]})")
    reasons = collections.Counter((t, d) for (k, t), (o, d) in results.items() if o == "refused")
    print("\nrefusals (target, message, count):")
    for (t, d), n in sorted(reasons.items()):
        print(f"  {t:4} x{n:<3} {d}")
    failed = [(k, t) for (k, t), (o, _) in results.items() if o == "FAILED"]
    print(f"\nFAILED: {len(failed)}")
    for k, t in failed:
        jit, _, ns, test = rec.seen[k]
        print(f"--- {t} {jit.__name__} (num_subgroups={ns}; first launched by {test})\n{results[(k, t)][1]}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(kernel=rec.seen[k][0].__name__, test=rec.seen[k][3], num_subgroups=rec.seen[k][2],
                            target=t, outcome=o, detail=d) for (k, t), (o, d) in results.items()], f, indent=1)
    print(f"({time.perf_counter() - t0:.0f} s in all)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
