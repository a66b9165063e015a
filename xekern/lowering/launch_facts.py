"""What a launch checks of a kernel, read off its workgroup IR before the passes rewrite it.

The compiler (``xekern/compiler.py``) and the interpreter record these facts with the kernel;
the runtime checks them against each launch's arguments (``runtime/extents.py``,
``runtime/writes.py``), before anything runs.

* ``descriptor_extents``: the shape and strides of each tensor descriptor made from a pointer
  parameter, as terms of the parameters. ``xl.make_tensor_descriptor(x_ptr, shape=(M, N),
  strides=(LD, 1), ...)`` promises that ``x_ptr`` points at ``1 + (M-1)*LD + (N-1)`` elements;
  loads and stores are bounds-checked against that shape, not against the allocation. Recorded
  (sound: a reported error is a real overrun) for descriptors created unconditionally at the top
  of the kernel (not inside ``if``/``for``), whose base is a pointer parameter itself (not
  ``x_ptr + offset``), and whose shape and strides are constants or integer parameters (possibly
  truncated to 32 bits, which the term applies as the kernel does). Elsewhere the canary tests
  (tests/test_memory_safety.py) are the safety net.
* ``written_params``: the pointer parameters the kernel may store to. A parameter is written when
  a ``store_nd``, ``store_scatter`` or ``atomic_rmw`` addresses memory through a descriptor or
  pointer derived from it (through ``addptr``, descriptors, loop-carried values and ``if``
  results). A store that is never reached at run time still counts: the fact is about what the
  kernel may do, as a signature would say.

    >>> descriptor_extents(func)       # doctest: +SKIP  (x_ptr's descriptor: shape (M, N), strides (LD, 1))
    [['x_ptr', [['arg', 'M', None], ['arg', 'N', None]], [['arg', 'LD', None], ['const', 1]], 'k.py:7']]
    >>> written_params(func)           # doctest: +SKIP
    {'o_ptr': 'k.py:9'}
"""
from __future__ import annotations

from typing import Dict, List, Optional

from .. import ir
from ..ir.terms import term
from ..ir.types import PointerType, TensorDescType


def descriptor_extents(func) -> List[list]:
    """[param, shape terms, stride terms, "file:line"] for each checkable descriptor of ``func``."""
    args = {id(a): a.hint for a in func.args}
    out = []
    for op in func.body.ops:
        if not isinstance(op, ir.CreateNdTDescOp) or id(op.base) not in args:
            continue
        r = op.rank
        terms = [term(v, args) for v in op.operands[1:1 + 2 * r]]
        if any(t is None for t in terms):
            continue
        loc = getattr(op, "loc", None)
        where = f"{loc.file}:{loc.line}" if loc is not None else "?"
        out.append([args[id(op.base)], terms[:r], terms[r:], where])
    return out


def _addressing(t) -> bool:
    return isinstance(t, (PointerType, TensorDescType)) and getattr(t, "memory_scope", "global") == "global" \
        and getattr(t, "space", "global") == "global"


def _sink(op) -> Optional[ir.Value]:
    """The descriptor through which ``op`` writes global memory, if it does."""
    if isinstance(op, ir.StoreNdOp):
        return op.tdesc
    if isinstance(op, ir.StoreScatterOp):
        return op.operands[1]
    if isinstance(op, ir.AtomicRMWOp):
        return op.operands[0]
    return None


def _yields(block) -> List[ir.Value]:
    term = block.terminator
    return list(term.operands) if term is not None else []


def _sources(v: ir.Value) -> List[ir.Value]:
    """The addressing values ``v`` is computed from (one step back)."""
    owner = v.owner
    if isinstance(owner, ir.Op):
        if isinstance(owner, ir.ForOp):
            return [owner.inits[v.index], _yields(owner.body)[v.index]]
        if isinstance(owner, ir.IfOp):
            return [_yields(owner.then_block)[v.index], _yields(owner.else_block)[v.index]]
        if isinstance(owner, ir.WhileOp):
            # scf.condition forwards operands[1:] to the results
            term = owner.before.terminator
            return [owner.operands[v.index], list(term.operands)[1 + v.index]]
        return [o for o in owner.operands if _addressing(o.type)]
    parent = getattr(owner, "parent", None)  # a block argument
    if isinstance(parent, ir.ForOp) and v.index >= 1:
        i = v.index - 1
        return [parent.inits[i], _yields(parent.body)[i]]
    if isinstance(parent, ir.WhileOp):
        if owner is parent.before:
            return [parent.operands[v.index], _yields(parent.after)[v.index]]
        return [list(parent.before.terminator.operands)[1 + v.index]]
    return []


def written_params(func) -> Dict[str, str]:
    """Pointer parameter name -> the "file:line"s (comma-separated, in program order) of the stores and
    atomics that write through it."""
    params = {id(a): a.hint for a in func.args if isinstance(a.type, PointerType)}
    out: Dict[str, List[str]] = {}
    for op in func.walk():
        sink = _sink(op)
        if sink is None:
            continue
        loc = getattr(op, "loc", None)
        where = f"{loc.file}:{loc.line}" if loc is not None else "?"
        for name in param_roots(sink, params):
            lines = out.setdefault(name, [])
            if where not in lines:
                lines.append(where)
    return {name: ", ".join(lines) for name, lines in out.items()}


def param_roots(v: ir.Value, params: Dict[int, str]) -> List[str]:
    """The pointer parameters (``params``: id of the argument -> name) that the addressing value
    ``v`` (a pointer or a descriptor) is derived from."""
    out: List[str] = []
    seen, todo = set(), [v]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in params:
            if params[id(v)] not in out:
                out.append(params[id(v)])
            continue
        todo.extend(s for s in _sources(v) if _addressing(s.type))
    return out
