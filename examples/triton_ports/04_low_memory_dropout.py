"""Triton tutorial 04, low-memory dropout, ported to xekern.

Dropout zeroes each element with probability ``p`` and scales the others by ``1 / (1 - p)``. The
first kernel takes the keep-mask as an input tensor; the second ("seeded") makes it inside the
kernel from a seed with ``xl.rand``, so the mask never exists in memory and the same seed gives
the same mask again (for the backward pass). The kernels are the tutorial's with ``tl`` spelled
``xl``; ``xl.rand`` gives Triton's numbers bit for bit (Philox-4x32-10, language/random.py).

    python examples/triton_ports/04_low_memory_dropout.py
"""
import numpy as np

import xekern as xk
import xekern.language as xl


@xk.jit
def _dropout(x_ptr, x_keep_ptr, output_ptr, n_elements, p, BLOCK_SIZE: xl.constexpr):
    pid = xl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + xl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = xl.load(x_ptr + offsets, mask=mask)
    x_keep = xl.load(x_keep_ptr + offsets, mask=mask)
    # the scaling keeps the expected value of each element: E[output] = x
    output = xl.where(x_keep, x / (1 - p), 0.0)
    xl.store(output_ptr + offsets, output, mask=mask)


@xk.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: xl.constexpr):
    pid = xl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + xl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = xl.load(x_ptr + offsets, mask=mask)
    # one uniform number per element, a function of (seed, offset) only
    random = xl.rand(seed, offsets)
    x_keep = random > p
    output = xl.where(x_keep, x / (1 - p), 0.0)
    xl.store(output_ptr + offsets, output, mask=mask)


def dropout(x, x_keep, p):
    output = np.empty_like(x)
    n = x.size
    _dropout[(xk.cdiv(n, 1024),)](x, x_keep, output, n, p, BLOCK_SIZE=1024)
    return output


def seeded_dropout(x, p, seed):
    output = np.empty_like(x)
    n = x.size
    _seeded_dropout[(xk.cdiv(n, 1024),)](x, output, n, p, seed, BLOCK_SIZE=1024)
    return output


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10).astype(np.float32)
    p = 0.5
    x_keep = rng.random(10) > p
    out = dropout(x, x_keep, p)
    print("input   ", x)
    print("keep    ", x_keep.astype(np.int32))
    print("output  ", out)
    if not np.allclose(out, np.where(x_keep, x / (1 - p), 0.0)):
        raise SystemExit("dropout: wrong result")
    a, b, c = (seeded_dropout(x, p, seed) for seed in (123, 123, 512))
    print("seed 123", a)
    print("seed 123", b)
    print("seed 512", c)
    if not np.array_equal(a, b) or np.array_equal(a, c):
        raise SystemExit("seeded dropout: the same seed must give the same mask, another seed another one")


if __name__ == "__main__":
    main()
