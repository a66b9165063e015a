"""dpctl behind one module: finding devices, queues, building programs, launching kernels.

dpctl's API is moving (``dpctl.tensor`` went to dpnp; program creation is being renamed to
``create_kernel_bundle_from_spirv`` in ``dpctl.compiler``); everything xekern needs from it is
here. On a machine without an Intel GPU the device is Intel's OpenCL CPU runtime from PyPI
(``intel-opencl-rt``), whose bundled ICD file points at a wrong path: xekern points the ICD
loader at the library itself before dpctl loads (``OCL_ICD_FILENAMES``).
"""
from __future__ import annotations

import glob
import os
import sys
import threading
import time
from typing import Dict, List, Optional

from .. import knobs
from ..errors import LaunchError
from ..targets import TARGETS, Target, match_device
from . import device_arch as _arch
from .device_arch import DeviceArch

_lock = threading.Lock()
_dpctl = None
_queues: Dict[object, object] = {}
_used_queues: Dict[int, object] = {}


def _ocl_cpu_library() -> Optional[str]:
    """The pip-installed OpenCL CPU runtime (``libintelocl.so``), if any."""
    explicit = knobs.ocl_icd()
    if explicit:
        return explicit
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))]):
        for path in (os.path.join(prefix, "lib", "libintelocl.so"),
                     *glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages", "intel_opencl_rt*",
                                             "libintelocl.so"))):
            if os.path.exists(path):
                return path
    return None


def ensure_icd() -> None:
    """Make the OpenCL ICD loader see the pip-installed CPU runtime (before dpctl loads)."""
    lib = _ocl_cpu_library()
    if lib is None:
        return
    cur = os.environ.get("OCL_ICD_FILENAMES", "")
    if lib not in cur.split(":"):
        os.environ["OCL_ICD_FILENAMES"] = lib + (":" + cur if cur else "")


def dpctl():
    """The dpctl module, imported on first use (after ``ensure_icd``)."""
    global _dpctl
    if _dpctl is None:
        with _lock:
            if _dpctl is None:
                ensure_icd()
                import dpctl as mod
                import dpctl.memory  # noqa: F401
                import dpctl.program  # noqa: F401
                _dpctl = mod
    return _dpctl


def _is_intel_gpu(d) -> bool:
    return d.is_gpu and "intel" in (d.vendor or "").lower()


def default_device():
    """``XEKERN_DEVICE`` if set, else an Intel GPU (Level Zero first), else the OpenCL CPU device."""
    dp = dpctl()
    want = knobs.device()
    if want:
        try:
            return dp.SyclDevice(want)
        except Exception as e:
            raise LaunchError(f"XEKERN_DEVICE={want!r} names no device dpctl can open ({e}); "
                              f"`python -m xekern devices` lists them") from None
    gpus = [d for d in dp.get_devices() if _is_intel_gpu(d)]
    gpus.sort(key=lambda d: 0 if d.backend == dp.backend_type.level_zero else 1)
    if gpus:
        return gpus[0]
    try:
        return dp.SyclDevice("opencl:cpu")
    except Exception:
        raise LaunchError("no Intel GPU and no OpenCL CPU device found: install the CPU runtime with "
                          "`pip install intel-opencl-rt` (it comes with xekern), or set XEKERN_OCL_ICD to "
                          "the path of libintelocl.so") from None


def as_device(device):
    """A dpctl SyclDevice from a device, a filter string, or None (the default device)."""
    dp = dpctl()
    if device is None:
        return default_device()
    if isinstance(device, dp.SyclDevice):
        return device
    if isinstance(device, str):
        try:
            return dp.SyclDevice(device)
        except Exception as e:
            raise LaunchError(f"device={device!r} names no device dpctl can open ({e})") from None
    raise LaunchError(f"device must be a dpctl.SyclDevice or a filter string like 'opencl:cpu', "
                      f"got {type(device).__name__}")


