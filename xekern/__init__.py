"""xekern: a Python kernel language for Intel GPUs.

Kernels are Python functions decorated with ``@xekern.jit`` and written at workgroup level on
tiles (``import xekern.language as xl``). They compile through XeGPU-level IR with layouts, LLVM
IR (llvmlite) and SPIR-V, and run through dpctl: on Intel GPUs with Level Zero, and anywhere
on Intel's OpenCL CPU runtime.

Importing xekern starts no process and loads no driver: the LLVM worker starts with the first
compile (``lowering/llvm.py``), dpctl loads with the first launch or device query. Its one side
effect: when the OpenCL CPU runtime was installed from PyPI and ``OCL_ICD_FILENAMES`` does not
list it yet, the library is added to that variable, so that dpctl and dpnp, imported after
xekern, find the CPU device (``runtime/device.py``; docs/troubleshooting.md).
"""
from .version import __version__
from . import knobs  # noqa: E402
from .errors import CacheWarning, CompilationError, LaunchError, XekernError  # noqa: E402
from .runtime import device as _device  # noqa: E402

_device.ensure_icd()  # before anything loads dpctl

from . import language, layouts  # noqa: E402
from .ir.layout import Layout, SliceLayout  # noqa: E402
from .ir.types import PointerType  # noqa: E402
from .runtime.arrays import DeviceArray, empty, to_device  # noqa: E402
from .runtime.device import device_properties, synchronize, target_for  # noqa: E402
from .runtime.jit import CompiledKernel, JITFunction  # noqa: E402
from .decorator import jit  # noqa: E402
from .runtime.launch import Launch, cdiv, next_power_of_2  # noqa: E402
from .runtime.allocator import set_allocator  # noqa: E402
from .runtime.autotune import Autotuner, Config, autotune  # noqa: E402
from . import testing  # noqa: E402
from .targets import TARGETS as targets  # noqa: E402
from .targets import Target, TargetWarning, get_target, register_target  # noqa: E402


def pointer(dtype, space: str = "global") -> PointerType:
    """The type of a pointer argument, for offline compilation signatures: ``xk.pointer(xl.bfloat16)``."""
    return PointerType(dtype, space)


__all__ = ["jit", "JITFunction", "autotune", "Config", "Autotuner", "testing", "Launch", "CompiledKernel", "cdiv",
           "next_power_of_2", "set_allocator", "CompilationError", "LaunchError", "XekernError",
           "CacheWarning", "Layout", "SliceLayout", "DeviceArray", "to_device", "empty", "synchronize",
           "device_properties",
           "targets", "target_for", "layouts", "Target", "TargetWarning", "get_target", "register_target",
           "pointer", "language", "knobs", "__version__"]
