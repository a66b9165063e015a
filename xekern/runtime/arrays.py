"""Device arrays and how launch arguments become kernel arguments.

Anything with ``__sycl_usm_array_interface__`` (dpnp arrays, dpctl USM memory, ``xk.DeviceArray``)
is passed zero-copy, and so is a DLPack producer on a oneAPI device (``runtime/dlpack.py`` wraps it).
NumPy arrays are accepted too: each is copied to the device before the
launch and back after it (one allocation and two copies per array per launch, and the launch
waits for the copy back — fine for tests, costly in a loop; use ``xk.to_device`` there).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .. import knobs
from ..errors import LaunchError
from ..ir import types as T
from . import device as dev, guards


class DeviceArray:
    """A minimal USM array: ``shape``, ``dtype``, ``strides`` (bytes) and device memory.

    ``xk.to_device(np_array)`` makes one; ``a.numpy()`` copies it back. It exposes
    ``__sycl_usm_array_interface__``, so dpnp and dpctl accept it too. With ``XEKERN_DEBUG=1`` its
    memory has guard regions on both sides (``runtime/guards.py``), checked after each launch.
    """

    def __init__(self, shape, dtype, queue=None, strides=None, _mem=None, _offset=0):
        self.queue = queue if queue is not None else dev.default_queue()
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        self.dtype = np.dtype(dtype)
        nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        if strides is None:
            strides, acc = [], self.dtype.itemsize
            for s in reversed(self.shape):
                strides.append(acc)
                acc *= max(s, 1)
            strides = tuple(reversed(strides))
        self.strides = tuple(strides)
        self._spec = None  # launch classification, filled in by the first launch
        self._guard = 0    # bytes of guard before and after the data (XEKERN_DEBUG=1)
        if _mem is None and knobs.debug():
            _mem, _offset = guards.allocate(nbytes, self.queue)
            self._guard = _offset
        elif _mem is None:
            _mem = dev.dpctl().memory.MemoryUSMDevice(max(nbytes, 1), queue=self.queue)
        self._mem = _mem
        self._offset = _offset

    def _data(self):
        """The dpctl memory of the data (a view past the guard, when there is one)."""
        return self._mem if not self._offset else dev.memory_view(self._mem, self._offset, max(self.nbytes, 1),
                                                                    self.queue)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element (NumPy's): host code written for NumPy arrays, ``x.strides[0] //
        x.itemsize``, takes a ``DeviceArray`` too."""
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_contiguous(self) -> bool:
        return self.strides == DeviceArray._c_strides(self.shape, self.dtype.itemsize)

    @staticmethod
    def _c_strides(shape, itemsize):
        return tuple(st * itemsize for st in c_strides(shape))

    @property
    def __sycl_usm_array_interface__(self):
        return {"data": (self._mem._pointer + self._offset, False), "shape": self.shape,
                "strides": tuple(s // self.dtype.itemsize for s in self.strides), "typestr": self.dtype.str,
                "version": 1, "syclobj": self.queue}

    def numpy(self) -> np.ndarray:
        """A NumPy copy (waits for kernels queued before)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            if not self.is_contiguous or self._offset != self._guard:
                raise LaunchError("numpy() of a strided view is not supported; copy the base array")
            self.queue.wait()
            self.queue.memcpy(out.reshape(-1).view(np.uint8), self._data(), self.nbytes)
        return out

    asnumpy = numpy

    def copy_from(self, host: np.ndarray) -> "DeviceArray":
        host = np.ascontiguousarray(host, dtype=self.dtype)
        if host.shape != self.shape:
            raise LaunchError(f"copy_from: shape {host.shape} does not match {self.shape}")
        if self.nbytes:
            self.queue.memcpy(self._data(), host.reshape(-1).view(np.uint8), self.nbytes)
        return self

    def fill_bytes(self, byte: int) -> "DeviceArray":
        host = np.full(self.nbytes, byte, np.uint8)
        if self.nbytes:
            self.queue.memcpy(self._data(), host, self.nbytes)
        return self

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.queue.sycl_device.name!r})"


def to_device(a, dtype=None, queue=None, device=None) -> DeviceArray:
    """Copy a NumPy array (or anything ``np.asarray`` takes) to the device."""
    host = np.ascontiguousarray(a, dtype=dtype)
    q = queue if queue is not None else dev.queue_for(device)
    return DeviceArray(host.shape, host.dtype, q).copy_from(host)


def empty(shape, dtype=np.float32, queue=None, device=None) -> DeviceArray:
    """An uninitialized device array."""
    q = queue if queue is not None else dev.queue_for(device)
    return DeviceArray(shape, dtype, q)


def dtype_of(npdt, name: str) -> T.DType:
    d = T.dtype_from_numpy(npdt)
    if d is None:
        raise LaunchError(f"argument '{name}': arrays of {np.dtype(npdt)} are not supported (supported: "
                          f"bool, int8-64, uint8-64, float16, bfloat16 (ml_dtypes), float32, float64)")
    return d


def c_strides(shape) -> Tuple[int, ...]:
    """Row-major (C) strides in elements of ``shape`` (empty dimensions count as 1)."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def usm_info(obj, name: str) -> Tuple[int, T.DType, object, tuple, tuple]:
    """(pointer to the first element, dtype, syclobj, shape, strides in elements) of a USM array argument."""
    try:
        iface = obj.__sycl_usm_array_interface__
        dt = np.dtype(iface["typestr"])
        ptr = iface["data"][0] + int(iface.get("offset") or 0) * dt.itemsize
    except Exception as e:
        raise LaunchError(f"argument '{name}': its __sycl_usm_array_interface__ is malformed ({e})") from None
    if iface["typestr"] in ("|V2", "<V2") and hasattr(obj, "dtype") and str(obj.dtype) == "bfloat16":
        dt = np.dtype(obj.dtype)
    shape = tuple(iface.get("shape") or ())
    strides = iface.get("strides")
    if strides is None:
        strides = c_strides(shape)
    return ptr, dtype_of(dt, name), iface.get("syclobj"), shape, tuple(strides)


def context_of(syclobj):
    if syclobj is None:
        return None
    ctx = getattr(syclobj, "sycl_context", None)
    return ctx if ctx is not None else syclobj
