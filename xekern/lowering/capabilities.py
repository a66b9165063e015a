"""What a target has no hardware for at all, refused before any pass runs, at the line that asks
for it: a kernel the GPU's own compiler would reject (or, worse, compile into code for an engine
the GPU lacks) fails here with xekern's message instead.

- 64-bit floats on a GPU without them (``Target.fp64``; dg2: Intel's driver sets
  ``ftrSupportsFP64 = false`` and IGC answers "Double type is not supported on this platform").

``xl.dot`` on a GPU without DPAS is refused by the layout pass (``layouts.py``), which knows the
operand types."""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..ir.types import PointerType, elem_of, float64
from ..targets import Target
from .rewrite import PassError


def _f64(t) -> bool:
    if isinstance(t, PointerType):
        return t.elem == float64
    try:
        return elem_of(t) == float64
    except TypeError:
        return False


def check(func: ir.FuncOp, target: Target) -> None:
    """Raise ``PassError`` at the first op (or argument) ``target`` cannot run."""
    if target.fp64:
        return
    why = (f"float64 needs 64-bit floating-point hardware, which {target.name} ({target.arch}) does not have "
           f"(its driver rejects such kernels); use float32")
    for arg in func.args:
        if _f64(arg.type):
            what = "points to float64" if isinstance(arg.type, PointerType) else "is a float64"
            raise PassError(f"argument '{arg.hint}' {what}: {why}", _first_user(func, arg))
    for op in func.walk():
        if any(_f64(r.type) for r in op.results):
            raise PassError(why, op)


def _first_user(func: ir.FuncOp, v: ir.Value) -> Optional[ir.Op]:
    """The first op reading ``v`` (where the source first touches the argument), for the location."""
    return next((op for op in func.walk() if v in op.operands), None)
