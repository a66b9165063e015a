"""Zero-copy DLPack arguments on a oneAPI device (``__dlpack_device__()`` is ``(kDLOneAPI, id)``).

A producer that speaks only DLPack (no ``__sycl_usm_array_interface__``) is asked for a capsule
(``x.__dlpack__(max_version=(1, 0), stream=queue)``, else the legacy ``x.__dlpack__()``). The
capsule's ``DLManagedTensor`` / ``DLManagedTensorVersioned`` is read with ctypes and becomes a
``DLPackArray``: an internal object exposing ``__sycl_usm_array_interface__`` over the same
memory, so the launch passes it like a dpnp array.

The device id is the index of the device among ``dpctl.get_devices()`` (how dpctl and dpnp
number kDLOneAPI devices: ``dpctl.SyclDevice(str(id))``), and the memory must be a USM
allocation of that device's platform default context (what dpnp exports); dpctl's USM pointer
query checks it.

Ownership, per the DLPack protocol: once the tensor is read, the capsule is renamed
``used_dltensor`` (``used_dltensor_versioned``) so its destructor leaves the tensor alone, and
xekern calls the tensor's ``deleter`` exactly once, when the ``DLPackArray`` dies. The launch
keeps it alive until the kernel's event completes (``SyclQueue._submit_keep_args_alive``). The
deleter is called with the GIL held (``ctypes.PYFUNCTYPE``): producers' deleters drop Python
references.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

import numpy as np

from ..errors import LaunchError
from . import device as dev
from .arrays import c_strides

KDL_ONEAPI = 14
_FLAG_READ_ONLY = 1


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class _DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class _DLManagedTensorVersioned(Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", c_uint64), ("dl_tensor", _DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype, _api.PyCapsule_IsValid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype, _api.PyCapsule_GetPointer.argtypes = c_void_p, [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype, _api.PyCapsule_SetName.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_DELETER = ctypes.PYFUNCTYPE(None, c_void_p)  # PYFUNCTYPE keeps the GIL during the call

# DLPack type codes -> NumPy kind letter (kDLInt, kDLUInt, kDLFloat, kDLBool); kDLBfloat below
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}


def _npdtype(dt: _DLDataType, name: str, what: str) -> np.dtype:
    if dt.lanes != 1:
        raise LaunchError(f"argument '{name}': {what} has vector elements ({dt.lanes} lanes); pass scalar elements")
    if dt.code == 4 and dt.bits == 16:
        try:
            import ml_dtypes
        except ImportError:
            raise LaunchError(f"argument '{name}': {what} holds bfloat16; install ml_dtypes to pass it") from None
        return np.dtype(ml_dtypes.bfloat16)
    kind = _KINDS.get(dt.code)
    if kind is None or dt.bits % 8:
        raise LaunchError(f"argument '{name}': {what} has DLPack dtype (code {dt.code}, {dt.bits} bits), "
                          f"which xekern does not support (bool, int8-64, uint8-64, float16, bfloat16, float32, "
                          f"float64)")
    return np.dtype(f"{kind}{dt.bits // 8}") if kind != "b" else np.dtype(np.bool_)


def _dense(shape, strides) -> bool:
    """C- or Fortran-contiguous (the rule for NumPy arguments); size-1 dimensions may have any stride."""
    keep = [(s, st) for s, st in zip(shape, strides) if s != 1]
    sh, st = [s for s, _ in keep], [t for _, t in keep]
    return st == list(c_strides(sh)) or st[::-1] == list(c_strides(sh[::-1]))


class DLPackArray:
    """One DLPack tensor taken over from a capsule; frees it (calls its deleter) when it dies."""

    def __init__(self, managed, deleter, owner, queue, shape, strides, dtype, ptr, read_only):
        self._managed = managed     # address of the DLManagedTensor(Versioned)
        self._deleter = deleter     # its deleter (or None)
        self._owner = owner         # the producer: alive as long as its memory is used
        self.queue = queue
        self.shape, self.strides, self.dtype = shape, strides, dtype   # strides in elements
        self.ptr, self.read_only = ptr, read_only

    @property
    def __sycl_usm_array_interface__(self):
        return {"data": (self.ptr, self.read_only), "shape": self.shape, "strides": self.strides,
                "typestr": self.dtype.str, "version": 1, "syclobj": self.queue}

    def release(self) -> None:
        """Call the tensor's deleter (once)."""
        managed, deleter = self._managed, self._deleter
        self._managed = self._deleter = None
        if managed and deleter:
            _DELETER(deleter)(managed)

    def __del__(self):
        self.release()


