"""The launch check that the pointer parameters a kernel writes are writable.

A NumPy argument is copied to the device and back around a launch. A read-only array
(``np.broadcast_to(...)``, ``a.setflags(write=False)``, a view of a read-only buffer) cannot be
copied back, so the kernel's stores into it would be lost without a word. The launch therefore
refuses a read-only array for a parameter the kernel stores to (``xl.store``, a tensor
descriptor's ``store``, any ``xl.atomic_*``); reading from one stays fine. Which parameters a
kernel stores to is read off its IR when it is compiled (``lowering/launch_facts.written_params``).

Example error::

    kernel 'fill': argument 'out_ptr' is a read-only NumPy array (np.broadcast_to, setflags(write=False)
    or a read-only buffer), but the kernel stores to it at k.py:7; pass a writable array (np.array(x) copies)
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..errors import LaunchError


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
