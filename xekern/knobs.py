"""Every environment variable xekern reads, in one place, each with what it does.

| variable | default | effect |
| --- | --- | --- |
| ``XEKERN_CACHE_DIR`` | ``~/.cache/xekern`` | where compiled kernels are kept on disk |
| ``XEKERN_TOOLCHAIN_DIR`` | ``<cache dir>/toolchain`` | where ``python -m xekern toolchain install`` puts Intel's offline GPU compilers |
| ``XEKERN_DEBIAN_MIRROR`` | the apt sources' | the Debian mirror the toolchain is fetched from, when the machine's apt sources name none (Ubuntu) |
| ``XEKERN_CACHE`` | ``1`` | ``0`` disables the on-disk cache (the in-memory cache stays) |
| ``XEKERN_DUMP`` | unset | stage names to print after compiling (``xegpu,lane,llir`` or ``all``); with ``XEKERN_DUMP_DIR`` they are written there instead |
| ``XEKERN_DUMP_DIR`` | unset | directory for ``XEKERN_DUMP`` files (``<kernel>.<stage>.txt``) |
| ``XEKERN_INTERPRET`` | ``0`` | ``1`` runs kernels with NumPy on the host instead of compiling them |
| ``XEKERN_DEVICE`` | automatic | a dpctl filter string (``opencl:cpu``, ``level_zero:gpu:0``) for the default device |
| ``XEKERN_TARGET`` | from the device | a target record name (``cpu``, ``cpu8``, ``pvc``, ``dg2``, ``bmg``) |
| ``XEKERN_DEBUG`` | ``0`` | ``1`` keeps ``xl.device_assert`` / ``xl.device_print`` in kernels |
| ``XEKERN_LLVM_ISOLATION`` | ``1`` | ``0`` runs LLVM inside the user's process (an LLVM abort then ends it) |
| ``XEKERN_OCL_ICD`` | found | path of the OpenCL CPU runtime library (``libintelocl.so``) if it is not found |
| ``XEKERN_DRIVER`` | probed | the GPU driver's compiler, instead of probing the device (``runtime/driver_probe.py``): ``igc2`` (takes the SPIR-V 2D block IO / matrix ops) or ``igc1`` |
| ``XEKERN_EMITTER`` | chosen per kernel | how GPU code is emitted: ``visa``, ``spirv-ext``, ``igc-builtins`` (``lowering/emitters.py``); unset: the best one the target and the driver take |
| ``XEKERN_KERNEL_CACHE_SIZE`` | ``256`` | compiled specializations each kernel keeps in memory (least recently used dropped first) |
| ``XEKERN_DRIVER_REFS`` | ``1`` | ``0`` keeps the OpenCL references dpctl 0.22 leaks per build (``runtime/driver_refs.py``) |
| ``XEKERN_DRIVER_BINARIES`` | ``1`` | ``0`` makes every process build kernels from SPIR-V, instead of the OpenCL driver's binaries kept in the disk cache (``runtime/program_binaries.py``) |
"""
from __future__ import annotations

import os
from typing import List, Optional


def _flag(name: str, default: bool) -> bool:
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    return v.strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> str:
    return os.environ.get("XEKERN_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "xekern")


def toolchain_dir() -> str:
    return os.environ.get("XEKERN_TOOLCHAIN_DIR") or os.path.join(cache_dir(), "toolchain")


def disk_cache() -> bool:
    return _flag("XEKERN_CACHE", True)


def dump_stages() -> List[str]:
    v = os.environ.get("XEKERN_DUMP", "")
    return [s.strip() for s in v.split(",") if s.strip()]


def dump_dir() -> Optional[str]:
    return os.environ.get("XEKERN_DUMP_DIR") or None


def interpret() -> bool:
    return _flag("XEKERN_INTERPRET", False)


def device() -> Optional[str]:
    return os.environ.get("XEKERN_DEVICE") or None


def target() -> Optional[str]:
    return os.environ.get("XEKERN_TARGET") or None


def debug() -> bool:
    return _flag("XEKERN_DEBUG", False)


def llvm_isolation() -> bool:
    return _flag("XEKERN_LLVM_ISOLATION", True)


def ocl_icd() -> Optional[str]:
    return os.environ.get("XEKERN_OCL_ICD") or None


def driver_refs() -> bool:
    return _flag("XEKERN_DRIVER_REFS", True)


def driver_binaries() -> bool:
    return _flag("XEKERN_DRIVER_BINARIES", True)


def driver() -> Optional[str]:
    """``XEKERN_DRIVER``: a driver's name (``igc2``, ``igc1``), or None to probe the device."""
    return os.environ.get("XEKERN_DRIVER", "").strip() or None


def emitter() -> Optional[str]:
    """``XEKERN_EMITTER``: an emitter's name, or None to leave the choice to the target and driver."""
    return os.environ.get("XEKERN_EMITTER", "").strip() or None


def kernel_cache_size() -> int:
    """``XEKERN_KERNEL_CACHE_SIZE``: specializations each kernel keeps in memory (LRU; default 256)."""
    v = os.environ.get("XEKERN_KERNEL_CACHE_SIZE", "").strip()
    if not v:
        return 256
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        from .errors import LaunchError
        raise LaunchError(f"XEKERN_KERNEL_CACHE_SIZE must be a positive integer, got {v!r}")
    return n
