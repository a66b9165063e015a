"""``InterpretedFunction``: what ``@xk.jit`` makes of a kernel that runs in the interpreter.

Chosen when the kernel is decorated (``@xk.jit(interpret=True)``, or ``XEKERN_INTERPRET=1`` read at
decoration: ``xekern/decorator.py``), as Triton's ``@jit`` returns an ``InterpretedFunction`` under
``TRITON_INTERPRET=1``. It is a ``JITFunction`` in every other way (other kernels inline it,
``warmup`` and ``compile_offline`` compile it for a device); only a launch differs: the kernel is
compiled to workgroup IR and run on the host with NumPy (``launch.py``).

    k = xk.jit(add_kernel.fn, interpret=True)
    k[(4,)](x, y, out, n, BLOCK=256)       # no SYCL device needed; NumPy arrays updated in place
"""
from __future__ import annotations

from typing import Any, Dict

from .. import knobs
from ..errors import CompilationError
from ..runtime import device as dev
from ..runtime.jit import JITFunction
from ..runtime.launch import Launch
from ..targets import get_target
from .launch import interpret_launch


class InterpretedFunction(JITFunction):
    """A kernel that ``kernel[grid](...)`` runs on the host with NumPy, one program after another."""

    interpret = True

    def __init__(self, fn, num_subgroups: int = 4, debug=None, target=None, level: str = "workgroup"):
        super().__init__(fn, num_subgroups=num_subgroups, debug=debug, target=target, level=level)
        if self.level != "wg":
            raise CompilationError(f"kernel '{fn.__name__}': the interpreter runs workgroup-level kernels only, "
                                   f"not level={level!r}")

    def run(self, grid, args, kwargs) -> Launch:
        overrides = self.launch_options(kwargs)
        return self.run_on_host(grid, self.arguments(args, kwargs), overrides)

    def run_compiled(self, ck, key, overrides: Dict[str, Any], grid, args, kwargs) -> Launch:
        """``ck[grid](*args)`` of a specialization ``warmup`` compiled: interpreted too."""
        overrides = dict(overrides)
        if "queue" in kwargs and "queue" not in self.by_name:
            overrides["queue"] = kwargs.pop("queue")
        return self.run_on_host(grid, self.arguments(args, kwargs), overrides)

    def run_on_host(self, grid, values: list, overrides: Dict[str, Any]) -> Launch:
        """Run on the host with NumPy. No SYCL device is needed: the target is ``target=`` /
        ``XEKERN_TARGET``, else the queue's device if one is given, else the ``cpu`` record; and
        ``device_print`` / ``device_assert`` always run (as in Triton's interpreter)."""
        name = overrides.get("target") or self.target or knobs.target()
        queue = overrides.get("queue")
        if name is not None:
            target = get_target(name) if isinstance(name, str) else name
        elif queue is not None:
            target = dev.target_for(queue.sycl_device)
        else:
            target = get_target("cpu")
        options = self.options(dict(overrides, debug=True), target)
        key, runtime = self.specialize(values, options)
        named = self.named(values)
        named.update((name, values[i]) for i, name, _, _ in runtime if name not in named)   # (tuple leaves)
        return interpret_launch(self, grid, named, self.signature(values, runtime), options)
