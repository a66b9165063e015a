"""``xl.target_info``: Triton's ``tl.target_info`` questions, answered at compile time for the
target the kernel is compiled for (``if xl.target_info.is_cuda(): ...`` folds away as in Triton).
No xekern target is CUDA or HIP; ``current_target()`` is xekern's target name (``pvc``, ``bmg``,
``dg2``, ``lnl``, ``ptl``, ``arl``, ``cpu``, ``cpu8``), ``is_xpu()`` says whether it is an Intel GPU."""
from __future__ import annotations

from .core import builtin


@builtin
def current_target(_sem=None):
    return _sem.options.target.name


@builtin
def is_cuda(_sem=None):
    return False


@builtin
def cuda_capability_geq(major, minor=0, _sem=None):
    return False


@builtin
def is_hip(_sem=None):
    return False


@builtin
def is_hip_cdna3(_sem=None):
    return False


@builtin
def is_hip_cdna4(_sem=None):
    return False


@builtin
def is_xpu(_sem=None):
    return not _sem.options.target.is_cpu
