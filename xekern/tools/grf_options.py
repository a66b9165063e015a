"""How Intel's GPU compiler (IGC) is asked for a GRF mode: the build options of each mode.

The mode itself is a decision about the kernel (``lowering/grf.py``: 128 registers per thread, or
256 when its lane-level IR needs more); this is how a build passes it on, through Level Zero and
OpenCL (the runtime's driver build, ``runtime/device.py``) or ``ocloc`` (the offline ISA tool,
``tools/isa.py``). IGC reads both spellings through every route; HARDWARE.md: ocloc -options
"-ze-opt-large-register-file" gives NumGRFRequired 256.

    >>> build_options(256, "opencl")
    '-cl-intel-256-GRF-per-thread'
"""
from __future__ import annotations

from typing import Optional

_OPTIONS = {128: "-cl-intel-128-GRF-per-thread", 256: "-ze-opt-large-register-file"}
_OPENCL_256 = "-cl-intel-256-GRF-per-thread"


def build_options(grf_mode: Optional[int], backend: str = "level_zero") -> str:
    """The compile options asking the GPU driver (``backend``: ``level_zero``, ``opencl``, or
    ``ocloc``) for ``grf_mode`` registers per thread; '' for None."""
    if grf_mode is None:
        return ""
    if grf_mode == 256 and backend == "opencl":
        return _OPENCL_256
    return _OPTIONS[grf_mode]
