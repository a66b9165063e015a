"""``JITFunction``, what ``@xk.jit`` makes of a kernel: binding launch arguments, specializing, caching,
and launching kernels.

``kernel[grid](*args, **constexprs, num_subgroups=, queue=, device=, target=)`` binds the
arguments, computes the specialization key (argument dtypes, ints 32/64-bit, divisible by 16 and
equal to 1, constexpr values, options), finds the compiled kernel in memory, then on disk, then
compiles it, and submits it to a SYCL queue. The launch returns a ``Launch`` (the SYCL event and
the compiled kernel with its ``asm``); NumPy arguments are copied in and out around it.
"""
from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import inspect
import os
import sys
import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import knobs
from ..errors import CompilationError, EmitterWarning, LaunchError
from ..frontend.compile import MULTIPLES, ConstArg, TupleArg
from ..ir import FuncOp, print_func, types as T
from ..ir.types import PointerType
from ..language.core import constexpr
from ..lowering import emitters
from ..lowering.emitters import Driver
from ..compiler import compile_kernel
from ..lowering.pipeline import Asm, Compiled, Options
from ..targets import Target, get_target
from ..version import __version__
from . import (arrays, device as dev, dlpack, driver_probe, extents, guards, launch_memo, surfaces, tuple_args,
               usm_args, writes)
from .launch import Launch, check_grid
from .cache import compiler_fingerprint, disk_cache, stats

# @xk.jit(level=...) -> the IR level the frontend builds (func.attrs["level"])
LEVELS = {"workgroup": "wg", "subgroup": "sg", "lane": "lane"}
LAUNCH_OPTIONS = ("num_subgroups", "queue", "device", "target", "debug", "grf_mode", "opt_level", "emitter",
                  "enable_fp_fusion")
_UNSET = object()
_OPTION_SET = frozenset(LAUNCH_OPTIONS)
_NO_OVERRIDES: Dict[str, Any] = {}
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


class Param:
    __slots__ = ("name", "index", "is_constexpr", "default", "has_default")

    def __init__(self, p: inspect.Parameter, index: int):
        self.name = p.name
        self.index = index
        ann = p.annotation
        self.is_constexpr = ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr")
        self.has_default = p.default is not inspect.Parameter.empty
        self.default = p.default if self.has_default else None


class CompiledKernel:
    """One specialization: its SPIR-V, launch facts, per-queue driver kernels, and ``asm``."""

    def __init__(self, name: str, spirv: bytes, meta: dict, asm: Optional[Asm], rebuild):
        self.name = name
        self.spirv = spirv
        self.meta = meta
        self.workgroup_size = meta["workgroup_size"]
        self.slm_bytes = meta.get("slm_bytes", 0)
        self.grf_mode = meta.get("grf_mode")  # asked of the GPU driver at build (lowering/grf.py)
        self.extents = meta.get("extents") or ()  # descriptor shapes checked against buffers at launch
        self.surfaces = meta.get("surfaces") or ()  # 2D block surface checks a launch answers (surfaces.py)
        self.writes = meta.get("writes") or {}  # parameters the kernel stores to: refused if read-only
        self._asm = asm
        self._rebuild = rebuild
        self._kernels: Dict[Any, Any] = {}
        self._launcher = None  # (jit, key, launch options) once warmup returned this kernel

    def bind_launcher(self, jit: "JITFunction", key, overrides: Dict[str, Any]) -> None:
        self._launcher = (jit, key, overrides)

    def __getitem__(self, grid):
        """Launch this specialization as Triton's ``CompiledKernel`` does: every parameter positionally,
        constexprs included. ``k = f.warmup(x, n, BLOCK=64, grid=(1,)); k[(g,)](x, n, 64)``"""
        if self._launcher is None:
            raise LaunchError(f"kernel '{self.name}' can be launched by grid only when it came from "
                              f"JITFunction.warmup(); launch the @xk.jit function instead")
        jit, key, overrides = self._launcher
        return lambda *args, **kwargs: jit.run_compiled(self, key, overrides, grid, args, kwargs)

    @property
    def asm(self) -> Asm:
        """Stage name -> text: ``xegpu``, ``layout``, ``sg``, ``inst``, ``lane``, ``llir``, ``spirv``."""
        if self._asm is None:  # loaded from disk: redo the IR stages on demand
            self._asm = self._rebuild().asm
        return self._asm

    def release(self) -> None:
        """Drop the driver kernels (and programs) built for this specialization; it rebuilds on next use."""
        self._kernels.clear()

    def kernel_for(self, queue):
        """The driver's kernel for ``queue`` (built, and checked against the device, on first use)."""
        k = self._kernels.get(id(queue))
        if k is None:
            d = queue.sycl_device
            if self.workgroup_size > d.max_work_group_size:
                raise LaunchError(f"kernel '{self.name}' needs workgroups of {self.workgroup_size} work items; "
                                  f"{d.name!r} allows {d.max_work_group_size}: lower num_subgroups")
            if self.slm_bytes > d.local_mem_size:
                raise LaunchError(f"kernel '{self.name}' needs {self.slm_bytes} bytes of shared local memory; "
                                  f"{d.name!r} has {d.local_mem_size}")
            k = dev.build_kernel(queue, self.spirv, self.name, self.grf_mode)
            self._kernels[id(queue)] = (k, queue)  # the queue is kept alive, so its id stays unique
            return k
        return k[0]


# ---- arguments -------------------------------------------------------------------------------

class _Copies(list):
    """A launch's argument copies; ``written``: ids of the values passed to parameters the kernel may
    write (``CompiledKernel.writes``)."""

    def __init__(self, written=frozenset()):
        super().__init__()
        self.written = written


