"""Interpreter rules for ``debug.print`` and ``debug.assert``.

``debug.print`` writes the lines the device writes (``rules_debug`` of the codegen), in the same
format, through ``builtins.print``: scalars once per program, tiles one line per element in
row-major order (the device prints an element once per work item holding a copy, in no set order).
``debug.assert`` raises ``DeviceAssertionError`` naming the program, the failing elements and the
kernel line, where the device can only report and run on.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import ir
from ..ir.types import VectorType, elem_of
from .core import rule


def _text(x, t, hex: bool) -> str:
    """One value as the device's printf writes it (``%f``, ``%d``, ``%u``, ``%lld``, ``0x%x``)."""
    if t.is_floating:
        return "%f" % float(x)
    if hex:
        return "0x%x" % (int(x) & ((1 << max(t.bits, 32)) - 1))
    return "%d" % int(x)


@rule(ir.PrintOp)
def _print(ctx, op, args):
    hex = op.attrs.get("hex", False)
    pid = "pid (%d, %d, %d)" % tuple(ctx.program_id)
    prefix = f" {op.prefix}" if op.prefix else ""
    n = op.attrs["count"]
    types = [elem_of(v.type) for v in op.values]
    shape = op.attrs.get("shape")
    if not shape:
        builtins.print(pid + prefix + "".join(" " + _text(a, t, hex) for a, t in zip(args[:n], types)))
        return None
    vals = [np.broadcast_to(np.asarray(a), shape) if isinstance(v.type, VectorType) else a
            for a, v in zip(args[:n], op.values)]
    for coords in np.ndindex(*shape):
        items = [a[coords] if isinstance(v.type, VectorType) else a for a, v in zip(vals, op.values)]
        idx = ", ".join(map(str, coords))
        builtins.print(f"{pid} idx ({idx}){prefix}" + "".join(" " + _text(a, t, hex) for a, t in zip(items, types)))
    return None


@rule(ir.AssertOp)
def _assert(ctx, op, args):
    ctx.assert_(op, args[0], f"{op.attrs['msg']} ({op.attrs['file']}:{op.attrs['line']})")
    return None



@rule(ir.BreakpointOp)
def _breakpoint(ctx, op, args):
    """``breakpoint()`` in a kernel: ``pdb`` in a frame holding the kernel's variables (NumPy
    values, and the compile-time ones), at the kernel's file and line (interpreter/debug.pause)."""
    from .debug import pause
    variables = dict(op.attrs["consts"])
    variables.update(zip(op.attrs["names"], args))
    pause(ctx, op, variables)
    return None