class _View:
    """A span of a USM allocation, as ``__sycl_usm_array_interface__`` (it holds the allocation)."""

    __slots__ = ("mem", "__sycl_usm_array_interface__")

    def __init__(self, mem, offset: int, nbytes: int, queue):
        self.mem = mem
        self.__sycl_usm_array_interface__ = {"data": (mem._pointer + offset, False), "shape": (nbytes,),
                                             "strides": None, "typestr": "|u1", "version": 1, "syclobj": queue}


def memory_view(mem, offset: int, nbytes: int, queue):
    """A dpctl USM memory object for ``nbytes`` of ``mem`` from ``offset`` (it keeps ``mem`` alive)."""
    return dpctl().memory.as_usm_memory(_View(mem, offset, nbytes, queue))


def queue_for(device=None):
    """A cached in-order queue (with event profiling) on ``device``."""
    d = as_device(device)
    q = _queues.get(d)
    if q is None:
        with _lock:
            q = _queues.get(d)
            if q is None:
                q = dpctl().SyclQueue(d, property=["in_order", "enable_profiling"])
                _queues[d] = q
    return q


def default_queue():
    return queue_for(None)


def note_queue(q) -> None:
    if id(q) not in _used_queues:
        _used_queues[id(q)] = q


def synchronize() -> None:
    """Wait for every kernel xekern launched (on every queue it used)."""
    for q in list(_used_queues.values()):
        q.wait()


def architecture(device=None) -> DeviceArch:
    """What the driver says a device is (IP version, PCI device id; ``runtime/device_arch.py``);
    nothing is asked of a CPU device."""
    d = as_device(device)
    return DeviceArch(None, None, "cpu device") if d.is_cpu else _arch.query(d)


def target_for(device=None) -> Target:
    """The target record of a dpctl device (``XEKERN_TARGET`` overrides): chosen by the GPU's
    architecture as its driver reports it, by its name when the driver does not say
    (``targets.identify``); a GPU of an unknown IP release gets the nearest older family's record
    with a ``TargetWarning``."""
    name = knobs.target()
    if name:
        if name not in TARGETS:
            raise LaunchError(f"XEKERN_TARGET={name!r} is not a target; known: {', '.join(TARGETS)}")
        return TARGETS[name]
    d = as_device(device)
    arch = architecture(d)
    t = match_device(d.name, d.is_cpu, tuple(d.sub_group_sizes or ()), ip_version=arch.ip_version,
                     device_id=arch.device_id)
    if t is not None:
        return t
    seen = ", ".join(x for x in (f"IP version {arch.ip}" if arch.ip else "",
                                 f"PCI device id 0x{arch.device_id:04x}" if arch.device_id else "") if x)
    raise LaunchError(f"xekern has no target record for device {d.name!r} ({seen or arch.source}); "
                      f"set XEKERN_TARGET to the "
                      f"closest of {', '.join(t for t in TARGETS if TARGETS[t].kind == 'gpu')}")


class DriverRejected(LaunchError):
    """The device's driver did not build a kernel's SPIR-V (its compiler's message is in the text)."""


def build_kernel(queue, spirv: bytes, name: str, grf_mode=None):
    """A launchable kernel from SPIR-V: the driver's compile happens here, or on an OpenCL device
    its binary kept in the disk cache by an earlier process is loaded (``program_binaries``).
    ``grf_mode`` (128/256, ``Compiled.grf_mode``) becomes the GPU driver's register-file option;
    CPU devices have no GRF."""
    dp = dpctl()
    prog_mod = dp.program
    make = getattr(prog_mod, "create_program_from_spirv", None)
    if make is None:  # newer dpctl
        import dpctl.compiler as comp  # type: ignore
        make = comp.create_kernel_bundle_from_spirv
    copts = grf_copts(queue.sycl_device, grf_mode)
    from . import program_binaries
    from .cache import stats
    from .driver_refs import release_leaked
    kept = program_binaries.enabled(queue)
    t0 = time.perf_counter()
    prog = program_binaries.load(queue, spirv, copts) if kept else None   # a new process's first call
    if prog is None:
        try:
            prog = make(queue, spirv, copts) if copts else make(queue, spirv)
        except Exception as e:
            raise DriverRejected(f"the device driver rejected kernel '{name}'"
                                 f"{f' (options {copts!r})' if copts else ''}: {e}") from None
        stats["driver_builds"] += 1
        kernel = prog.get_sycl_kernel(name)
        if kept:
            program_binaries.save(queue, spirv, copts, kernel)
    else:
        kernel = prog.get_sycl_kernel(name)
    stats["driver_build_s"] += time.perf_counter() - t0
    release_leaked(kernel, queue)  # dpctl 0.22's OpenCL interop would keep 2-3 MiB per program
    return kernel


