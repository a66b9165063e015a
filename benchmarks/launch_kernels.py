"""The kernel benchmarks/launch.py launches (kernels must live in a file xekern can read)."""
import xekern as xk
import xekern.language as xl


@xk.jit
def add(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=m) + xl.load(y_ptr + offs, mask=m), mask=m)
