"""Checks of a kernel as a whole, made when its IR is built: a lane-level kernel makes no tiles;
which parameters are read-only pointers (``xl.const``)."""
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
