"""Which pointer parameters a kernel writes, and the launch check that they are writable.

A NumPy argument is copied to the device and back around a launch. A read-only array
(``np.broadcast_to(...)``, ``a.setflags(write=False)``, a view of a read-only buffer) cannot be
copied back, so the kernel's stores into it would be lost without a word. The launch therefore
refuses a read-only array for a parameter the kernel stores to (``xl.store``, a tensor
descriptor's ``store``, any ``xl.atomic_*``); reading from one stays fine.

"Stores to" is decided on the workgroup IR before the passes: a parameter is written when a
``store_nd``, ``store_scatter`` or ``atomic_rmw`` addresses memory through a descriptor or
pointer derived from it (through ``addptr``, descriptors, loop-carried values and ``if``
results). A store that is never reached at run time still counts: the check is about what the
kernel may do, as a signature would say.

Example error::

    kernel 'fill': argument 'out_ptr' is a read-only NumPy array (np.broadcast_to, setflags(write=False)
    or a read-only buffer), but the kernel stores to it at k.py:7; pass a writable array (np.array(x) copies)
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from .. import ir
from ..errors import LaunchError
from ..ir.types import PointerType, TensorDescType


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
    """Pointer parameter name -> "file:line" of the first store or atomic that writes through it."""
    params = {id(a): a.hint for a in func.args if isinstance(a.type, PointerType)}
    out: Dict[str, str] = {}
    for op in func.walk():
        sink = _sink(op)
        if sink is None:
            continue
        loc = getattr(op, "loc", None)
        where = f"{loc.file}:{loc.line}" if loc is not None else "?"
        seen, todo = set(), [sink]
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if id(v) in params:
                out.setdefault(params[id(v)], where)
                continue
            todo.extend(s for s in _sources(v) if _addressing(s.type))
    return out


def check(kernel_name: str, written: Dict[str, str], values: Dict[str, object]) -> None:
    """Raise LaunchError if a parameter the kernel writes is bound to a read-only NumPy array
    (or a read-only DLPack tensor)."""
    for name, where in written.items():
        v = values.get(name)
        if isinstance(v, np.ndarray) and not v.flags.writeable:
            raise LaunchError(f"kernel '{kernel_name}': argument '{name}' is a read-only NumPy array "
                              f"(np.broadcast_to, setflags(write=False) or a read-only buffer), but the kernel "
                              f"stores to it at {where}; its writes could not be copied back: pass a writable "
                              f"array (np.array(x) copies)")
        if getattr(v, "read_only", False) is True and hasattr(v, "__sycl_usm_array_interface__"):
            raise LaunchError(f"kernel '{kernel_name}': argument '{name}' is a read-only DLPack tensor (its "
                              f"producer set DLPACK_FLAG_BITMASK_READ_ONLY), but the kernel stores to it at "
                              f"{where}; pass a writable array")
