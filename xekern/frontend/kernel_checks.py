"""Checks of a kernel as a whole, made when its IR is built: a lane-level kernel makes no tiles;
which parameters are read-only pointers (``xl.const``); and one clean-up, the unit-dimension
shape casts nothing reads."""
from __future__ import annotations

import ast

from .. import ir


def is_const(tree, name: str) -> bool:
    """Whether kernel parameter ``name`` is annotated ``xl.const`` (Triton's read-only pointer)."""
    for a in tree.args.args:
        if a.arg == name and a.annotation is not None:
            ann = ast.unparse(a.annotation)
            return ann == "const" or ann.endswith(".const")
    return False


def check_lane_level(func: ir.FuncOp) -> None:
    """A lane-level kernel computes scalars per work item: one-element vectors are how scalar memory
    accesses are spelled in lane IR, anything larger is a tile, which only workgroup and subgroup
    levels have."""
    from ..lowering.rewrite import PassError
    for op in func.walk():
        for r in op.results:
            t = r.type
            if isinstance(t, (ir.VectorType, ir.TensorDescType)) and (len(t.shape) > 1 or t.shape[0] > 1):
                raise PassError(f"lane level: '{op.op_name}' makes a tile {t}; a lane-level kernel "
                                f"(@xk.jit(level='lane')) computes scalars of one work item (tiles are "
                                f"workgroup- or subgroup-level)", op)


def drop_unused_shape_casts(func: ir.FuncOp) -> None:
    """Erase ``vector.shape_cast`` ops whose result nothing reads (a 3-D descriptor's ``(1, BM, BK)``
    block reshaped back to ``(BM, BK)`` leaves the first cast unread; laid out on its own, it would
    cost a layout conversion through SLM)."""
    while True:
        used = ir.users(func)
        dead = [op for op in func.walk() if isinstance(op, ir.ShapeCastOp) and not used.get(op.result)]
        if not dead:
            return
        for op in dead:
            op.parent.ops.remove(op)
