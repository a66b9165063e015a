"""Launch-time check that a buffer holds the tensor its descriptor describes.

``xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(LD, 1), ...)`` promises that ``x_ptr``
points at ``1 + (M-1)*LD + (N-1)`` elements: loads and stores are bounds-checked against that
shape, not against the allocation, so a buffer smaller than the shape is read and written past
its end. The compiler records the descriptors whose promise a launch can evaluate
(``lowering/launch_facts.descriptor_extents``: which ones, and why that is sound); each launch
checks them here, before anything runs. The extent of an argument is what it declares: a NumPy
array's ``nbytes``; a device array's (or any ``__sycl_usm_array_interface__`` object's) shape and
strides — not the allocation behind a view.

Example error::

    kernel 'copy': argument 'x_ptr' holds 1000 float32 elements, but the tensor descriptor made at
    k.py:12 (shape (40, 30), strides (30, 1)) reaches element 1199
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from ..ir.terms import evaluate
from ..errors import LaunchError
from . import arrays


def _declared_elements(v, name: str) -> Optional[int]:
    """How many elements from its start the argument ``v`` declares (None: unknown)."""
    if isinstance(v, np.ndarray):
        return v.size
    if isinstance(v, arrays.DeviceArray):
        shape, strides = v.shape, tuple(s // v.dtype.itemsize for s in v.strides)
    elif hasattr(v, "__sycl_usm_array_interface__"):
        _, _, _, shape, strides = arrays.usm_info(v, name)
    else:
        return None
    if any(s == 0 for s in shape):
        return 0
    if any(st < 0 for st in strides):
        return None
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides))


def check(kernel_name: str, extents, values: Dict[str, object]) -> None:
    """Raise LaunchError if a descriptor's shape and strides reach past its base argument."""
    for param, shape_t, stride_t, where in extents:
        ev = lambda t: evaluate(t, values)  # noqa: E731
        shape = [ev(t) for t in shape_t]
        strides = [ev(t) for t in stride_t]
        if any(x is None for x in shape + strides) or any(s <= 0 for s in shape) or any(s < 0 for s in strides):
            continue  # empty (never accessed) or not evaluable
        need = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
        v = values.get(param)
        have = _declared_elements(v, param)
        if have is not None and need > have:
            dt = getattr(v, "dtype", "")
            raise LaunchError(f"kernel '{kernel_name}': argument '{param}' holds {have} {dt} elements, but the "
                              f"tensor descriptor made at {where} (shape {tuple(shape)}, strides {tuple(strides)}) "
                              f"reaches element {need - 1}; pass a larger buffer or a smaller shape")
