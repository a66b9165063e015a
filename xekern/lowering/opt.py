"""Run passes of the pipeline by name on IR text: ``python -m xekern opt`` and the pass-file tests.

    python -m xekern compile k.py:add_kernel -s "*fp32,*fp32,*fp32,i32" BLOCK=64 --emit layout > k.ir
    python -m xekern opt -p sg,inst k.ir         # the function after wg-to-sg, then blocking
    python -m xekern opt --list                  # the pass names

A pass is found by its stage name in ``pipeline.PASSES`` (so a pass added there is available here
without change), and the function is verified before the first pass and after each one. What a pass
needs besides the IR (``pipeline.Options``) comes from the function's attributes, which the frontend
sets (``target = "pvc"``, ``emitter = "visa"``, ``kernel_level = "wg"``, ``num_subgroups = 4``), unless
given (``target=``, ``num_subgroups=``, ``emitter=``; the function's attributes then say so too; a new
target without an emitter takes its default one).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from .. import ir
from ..errors import XekernError
from ..targets import TARGETS, get_target
from . import emitters
from .pipeline import PASSES, Options, Pass
from .rewrite import PassError


class OptError(XekernError):
    """A pass that does not exist, IR that does not verify, or a pass that failed, with its place."""


def pass_names() -> List[str]:
    return [p.name for p in PASSES]


def lookup(names: Sequence[str]) -> List[Pass]:
    """The ``PASSES`` entries of ``names``, in the order given."""
    by_name = {p.name: p for p in PASSES}
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        what = f"unknown pass '{unknown[0]}'" if unknown else "no pass given"
        raise OptError(f"-p {','.join(names)}: {what}; passes: {', '.join(pass_names())}")
    return [by_name[n] for n in names]


def options_for(func: ir.FuncOp, target: Optional[str] = None, num_subgroups: Optional[int] = None,
                emitter: Optional[str] = None) -> Options:
    """The options of a compilation that would have built ``func``: its attributes, or the overrides
    (which are written into its attributes, so that the printed result says what it was built for)."""
    name = target or func.attrs.get("target")
    if name is None:
        raise OptError(f"@{func.name} has no 'target' attribute: give one (--target; targets: {', '.join(TARGETS)})")
    if name not in TARGETS:
        raise OptError(f"@{func.name}: unknown target '{name}'; targets: {', '.join(TARGETS)}")
    t = get_target(name)
    ns = num_subgroups or func.attrs.get("num_subgroups") or Options.num_subgroups
    if target is not None:
        func.attrs.update(target=t.name, sg_size=t.sg_size)
    if num_subgroups is not None:
        func.attrs["num_subgroups"] = num_subgroups
    overridden = emitter is not None or target is not None   # (a new target: its default emitter)
    try:
        chosen = emitters.choose(t, emitters.default_driver(t), emitter if overridden else func.attrs.get("emitter"))
    except emitters.EmitterError as e:
        raise OptError(f"@{func.name}: {e}") from None
    if overridden:
        func.attrs["emitter"] = chosen.name
    level = func.attrs.get("kernel_level", func.attrs.get("level", "wg"))
    return Options(target=t, num_subgroups=int(ns), level=level, emitter=chosen)


def _failure(what: str, e: Exception, file: str) -> OptError:
    """``file:line:col: what: message``, at the op the error names (its place in the input text)."""
    loc = getattr(getattr(e, "op", None), "loc", None)
    text = str(e)
    if loc is not None and text.endswith(f" (at {loc})"):
        text = text[:-len(f" (at {loc})")]
    return OptError(f"{loc if loc is not None else file}: {what}: {text}")


def run(func: ir.FuncOp, names: Sequence[str], options: Options, file: str = "<input>") -> ir.FuncOp:
    """``func`` after the passes ``names``, in order, each followed by ``verify_func``."""
    passes = lookup(names)
    try:
        ir.verify_func(func)
    except (ir.IRError, ir.LayoutError) as e:
        raise _failure("the input does not verify", e, file) from None
    for name, runs_at, _, fn in passes:
        level = func.attrs.get("level", "wg")
        if level not in runs_at:
            raise OptError(f"{file}: pass '{name}' runs on {' or '.join(runs_at)}-level IR, but @{func.name} is at "
                           f"level '{level}' (its 'level' attribute)")
        try:
            func = fn(func, options)
            ir.verify_func(func)
        except (PassError, ir.IRError, ir.LayoutError) as e:
            raise _failure(f"pass '{name}'", e, file) from None
    return func


def opt_text(text: str, names: Sequence[str], file: str = "<input>", target: Optional[str] = None,
             num_subgroups: Optional[int] = None, emitter: Optional[str] = None) -> str:
    """The printed function of ``text`` after the passes ``names`` (raises ParseError, OptError)."""
    lookup(names)   # (an unknown pass is reported before the input is read)
    func = ir.parse_func(text, file)
    return ir.print_func(run(func, names, options_for(func, target, num_subgroups, emitter), file))