def _take(capsule, name: str, what: str):
    """(managed tensor address, DLTensor, deleter, read_only, used name) from a fresh capsule."""
    if _api.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        addr = _api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        m = _DLManagedTensorVersioned.from_address(addr)
        if m.version.major != 1:  # not renamed: the capsule's destructor frees it
            raise LaunchError(f"argument '{name}': {what} gave a DLPack {m.version.major}.{m.version.minor} "
                              f"tensor; xekern reads DLPack 1.x")
        return addr, m.dl_tensor, m.deleter, bool(m.flags & _FLAG_READ_ONLY), b"used_dltensor_versioned"
    if _api.PyCapsule_IsValid(capsule, b"dltensor"):
        addr = _api.PyCapsule_GetPointer(capsule, b"dltensor")
        m = _DLManagedTensor.from_address(addr)
        return addr, m.dl_tensor, m.deleter, False, b"used_dltensor"
    raise LaunchError(f"argument '{name}': {what}.__dlpack__() returned {type(capsule).__name__}, not an unused "
                      f"DLPack capsule ('dltensor' or 'dltensor_versioned')")


def _sycl_device(dev_id: int, name: str, what: str):
    dp = dev.dpctl()
    devices = dp.get_devices()
    if not 0 <= dev_id < len(devices):
        raise LaunchError(f"argument '{name}': {what} is on oneAPI device {dev_id}, but dpctl sees "
                          f"{len(devices)} device(s) (`python -m xekern devices` lists them)")
    return devices[dev_id]


def _queue_on(device):
    """xekern's queue for ``device`` if it uses the platform default context, else a new one that does."""
    ctx = device.sycl_platform.default_context
    q = dev.queue_for(device)
    if q.sycl_context == ctx:
        return q
    return dev.dpctl().SyclQueue(ctx, device, property=["in_order", "enable_profiling"])


def from_oneapi(v, name: str, dev_id: int) -> DLPackArray:
    """Take the oneAPI DLPack producer ``v`` (argument ``name``) zero-copy."""
    what = type(v).__name__
    device = _sycl_device(int(dev_id), name, what)
    queue = _queue_on(device)
    try:
        try:
            capsule = v.__dlpack__(stream=queue, max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0 / the 2023 array API
            capsule = v.__dlpack__(stream=queue)
    except LaunchError:
        raise
    except Exception as e:
        raise LaunchError(f"argument '{name}': {what}.__dlpack__() failed ({type(e).__name__}: {e})") from None
    addr, t, deleter, read_only, used = _take(capsule, name, what)
    if _api.PyCapsule_SetName(capsule, used) != 0:
        raise LaunchError(f"argument '{name}': could not take over the DLPack capsule of {what}")
    # from here on xekern owns the tensor: the DLPackArray's deleter call frees it, on every path
    arr = DLPackArray(addr, deleter, v, queue, (), (), np.dtype(np.uint8), 0, read_only)
    if t.device.device_type != KDL_ONEAPI or t.device.device_id != int(dev_id):
        raise LaunchError(f"argument '{name}': {what}.__dlpack__() gave a tensor on DLPack device "
                          f"({t.device.device_type}, {t.device.device_id}), but __dlpack_device__() said "
                          f"(14, {int(dev_id)})")
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = tuple(int(t.strides[i]) for i in range(t.ndim)) if t.strides else c_strides(shape)
    arr.dtype = _npdtype(t.dtype, name, what)
    arr.shape, arr.strides = shape, strides
    arr.ptr = (t.data or 0) + int(t.byte_offset)
    if not _dense(shape, strides):
        raise LaunchError(f"argument '{name}': {what} is a non-contiguous DLPack view (shape {shape}, strides "
                          f"{strides} in elements); kernels index its memory flat: pass a contiguous copy")
    if int(np.prod(shape, dtype=np.int64)) and t.data:
        _check_pointer(arr, device, name, what)
    return arr


def _check_pointer(arr: DLPackArray, device, name: str, what: str) -> None:
    """The data pointer must be USM memory of ``device``'s default context."""
    try:
        kind = dev.dpctl().memory.as_usm_memory(arr).get_usm_type()
    except Exception as e:
        kind = f"unknown ({type(e).__name__}: {e})"
    if kind not in ("device", "shared", "host"):
        raise LaunchError(f"argument '{name}': the memory of {what} is not a USM allocation of the default SYCL "
                          f"context of {device.name!r} (USM type {kind}); xekern passes only such memory "
                          f"zero-copy")


def keep_alive(queue, held, event) -> None:
    """Keep the DLPack tensors of a launch (and their producers) alive until ``event`` completes."""
    keep = getattr(queue, "_submit_keep_args_alive", None)
    if keep is not None:
        keep(tuple(held), [event])
    else:  # a dpctl without it: wait here rather than free memory a kernel may still use
        event.wait()
