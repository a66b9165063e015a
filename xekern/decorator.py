"""``@xk.jit``: the decorator. It decides, when the kernel is decorated, how the kernel runs:
compiled for a device (``runtime/jit.JITFunction``) or on the host in the NumPy interpreter
(``interpreter/function.InterpretedFunction``), as Triton's ``@jit`` returns an
``InterpretedFunction`` under ``TRITON_INTERPRET=1``. It sits above both, so that neither the
runtime nor the interpreter imports the other to choose.
"""
from __future__ import annotations

from typing import Optional

from . import knobs
from .runtime.jit import JITFunction


def jit(fn=None, *, num_subgroups: int = 4, debug: Optional[bool] = None, target: Optional[str] = None,
        interpret: Optional[bool] = None, level: str = "workgroup", noinline: bool = False,
        do_not_specialize=(), do_not_specialize_on_alignment=()):
    """Decorate a kernel, written at workgroup level (the default: whole tiles, distributed by the
    compiler), at ``level="subgroup"`` (tiles are one subgroup's data) or at ``level="lane"`` (scalars
    of one work item); see docs/levels.md.

    ``interpret=True`` runs it on the host with NumPy (``xekern.interpreter``) instead of compiling
    it; None (the default) reads the ``XEKERN_INTERPRET`` knob now, when the kernel is decorated,
    and applies it to workgroup-level kernels (the others compile). ``debug`` likewise reads
    ``XEKERN_DEBUG`` now.

    Triton's ``noinline``, ``do_not_specialize`` and ``do_not_specialize_on_alignment`` are accepted
    (the names are checked): helpers are always inlined, an integer argument gives at most three
    specializations (equal to 1, a multiple of 16, other) and a pointer two (its address 16-byte
    aligned or not), so they change no result.

    Example::

        @xk.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: xl.constexpr):
            offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
            xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) + xl.load(y_ptr + offs, mask=offs < n),
                     mask=offs < n)

        add[(xk.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    """
    def wrap(f):
        import inspect
        names = set(inspect.signature(f).parameters)
        for option, given in (("do_not_specialize", do_not_specialize),
                              ("do_not_specialize_on_alignment", do_not_specialize_on_alignment)):
            for g in given:
                if not (isinstance(g, int) and 0 <= g < len(names)) and g not in names:
                    from .errors import CompilationError
                    raise CompilationError(f"@xk.jit({option}=...): {g!r} is not a parameter of {f.__name__}")
        on_host = (level == "workgroup" and knobs.interpret()) if interpret is None else bool(interpret)
        if on_host:
            from .interpreter.function import InterpretedFunction  # (the interpreter loads when first used)
            return InterpretedFunction(f, num_subgroups=num_subgroups, debug=debug, target=target, level=level)
        return JITFunction(f, num_subgroups=num_subgroups, debug=debug, target=target, level=level)
    return wrap(fn) if fn is not None else wrap
