"""Pass ``drop-breakpoints``: a kernel compiled for a device runs as if ``breakpoint()`` were not there.

``breakpoint()`` in a kernel (``debug.breakpoint``) stops the interpreter in pdb (docs/language.md);
a device has no debugger, so the compiled kernel leaves it out. Runs at every level.

Example: ``debug.breakpoint`` between two ops is gone from the printed stage; nothing else changes.
"""
from __future__ import annotations

from .. import ir
from .rewrite import Copy


class DropBreakpoints(Copy):
    NAME = "drop-breakpoints"
    RULES = dict(Copy.RULES)
    RULES[ir.BreakpointOp] = "rule_breakpoint"

    def rule_breakpoint(self, op: ir.BreakpointOp):
        return []


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, ir.BreakpointOp) for op in func.walk()):
        return func  # (the common case: no copy)
    return DropBreakpoints(ctx).run(func)
