"""The interpreter: runs a kernel's workgroup-level IR with NumPy on the host.

``XEKERN_INTERPRET=1`` (read when a kernel is decorated) or ``@xk.jit(interpret=True)`` makes
``kernel[grid](...)`` compile the kernel to workgroup IR only (``xekern.frontend.compile_to_ir``:
no layouts, no device code) and run it here, one program (workgroup) after another. Because it
all runs in this process, Python's tools reach it: ``trace()`` prints each op's values,
``break_at(line)`` opens pdb at a kernel line with the kernel's variables as locals.

Example::

    @xk.jit(interpret=True)
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: xl.constexpr):
        offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
        xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) + xl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    add[(xk.cdiv(n, 256),)](x, y, out, n, BLOCK=256)      # NumPy arrays are updated in place

Semantics are the device's (see ``numerics.py`` and each rule's docstring): 16-bit floats are
computed in f32, integers wrap, integer division by zero gives 0, masked-off elements are
neither read nor written. What the device leaves undefined is an error here when it is a bug
(an unmasked out-of-bounds access raises ``OutOfBoundsError``). Ops are dispatched through a table
keyed by op class (``core.rule``); an op without a rule is a ``CompilationError`` naming it.

Files: ``core.py`` (rule table, errors, running blocks), ``numerics.py`` (device arithmetic on
NumPy), ``rules_arith.py`` (values, control flow, ids), ``rules_memory.py`` (pointers,
descriptors, DPAS, SLM), ``rules_debug.py`` (device_print, device_assert), ``launch.py``
(arguments, the grid, copying back), ``function.py`` (``InterpretedFunction``, what ``@xk.jit``
makes of an interpreted kernel), ``debug.py`` (tracing and breakpoints).
"""
from . import rules_arith, rules_debug, rules_memory  # noqa: F401  (they register their rules)
from .core import RULES, DeviceAssertionError, InterpreterError, OutOfBoundsError, Program, rule
from .debug import Event, break_at, clear, trace
from .function import InterpretedFunction
from .launch import InterpretedKernel, interpret_launch, run_function

__all__ = ["interpret_launch", "run_function", "rule", "RULES", "Program", "InterpreterError", "OutOfBoundsError",
           "DeviceAssertionError", "InterpretedFunction", "InterpretedKernel", "trace", "break_at", "clear", "Event"]
