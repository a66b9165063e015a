"""Triton tutorial 03, matrix multiplication (pointer form), ported to xekern.

The kernel is Triton's ``matmul_kernel`` as published: grouped program ordering
(``GROUP_SIZE_M``), blocks of pointers advanced along K, ``xl.dot`` on the loaded tiles, a
fused ``leaky_relu`` activation and an fp16 result. Only the imports changed, torch tensors
became NumPy arrays, and the autotuning configurations use ``num_subgroups`` instead of
``num_warps``/``num_stages`` (with block sizes for Intel GPUs). See docs/coming_from_triton.md.

    python examples/triton_ports/03_matrix_multiplication.py
"""
import numpy as np

import xekern as xk
import xekern.language as xl


def get_autotune_config():
    return [
        xk.Config({'BLOCK_SIZE_M': 256, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 4},
                  num_subgroups=32),
        xk.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 4},
                  num_subgroups=16),
        xk.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8},
                  num_subgroups=8),
        xk.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8},
                  num_subgroups=4),
        xk.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8},
                  num_subgroups=4),
    ]


# `xk.autotune` decorator, which consumes:
#   - A list of `xk.Config` objects that define different configurations of
#       meta-parameters (e.g., `BLOCK_SIZE_M`) and compilation options (e.g., `num_subgroups`) to try
#   - An auto-tuning *key* whose change in values will trigger evaluation of all the
#       provided configs
@xk.autotune(
    configs=get_autotune_config(),
    key=['M', 'N', 'K'],
)
@xk.jit
def matmul_kernel(
        # Pointers to matrices
        a_ptr, b_ptr, c_ptr,
        # Matrix dimensions
        M, N, K,
        # The stride variables represent how much to increase the ptr by when moving by 1
        # element in a particular dimension. E.g. `stride_am` is how much to increase `a_ptr`
        # by to get the element one row down (A has M rows).
        stride_am, stride_ak,  #
        stride_bk, stride_bn,  #
        stride_cm, stride_cn,
        # Meta-parameters
        BLOCK_SIZE_M: xl.constexpr, BLOCK_SIZE_N: xl.constexpr, BLOCK_SIZE_K: xl.constexpr,  #
        GROUP_SIZE_M: xl.constexpr,  #
        ACTIVATION: xl.constexpr  #
):
    """Kernel for computing the matmul C = A x B.
    A has shape (M, K), B has shape (K, N) and C has shape (M, N)
    """
    # -----------------------------------------------------------
    # Map program ids `pid` to the block of C it should compute.
    # This is done in a grouped ordering to promote L2 data reuse.
    # See above `L2 Cache Optimizations` section for details.
    pid = xl.program_id(axis=0)
    num_pid_m = xl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = xl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # -----------------------------------------------------------
    # Add some integer bound assumptions.
    # This helps to guide integer analysis in the backend to optimize
    # load/store offset address calculation
    xl.assume(pid_m >= 0)
    xl.assume(pid_n >= 0)
    xl.assume(stride_am > 0)
    xl.assume(stride_ak > 0)
    xl.assume(stride_bn > 0)
    xl.assume(stride_bk > 0)
    xl.assume(stride_cm > 0)
    xl.assume(stride_cn > 0)

    # ----------------------------------------------------------
    # Create pointers for the first blocks of A and B.
    # We will advance this pointer as we move in the K direction
    # and accumulate
    # `a_ptrs` is a block of [BLOCK_SIZE_M, BLOCK_SIZE_K] pointers
    # `b_ptrs` is a block of [BLOCK_SIZE_K, BLOCK_SIZE_N] pointers
    # See above `Pointer Arithmetic` section for details
    offs_am = (pid_m * BLOCK_SIZE_M + xl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + xl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = xl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # -----------------------------------------------------------
    # Iterate to compute a block of the C matrix.
    # We accumulate into a `[BLOCK_SIZE_M, BLOCK_SIZE_N]` block
    # of fp32 values for higher accuracy.
    # `accumulator` will be converted back to fp16 after the loop.
    accumulator = xl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=xl.float32)
    for k in range(0, xl.cdiv(K, BLOCK_SIZE_K)):
        # Load the next block of A and B, generate a mask by checking the K dimension.
        # If it is out of bounds, set it to 0.
        a = xl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = xl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        # We accumulate along the K dimension.
        accumulator = xl.dot(a, b, accumulator)
        # Advance the ptrs to the next K block.
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # You can fuse arbitrary activation functions here
    # while the accumulator is still in FP32!
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(xl.float16)

    # -----------------------------------------------------------
    # Write back the block of the output matrix C with masks.
    offs_cm = pid_m * BLOCK_SIZE_M + xl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + xl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    xl.store(c_ptrs, c, mask=c_mask)


# We can fuse `leaky_relu` by providing it as an `ACTIVATION` meta-parameter in `matmul_kernel`.
@xk.jit
def leaky_relu(x):
    return xl.where(x >= 0, x, 0.01 * x)


def matmul(a, b, activation=""):
    # Check constraints.
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.flags.c_contiguous, "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    # Allocates output.
    c = np.empty((M, N), dtype=np.float16)
    # 1D launch kernel where each block gets its own program.
    grid = lambda META: (xk.cdiv(M, META['BLOCK_SIZE_M']) * xk.cdiv(N, META['BLOCK_SIZE_N']), )  # noqa: E731
    matmul_kernel[grid](
        a, b, c,  #
        M, N, K,  #
        a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,  #
        b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,  #
        c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,  #
        ACTIVATION=activation  #
    )
    return c


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float16)
    b = rng.standard_normal((512, 512)).astype(np.float16)
    xekern_output = matmul(a, b)
    numpy_output = a.astype(np.float64) @ b.astype(np.float64)
    print(f"xekern_output_with_fp16_inputs={xekern_output}")
    print(f"numpy_output_with_fp16_inputs={numpy_output}")
    err = np.max(np.abs(xekern_output - numpy_output) / np.maximum(1.0, np.abs(numpy_output)))
    if err < 1e-2:
        print("✅ xekern and NumPy match")
    else:
        raise SystemExit(f"❌ xekern and NumPy differ (max relative error {err})")


if __name__ == "__main__":
    main()
