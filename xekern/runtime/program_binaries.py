"""The OpenCL driver's build of a kernel, kept in the disk cache so that a new process skips it.

The Intel OpenCL CPU runtime keeps no build between processes, and dpctl 0.22 builds programs
only from SPIR-V or OpenCL C: every process paid the driver's compile again (0.2 to 1.7 s for the
Triton tutorials, ``benchmarks/first_call.py``). The rest is reached through ctypes in the very
libraries dpctl loaded (``loaded_libs``), nothing compiled:

* ``save``, right after dpctl built a program from SPIR-V and while its ``SyclProgram`` still
  holds the ``cl_program``: ``sycl::kernel::getNative`` gives the ``cl_kernel``, its program's
  ``CL_PROGRAM_BINARIES`` the driver's binary, stored as a disk cache entry (``.xkb`` beside the
  kernels' ``.xkc``; checksummed, written atomically: ``cache.DiskCache``) under a key of the SPIR-V, the build options and the device:
  its name, vendor, driver version and, for a CPU device, the host CPU's model and flags (the
  binary is x86 code for that CPU).
* ``load``: ``clCreateProgramWithBinary`` on the queue's native context and device and
  ``clBuildProgram``, then SYCL's ``detail::make_kernel_bundle`` (what dpctl calls for OpenCL
  interop; its ``kernel_bundle`` comes back through a hidden pointer, allocated with C++'s
  ``operator new`` because dpctl deletes it) and dpctl's C API ``SyclProgram_Make`` (exported in
  the module's ``__pyx_capi__``) give the ``SyclProgram`` dpctl would have built. Its
  ``get_sycl_kernel`` and ``driver_refs.release_leaked`` then run as after a SPIR-V build (the
  reference counts come out the same: the program reference ``clCreateProgramWithBinary`` gave is
  the one release_leaked returns in place of dpctl's ``clCreateProgramWithIL`` one).

Only OpenCL devices (Level Zero drivers keep their own cache). Anything unexpected (a library or
symbol missing, an error code, a binary the driver refuses) makes ``load`` return None and the
SPIR-V build runs as before. ``XEKERN_DRIVER_BINARIES=0`` or ``XEKERN_CACHE=0`` turns it off.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import threading
from typing import Optional

from .. import knobs
from .cache import disk_cache, stats
from .loaded_libs import opened

_VERSION = b"xekern-driver-binary-1"
_CL_KERNEL_PROGRAM = 0x1194
_CL_PROGRAM_BINARY_SIZES, _CL_PROGRAM_BINARIES = 0x1165, 0x1166
_EXECUTABLE, _OPENCL = 2, 1   # sycl::bundle_state::executable, sycl::backend::opencl (char enums)
_MAKE_BUNDLE = "_ZN4sycl3_V16detail18make_kernel_bundleEmRKNS0_7contextEbNS0_12bundle_stateENS0_7backendE"
_NATIVE = {"kernel": "_ZNK4sycl3_V16kernel9getNativeEv", "context": "_ZNK4sycl3_V17context9getNativeEv",
           "device": "_ZNK4sycl3_V16device9getNativeEv"}

_lock = threading.Lock()
_api = None   # the functions below once looked up; False when out of reach


class _Api:
    def __init__(self):
        import dpctl.program._program as program
        vp = ctypes.c_void_p
        sycl, cl = opened("libsycl.so"), opened("libOpenCL.so")
        self.native = {}
        for what, symbol in _NATIVE.items():
            f = getattr(sycl, symbol)
            f.restype, f.argtypes = vp, [vp]
            self.native[what] = f
        self.make_bundle = getattr(sycl, _MAKE_BUNDLE)
        self.make_bundle.restype = None
        self.make_bundle.argtypes = [vp, ctypes.c_ulong, vp, ctypes.c_bool, ctypes.c_int, ctypes.c_int]
        self.new = ctypes.CDLL("libstdc++.so.6")._Znwm   # operator new(size_t)
        self.new.restype, self.new.argtypes = vp, [ctypes.c_size_t]
        self.delete_bundle = opened("libDPCTLSyclInterface.so").DPCTLKernelBundle_Delete
        self.delete_bundle.restype, self.delete_bundle.argtypes = None, [vp]
        for f in (cl.clGetKernelInfo, cl.clGetProgramInfo):
            f.restype, f.argtypes = ctypes.c_int32, [vp, ctypes.c_uint32, ctypes.c_size_t, vp, vp]
        cl.clCreateProgramWithBinary.restype = vp
        cl.clCreateProgramWithBinary.argtypes = [vp, ctypes.c_uint32, vp, vp, vp, vp, vp]
        cl.clBuildProgram.restype = ctypes.c_int32
        cl.clBuildProgram.argtypes = [vp, ctypes.c_uint32, vp, ctypes.c_char_p, vp, vp]
        for f in (cl.clReleaseKernel, cl.clReleaseProgram, cl.clReleaseContext, cl.clReleaseDevice):
            f.restype, f.argtypes = ctypes.c_int32, [vp]
        self.cl = cl
        capsule = program.__pyx_capi__["SyclProgram_Make"]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = vp, [ctypes.py_object, ctypes.c_char_p]
        self.program_make = ctypes.PYFUNCTYPE(ctypes.py_object, vp)(get_pointer(capsule, get_name(capsule)))


def _reach() -> Optional[_Api]:
    global _api
    with _lock:
        if _api is None:
            try:
                _api = _Api()
            except (OSError, AttributeError, KeyError, ImportError, ValueError):
                _api = False
        return _api or None


def _binaries():
    return disk_cache(".xkb", "binary_writes")


def enabled(queue) -> bool:
    return knobs.driver_binaries() and "opencl" in str(queue.sycl_device.backend).lower() and \
        not _binaries().disabled


def key(queue, spirv: bytes, copts: str) -> str:
    d = queue.sycl_device
    h = hashlib.sha256(_VERSION)
    for part in (d.name, d.vendor, d.driver_version, str(d.backend), copts, _host_cpu() if d.is_cpu else ""):
        h.update(str(part).encode() + b"\0")
    h.update(spirv)
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _host_cpu() -> str:
    """The host CPU's model and feature flags (a CPU device's binary is code for them; read once)."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return "unknown"


