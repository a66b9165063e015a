"""Triton tutorial 01, vector addition, ported to xekern.

The kernel is Triton's ``add_kernel`` as published; only the imports changed (``triton`` ->
``xekern``, ``tl`` -> ``xl``) and torch tensors became xekern device arrays (``xk.to_device``,
``xk.empty``). See docs/coming_from_triton.md.

    python examples/triton_ports/01_vector_add.py
"""
import numpy as np

import xekern as xk
import xekern.language as xl


@xk.jit
def add_kernel(x_ptr,  # *Pointer* to first input vector.
               y_ptr,  # *Pointer* to second input vector.
               output_ptr,  # *Pointer* to output vector.
               n_elements,  # Size of the vector.
               BLOCK_SIZE: xl.constexpr,  # Number of elements each program should process.
               # NOTE: `constexpr` so it can be used as a shape value.
               ):
    # There are multiple 'programs' processing different data. We identify which program
    # we are here:
    pid = xl.program_id(axis=0)  # We use a 1D launch grid so axis is 0.
    # This program will process inputs that are offset from the initial data.
    # For instance, if you had a vector of length 256 and block_size of 64, the programs
    # would each access the elements [0:64, 64:128, 128:192, 192:256].
    # Note that offsets is a list of pointers:
    block_start = pid * BLOCK_SIZE
    offsets = block_start + xl.arange(0, BLOCK_SIZE)
    # Create a mask to guard memory operations against out-of-bounds accesses.
    mask = offsets < n_elements
    # Load x and y from DRAM, masking out any extra elements in case the input is not a
    # multiple of the block size.
    x = xl.load(x_ptr + offsets, mask=mask)
    y = xl.load(y_ptr + offsets, mask=mask)
    output = x + y
    # Write x + y back to DRAM.
    xl.store(output_ptr + offsets, output, mask=mask)


def add(x: xk.DeviceArray, y: xk.DeviceArray):
    # We need to preallocate the output.
    output = xk.empty(x.shape, x.dtype)
    n_elements = output.size
    # The SPMD launch grid denotes the number of kernel instances that run in parallel.
    # It can be either Tuple[int], or Callable(metaparameters) -> Tuple[int].
    # In this case, we use a 1D grid where the size is the number of blocks:
    grid = lambda meta: (xk.cdiv(n_elements, meta['BLOCK_SIZE']), )  # noqa: E731
    # NOTE:
    #  - Each device array is implicitly converted into a pointer to its first element.
    #  - `xk.jit`'ed functions can be indexed with a launch grid to obtain a callable kernel.
    #  - Don't forget to pass meta-parameters as keywords arguments.
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    # We return a handle to the output but, since `xk.synchronize()` hasn't been called, the kernel is
    # still running asynchronously at this point.
    return output


def main():
    rng = np.random.default_rng(0)
    size = 98432
    x_host = rng.random(size, dtype=np.float32)
    y_host = rng.random(size, dtype=np.float32)
    x, y = xk.to_device(x_host), xk.to_device(y_host)
    output_numpy = x_host + y_host
    output_xekern = add(x, y).numpy()
    print(output_numpy)
    print(output_xekern)
    diff = np.max(np.abs(output_numpy - output_xekern))
    print(f'The maximum difference between numpy and xekern is {diff}')
    if diff != 0:
        raise SystemExit("vector add: wrong result")


if __name__ == "__main__":
    main()