class _NumpyCopy:
    """A NumPy argument copied to the device for one launch (and back after it), between two guard
    regions that the launch checks before copying back (``runtime/guards.py``). The array and its
    guards go to the device and come back in one copy each. An array the kernel only reads goes
    without guards and does not come back."""

    __slots__ = ("host", "name", "buf", "arg")

    def __init__(self, host: np.ndarray, name: str, queue, written: bool = True):
        self.host, self.name = host, name
        # 64-byte aligned, as 2D block messages want their base (runtime/surfaces.address counts on it)
        self.buf = guards.acquire(host.nbytes, queue, guarded=written)
        self.arg = self.buf.arg
        # the bytes in memory order (C or Fortran): the kernel sees the array's own layout
        data = host.ravel(order="K").view(np.uint8)
        if written:
            guards.fill(self.buf, data, queue)
        elif host.nbytes:
            self.buf.mem.copy_from_host(data)

    @property
    def writeable(self) -> bool:
        return self.host.flags.writeable

    def finish(self, kernel: str, writes: Dict[str, str], queue) -> Optional[object]:
        """The queue to copy the array's device bytes back with (None: the kernel only read it, its
        buffer is released); LaunchError if the kernel wrote outside it (its guards changed): the
        guards alone are read, the data later by ``copy_back``."""
        b = self.buf
        if not b.g:
            guards.release(b)
            return None
        bad = guards.overrun(b.mem, b.g, b.nbytes, queue)
        if bad is not None:
            guards.release(b)
            raise guards.error(kernel, self.name, "a NumPy array", self.host.dtype, self.host.size, *bad,
                               writes.get(self.name, ""), unchanged=True)
        return queue

    def copy_back(self, queue) -> None:
        """The device bytes straight into the array (a view of it: C- or Fortran-contiguous), then
        the buffer released (the launch is over; the next one rewrites it whole)."""
        if queue is None:
            return
        b = self.buf
        if self.host.nbytes and self.host.flags.writeable:
            queue.memcpy(self.host.ravel(order="K").view(np.uint8), dev.memory_view(b.mem, b.g, b.nbytes, queue),
                         b.nbytes)
        guards.release(b)


class _DeviceGuard:
    """A device array with guards (made under XEKERN_DEBUG=1): checked after the launch like a
    NumPy argument's copy."""

    __slots__ = ("array", "name")
    writeable = True

    def __init__(self, array: arrays.DeviceArray, name: str):
        self.array, self.name = array, name

    def finish(self, kernel: str, writes: Dict[str, str], queue) -> None:
        a = self.array
        bad = guards.overrun(a._mem, a._guard, a.nbytes, queue)
        if bad is not None:
            guards.refill(a._mem, a._guard, a.nbytes, queue)
            raise guards.error(kernel, self.name, "a device array", a.dtype, a.size, *bad, writes.get(self.name, ""),
                               unchanged=False)

    def copy_back(self, data) -> None:
        pass


ONE = ("1",)   # the key part of an integer argument equal to 1 (compiled as the constant, not passed)


def _int_part(v: int, name: str):
    """(key part, IR type) of an integer argument. As Triton does, an integer equal to 1 (a unit
    stride, most often) is a specialization of its own: the kernel is compiled with the constant
    (``x_ptr + offs * stride`` is then contiguous) and the launch does not pass it."""
    if v == 1:
        return ONE, T.int32
    if _I32_MIN <= v <= _I32_MAX:
        return ("i32", v % 16 == 0), T.int32
    if -(1 << 63) <= v < (1 << 63):
        return ("i64", v % 16 == 0), T.int64
    if 0 <= v < (1 << 64):
        return ("u64", v % 16 == 0), T.uint64
    raise LaunchError(f"argument '{name}': the integer {v} does not fit in 64 bits")


_POINTERS: Dict[T.DType, PointerType] = {}


def _pointer(d: T.DType) -> PointerType:
    p = _POINTERS.get(d)
    if p is None:
        p = _POINTERS[d] = PointerType(d)
    return p


def _classify(v, name: str):
    """(key part, IR type) of one runtime argument."""
    t = type(v)
    if t is int:
        return _int_part(v, name)
    if t is float:
        return ("f32",), T.float32
    if t is bool or t is np.bool_:
        return ("i1",), T.int1
    if isinstance(v, np.generic):
        d = T.dtype_from_numpy(v.dtype)
        if d is None:
            raise LaunchError(f"argument '{name}': NumPy scalars of {v.dtype} are not supported")
        return (d.name,), d
    if t is arrays.DeviceArray or isinstance(v, arrays.DeviceArray):
        d = arrays.dtype_of(v.dtype, name)
        return ("p", d.name, surfaces.aligned(v)), _pointer(d)
    if hasattr(v, "__sycl_usm_array_interface__"):
        if t is not dlpack.DLPackArray:   # (their launches take a fast path from now on)
            _FAST_CLASSIFY[t] = usm_args.classify
        part, irt, _ = usm_args.classify(v, name)
        return part, irt
    if isinstance(v, np.ndarray):
        d = arrays.dtype_of(v.dtype, name)
        return ("p", d.name, True), PointerType(d)
    if isinstance(v, int):  # int subclasses (IntEnum, ...)
        return _int_part(int(v), name)
    if v is None:
        raise LaunchError(f"argument '{name}' is None; only constexpr parameters may be None")
    if hasattr(v, "__dlpack__"):  # host producers were turned into NumPy arrays by _host_dlpack
        raise LaunchError(f"argument '{name}': {type(v).__name__} is not on a SYCL device; pass an array with "
                          f"__sycl_usm_array_interface__ (dpnp, xk.to_device) or a NumPy array")
    raise LaunchError(f"argument '{name}': {type(v).__name__} is not a kernel argument (expected an array "
                      f"with __sycl_usm_array_interface__, a NumPy array, an int, a float or a bool)")


def _arg_device_array(v, name, queue, copies):
    if v.queue is not queue and v.queue.sycl_context != queue.sycl_context:
        raise LaunchError(f"argument '{name}' lives on {v.queue.sycl_device.name!r}, not on the launch "
                          f"device {queue.sycl_device.name!r}")
    if v._guard:
        copies.append(_DeviceGuard(v, name))
    return v._mem if not v._offset else v._data()   # (a view: NumPy's typestr of bf16 is no USM type)


