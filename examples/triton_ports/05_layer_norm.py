"""Triton tutorial 05, layer normalization (forward pass), ported to xekern.

The kernel is Triton's ``_layer_norm_fwd_fused`` as published; only the imports changed and
torch tensors became NumPy arrays. The tutorial's ``torch.autograd.Function`` is torch
machinery: its forward method is the plain function ``layer_norm`` here, and ``num_warps``
became ``num_subgroups`` (``num_ctas`` has no counterpart). See docs/coming_from_triton.md.

    python examples/triton_ports/05_layer_norm.py
"""
import numpy as np

import xekern as xk
import xekern.language as xl


@xk.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: xl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = xl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = xl.zeros([BLOCK_SIZE], dtype=xl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        a = xl.load(X + cols, mask=cols < N, other=0.).to(xl.float32)
        _mean += a
    mean = xl.sum(_mean, axis=0) / N
    # Compute variance
    _var = xl.zeros([BLOCK_SIZE], dtype=xl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        x = xl.load(X + cols, mask=cols < N, other=0.).to(xl.float32)
        x = xl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = xl.sum(_var, axis=0) / N
    rstd = 1 / xl.sqrt(var + eps)
    # Write mean / rstd
    xl.store(Mean + row, mean)
    xl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = xl.load(W + cols, mask=mask)
        b = xl.load(B + cols, mask=mask)
        x = xl.load(X + cols, mask=mask, other=0.).to(xl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        xl.store(Y + cols, y, mask=mask)


def layer_norm(x, normalized_shape, weight, bias, eps):
    """The forward method of the tutorial's ``LayerNorm(torch.autograd.Function)``; returns
    ``(y, mean, rstd)`` (the tutorial keeps mean and rstd for the backward pass)."""
    # allocate output
    y = np.empty_like(x)
    # reshape input data into 2D tensor
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    mean = np.empty((M, ), dtype=np.float32)
    rstd = np.empty((M, ), dtype=np.float32)
    # Less than 64KB per feature: enqueue fused kernel
    MAX_FUSED_SIZE = 65536 // x.itemsize
    BLOCK_SIZE = min(MAX_FUSED_SIZE, xk.next_power_of_2(N))
    if N > BLOCK_SIZE:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    # heuristics for number of subgroups (Triton: warps)
    num_subgroups = min(max(BLOCK_SIZE // 256, 1), 8)
    # enqueue kernel
    _layer_norm_fwd_fused[(M, )](  #
        x_arg, y, weight, bias, mean, rstd,  #
        x_arg.strides[0] // x_arg.itemsize, N, eps,  #
        BLOCK_SIZE=BLOCK_SIZE, num_subgroups=num_subgroups)
    return y, mean, rstd


def reference_layer_norm(x, weight, bias, eps):
    """float64 NumPy layer norm over the last dimension: (y, mean, rstd)."""
    x = x.astype(np.float64)
    mean = x.mean(axis=-1)
    rstd = 1 / np.sqrt(x.var(axis=-1) + eps)
    y = (x - mean[..., None]) * rstd[..., None] * weight.astype(np.float64) + bias.astype(np.float64)
    return y, mean, rstd


def main():
    rng = np.random.default_rng(0)
    M, N, dtype, eps = 1151, 8192, np.float16, 1e-5
    # create data
    x_shape = (M, N)
    w_shape = (x_shape[-1], )
    weight = rng.random(w_shape).astype(dtype)
    bias = rng.random(w_shape).astype(dtype)
    x = (-2.3 + 0.5 * rng.standard_normal(x_shape)).astype(dtype)
    # forward pass
    y_xekern, _, _ = layer_norm(x, w_shape, weight, bias, eps)
    y_ref, _, _ = reference_layer_norm(x, weight, bias, eps)
    err = np.max(np.abs(y_xekern.astype(np.float64) - y_ref))
    print(f'The maximum difference between numpy and xekern is {err}')
    if not err < 1e-2:
        raise SystemExit("layer norm: wrong result")


if __name__ == "__main__":
    main()
