"""xekern's GEMM example: C = A @ B on the default device, checked against NumPy.

    python examples/gemm/gemm.py [--m 512 --n 512 --k 512]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import xekern as xk
import xekern.language as xl


@xk.jit
def matmul_outer(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: xl.constexpr, BN: xl.constexpr):
    """A simple f32 GEMM: rank-1 updates of a BM x BN accumulator tile."""
    rm = xl.program_id(0) * BM + xl.arange(0, BM)
    rn = xl.program_id(1) * BN + xl.arange(0, BN)
    acc = xl.zeros((BM, BN), xl.float32)
    for k in range(0, K):
        a = xl.load(a_ptr + rm * stride_am + k * stride_ak, mask=rm < M, other=0.0)
        b = xl.load(b_ptr + k * stride_bk + rn * stride_bn, mask=rn < N, other=0.0)
        acc += a[:, None] * b[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    xl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=mask)


def gemm(a: xk.DeviceArray, b: xk.DeviceArray, c: xk.DeviceArray, BM=32, BN=64):
    M, K = a.shape
    _, N = b.shape
    return matmul_outer[(xk.cdiv(M, BM), xk.cdiv(N, BN))](a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=BM, BN=BN)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, default=513)
    p.add_argument("--n", type=int, default=511)
    p.add_argument("--k", type=int, default=257)
    args = p.parse_args(argv)
    rng = np.random.default_rng()
    a = rng.standard_normal((args.m, args.k), dtype=np.float32)
    b = rng.standard_normal((args.k, args.n), dtype=np.float32)
    da, db = xk.to_device(a), xk.to_device(b)
    dc = xk.empty((args.m, args.n), np.float32)
    gemm(da, db, dc).wait()  # compile + warm up
    t = time.perf_counter()
    gemm(da, db, dc).wait()
    dt = time.perf_counter() - t
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(dc.numpy() - ref).max() / max(1.0, np.abs(ref).max())
    flops = 2.0 * args.m * args.n * args.k
    dev = da.queue.sycl_device.name
    print(f"{'shape':>16} {'dtype':>6} {'time ms':>9} {'GFLOP/s':>9} {'max rel err':>12}  device")
    shape = f"{args.m}x{args.n}x{args.k}"
    print(f"{shape:>16} {'f32':>6} {dt * 1e3:9.2f} {flops / dt / 1e9:9.2f} {err:12.2e}  {dev}")
    if not err < 1e-4:
        raise SystemExit(f"GEMM result is wrong: max relative error {err:.3e}")


if __name__ == "__main__":
    main()
