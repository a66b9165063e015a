"""Triton tutorial 02, fused softmax, ported to xekern.

The kernel is Triton's ``softmax_kernel`` as published (a persistent loop over rows with
``xl.range``); only the imports changed and torch tensors became NumPy arrays. The host-side
occupancy calculation of the tutorial reads CUDA facts (registers per SM, warp size, SM count);
it is replaced by the device's compute-unit count, and ``num_warps`` became ``num_subgroups``.
See docs/coming_from_triton.md.

    python examples/triton_ports/02_fused_softmax.py
"""
import numpy as np

import xekern as xk
import xekern.language as xl


def naive_softmax(x):
    """Compute row-wise softmax of X using native NumPy

    We subtract the maximum element in order to avoid overflows. Softmax is invariant to
    this shift.
    """
    # read  MN elements ; write M  elements
    x_max = x.max(axis=1)
    # read MN + M elements ; write MN elements
    z = x - x_max[:, None]
    # read  MN elements ; write MN elements
    numerator = np.exp(z)
    # read  MN elements ; write M  elements
    denominator = numerator.sum(axis=1)
    # read MN + M elements ; write MN elements
    ret = numerator / denominator[:, None]
    # in total: read 5MN + 2M elements ; wrote 3MN + 2M elements
    return ret


@xk.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: xl.constexpr, num_stages: xl.constexpr):
    # starting row of the program
    row_start = xl.program_id(0)
    row_step = xl.num_programs(0)
    for row_idx in xl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
        row_start_ptr = input_ptr + row_idx * input_row_stride
        # The block size is the next power of two greater than n_cols, so we can fit each
        # row in a single block
        col_offsets = xl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
        mask = col_offsets < n_cols
        row = xl.load(input_ptrs, mask=mask, other=-float('inf'))
        # Subtract maximum for numerical stability
        row_minus_max = row - xl.max(row, axis=0)
        # Note that exponentiation is fast but approximate
        numerator = xl.exp(row_minus_max)
        denominator = xl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        # Write back output to DRAM
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        xl.store(output_ptrs, softmax_output, mask=mask)


def num_compute_units():
    """The tutorial's ``NUM_SM`` (``driver.active.utils.get_device_properties(device)["multiprocessor_count"]``)."""
    return xk.device_properties()["multiprocessor_count"]


def softmax(x):
    n_rows, n_cols = x.shape

    # The block size of each loop iteration is the smallest power of two greater than the number of
    # columns in `x`
    BLOCK_SIZE = xk.next_power_of_2(n_cols)

    # Another trick we can use is to ask the compiler to use more threads per row by
    # increasing the number of subgroups (`num_subgroups`, Triton's `num_warps`) over which each row
    # is distributed.
    num_subgroups = 8

    # Number of software pipelining stages.
    num_stages = 2

    # Allocate output
    y = np.empty_like(x)

    # pre-compile kernel to get register usage and compute thread occupancy.
    kernel = softmax_kernel.warmup(y, x, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, n_rows, n_cols,
                                   BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages, num_subgroups=num_subgroups,
                                   grid=(1, ))
    # Triton sizes the persistent grid from the registers and shared memory the compiled kernel uses
    # and the SM's limits; a workgroup per compute unit stands in for that here
    num_programs = num_compute_units()
    num_programs = min(num_programs, n_rows)

    # Create a number of persistent programs.
    kernel[(num_programs, 1, 1)](y, x, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, n_rows, n_cols,
                                 BLOCK_SIZE, num_stages)
    return y


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1823, 781), dtype=np.float32)
    y_xekern = softmax(x)
    y_numpy = naive_softmax(x.astype(np.float64))
    err = np.max(np.abs(y_xekern - y_numpy))
    print(f'The maximum difference between numpy and xekern is {err}')
    if not err < 1e-6:
        raise SystemExit("fused softmax: wrong result")


if __name__ == "__main__":
    main()
