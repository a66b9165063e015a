"""Which Intel GPU a device is, asked of its driver: the graphics IP version and the PCI device id.

Names do not tell GPUs apart (Lunar Lake, Arrow Lake H and Meteor Lake all call themselves
``Intel(R) Arc(TM) Graphics``), so ``target_for`` matches the architecture (``targets.identify``).
The driver is reached under SYCL: ``sycl::device::getNative`` of the device dpctl holds gives the
backend's own handle, then

- Level Zero: ``zeDeviceGetProperties`` with a ``ze_device_ip_version_ext_t`` chained in ``pNext``
  (Level Zero spec, "Device IP Version Extension"; ``deviceId`` is in the properties themselves);
- OpenCL: ``clGetDeviceInfo`` with ``CL_DEVICE_IP_VERSION_INTEL`` (0x4250) and ``CL_DEVICE_ID_INTEL``
  (0x4251) (Khronos registry, ``cl_intel_device_attribute_query``). ``getNative`` retains an OpenCL
  device (intel/llvm ``device_impl::getNative``); the reference is given back.

Only libraries the process has already loaded are used (``RTLD_NOLOAD``, paths from
``/proc/self/maps``): they are the ones SYCL got the handle from. Everything fails soft: without
the library, the symbol or an answer, ``query`` returns a ``DeviceArch`` with no numbers and the
reason, and the device is matched by name. The answer is kept per device.

    >>> from xekern.runtime import device, device_arch
    >>> device_arch.query(device.default_device())                   # doctest: +SKIP
    DeviceArch(ip_version=84017156, device_id=25760, source='level_zero')
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Dict, Optional

from ..targets import IpVersion
from .loaded_libs import opened

_GET_NATIVE = "_ZNK4sycl3_V16device9getNativeEv"   # sycl::_V1::device::getNative() const
ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3
ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT = 0x1000F
CL_DEVICE_IP_VERSION_INTEL = 0x4250
CL_DEVICE_ID_INTEL = 0x4251

_lock = threading.Lock()
_known: Dict[object, "DeviceArch"] = {}


class ZeDeviceIpVersionExt(ctypes.Structure):
    """``ze_device_ip_version_ext_t`` (ze_api.h)."""

    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("ipVersion", ctypes.c_uint32)]


class ZeDeviceProperties(ctypes.Structure):
    """``ze_device_properties_t`` (ze_api.h, Level Zero 1.x)."""

    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("type", ctypes.c_uint32),
                ("vendorId", ctypes.c_uint32), ("deviceId", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("subdeviceId", ctypes.c_uint32), ("coreClockRate", ctypes.c_uint32),
                ("maxMemAllocSize", ctypes.c_uint64), ("maxHardwareContexts", ctypes.c_uint32),
                ("maxCommandQueuePriority", ctypes.c_uint32), ("numThreadsPerEU", ctypes.c_uint32),
                ("physicalEUSimdWidth", ctypes.c_uint32), ("numEUsPerSubslice", ctypes.c_uint32),
                ("numSubslicesPerSlice", ctypes.c_uint32), ("numSlices", ctypes.c_uint32),
                ("timerResolution", ctypes.c_uint64), ("timestampValidBits", ctypes.c_uint32),
                ("kernelTimestampValidBits", ctypes.c_uint32), ("uuid", ctypes.c_uint8 * 16),
                ("name", ctypes.c_char * 256)]


@dataclass(frozen=True)
class DeviceArch:
    """What a device's driver said about its architecture; ``source`` is the backend that answered,
    or why none did (then both numbers are None)."""

    ip_version: Optional[int]    # raw uint32 (``targets.IpVersion.decode``); None: not reported
    device_id: Optional[int]     # PCI device id
    source: str

    @property
    def ip(self) -> Optional[IpVersion]:
        return IpVersion.of(self.ip_version)


def read_level_zero(ze, handle: int) -> DeviceArch:
    """IP version and device id of a ``ze_device_handle_t`` through ``ze`` (the loader, or a stand-in
    with ``zeDeviceGetProperties(handle, address of ze_device_properties_t)``)."""
    ip = ZeDeviceIpVersionExt(ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, None, 0)
    props = ZeDeviceProperties()
    props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES
    props.pNext = ctypes.addressof(ip)
    rc = ze.zeDeviceGetProperties(handle, ctypes.addressof(props))
    if rc != 0:
        return DeviceArch(None, None, f"zeDeviceGetProperties returned 0x{rc & 0xFFFFFFFF:x}")
    # a driver without the extension leaves ipVersion 0 (IpVersion.of: not reported)
    return DeviceArch(ip.ipVersion or None, props.deviceId or None, "level_zero")


def read_opencl(cl, handle: int) -> DeviceArch:
    """IP version and device id of a ``cl_device_id`` through ``cl`` (the ICD loader, or a stand-in
    with ``clGetDeviceInfo(device, param, size, address, size_ret)``); a query the driver does not
    answer (not an Intel device, no ``cl_intel_device_attribute_query``) gives None."""
    def uint(param: int) -> Optional[int]:
        v = ctypes.c_uint32(0)
        if cl.clGetDeviceInfo(handle, param, 4, ctypes.addressof(v), None) != 0:
            return None
        return v.value or None
    ip, dev = uint(CL_DEVICE_IP_VERSION_INTEL), uint(CL_DEVICE_ID_INTEL)
    return DeviceArch(ip, dev, "opencl" if ip or dev else "clGetDeviceInfo answered neither query")


def _native_handle(device) -> int:
    get_native = getattr(opened("libsycl.so"), _GET_NATIVE)
    get_native.restype, get_native.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    handle = get_native(device.addressof_ref())
    if not handle:
        raise OSError("sycl::device::getNative gave no handle")
    return handle


def _ask(device) -> DeviceArch:
    backend = str(device.backend).lower()
    if "level_zero" in backend:
        ze = opened("libze_loader.so")
        ze.zeDeviceGetProperties.restype = ctypes.c_int32
        ze.zeDeviceGetProperties.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        return read_level_zero(ze, _native_handle(device))
    if "opencl" in backend:
        cl = opened("libOpenCL.so")
        cl.clGetDeviceInfo.restype = ctypes.c_int32
        cl.clGetDeviceInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_void_p]
        cl.clReleaseDevice.restype, cl.clReleaseDevice.argtypes = ctypes.c_int32, [ctypes.c_void_p]
        handle = _native_handle(device)
        try:
            return read_opencl(cl, handle)
        finally:
            cl.clReleaseDevice(handle)   # getNative's reference
    return DeviceArch(None, None, f"no architecture query for backend {device.backend}")


def query(device) -> DeviceArch:
    """The architecture of a dpctl ``SyclDevice`` as its driver reports it (kept per device); never
    raises: without an answer both numbers are None and ``source`` says why."""
    hit = _known.get(device)
    if hit is not None:
        return hit
    try:
        found = _ask(device)
    except Exception as e:   # a missing library or symbol, a driver error: match by name instead
        found = DeviceArch(None, None, f"{type(e).__name__}: {e}")
    with _lock:
        _known[device] = found
    return found
