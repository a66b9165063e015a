"""Pass ``hoist-conversions``: a layout conversion of a loop-invariant tile happens once, before the loop.

``propagate-layout`` puts a ``convert_layout`` where a tile is used in another layout than it was
made in. In a loop that reads a tile made before it (Triton's tutorial 03: ``offs_k`` used by the
A and the B pointers in the K loop), the conversion was made at every iteration: an exchange
through SLM with two barriers each time. A ``convert_layout`` at the top level of a loop body whose
source is defined outside the loop moves before the loop (hoisted out of nested loops one at a
time, innermost first), and a conversion of the same value to the same layout as an earlier one
in the same block reuses it.

Example: ``scf.for ... { %c = xegpu.convert_layout %offs_k ... }`` becomes
``%c = xegpu.convert_layout %offs_k ...; scf.for ... { ... }``.
"""
from __future__ import annotations

from typing import Dict, List, Set

from .. import ir
from ..ir.core import Op, Value
from .rewrite import copy_func


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if not any(isinstance(op, ir.ConvertLayoutOp) for op in func.walk()):
        return func   # (nothing to move: no copy)
    out = copy_func(func, ctx)
    while _hoist_once(out):
        pass
    _reuse(out)
    return out


def _defined_inside(loop: ir.ForOp) -> Set[Value]:
    inside: Set[Value] = set()
    for op in loop.walk():
        inside.update(op.results)
        for r in op.regions:
            inside.update(r.args)
    return inside


def _hoist_once(func: ir.FuncOp) -> bool:
    """Move every invariant conversion at the top of a loop body before its loop; True if one moved."""
    moved = False
    for loop in [op for op in func.walk() if isinstance(op, ir.ForOp)]:
        inside = _defined_inside(loop)
        body = loop.body.ops
        out = [op for op in body if isinstance(op, ir.ConvertLayoutOp) and op.operands[0] not in inside]
        if not out:
            continue
        block = loop.parent
        at = block.ops.index(loop)
        for op in out:
            body.remove(op)
            op.parent = block
        block.ops[at:at] = out
        moved = True
    return moved


def _reuse(func: ir.FuncOp) -> None:
    """A second conversion of the same value to the same type in one block takes the first's result."""
    replace: Dict[Value, Value] = {}
    for block in ir.blocks(func):
        seen: Dict[tuple, Op] = {}
        for op in list(block.ops):
            if not isinstance(op, ir.ConvertLayoutOp):
                continue
            key = (op.operands[0], op.result.type, tuple(sorted((k, str(v)) for k, v in op.attrs.items())))
            if key in seen:
                replace[op.result] = seen[key].result
                block.ops.remove(op)
            else:
                seen[key] = op
    if replace:
        for op in func.walk():
            if any(v in replace for v in op.operands):
                op.operands = tuple(replace.get(v, v) for v in op.operands)
