"""``xk.set_allocator(fn)``: Triton's ``triton.set_allocator``, for ported host code.

Triton calls the allocator for global scratch memory some kernels need (the tensor-memory
descriptors ``tl.make_tensor_descriptor`` builds on the device). xekern needs none: its
tensor descriptors are values in registers (``create_nd_tdesc``) and its shared memory is SLM,
sized at compile time. The allocator is therefore accepted and stored, and nothing calls it;
``get_allocator()`` returns it for the day a kernel needs device scratch memory.
"""
from __future__ import annotations

from typing import Callable, Optional

_allocator: Optional[Callable] = None


def set_allocator(fn: Optional[Callable]) -> None:
    """Store ``fn(size, alignment, stream) -> array`` as the scratch-memory allocator (or None to
    clear it). xekern kernels need no scratch memory today, so it is not called.

    ``xk.set_allocator(lambda size, alignment, stream: xk.empty(size, dtype=np.int8))``
    """
    if fn is not None and not callable(fn):
        raise TypeError(f"set_allocator needs a callable (size, alignment, stream) -> array, got {fn!r}")
    global _allocator
    _allocator = fn


def get_allocator() -> Optional[Callable]:
    """The allocator given to ``set_allocator`` (None when none was)."""
    return _allocator
