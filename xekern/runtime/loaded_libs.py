"""The shared libraries this process has already loaded (dpctl's SYCL, OpenCL, Level Zero), found
by file name in ``/proc/self/maps`` and opened without loading anything new (``RTLD_NOLOAD``): the
very copies dpctl talks to, never a second one from the library path."""
from __future__ import annotations

import ctypes
import os
from typing import Optional


def mapped(prefix: str) -> Optional[str]:
    """The path of the loaded shared library whose file name starts with ``prefix``, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if os.path.basename(path).startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def opened(prefix: str) -> ctypes.CDLL:
    """The loaded library ``prefix*``; OSError when this process has not loaded it."""
    path = mapped(prefix)
    if path is None:
        raise OSError(f"{prefix}* is not loaded in this process")
    return ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
