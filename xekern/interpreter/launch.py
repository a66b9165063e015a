"""``interpret_launch``: run a kernel's workgroup IR on the host, one program after another.

Arguments become host values: NumPy arrays are used in place (C-contiguous ones; others are
copied and written back), device arrays (``xk.DeviceArray``, anything with
``__sycl_usm_array_interface__``) are copied to the host and, if the kernel wrote them, back;
scalars become NumPy scalars of their IR type. The result is a ``Launch`` whose event is None.
"""
from __future__ import annotations

import weakref
from typing import Dict, Optional, Tuple

import numpy as np

from .. import ir
from ..errors import LaunchError, stage_error
from ..frontend import compile_to_ir
from ..frontend.compile import ConstArg
from ..ir.core import IRError
from ..ir.types import DType, PointerType
from ..runtime import arrays
from ..runtime import device as dev
from ..runtime.launch import Launch, check_grid
from ..runtime.writes import check as check_writes
from ..lowering.launch_facts import written_params
from . import numerics as N
from .core import Plan, Program
from .debug import active_hooks
from .rules_memory import Buffer, Ptr


class InterpretedKernel:
    """``Launch.kernel`` (and ``jit.last``) of an interpreted launch: the workgroup IR it ran."""

    def __init__(self, func: ir.FuncOp, workgroup_size: Optional[int] = None):
        self.name = func.name
        self.func = func
        self.plan = Plan(func)
        self.workgroup_size = workgroup_size
        self.slm_bytes = sum(op.result.type.nbytes for op in func.walk() if isinstance(op, ir.CreateMemDescOp))
        self.writes = written_params(func)  # read-only NumPy arrays are refused for these, as on the device

    @property
    def asm(self) -> Dict[str, str]:
        """Only the ``xegpu`` stage: the interpreter runs the workgroup IR, nothing below it."""
        return {"xegpu": ir.print_func(self.func)}

    def __repr__(self) -> str:
        return f"<interpreted kernel {self.name}>"


class LaunchState:
    """What every program of one launch shares: the plan, the grid, the hooks."""

    def __init__(self, kernel: InterpretedKernel, grid: Tuple[int, int, int], num_subgroups: int):
        self.kernel_name = kernel.name
        self.plan = kernel.plan
        self.grid = grid
        self.num_subgroups = num_subgroups
        self.hooks = active_hooks()


_KERNELS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # jit -> {key: InterpretedKernel}


def _sig_key(signature: Dict[str, object]) -> tuple:
    out = []
    for name, v in signature.items():
        if isinstance(v, ConstArg):
            out.append((name, "constexpr", type(v.value), v.value))
        elif isinstance(v, dict):  # (MULTIPLES: what the specialization knows of the integer arguments)
            out.append((name, tuple(sorted(v.items()))))
        else:
            out.append((name, v))
    return tuple(out)


def kernel_for(jit, signature: Dict[str, object], options) -> InterpretedKernel:
    """The kernel's workgroup IR for ``signature`` (compiled once per specialization)."""
    table = _KERNELS.setdefault(jit, {})
    key = (_sig_key(signature), options.key)
    k = table.get(key)
    if k is None:
        func = compile_to_ir(jit, signature, options)
        func.attrs["level"] = "wg"
        try:
            ir.verify_func(func)
        except IRError as e:
            raise stage_error("xegpu", e) from e
        k = table[key] = InterpretedKernel(func, options.workgroup_size)
    return k


# ---- arguments -----------------------------------------------------------------------------------

class _WriteBack:
    """Copies a host buffer back to where the argument lives, if the kernel wrote it."""

    def __init__(self, buf: Buffer, copy):
        self.buf, self.copy = buf, copy

    def __call__(self):
        if self.buf.dirty and self.copy is not None:
            self.copy(self.buf.data)


def _numpy_buffer(name: str, v: np.ndarray):
    if v.flags.c_contiguous:
        if v.flags.writeable:
            return Buffer(name, v.reshape(-1)), None  # in place
        return Buffer(name, v.reshape(-1).copy()), None  # read-only: only read (runtime/writes.py)
    if v.flags.f_contiguous:  # the device sees it in C order (reshape(-1) copies): so do we
        def back(data, v=v):
            if v.flags.writeable:
                v[...] = data.reshape(v.shape)
        return Buffer(name, np.ascontiguousarray(v).reshape(-1)), back
    raise LaunchError(f"argument '{name}': a non-contiguous NumPy view cannot be passed as is; pass "
                      f"np.ascontiguousarray(...) or a device array")


