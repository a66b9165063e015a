"""The memory-bound kernels of benchmarks/memory_bound.py that are not Triton tutorials, written the way
the tutorials write theirs (pointer arithmetic, masks), and each case's run on the CPU device next to
NumPy doing the same work. Tutorials 01, 02 and 05 come from examples/triton_ports."""
from __future__ import annotations

import importlib.util
import os

import numpy as np

import xekern as xk
import xekern.language as xl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@xk.jit
def rmsnorm_kernel(X, Y, W, stride, N, eps, BLOCK_SIZE: xl.constexpr):
    row = xl.program_id(0)
    cols = xl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = xl.load(X + row * stride + cols, mask=mask, other=0.).to(xl.float32)
    rstd = 1 / xl.sqrt(xl.sum(x * x, axis=0) / N + eps)
    w = xl.load(W + cols, mask=mask).to(xl.float32)
    xl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@xk.jit
def gelu_kernel(x_ptr, y_ptr, M, N, stride, BM: xl.constexpr, BN: xl.constexpr):
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    cols = xl.program_id(1) * BN + xl.arange(0, BN)
    offs = rows[:, None] * stride + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = xl.load(x_ptr + offs, mask=mask, other=0.).to(xl.float32)
    y = 0.5 * x * (1 + xl.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    xl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@xk.jit
def row_sum_kernel(x_ptr, out_ptr, M, N, stride, BM: xl.constexpr, BN: xl.constexpr):
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    cols = xl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = xl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.).to(xl.float32)
    xl.store(out_ptr + rows, xl.sum(x, axis=1), mask=rows < M)


@xk.jit
def transpose_kernel(x_ptr, y_ptr, M, N, x_stride, y_stride, B: xl.constexpr):
    rows = xl.program_id(0) * B + xl.arange(0, B)
    cols = xl.program_id(1) * B + xl.arange(0, B)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = xl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask)
    xl.store(y_ptr + cols[None, :] * y_stride + rows[:, None], x, mask=mask)


# ---- CPU runs: (xekern run, NumPy run, bytes the work must move) -----------------------------------------

def _np_dtype(name):
    if name == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.float32


def _example(name):
    path = os.path.join(ROOT, "examples", "triton_ports", name + ".py")
    spec = importlib.util.spec_from_file_location("mbk_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cpu_add(dtype, rng, n=1 << 24):
    t = _np_dtype(dtype)
    x, y = (rng.standard_normal(n).astype(t) for _ in range(2))
    dx, dy, do = xk.to_device(x), xk.to_device(y), xk.empty(n, t)
    k = _example("01_vector_add").add_kernel
    out = np.empty_like(x)
    return (lambda: k[(xk.cdiv(n, 1024),)](dx, dy, do, n, BLOCK_SIZE=1024),
            lambda: np.add(x, y, out=out), 3 * n * x.itemsize)


def cpu_softmax(block):
    def run(dtype, rng, rows=4096):
        t = _np_dtype(dtype)
        x = rng.standard_normal((rows, block)).astype(t)
        dx, do = xk.to_device(x), xk.empty(x.shape, t)
        k = _example("02_fused_softmax").softmax_kernel
        xf = x.astype(np.float32)

        def numpy():   # the multi-pass softmax of the tutorial's naive_softmax
            z = xf - xf.max(axis=1, keepdims=True)
            num = np.exp(z)
            return num / num.sum(axis=1, keepdims=True)
        return (lambda: k[(rows,)](do, dx, block, block, rows, block, BLOCK_SIZE=block, num_stages=1,
                                   num_subgroups=4 if block <= 1024 else 16),
                numpy, 2 * x.size * x.itemsize)
    return run


def cpu_layer_norm(dtype, rng, rows=4096, n=1024):
    t = _np_dtype(dtype)
    x = rng.standard_normal((rows, n)).astype(t)
    w, b = rng.standard_normal(n).astype(t), rng.standard_normal(n).astype(t)
    dx, dy, dw, db = xk.to_device(x), xk.empty(x.shape, t), xk.to_device(w), xk.to_device(b)
    mean, rstd = xk.empty(rows, np.float32), xk.empty(rows, np.float32)
    k = _example("05_layer_norm")._layer_norm_fwd_fused
    xf, wf, bf = x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)

    def numpy():
        mu = xf.mean(axis=1, keepdims=True)
        var = ((xf - mu) ** 2).mean(axis=1, keepdims=True)
        return (xf - mu) / np.sqrt(var + 1e-5) * wf + bf
    return (lambda: k[(rows,)](dx, dy, dw, db, mean, rstd, n, n, 1e-5, BLOCK_SIZE=1024, num_subgroups=4),
            numpy, 2 * x.size * x.itemsize)


def cpu_rmsnorm(dtype, rng, rows=4096, n=1024):
    t = _np_dtype(dtype)
    x, w = rng.standard_normal((rows, n)).astype(t), rng.standard_normal(n).astype(t)
    dx, dy, dw = xk.to_device(x), xk.empty(x.shape, t), xk.to_device(w)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    return (lambda: rmsnorm_kernel[(rows,)](dx, dy, dw, n, n, 1e-6, BLOCK_SIZE=1024, num_subgroups=4),
            lambda: xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * wf, 2 * x.size * x.itemsize)


def cpu_gelu(dtype, rng, m=4096, n=1024):
    t = _np_dtype(dtype)
    x = rng.standard_normal((m, n)).astype(t)
    dx, dy = xk.to_device(x), xk.empty(x.shape, t)
    xf = x.astype(np.float32)
    return (lambda: gelu_kernel[(xk.cdiv(m, 32), xk.cdiv(n, 128))](dx, dy, m, n, n, BM=32, BN=128, num_subgroups=4),
            lambda: 0.5 * xf * (1 + np.tanh(0.7978845608 * (xf + 0.044715 * xf ** 3))), 2 * x.size * x.itemsize)


def cpu_row_sum(dtype, rng, m=16384, n=256):
    t = _np_dtype(dtype)
    x = rng.standard_normal((m, n)).astype(t)
    dx, do = xk.to_device(x), xk.empty(m, np.float32)
    xf = x.astype(np.float32)
    return (lambda: row_sum_kernel[(xk.cdiv(m, 16),)](dx, do, m, n, n, BM=16, BN=256, num_subgroups=4),
            lambda: xf.sum(axis=1), x.size * x.itemsize)


def cpu_transpose(dtype, rng, m=4096, n=4096):
    t = _np_dtype(dtype)
    x = rng.standard_normal((m, n)).astype(t)
    dx, dy = xk.to_device(x), xk.empty((n, m), t)
    return (lambda: transpose_kernel[(xk.cdiv(m, 64), xk.cdiv(n, 64))](dx, dy, m, n, n, m, B=64, num_subgroups=4),
            lambda: np.ascontiguousarray(x.T), 2 * x.size * x.itemsize)
