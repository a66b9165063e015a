"""The kernels of benchmarks/long_run.py (in their own module: xekern reads a kernel's source file)."""
import xekern as xk
import xekern.language as xl


@xk.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=mask) + xl.load(y_ptr + offs, mask=mask), mask=mask)


@xk.jit
def scale_kernel(x_ptr, out_ptr, n, C: xl.constexpr, BLOCK: xl.constexpr):
    """One specialization per value of C."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=mask) * C, mask=mask)