def _arg_numpy(v, name, queue, copies):
    if not (v.flags.c_contiguous or v.flags.f_contiguous):
        raise LaunchError(f"argument '{name}': a non-contiguous NumPy view cannot be copied to the device "
                          f"as is; pass np.ascontiguousarray(...) or a device array")
    copies_np = [c for c in copies if type(c) is _NumpyCopy]
    for c in copies_np:  # the same array passed twice shares one device copy (else the copy back of the
        if c.host is v:  # unwritten twin would undo the kernel's writes)
            return c.arg
    for c in copies_np:
        if np.shares_memory(c.host, v):
            raise LaunchError(f"argument '{name}' overlaps another NumPy argument without being the same "
                              f"array; their device copies could not see each other's writes: pass device "
                              f"arrays (xk.to_device) for overlapping views")
    c = _NumpyCopy(v, name, queue, written=id(v) in getattr(copies, "written", (id(v),)))
    copies.append(c)
    return c.arg


def _arg_dlpack(v, name, queue, copies):
    """A oneAPI DLPack tensor: passed like a USM array; ``copies`` takes it so that the launch keeps
    it (and so its producer's memory) alive until the kernel's event completes."""
    copies.append(v)
    return usm_args.argument(v, name, queue, copies)


def _scalar_arg(ctype, cast):
    return lambda v, name, queue, copies: ctype(cast(v))


_SCALAR_ARGS = {"i32": _scalar_arg(ctypes.c_int32, int), "i64": _scalar_arg(ctypes.c_int64, int),
                "ui64": _scalar_arg(ctypes.c_uint64, int), "f32": _scalar_arg(ctypes.c_float, float),
                "f64": _scalar_arg(ctypes.c_double, float), "i1": _scalar_arg(ctypes.c_uint8, lambda v: 1 if v else 0),
                "i8": _scalar_arg(ctypes.c_int8, int), "i16": _scalar_arg(ctypes.c_int16, int),
                "ui8": _scalar_arg(ctypes.c_uint8, int), "ui16": _scalar_arg(ctypes.c_uint16, int),
                "ui32": _scalar_arg(ctypes.c_uint32, int)}


def converter(v, irt):
    """How a launch argument becomes a dpctl kernel argument."""
    if isinstance(irt, PointerType):
        if isinstance(v, arrays.DeviceArray):
            return _arg_device_array
        if isinstance(v, np.ndarray):
            return _arg_numpy
        if isinstance(v, dlpack.DLPackArray):
            return _arg_dlpack
        return usm_args.argument
    conv = _SCALAR_ARGS.get(irt.name)
    if conv is None:
        raise LaunchError(f"scalars of {irt} cannot be passed to a kernel")
    return conv


def _classify_device_array(v, name):
    spec = v._spec
    if spec is None:
        d = arrays.dtype_of(v.dtype, name)
        spec = v._spec = (("p", d.name, surfaces.aligned(v)), _pointer(d), _arg_device_array)
    return spec


def _classify_int(v, name):
    if _I32_MIN <= v <= _I32_MAX and v != 1:
        return ("i32", v % 16 == 0), T.int32, _SCALAR_ARGS["i32"]
    part, irt = _int_part(v, name)
    return part, irt, converter(v, irt)


_FAST_CLASSIFY = {int: _classify_int, arrays.DeviceArray: _classify_device_array,
                  float: lambda v, name: (("f32",), T.float32, _SCALAR_ARGS["f32"])}
_SIMPLE_CONSTS = frozenset((int, float, bool, str, type(None)))


def _queue_of(values) -> Optional[object]:
    """The queue of the first device array argument that names one (None: the default queue)."""
    for v in values:
        t = type(v)
        if t is arrays.DeviceArray or isinstance(v, arrays.DeviceArray):
            return v.queue
        if t in _SIMPLE_CONSTS or t is np.ndarray:
            continue
        if hasattr(t, "__sycl_usm_array_interface__") or hasattr(v, "__sycl_usm_array_interface__"):
            q = usm_args.queue_of(v)
            if q is not None:
                return q
    return None


_PLAIN_ARGS = frozenset((int, float, bool, np.ndarray, arrays.DeviceArray, type(None), str))
_KDLCPU, _DL_DEVICES = 1, {2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm",
                           13: "CUDA managed", 14: "oneAPI"}


def _host_dlpack(params, values: list) -> list:
    """Arrays that only speak DLPack (``__dlpack__``, no ``__sycl_usm_array_interface__``): on the
    host (kDLCPU) they become NumPy views (``np.from_dlpack``), copied in and out like NumPy
    arrays; on a oneAPI device (kDLOneAPI) they are taken zero-copy (``dlpack.DLPackArray``); on
    another device they are refused, naming the device."""
    out = None
    for i, v in enumerate(values):
        if type(v) in _PLAIN_ARGS or not hasattr(v, "__dlpack__") or hasattr(v, "__sycl_usm_array_interface__") \
                or isinstance(v, (np.ndarray, np.generic, arrays.DeviceArray)):
            continue
        name = params[i].name
        try:
            dev_type, dev_id = v.__dlpack_device__()
        except Exception as e:
            raise LaunchError(f"argument '{name}': {type(v).__name__} has __dlpack__ but no working "
                              f"__dlpack_device__ ({e})") from None
        if int(dev_type) == dlpack.KDL_ONEAPI:
            if out is None:
                out = list(values)
            out[i] = dlpack.from_oneapi(v, name, dev_id)
            continue
        if int(dev_type) != _KDLCPU:
            where = _DL_DEVICES.get(int(dev_type), f"DLPack device type {int(dev_type)}")
            raise LaunchError(f"argument '{name}': {type(v).__name__} lives on {where} (device {dev_id}), not on "
                              f"the host or a SYCL device; pass a NumPy array, a host DLPack array, or an array "
                              f"with __sycl_usm_array_interface__ (dpnp, xk.to_device)")
        try:
            a = np.from_dlpack(v)
        except Exception as e:
            raise LaunchError(f"argument '{name}': np.from_dlpack could not read {type(v).__name__} ({e})") from None
        if out is None:
            out = list(values)
        out[i] = a
    return values if out is None else out


