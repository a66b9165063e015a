"""The driver references dpctl's OpenCL interop leaks, handed back right after each build.

dpctl 0.22 (``libsyclinterface/source/dpctl_sycl_kernel_bundle_interface.cpp``) builds a program
from SPIR-V with ``clCreateProgramWithIL`` and gives it to SYCL with ``make_kernel_bundle``, which
takes a reference of its own; dpctl never releases the one it created. ``get_sycl_kernel`` does the
same with ``clCreateKernel`` / ``make_kernel``, and also keeps the program reference that
``get_native(bundle)`` returned. The driver then never frees the program or the kernel: about
1.8 to 3.3 MiB per program on the OpenCL CPU runtime (``benchmarks/driver_program_memory.py``).

``release_leaked`` returns exactly those references once a kernel is built. SYCL's own references
still hold both objects, so the kernel stays usable, and SYCL frees them when dpctl's objects go.
It acts only when it can see the leak, and otherwise leaves the counts as they were:

- the queue's backend is OpenCL and dpctl's version is at most 0.22.1 (a fixed dpctl is left alone);
- the ``cl_kernel`` comes from ``sycl::kernel::getNative`` in the very ``libsycl`` dpctl loaded
  (its path from ``/proc/self/maps``, opened with ``RTLD_NOLOAD``); for OpenCL that call retains it;
- the reference counts are those of the leak: kernel 3 (dpctl's, SYCL's, the one just taken),
  program 3 (dpctl's two, SYCL's). The counts were read here after each step of dpctl's build
  (each ``get_sycl_kernel`` adds one program reference; each ``getNative`` one kernel reference).

Otherwise only the reference ``getNative`` took is released. ``XEKERN_DRIVER_REFS=0`` turns it off.
"""
from __future__ import annotations

import ctypes
import os
import re
import threading
from typing import Optional, Tuple

from .. import knobs
from .loaded_libs import mapped

_CL_KERNEL_REFERENCE_COUNT = 0x1192
_CL_KERNEL_PROGRAM = 0x1194
_CL_PROGRAM_REFERENCE_COUNT = 0x1160
_GET_NATIVE = "_ZNK4sycl3_V16kernel9getNativeEv"  # sycl::_V1::kernel::getNative() const
# the counts right after dpctl's build plus our getNative: (kernel, program)
_LEAK_PATTERN = (3, 3)
_LAST_LEAKY_DPCTL = (0, 22, 1)

_lock = threading.Lock()
_api = None  # (getNative, OpenCL library) once looked up; False when unavailable
stats = {"returned": 0, "left": 0, "why_left": ""}


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _lookup():
    """getNative and the OpenCL API from the libraries already loaded, or None with the reason."""
    import dpctl
    if _version(dpctl.__version__) > _LAST_LEAKY_DPCTL:
        return None, f"dpctl {dpctl.__version__} is newer than the last one known to leak"
    paths = mapped("libsycl.so"), mapped("libOpenCL.so")
    if None in paths:
        return None, "libsycl or libOpenCL is not loaded"
    try:
        sycl = ctypes.CDLL(paths[0], mode=os.RTLD_NOLOAD)
        cl = ctypes.CDLL(paths[1], mode=os.RTLD_NOLOAD)
        get_native = getattr(sycl, _GET_NATIVE)
    except (OSError, AttributeError) as e:
        return None, f"cannot reach the driver API: {e}"
    get_native.restype, get_native.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    vp = ctypes.c_void_p
    for f in (cl.clGetKernelInfo, cl.clGetProgramInfo):
        f.restype, f.argtypes = ctypes.c_int32, [vp, ctypes.c_uint32, ctypes.c_size_t, vp, vp]
    for f in (cl.clReleaseKernel, cl.clReleaseProgram):
        f.restype, f.argtypes = ctypes.c_int32, [vp]
    return (get_native, cl), ""


def _info(query, handle, what: int) -> Optional[int]:
    """One integer or handle of ``clGet*Info`` (a cl_uint fills the low half), None on an error."""
    v = ctypes.c_uint64(0)
    return v.value if handle and query(handle, what, 8, ctypes.byref(v), None) == 0 else None


def _counts(cl, handle, program: bool = True):
    """(kernel references, the cl_program, its references) of ``handle``; the program's two are
    None when not asked for (or when the driver does not answer)."""
    kernel_refs = _info(cl.clGetKernelInfo, handle, _CL_KERNEL_REFERENCE_COUNT)
    prog = _info(cl.clGetKernelInfo, handle, _CL_KERNEL_PROGRAM) if program else None
    return kernel_refs, prog, _info(cl.clGetProgramInfo, prog, _CL_PROGRAM_REFERENCE_COUNT)


def _driver_api():
    """(getNative, the OpenCL library), looked up once; False when they are out of reach."""
    global _api
    with _lock:
        if _api is None:
            api, why = _lookup()
            _api = api or False
            stats["why_left"] = why
        return _api


def release_leaked(kernel, queue) -> bool:
    """Return the references dpctl leaked building ``kernel`` (a ``dpctl.program.SyclKernel``) for
    ``queue``; True when it did. Call it once, right after ``get_sycl_kernel``."""
    if not knobs.driver_refs() or "opencl" not in str(queue.sycl_device.backend).lower():
        return False
    api = _driver_api()
    handle = api and api[0](kernel.addressof_ref())  # +1 on the cl_kernel, ours to release
    if not handle:
        stats["left"] += 1
        return False
    cl = api[1]
    kernel_refs, program, program_refs = _counts(cl, handle)
    if (kernel_refs, program_refs) != _LEAK_PATTERN:
        cl.clReleaseKernel(handle)
        stats["left"] += 1
        stats["why_left"] = (f"reference counts (kernel, program) {(kernel_refs, program_refs)}, "
                             f"not the leak's {_LEAK_PATTERN}")
        return False
    for _ in range(2):  # ours and dpctl's clCreateKernel
        cl.clReleaseKernel(handle)
    for _ in range(2):  # dpctl's clCreateProgramWithIL and its get_native(bundle)
        cl.clReleaseProgram(program)
    stats["returned"] += 1
    return True


def reference_counts(kernel, program: bool = True) -> Optional[Tuple[int, Optional[int]]]:
    """(cl_kernel, cl_program) reference counts of a kernel built for an OpenCL queue, without the
    one this call takes and gives back; None when the driver API is out of reach. Ask for the
    program's count only while its bundle is alive (when SYCL's last reference to it has gone, the
    kernel alone keeps it, and OpenCL no longer answers for it)."""
    api = _driver_api()
    handle = api and api[0](kernel.addressof_ref())
    if not handle:
        return None
    kernel_refs, _, program_refs = _counts(api[1], handle, program)
    api[1].clReleaseKernel(handle)
    if kernel_refs is None or (program and program_refs is None):
        return None
    return kernel_refs - 1, program_refs