def _usm_buffer(name: str, v):
    _, d, syclobj, shape, strides = arrays.usm_info(v, name)
    c_strides, acc = [], 1
    for s in reversed(shape):
        c_strides.append(acc)
        acc *= max(s, 1)
    if tuple(strides) != tuple(reversed(c_strides)):
        raise LaunchError(f"argument '{name}': the interpreter copies device arrays to the host and needs them "
                          f"C-contiguous; got strides {tuple(strides)} for shape {tuple(shape)}")
    if syclobj is not None and hasattr(syclobj, "wait"):
        syclobj.wait()  # kernels queued before write it
    mem = dev.dpctl().memory.as_usm_memory(v)
    n = int(np.prod(shape, dtype=np.int64))
    host = np.empty(n, N.npdt(d))
    if n:
        mem.copy_to_host(host.view(np.uint8))

    def back(data):
        if n:
            mem.copy_from_host(np.ascontiguousarray(data).view(np.uint8))
    return Buffer(name, host), back


def _device_array_buffer(name: str, v: arrays.DeviceArray):
    if v.is_contiguous and not v._offset:
        host = v.numpy().reshape(-1)
        return Buffer(name, host), lambda data: v.copy_from(data.reshape(v.shape))
    return _usm_buffer(name, v)


def _pointer_arg(name: str, v, t: PointerType):
    if isinstance(v, np.ndarray):
        buf, back = _numpy_buffer(name, v)
    elif isinstance(v, arrays.DeviceArray):
        buf, back = _device_array_buffer(name, v)
    elif hasattr(v, "__sycl_usm_array_interface__"):
        buf, back = _usm_buffer(name, v)
    else:
        raise LaunchError(f"argument '{name}': expected an array for a pointer parameter, got {type(v).__name__}")
    if buf.data.dtype != N.npdt(t.elem):
        raise LaunchError(f"argument '{name}': expected an array of {t.elem.user_name}, got {buf.data.dtype}")
    return Ptr(buf, 0), _WriteBack(buf, back)


def _scalar_arg(name: str, v, t: DType):
    try:
        if t.is_bool:
            return np.bool_(bool(v))
        if t.is_floating:  # one rounding, like the device's ctypes conversion
            return np.asarray(v).astype(N.npdt(t))[()]
        return N.int_const(int(v), t)[()]
    except (TypeError, ValueError, OverflowError) as e:
        raise LaunchError(f"argument '{name}': cannot pass {v!r} as {t.user_name} ({e})") from None


def bind_arguments(func: ir.FuncOp, values: Dict[str, object]):
    """(value per function argument, write-backs) for the launch ``values`` by parameter name."""
    env, backs = {}, []
    for a in func.args:
        name = a.hint
        if name not in values:
            raise LaunchError(f"kernel '{func.name}' is missing argument '{name}'")
        v, t = values[name], a.type
        if isinstance(t, PointerType):
            env[a], back = _pointer_arg(name, v, t)
            backs.append(back)
        elif isinstance(t, DType):
            env[a] = _scalar_arg(name, v, t)
        else:
            raise LaunchError(f"argument '{name}': the interpreter cannot pass a parameter of type {t}")
    return env, backs


# ---- the launch ------------------------------------------------------------------------------------

def interpret_launch(jit, grid, values_by_name: Dict[str, object], signature: Dict[str, object], options) -> Launch:
    """Run ``jit``'s workgroup IR for every program of ``grid`` on the host; returns a ``Launch``
    (``event`` None, ``kernel.asm['xegpu']`` the IR that ran)."""
    kernel = kernel_for(jit, signature, options)
    g = check_grid(grid, values_by_name)
    jit.last = kernel
    run(kernel, g, values_by_name, options.num_subgroups)
    return Launch(kernel, None)


def run_function(func: ir.FuncOp, grid, args: Dict[str, object], num_subgroups: int = 4) -> InterpretedKernel:
    """Interpret a workgroup-level IR function directly (``args`` by argument name, as for a launch);
    for tests of IR built by hand. ``grid`` is a tuple of 1 to 3 positive ints."""
    kernel = InterpretedKernel(func)
    run(kernel, check_grid(tuple(grid), args), args, num_subgroups)
    return kernel


def run(kernel: InterpretedKernel, grid: Tuple[int, ...], values: Dict[str, object], num_subgroups: int) -> None:
    """Every program of ``grid``, x fastest, each to its end before the next starts."""
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    check_writes(kernel.name, kernel.writes, values)
    env, backs = bind_arguments(kernel.func, values)
    state = LaunchState(kernel, grid3, num_subgroups)
    ok = False
    try:
        with np.errstate(all="ignore"):  # wrap-around and inf/NaN are the semantics, not accidents
            for z in range(grid3[2]):
                for y in range(grid3[1]):
                    for x in range(grid3[0]):
                        Program(state, (x, y, z), dict(env)).run(kernel.func.body)
        ok = True
    finally:
        for back in backs:  # also after an error: what ran is visible, as on the device
            try:
                back()
            except Exception:
                if ok:
                    raise
