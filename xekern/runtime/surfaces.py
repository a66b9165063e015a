"""The launch's answers to a kernel's 2D block surface checks (``lowering/surface_rules.py``).

Where a tensor descriptor's width, pitch or base alignment depends on the arguments, the compiled
kernel carries a check per descriptor (``CompiledKernel.meta["surfaces"]``). Every launch answers
them from its arguments (a few integer comparisons); when an answer is no, the launch uses the
kernel compiled with that descriptor element-wise (``Options.surfaces``), compiling it once. So a
GPU never sees a 2D block message on a surface it would read or write wrongly (a misaligned base,
a narrow tensor, an odd pitch), and the CPU device's emulation checks the same rules
(``codegen/rules_cpu.py``).

    >>> answers(checks, {"K": 16, "a_ptr": arr})   # doctest: +SKIP
    (False,)      # K * 2 bytes < 64: the descriptor of A reads element by element
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ..ir.terms import evaluate
from . import arrays


# pointer arguments are specialized on their address being a multiple of this (Triton's 16-byte
# pointer divisibility): part of the cache key, the function's ``multiple_of`` (pass coalesce)
POINTER_ALIGN = 16


def aligned(v) -> bool:
    """Whether a pointer argument's address is a multiple of ``POINTER_ALIGN`` bytes."""
    a = address(v)
    return a is not None and a % POINTER_ALIGN == 0


def address(v) -> Optional[int]:
    """The device address a pointer argument will have (None: unknown). A NumPy array is copied
    into a fresh allocation, aligned to 64 bytes (``_NumpyCopy``)."""
    if isinstance(v, np.ndarray):
        return 0
    if isinstance(v, arrays.DeviceArray):
        return v._mem._pointer + v._offset if hasattr(v._mem, "_pointer") else None
    iface = getattr(v, "__sycl_usm_array_interface__", None)
    if isinstance(iface, dict):
        data = iface.get("data")
        ptr = data[0] if isinstance(data, (tuple, list)) else None
        if isinstance(ptr, int):
            offset = iface.get("offset", 0) or 0
            typestr = iface.get("typestr")
            return ptr + offset * (np.dtype(typestr).itemsize if typestr else 1)
    return None


def _holds(cond: list, values: Dict[str, object]) -> bool:
    kind = cond[0]
    if kind == "align":
        a = address(values.get(cond[1]))
        return a is not None and a % cond[2] == 0
    x = evaluate(cond[1], values)
    if x is None:
        return False
    return x >= cond[2] if kind == "ge" else x % cond[2] == 0


def answers(checks: Sequence[list], values: Dict[str, object]) -> Tuple[bool, ...]:
    """One bool per check: whether every condition of that descriptor's surface holds."""
    return tuple(all(_holds(c, values) for c in conds) for _, conds in checks)
