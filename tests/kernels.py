"""Kernels the tests run on every device and compile for every target (Triton tutorials 01,
02, 05 and the foundation's feature kernels)."""
import xekern as xk
import xekern.language as xl

SCALE = 3  # a module-level constant read by a kernel


@xk.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    x = xl.load(x_ptr + offs, mask=mask, other=0.0)
    y = xl.load(y_ptr + offs, mask=mask, other=0.0)
    xl.store(out_ptr + offs, x + y, mask=mask)


@xk.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: xl.constexpr):
    row = xl.program_id(0)
    offs = xl.arange(0, BLOCK)
    x = xl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - xl.max(x, axis=0)
    num = xl.exp(x)
    y = num / xl.sum(num, axis=0)
    xl.store(out_ptr + row * out_stride + offs, y, mask=offs < n_cols)


@xk.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: xl.constexpr):
    row = xl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = xl.zeros([BLOCK_SIZE], dtype=xl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        a = xl.load(X + cols, mask=cols < N, other=0.).to(xl.float32)
        _mean += a
    mean = xl.sum(_mean, axis=0) / N
    _var = xl.zeros([BLOCK_SIZE], dtype=xl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        x = xl.load(X + cols, mask=cols < N, other=0.).to(xl.float32)
        x = xl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = xl.sum(_var, axis=0) / N
    rstd = 1 / xl.sqrt(var + eps)
    xl.store(Mean + row, mean)
    xl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + xl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = xl.load(W + cols, mask=mask)
        b = xl.load(B + cols, mask=mask)
        x = xl.load(X + cols, mask=mask, other=0.).to(xl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        xl.store(Y + cols, y, mask=mask)


@xk.jit
def masked_rows_kernel(x_ptr, sum_ptr, max_ptr, arg_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """Row sums, column-wise maxima and row argmax of a ragged 2-D tile (masked reduction)."""
    rm = xl.program_id(0) * BM + xl.arange(0, BM)
    rn = xl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = xl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    xl.store(sum_ptr + rm, xl.sum(x, axis=1), mask=rm < M)
    neg = xl.where(m, x, -float("inf"))
    xl.store(arg_ptr + rm, xl.argmax(neg, axis=1), mask=rm < M)
    xl.atomic_max(max_ptr + rn, xl.max(neg, axis=0), mask=rn < N)


@xk.jit
def collatz_steps(x_ptr, out_ptr, limit):
    """A scalar while loop with an if inside, one element per workgroup."""
    pid = xl.program_id(0)
    v = xl.load(x_ptr + pid)
    steps = 0
    while (v != 1) & (steps < limit):
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    xl.store(out_ptr + pid, steps)


@xk.jit
def scaled_relu(x, alpha):
    """A helper jit function, inlined into its caller."""
    return xl.where(x > 0, x, x * alpha) * SCALE


@xk.jit
def call_kernel(x_ptr, out_ptr, n, alpha, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n)
    xl.store(out_ptr + offs, scaled_relu(x, alpha), mask=offs < n)


@xk.jit
def int_ops_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: xl.constexpr):
    """C-like integer semantics: wrap-around, truncating division and remainder, shifts."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    a = xl.load(a_ptr + offs, mask=mask)
    b = xl.load(b_ptr + offs, mask=mask, other=1)
    out = out_ptr + offs * 6
    xl.store(out + 0, a + b, mask=mask)
    xl.store(out + 1, a * b, mask=mask)
    xl.store(out + 2, a // b, mask=mask)
    xl.store(out + 3, a % b, mask=mask)
    xl.store(out + 4, (a << 3) ^ (b >> 1), mask=mask)
    xl.store(out + 5, ~a & (b | 7), mask=mask)