# ---- the kernel -------------------------------------------------------------------------------

class JITFunction:
    """A kernel. ``kernel[grid](*args)`` compiles it for the launch's device and launches it there;
    other ``@xk.jit`` functions call it inline. (``@xk.jit`` makes one: ``xekern/decorator.py``.)"""

    __xekern_jit__ = True
    interpret = False  # compiled for a device (the interpreter's kernels: interpreter/function.py)

    def __init__(self, fn, num_subgroups: int = 4, debug: Optional[bool] = None, target: Optional[str] = None,
                 level: str = "workgroup"):
        self.fn = fn
        if level not in LEVELS:
            raise CompilationError(f"kernel '{fn.__name__}': level={level!r} is not one of "
                                   f"{', '.join(map(repr, LEVELS))}")
        self.level = LEVELS[level]
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.num_subgroups = num_subgroups
        # like Triton, the environment's knobs are read when the kernel is decorated
        self.debug = knobs.debug() if debug is None else bool(debug)
        self.target = target
        sig = inspect.signature(fn)
        self.params = [Param(p, i) for i, p in enumerate(sig.parameters.values())]
        self.by_name = {p.name: p for p in self.params}
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise CompilationError(f"kernel '{fn.__name__}': *args and **kwargs parameters are not supported")
        self._source = None
        self._deps = None
        # specialization key -> kernel, least recently used first; at most XEKERN_KERNEL_CACHE_SIZE
        self.cache: "OrderedDict[tuple, CompiledKernel]" = OrderedDict()
        self._lock = threading.Lock()
        self.last: Optional[CompiledKernel] = None
        self._targets: Dict[Any, Target] = {}
        self._options: Dict[tuple, Options] = {}
        self._plain: Dict[int, tuple] = {}  # queue id -> (target, options, queue) for launches without options
        self._fallbacks: Dict[tuple, Any] = {}  # (queue id, target) -> Emitter after a driver rejected one
        self._memo: Optional[launch_memo.LaunchMemo] = None  # the last launch, to repeat (launch_memo.py)

    def __repr__(self) -> str:
        return f"<xekern kernel {self.__qualname__}>"

    @property
    def source(self):
        if self._source is None:
            from ..frontend.source import KernelSource
            self._source = KernelSource(self.fn)
        return self._source

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"kernel '{self.__name__}' is launched with {self.__name__}[grid](...); called from "
                          f"another @xk.jit function it is inlined")

    def __getitem__(self, grid):
        return _Launcher(self, grid)

    @property
    def asm(self) -> Asm:
        """The stages of the most recently compiled specialization."""
        if self.last is None:
            raise LaunchError(f"kernel '{self.__name__}' has not been compiled yet; launch it (or call .warmup)")
        return self.last.asm

    # ---- cache keys ------------------------------------------------------------------------------
    def dependencies_hash(self) -> str:
        """Hash of this kernel's source, the jit functions it calls and the constants it reads."""
        if self._deps is None:
            h = hashlib.sha256()
            _hash_function(self, h, set())
            self._deps = h.hexdigest()
        return self._deps

    # ---- launching -------------------------------------------------------------------------------
    def bind(self, args, kwargs) -> list:
        """Argument values in parameter order (defaults filled in)."""
        params = self.params
        n = len(args)
        if n > len(params):
            raise LaunchError(f"kernel '{self.__name__}' takes {len(params)} arguments "
                              f"({', '.join(p.name for p in params)}), got {n}")
        if n == len(params) and not kwargs:
            return list(args)
        vals = list(args) + [_UNSET] * (len(params) - n)
        for k, v in kwargs.items():
            p = self.by_name.get(k)
            if p is None:
                raise LaunchError(f"kernel '{self.__name__}' has no parameter '{k}' (parameters: "
                                  f"{', '.join(p.name for p in params)}; launch options: "
                                  f"{', '.join(LAUNCH_OPTIONS)})")
            if p.index < n:
                raise LaunchError(f"kernel '{self.__name__}': argument '{k}' given twice")
            vals[p.index] = v
        for p in params[n:]:
            if vals[p.index] is _UNSET:
                if not p.has_default:
                    raise LaunchError(f"kernel '{self.__name__}' is missing argument '{p.name}'")
                vals[p.index] = p.default
        return vals

    def named(self, vals) -> Dict[str, Any]:
        return {p.name: v for p, v in zip(self.params, vals)}

    def target_for_queue(self, queue, requested) -> Target:
        name = requested or self.target
        ckey = (id(queue), name)
        hit = self._targets.get(ckey)
        if hit is not None:
            return hit[0]
        d = queue.sycl_device
        t = (get_target(name) if isinstance(name, str) else name) if name is not None else dev.target_for(d)
        if t.is_cpu != d.is_cpu:
            raise LaunchError(f"target '{t.name}' cannot run on {queue.sycl_device.name!r}; compile for it offline "
                              f"with `python -m xekern compile ... --target {t.name}` or launch on a matching device")
        self._targets[ckey] = (t, queue)
        return t

    def queue_options(self, queue, overrides: Dict[str, Any]) -> Tuple[Target, Options]:
        """The target and compile options of a launch on ``queue``: its device's target record, and
        the emitter its driver takes (probed once per device: ``driver_probe``), unless the launch
        names them, or a driver rejected this kernel's emitter on this queue (``_fallback``)."""
        target = self.target_for_queue(queue, overrides.get("target"))
        driver = driver_probe.driver_for(queue.sycl_device, target)
        fallback = self._fallbacks.get((id(queue), target.name))
        if fallback is not None and overrides.get("emitter") is None:
            overrides = dict(overrides, emitter=fallback)
        return target, self.options(overrides, target, driver)

    def specialize(self, vals: list, options: Options):
        """(memory-cache key, runtime plan) for bound ``vals``; the plan lists, per runtime
        parameter, (index, name, IR type, converter to a dpctl argument)."""
        parts, runtime = [], []
        extra = len(self.params)   # the index in ``vals`` of the next tuple leaf (``arguments``)
        for p, v in zip(self.params, vals):
            tv = type(v)
            if not p.is_constexpr and isinstance(v, tuple):
                parts.append(("tuple", tuple_args.shape(v)))
                for name, leaf in zip(tuple_args.leaf_names(p.name, v), tuple_args.leaves(v)):
                    if tuple_args.is_constant(leaf):
                        parts.append(("const", type(leaf), tuple_args.constant_value(leaf)))
                    else:
                        fast = _FAST_CLASSIFY.get(type(leaf))
                        part, irt, conv = fast(leaf, name) if fast is not None else (*_classify(leaf, name), None)
                        parts.append(part)
                        if part is not ONE:
                            runtime.append((extra, name, irt, conv or converter(leaf, irt)))
                    extra += 1
                continue
            if p.is_constexpr:
                if tv not in _SIMPLE_CONSTS:
                    if isinstance(v, constexpr):
                        v = v.value
                    elif isinstance(v, (np.integer, np.floating, np.bool_)):
                        v = v.item()
                    try:
                        hash(v)
                    except TypeError:
                        raise LaunchError(f"constexpr '{p.name}' must be hashable, got {type(v).__name__}") from None
                parts.append((type(v), v))
            else:
                fast = _FAST_CLASSIFY.get(tv)
                if fast is not None:
                    part, irt, conv = fast(v, p.name)
                else:
                    part, irt = _classify(v, p.name)
                    conv = converter(v, irt)
                parts.append(part)
                if part is not ONE:
                    runtime.append((p.index, p.name, irt, conv))
        return (tuple(parts), options.key), runtime

    def signature(self, vals: list, runtime) -> Dict[str, Any]:
        """The IR signature for the compiler: runtime parameters' types and constexpr values."""
        irt = {r[1]: r[2] for r in runtime}
        sig: Dict[str, Any] = {MULTIPLES: {}}

        def runtime_arg(name: str, v) -> None:
            sig[name] = irt[name]
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and int(v) % 16 == 0:
                sig[MULTIPLES][name] = 16  # (the key's divisibility: _int_part)
            elif isinstance(irt[name], PointerType) and surfaces.aligned(v):
                sig[MULTIPLES][name] = surfaces.POINTER_ALIGN  # (the key's alignment: _classify, usm_args)

        for p in self.params:
            v = vals[p.index]
            if p.is_constexpr:
                v = v.value if isinstance(v, constexpr) else v
                sig[p.name] = ConstArg(v.item() if isinstance(v, np.generic) else v)
            elif isinstance(v, tuple):
                names = tuple_args.leaf_names(p.name, v)
                for name, leaf in zip(names, tuple_args.leaves(v)):
                    if name in irt:
                        runtime_arg(name, leaf)
                sig[p.name] = TupleArg(tuple_args.rebuild(v, lambda i, leaf: names[i] if names[i] in irt else ConstArg(
                    tuple_args.constant_value(leaf) if tuple_args.is_constant(leaf) else 1)))
            elif p.name not in irt:   # an integer equal to 1 (_int_part): the constant
                sig[p.name] = ConstArg(1)
            else:
                runtime_arg(p.name, v)
        return sig

    def options(self, overrides: Dict[str, Any], target: Target, driver: Optional[Driver] = None) -> Options:
        """The compile options of a launch on ``target`` whose device's driver is ``driver`` (None:
        the one a compilation without a device assumes, ``emitters.default_driver``)."""
        debug = bool(overrides.get("debug", self.debug))
        driver = driver or emitters.default_driver(target)
        ckey = (target.name, overrides.get("num_subgroups"), overrides.get("grf_mode"), debug,
                overrides.get("opt_level"), overrides.get("emitter"), knobs.emitter(), driver,
                overrides.get("enable_fp_fusion"))
        opts = self._options.get(ckey)
        if opts is None:
            opts = self._options[ckey] = self._make_options(overrides, target, debug, driver)
        return opts

    def _make_options(self, overrides: Dict[str, Any], target: Target, debug: bool, driver: Driver) -> Options:
        ns = overrides.get("num_subgroups", self.num_subgroups)
        if isinstance(ns, bool) or not isinstance(ns, (int, np.integer)) or ns < 1 or ns & (ns - 1):
            raise LaunchError(f"num_subgroups must be a power of 2 >= 1, got {ns!r}")
        if ns * target.sg_size > target.max_workgroup_size:
            raise LaunchError(f"num_subgroups={ns} makes a workgroup of {ns * target.sg_size} work items; "
                              f"{target.name} allows at most {target.max_workgroup_size} "
                              f"({target.max_subgroups} subgroups)")
        grf = overrides.get("grf_mode")
        if grf is not None and target.kind == "gpu" and grf not in target.grf_modes:
            raise LaunchError(f"grf_mode={grf!r}: {target.name} has {' or '.join(map(str, target.grf_modes))} "
                              f"registers per thread (None chooses)")
        name = overrides.get("emitter") or (knobs.emitter() if not target.is_cpu else None)  # (the knob is for GPUs)
        try:
            emitter = name if isinstance(name, emitters.Emitter) else emitters.choose(target, driver, name)
        except emitters.EmitterError as e:
            source = "emitter=" if overrides.get("emitter") else "XEKERN_EMITTER="
            raise LaunchError(f"{source}{name!r}: {e}") from None
        fusion = overrides.get("enable_fp_fusion", emitter.fp_fusion)
        if not isinstance(fusion, (bool, np.bool_)):
            raise LaunchError(f"enable_fp_fusion must be True or False, got {fusion!r}")
        return Options(target=target, num_subgroups=int(ns), debug=debug, grf_mode=overrides.get("grf_mode"),
                       level=self.level, emitter=emitter, fp_fusion=bool(fusion),
                       # None: chosen per kernel and target (pipeline.llvm_opt_level)
                       opt_level=None if overrides.get("opt_level") is None else int(overrides["opt_level"]))

    def compiled(self, key, make_sig, options: Options) -> CompiledKernel:
        ck = self.cache.get(key)
        if ck is not None:
            stats["memory_hits"] += 1
            self._touch(key)
            return ck
        with self._lock:
            ck = self.cache.get(key)
            if ck is None:
                ck = self._load_or_compile(key, make_sig(), options)
                self.cache[key] = ck
                self._evict(knobs.kernel_cache_size())
        return ck

    def _touch(self, key) -> None:
        try:
            self.cache.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass

    def _evict(self, bound: int) -> None:
        """Drop least recently used specializations beyond ``bound``, with their driver kernels."""
        self._memo = None
        while len(self.cache) > bound:
            _, old = self.cache.popitem(last=False)
            old.release()
            stats["evictions"] += 1

    def _disk_key(self, key) -> str:
        text = repr((__version__, compiler_fingerprint(), self.dependencies_hash(), key))
        return hashlib.sha256(text.encode()).hexdigest()

    def _load_or_compile(self, key, sig, options: Options) -> CompiledKernel:
        dkey = self._disk_key(key)
        cache = disk_cache()
        rebuild = lambda: compile_kernel(self, sig, options)  # noqa: E731
        hit = cache.get(dkey)
        if hit is not None:
            meta, spirv = hit
            if meta.get("name") == self.__name__:
                stats["disk_hits"] += 1
                return CompiledKernel(meta["name"], spirv, meta, None, rebuild)
        stats["compiles"] += 1
        t0 = time.perf_counter()
        c: Compiled = compile_kernel(self, sig, options, dump=_dumper(self.__name__))
        stats["compile_s"] += time.perf_counter() - t0
        meta = {"name": c.name, "workgroup_size": c.workgroup_size, "sg_size": c.sg_size, "slm_bytes": c.slm_bytes,
                "target": options.target.name, "extents": c.extents, "grf_mode": c.grf_mode,
                "writes": c.writes, "emitter": options.emitter.name, "surfaces": c.surfaces,
                "surface_answers": list(options.surfaces) if options.surfaces is not None else None}
        cache.put(dkey, meta, c.spirv)
        return CompiledKernel(c.name, c.spirv, meta, c.asm, rebuild)

    def launch_options(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """Take a launch's options (``num_subgroups=``, ``queue=``, ``target=``, ...: ``LAUNCH_OPTIONS``)
        out of its keyword arguments; a kernel parameter of the same name stays an argument."""
        if kwargs and not _OPTION_SET.isdisjoint(kwargs):
            return {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs and k not in self.by_name}
        return _NO_OVERRIDES

    def arguments(self, args, kwargs) -> list:
        """A launch's argument values in parameter order: defaults filled in, arrays that only speak
        DLPack taken as NumPy views (host) or zero-copy (oneAPI devices); then the leaves of tuple
        arguments, depth first (``tuple_args``: each is an argument of the driver kernel)."""
        values = _host_dlpack(self.params, self.bind(args, kwargs))
        extra = [leaf for p in self.params if not p.is_constexpr and isinstance(values[p.index], tuple)
                 for leaf in tuple_args.leaves(values[p.index])]
        return values + extra if extra else values

    def run(self, grid, args, kwargs):
        memo = self._memo
        if memo is not None and memo.matches(grid, args, kwargs):
            return memo.launch()
        overrides = self.launch_options(kwargs)
        values = self.arguments(args, kwargs)
        queue = overrides.get("queue")
        if queue is None:
            queue = _queue_of(values) if overrides.get("device") is None else None
            if queue is None:
                queue = dev.queue_for(overrides.get("device"))
        if overrides is _NO_OVERRIDES:
            memo = self._plain.get(id(queue))
            if memo is None or memo[2] is not queue:
                memo = self._plain[id(queue)] = (*self.queue_options(queue, overrides), queue)
            target, options = memo[0], memo[1]
        else:
            target, options = self.queue_options(queue, overrides)
        key, runtime = self.specialize(values, options)
        ck = self.cache.get(key)
        if ck is None:
            ck = self.compiled(key, lambda: self.signature(values, runtime), options)
        elif ck is not self.last:  # repeated launches of one specialization skip the LRU bookkeeping
            self._touch(key)
        if ck.surfaces:
            ck = self._surface_variant(ck, key, values, runtime, options)
        self.last = ck
        while True:
            try:
                return self._submit(ck, grid, values, runtime, queue, (args, kwargs))
            except dev.DriverRejected as e:  # rebuilt with the next emitter (``_fall_back``), or raised
                options = self._fall_back(e, queue, target, options, overrides)
                key, runtime = self.specialize(values, options)
                ck = self.cache.get(key) or self.compiled(key, lambda: self.signature(values, runtime), options)
                if ck.surfaces:
                    ck = self._surface_variant(ck, key, values, runtime, options)
                self.last = ck

    def _surface_variant(self, ck: CompiledKernel, key, values: list, runtime, options: Options) -> CompiledKernel:
        """``ck``, or the kernel compiled for this launch's answers to its 2D block surface checks
        when one is no (``runtime/surfaces.py``): those descriptors go element by element."""
        found = surfaces.answers(ck.surfaces, {name: values[i] for i, name, _, _ in runtime})
        if all(found):
            return ck
        variant = (key, found)
        hit = self.cache.get(variant)
        if hit is not None:
            return hit
        return self.compiled(variant, lambda: self.signature(values, runtime),
                             dataclasses.replace(options, surfaces=found))

    def _fall_back(self, error: LaunchError, queue, target: Target, options: Options,
                   overrides: Dict[str, Any]) -> Options:
        """The options of the next emitter after the driver of ``queue`` rejected a kernel of
        ``options.emitter`` (``emitters.fallback``), with a warning; later launches of this kernel on
        the queue use it too. An emitter the launch named, or the last one, is not replaced: the
        error stands."""
        nxt = emitters.fallback(options.emitter, target)
        if nxt is None or overrides.get("emitter") or knobs.emitter():
            raise error
        warnings.warn(f"xekern: the driver of {queue.sycl_device.name!r} rejected kernel '{self.__name__}' as the "
                      f"{options.emitter.name} emitter wrote it; it is rebuilt with {nxt.name}. The driver said: "
                      f"{error}", EmitterWarning, stacklevel=4)
        self._fallbacks[(id(queue), target.name)] = nxt
        self._plain.pop(id(queue), None)
        self._memo = None
        return self.queue_options(queue, overrides)[1]

    def _forget(self, memo=None) -> None:
        """Drop the launch memo (``memo``: only if it is still that one)."""
        if memo is None or self._memo is memo:
            self._memo = None

    def _submit(self, ck: CompiledKernel, grid, values: list, runtime, queue, raw=None) -> Launch:
        """Launch ``ck``; ``raw`` (the launch's own args and kwargs) lets it be memoized."""
        g = check_grid(grid, values if type(grid) is tuple else self.named(values))
        kernel = ck.kernel_for(queue)
        copies = _Copies({id(values[i]) for i, name, _, _ in runtime if name in ck.writes} if ck.writes else ())
        if ck.extents:
            extents.check(self.__name__, ck.extents, {name: values[i] for i, name, _, _ in runtime})
        kargs = [conv(values[i], name, queue, copies) for i, name, irt, conv in runtime]
        held = None
        if copies:
            held = [c for c in copies if type(c) is dlpack.DLPackArray]
            if held:
                copies = [c for c in copies if type(c) is not dlpack.DLPackArray]
            if ck.writes and not all(not c.read_only if type(c) is dlpack.DLPackArray
                                     else c.writeable for c in held + copies):
                writes.check(self.__name__, ck.writes, {name: values[i] for i, name, _, _ in runtime})
        wg = ck.workgroup_size
        if len(g) == 1:
            gs, ls = [g[0] * wg], [wg]
        elif len(g) == 2:
            gs, ls = [g[1], g[0] * wg], [1, wg]
        else:
            gs, ls = [g[2], g[1], g[0] * wg], [1, 1, wg]
        try:
            event = queue.submit_async(kernel, kargs, gs, ls)
        except Exception as e:
            raise LaunchError(f"launching '{self.__name__}' failed: {e}") from None
        if id(queue) not in dev._used_queues:
            dev.note_queue(queue)
        if held:
            dlpack.keep_alive(queue, held, event)
        if copies:
            event.wait()
            data = [c.finish(self.__name__, ck.writes, queue) for c in copies]   # every guard first: an
            for c, d in zip(copies, data):                                      # overrun leaves every
                c.copy_back(d)                                                  # NumPy argument unchanged
        elif raw is not None and not held:
            self._memo = launch_memo.capture(grid, raw[0], raw[1], queue, kernel, kargs, gs, ls, ck, self._forget)
        return Launch(ck, event)

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        """Compile for these arguments without launching."""
        overrides = {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs and k not in self.by_name}
        values = self.arguments(args, kwargs)
        queue = overrides.get("queue") or _queue_of(values) or dev.queue_for(overrides.get("device"))
        target, options = self.queue_options(queue, overrides)
        key, runtime = self.specialize(values, options)
        ck = self.compiled(key, lambda: self.signature(values, runtime), options)
        self.last = self._surface_variant(ck, key, values, runtime, options) if ck.surfaces else ck
        self.last.bind_launcher(self, key, overrides)
        return self.last

    def run_compiled(self, ck: CompiledKernel, key, overrides: Dict[str, Any], grid, args, kwargs) -> Launch:
        """``ck[grid](*args)``: launch the specialization ``warmup`` returned, with arguments that
        must specialize to it (same dtypes and constexpr values)."""
        overrides = dict(overrides)
        if "queue" in kwargs and "queue" not in self.by_name:
            overrides["queue"] = kwargs.pop("queue")
        values = self.arguments(args, kwargs)
        queue = overrides.get("queue") or _queue_of(values) or dev.queue_for(overrides.get("device"))
        target, options = self.queue_options(queue, overrides)
        got, runtime = self.specialize(values, options)
        if got == key and ck.surfaces:
            found = surfaces.answers(ck.surfaces, {name: values[i] for i, name, _, _ in runtime})
            compiled_for = ck.meta.get("surface_answers")
            if found != (tuple(compiled_for) if compiled_for is not None else tuple(True for _ in found)):
                raise LaunchError(f"the compiled kernel '{self.__name__}' was specialized for arguments whose tensor "
                                  f"surfaces take 2D block messages {compiled_for}, these give {found}; launch "
                                  f"{self.__name__}[grid](...) to compile for these")
        if got != key:
            show = lambda p, part: repr(part[1] if p.is_constexpr else part)  # noqa: E731
            diff = [f"{p.name}: compiled for {show(p, want)}, got {show(p, have)}"
                    for p, want, have in zip(self.params, key[0], got[0]) if want != have]
            raise LaunchError(f"the compiled kernel '{self.__name__}' was specialized for other arguments ("
                              f"{'; '.join(diff) or 'options differ'}); launch {self.__name__}[grid](...) "
                              f"to compile for these")
        return self._submit(ck, grid, values, runtime, queue)

    def compile_offline(self, signature: Dict[str, Any], target: str, num_subgroups: Optional[int] = None,
                        compiler: Optional[str] = None, multiple_of: Optional[Dict[str, int]] = None,
                        surfaces: Any = None, **opts) -> Compiled:
        """Compile for any target without a device. ``signature`` maps each parameter to an IR type
        (``xl.float32``, ``xk.pointer(xl.bfloat16)``) or, for constexprs, to its value. ``compiler``
        names the driver compiler the code is for (``current``, the default, or ``12504``: see
        ``python -m xekern toolchain``), which decides the emitter unless ``emitter=`` names one.

        What a launch would know of the arguments: ``multiple_of`` maps integer parameters to a
        number they are multiples of (None: every integer parameter a multiple of 16, as a launch's
        specialization finds for typical sizes; ``{}``: nothing); ``surfaces`` answers the kernel's
        launch checks of 2D block surfaces (lowering/surface_rules.py: None or True, all hold;
        False, none holds; or one bool per check)."""
        t = get_target(target)
        if compiler is not None and compiler not in emitters.OFFLINE:
            raise LaunchError(f"compiler={compiler!r}: the offline compilers are {', '.join(emitters.OFFLINE)}")
        bad = [k for k in opts if k not in LAUNCH_OPTIONS or k in ("queue", "device")]
        if bad:
            raise LaunchError(f"compile_offline: unknown option(s) {', '.join(bad)}; options: "
                              f"{', '.join(k for k in LAUNCH_OPTIONS if k not in ('queue', 'device'))}, compiler, "
                              f"multiple_of, surfaces")
        driver = None if t.is_cpu or compiler is None else emitters.OFFLINE[compiler]
        options = self.options(dict(opts, num_subgroups=num_subgroups or self.num_subgroups), t, driver)
        sig: Dict[str, Any] = {}
        for p in self.params:
            if p.name not in signature:
                if p.has_default:
                    sig[p.name] = ConstArg(p.default) if p.is_constexpr else _classify(p.default, p.name)[1]
                    continue
                raise LaunchError(f"signature is missing parameter '{p.name}'")
            v = signature[p.name]
            if p.is_constexpr or (type(v) is int and v == 1):   # (1: the specialization a launch with 1 gets)
                sig[p.name] = ConstArg(v)
            elif isinstance(v, T.Type):
                sig[p.name] = v
            elif isinstance(v, tuple):   # a tuple argument: a type per runtime leaf, else its constant
                names = tuple_args.leaf_names(p.name, v)

                def leaf(i, x, names=names):
                    if isinstance(x, T.Type):
                        sig[names[i]] = x
                        return names[i]
                    return ConstArg(tuple_args.constant_value(x))
                sig[p.name] = TupleArg(tuple_args.rebuild(v, leaf))
            else:
                raise LaunchError(f"signature: parameter '{p.name}' needs a type (xl.int32, xk.pointer(...)), "
                                  f"a tuple of them, or 1 for the specialization of an integer equal to 1; got {v!r}")
        if multiple_of is None:
            multiple_of = {n: 16 for n, v in sig.items() if isinstance(v, PointerType) or
                           isinstance(v, T.DType) and v.is_int and not v.is_bool}
        sig[MULTIPLES] = dict(multiple_of)
        if surfaces is False:
            options = dataclasses.replace(options, surfaces=False)
        elif surfaces is not None and surfaces is not True:
            checks = compile_kernel(self, sig, options).surfaces   # (the checks block-pointers' descriptors add too)
            if len(tuple(surfaces)) != len(checks):
                raise LaunchError(f"surfaces={surfaces!r}: kernel '{self.__name__}' has {len(checks)} surface "
                                  f"checks")
            options = dataclasses.replace(options, surfaces=tuple(surfaces))
        return compile_kernel(self, sig, options, dump=_dumper(self.__name__))


class _Launcher:
    __slots__ = ("jit", "grid")

    def __init__(self, jit: JITFunction, grid):
        self.jit = jit
        self.grid = grid

    def __call__(self, *args, **kwargs):
        return self.jit.run(self.grid, args, kwargs)


def _dumper(name: str):
    stages = knobs.dump_stages()
    if not stages:
        return None
    out_dir = knobs.dump_dir()

    def dump(stage, text):
        if "all" not in stages and stage not in stages:
            return
        text = print_func(text) if isinstance(text, FuncOp) else str(text)
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, f"{name}.{stage}.txt"), "w") as f:
                f.write(text)
        else:
            sys.stderr.write(f"// ----- {name}: {stage} -----\n{text}\n")
    return dump


