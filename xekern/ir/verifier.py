"""Whole-function verification, run after the frontend and after every pass.

Checks that every operand is defined before its use in an enclosing scope, that structured
bodies end in the right terminator, that every attribute is declared by its op (``ir/attrs.py``)
with a value of its type (and, given the stages that ran, added by one of them), every op's own
``verify()``, and every layout against the tile it describes (at the level the function is at).
"""
from __future__ import annotations

from typing import Collection, Optional, Set

from .core import Block, IRError, Op, Value
from .layout import LayoutError, verify_layout
from .ops_scf import ConditionOp, ForOp, FuncOp, IfOp, ReturnOp, WhileOp, YieldOp
from .types import TensorDescType, VectorType


def verify_func(f: FuncOp, ran: Optional[Collection[str]] = None) -> None:
    """Raise IRError on the first broken rule. ``ran``: the stages that built the function so far
    (``frontend`` and pass names); an attribute added by none of them is an error."""
    level = f.attrs.get("level", "wg")
    ctx = dict(level=level, sg_size=f.attrs.get("sg_size"),
               num_subgroups=f.attrs.get("num_subgroups") if level == "wg" else None,
               ran=None if ran is None else set(ran) | {"frontend"})
    _attrs(f, ctx)
    _block(f.body, set(f.args), f, ctx, ReturnOp)


def _attrs(op: Op, ctx) -> None:
    declared = op.declared()
    for k, v in op.attrs.items():
        a = declared.get(k)
        if a is None:
            names = ", ".join(sorted(declared)) or "none"
            raise IRError(f"attribute '{k}' is not declared by {op.op_name} (it declares: {names}; ir/attrs.py)", op)
        why = a.check(v)
        if why:
            raise IRError(why, op)
        if ctx["ran"] is not None and not set(a.added_by) & ctx["ran"]:
            raise IRError(f"attribute '{k}' is added by {' or '.join(a.added_by)}, which has not run", op)


def _block(b: Block, visible: Set[Value], owner: Op, ctx, terminator) -> None:
    visible = set(visible) | set(b.args)
    for i, op in enumerate(b.ops):
        for v in op.operands:
            if v not in visible:
                raise IRError(f"operand {v!r} is used before it is defined or outside its scope", op)
        if op.IS_TERMINATOR and i != len(b.ops) - 1:
            raise IRError("a terminator must end its block", op)
        if isinstance(op, ForOp):
            _block(op.body, visible, op, ctx, YieldOp)
        elif isinstance(op, IfOp):
            _block(op.then_block, visible, op, ctx, YieldOp)
            _block(op.else_block, visible, op, ctx, YieldOp)
        elif isinstance(op, WhileOp):
            _block(op.before, visible, op, ctx, ConditionOp)
            _block(op.after, visible, op, ctx, YieldOp)
        elif op.regions:
            for r in op.regions:
                _block(r, visible, op, ctx, None)
        _attrs(op, ctx)
        op.verify()
        for r in op.results:
            _check_layout(op, r, ctx)
        visible.update(op.results)
    if terminator is not None and (not b.ops or not isinstance(b.ops[-1], terminator)):
        raise IRError(f"block must end in {terminator.NAME}", owner)


def _check_layout(op: Op, v: Value, ctx) -> None:
    t = v.type
    if not isinstance(t, (VectorType, TensorDescType)) or t.layout is None or ctx["level"] == "lane":
        return
    shape = t.shape if isinstance(t, VectorType) or t.scattered else t.value_shape
    try:
        verify_layout(t.layout, shape, sg_size=ctx["sg_size"], num_subgroups=ctx["num_subgroups"],
                      level=ctx["level"])
    except LayoutError as e:
        raise IRError(f"invalid layout for {t}: {e}", op) from None