def save(queue, spirv: bytes, copts: str, kernel) -> None:
    """Keep the driver's binary of ``kernel`` (just built from ``spirv``; its program must still be
    held by dpctl's ``SyclProgram``)."""
    api = _reach()
    if api is None:
        return
    cl = api.cl
    handle = api.native["kernel"](kernel.addressof_ref())   # +1 on the cl_kernel, ours to release
    if not handle:
        return
    try:
        program = ctypes.c_void_p()
        size = ctypes.c_size_t()
        if cl.clGetKernelInfo(handle, _CL_KERNEL_PROGRAM, 8, ctypes.byref(program), None) != 0 or \
                cl.clGetProgramInfo(program, _CL_PROGRAM_BINARY_SIZES, 8, ctypes.byref(size), None) != 0 or \
                not size.value:
            return
        data = ctypes.create_string_buffer(size.value)
        where = (ctypes.c_void_p * 1)(ctypes.cast(data, ctypes.c_void_p))
        if cl.clGetProgramInfo(program, _CL_PROGRAM_BINARIES, 8, where, None) != 0:
            return
    finally:
        cl.clReleaseKernel(handle)
    d = queue.sycl_device
    _binaries().put(key(queue, spirv, copts), {"kind": "driver binary", "device": d.name,
                                                "driver": d.driver_version}, data.raw)


def load(queue, spirv: bytes, copts: str):
    """dpctl's ``SyclProgram`` for ``spirv`` from a kept binary, or None (none kept, or any step
    failed: the caller builds from SPIR-V)."""
    entry = _binaries().get(key(queue, spirv, copts))
    api = _reach() if entry is not None else None
    if api is None:
        return None
    binary = entry[1]
    cl = api.cl
    context_ref = queue.sycl_context.addressof_ref()
    context = api.native["context"](context_ref)   # (OpenCL interop retains what it hands out)
    device = api.native["device"](queue.sycl_device.addressof_ref())
    if not context or not device:
        return None
    try:
        devices = (ctypes.c_void_p * 1)(device)
        sizes = (ctypes.c_size_t * 1)(len(binary))
        binaries = (ctypes.c_char_p * 1)(binary)
        status, err = ctypes.c_int32(), ctypes.c_int32()
        program = cl.clCreateProgramWithBinary(context, 1, devices, sizes, binaries, ctypes.byref(status),
                                               ctypes.byref(err))
        if not program or err.value or status.value:
            stats["binaries_refused"] += 1
            return None
        if cl.clBuildProgram(program, 1, devices, copts.encode(), None, None) != 0:
            cl.clReleaseProgram(program)
            stats["binaries_refused"] += 1
            return None
        bundle = api.new(16)   # a sycl::kernel_bundle: one std::shared_ptr
        api.make_bundle(bundle, program, context_ref, False, _EXECUTABLE, _OPENCL)
        try:
            made = api.program_make(bundle)   # (copies the bundle)
        finally:
            api.delete_bundle(bundle)
    finally:
        cl.clReleaseContext(context)
        cl.clReleaseDevice(device)
    stats["driver_binaries"] += 1
    return made