def _hash_function(jit: JITFunction, h, seen: set) -> None:
    if id(jit) in seen:
        return
    seen.add(id(jit))
    src = jit.source
    h.update(src.text.encode())
    import ast
    names = {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)}
    scopes = (src.closure, src.globals)
    for name in sorted(names):
        for table in scopes:
            if name in table:
                v = table[name]
                if getattr(v, "__xekern_jit__", False):
                    _hash_function(v, h, seen)
                elif isinstance(v, constexpr):
                    h.update(f"{name}={v.value!r};".encode())
                elif isinstance(v, (int, float, bool, str, tuple, type(None))) or isinstance(v, T.DType):
                    h.update(f"{name}={v!r};".encode())
                elif inspect.ismodule(v):
                    _hash_module_refs(src.tree, name, v, h, seen)
                break


def _hash_module_refs(tree, modname, mod, h, seen) -> None:
    """Jit functions and constants a kernel reaches as ``module.attr``."""
    import ast
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == modname:
            v = getattr(mod, n.attr, None)
            if getattr(v, "__xekern_jit__", False):
                _hash_function(v, h, seen)
            elif isinstance(v, (int, float, bool, str)) and not mod.__name__.startswith("xekern"):
                h.update(f"{modname}.{n.attr}={v!r};".encode())