def grf_copts(device, grf_mode) -> str:
    """The driver options for ``grf_mode`` on ``device`` ('' on a CPU device or for None)."""
    if grf_mode is None or device.is_cpu:
        return ""
    from ..tools.grf_options import build_options
    backend = "opencl" if "opencl" in str(device.backend).lower() else "level_zero"
    return build_options(grf_mode, backend)


def device_properties(device=None) -> dict:
    """What a Triton user gets from ``driver.active.utils.get_device_properties``, for a dpctl
    device, a filter string, or the default device (None)::

        props = xk.device_properties()
        grid = (min(props["multiprocessor_count"], tiles),)   # a persistent kernel's grid

    ``multiprocessor_count`` is the device's compute units as the driver reports them (Xe cores
    on a GPU, hardware threads on the OpenCL CPU device); ``max_shared_mem`` the shared local
    memory per workgroup; ``target`` the xekern target record the device maps to (None if none),
    chosen by ``ip_version`` and ``device_id``, the GPU's architecture as its driver reports it
    (None when it does not say).
    """
    d = as_device(device)
    try:
        t = target_for(d)
    except LaunchError:
        t = None
    sizes = sorted(int(s) for s in (d.sub_group_sizes or ()))
    arch = architecture(d)
    return {
        "name": d.name,
        "ip_version": str(arch.ip) if arch.ip else None,   # GPU IP version, e.g. "20.4.4" (None: not reported)
        "device_id": arch.device_id,                        # PCI device id (None: not reported)
        "backend": str(d.backend).split(".")[-1],
        "device_type": str(d.device_type).split(".")[-1],
        "driver": d.driver_version,
        "target": t.name if t is not None else None,
        "sub_group_sizes": sizes,
        "sub_group_size": t.sg_size if t is not None else None,  # the size xekern compiles for
        "max_work_group_size": int(d.max_work_group_size),
        "max_num_sub_groups": int(d.max_num_sub_groups),
        "max_shared_mem": int(d.local_mem_size),
        "multiprocessor_count": int(d.max_compute_units),
        "xe_cores": t.xe_cores if t is not None and t.kind == "gpu" else None,  # the target record's figure
        "global_mem_size": int(d.global_mem_size),
        "max_mem_alloc_size": int(d.max_mem_alloc_size),
        "max_clock_rate": int(d.max_clock_frequency),  # MHz
    }


def describe_devices() -> List[dict]:
    """What dpctl sees, and the target each device maps to."""
    out = []
    for d in dpctl().get_devices():
        try:
            t = target_for(d).name
        except LaunchError:
            t = None
        arch = architecture(d)
        out.append(dict(filter=d.filter_string, name=d.name, backend=str(d.backend).split(".")[-1],
                        ip_version=str(arch.ip) if arch.ip else None, device_id=arch.device_id,
                        type=str(d.device_type).split(".")[-1], driver=d.driver_version,
                        sub_group_sizes=list(d.sub_group_sizes or ()), max_work_group_size=d.max_work_group_size,
                        local_mem_size=d.local_mem_size, target=t))
    return out
