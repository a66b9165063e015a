"""Triton's matrix multiplication in tensor-descriptor form, ported to xekern.

This is the kernel of Triton's tutorial 09 (persistent matmul) that creates its descriptors on
the device with ``xl.make_tensor_descriptor`` (``matmul_kernel_descriptor_persistent``): a
persistent loop over output tiles in grouped order, block loads through descriptors, B given
as N x K and transposed with ``b.T`` for ``xl.dot``, and an optional split epilogue. Only the
imports changed, torch tensors became NumPy arrays, ``num_warps``/``num_stages`` became
``num_subgroups``, and the SM count (``multi_processor_count``) became the device's compute
units. The Hopper-only ``FLATTEN`` switch and its config pruning are left out.
See docs/coming_from_triton.md.

    python examples/triton_ports/03a_matrix_multiplication_descriptor.py
"""
from typing import Optional

import numpy as np

import xekern as xk
import xekern.language as xl


def matmul_tma_persistent_get_configs(pre_hook=None):
    return [
        xk.Config(
            {
                'BLOCK_SIZE_M': BM, 'BLOCK_SIZE_N': BN, "BLOCK_SIZE_K": BK, "GROUP_SIZE_M": 8, "EPILOGUE_SUBTILE": SUBTILE
            }, num_subgroups=s)  #
        for BM in [128]  #
        for BN in [128, 256]  #
        for BK in [32, 64]  #
        for s in [8, 16, 32]  #
        for SUBTILE in [True, False]  #
    ]


@xk.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@xk.autotune(
    configs=matmul_tma_persistent_get_configs(),
    key=["M", "N", "K", "WARP_SPECIALIZE"],
)
@xk.jit
def matmul_kernel_descriptor_persistent(
    a_ptr,
    b_ptr,
    c_ptr,  #
    M,
    N,
    K,  #
    BLOCK_SIZE_M: xl.constexpr,  #
    BLOCK_SIZE_N: xl.constexpr,  #
    BLOCK_SIZE_K: xl.constexpr,  #
    GROUP_SIZE_M: xl.constexpr,  #
    EPILOGUE_SUBTILE: xl.constexpr,  #
    NUM_SMS: xl.constexpr,  #
    WARP_SPECIALIZE: xl.constexpr,  #
):
    # Matmul using device-side descriptor creation
    dtype = c_ptr.dtype.element_ty
    start_pid = xl.program_id(axis=0)
    num_pid_m = xl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = xl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = xl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = xl.make_tensor_descriptor(
        a_ptr,
        shape=[M, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
    )
    b_desc = xl.make_tensor_descriptor(
        b_ptr,
        shape=[N, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K],
    )
    c_desc = xl.make_tensor_descriptor(
        c_ptr,
        shape=[M, N],
        strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2],
    )

    # tile_id_c is used in the epilogue to break the dependency between
    # the prologue and the epilogue
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in xl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = xl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=xl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = xl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N

        if EPILOGUE_SUBTILE:
            acc = xl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = xl.permute(acc, (0, 2, 1))
            acc0, acc1 = xl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


def num_compute_units():
    """The tutorial's ``NUM_SMS`` (``driver.active.utils.get_device_properties(device)["multiprocessor_count"]``)."""
    return xk.device_properties()["multiprocessor_count"]


def matmul_descriptor_persistent(a, b, warp_specialize: bool = False):
    # Check constraints.
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"  # b is transposed
    assert a.dtype == b.dtype, "Incompatible dtypes"

    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype

    c = np.empty((M, N), dtype=dtype)
    NUM_SMS = num_compute_units()

    # Descriptors created on the device may need a global memory allocation
    def alloc_fn(size: int, alignment: int, stream: Optional[int]):
        return xk.empty(size, dtype=np.int8)

    xk.set_allocator(alloc_fn)

    grid = lambda META: (min(NUM_SMS, xk.cdiv(M, META["BLOCK_SIZE_M"]) * xk.cdiv(N, META["BLOCK_SIZE_N"])), )  # noqa: E731
    matmul_kernel_descriptor_persistent[grid](
        a, b, c,  #
        M, N, K,  #
        NUM_SMS=NUM_SMS,  #
        WARP_SPECIALIZE=warp_specialize,  #
    )
    return c


def main():
    rng = np.random.default_rng(0)
    M, N, K = 1024, 1024, 512
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = matmul_descriptor_persistent(a, np.ascontiguousarray(b.T))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.max(np.abs(c - ref) / np.maximum(1.0, np.abs(ref)))
    print(f"max relative error against NumPy: {err}")
    if not err < 1e-2:
        raise SystemExit("descriptor matmul: wrong result")


if __name__ == "__main__":
    main()
