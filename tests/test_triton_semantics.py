"""Triton's semantics where xekern computed something else without a word: shifts right by the left
operand's signedness, no `/`, `//` or `%` between signed and unsigned integers, and program order
for global memory (a later store is never seen by an earlier load of the program, whichever
subgroups the two tiles are spread over)."""
import warnings

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def shift_right(x_ptr, s_ptr, o_ptr, u_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    x = xl.load(x_ptr + offs, mask=m)           # int32
    s = xl.load(s_ptr + offs, mask=m)           # uint32
    xl.store(o_ptr + offs, (x >> s).to(xl.int32, bitcast=True), mask=m)   # arithmetic: x is signed
    xl.store(u_ptr + offs, (x.to(xl.uint32, bitcast=True) >> s), mask=m)  # logical: the left is unsigned


def test_shift_right_follows_the_left_operand(backend, rng):
    n = 77
    x = rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32)
    s = rng.integers(0, 32, n).astype(np.uint32)
    o, u = poisoned(n, np.int32), poisoned(n, np.uint32)
    o, u = backend.run(shift_right, (1,), [x, s, o, u, n], BLOCK=128)[2:4]
    np.testing.assert_array_equal(o, x.astype(np.int64) >> s.astype(np.int64))
    np.testing.assert_array_equal(u, x.view(np.uint32).astype(np.uint64) >> s.astype(np.uint64))


@xk.jit
def mixed_division(x_ptr, s_ptr, o_ptr, OP: xl.constexpr):
    offs = xl.arange(0, 16)
    x = xl.load(x_ptr + offs)
    s = xl.load(s_ptr + offs)
    if OP == 0:
        y = x // s
    elif OP == 1:
        y = x % s
    else:
        y = x / s
    xl.store(o_ptr + offs, y)


@pytest.mark.parametrize("op,symbol", [(0, "//"), (1, "%"), (2, "/")])
def test_division_between_signed_and_unsigned_is_refused(op, symbol):
    sig = {"x_ptr": xk.pointer(xl.int32), "s_ptr": xk.pointer(xl.uint32), "o_ptr": xk.pointer(xl.float32),
           "OP": op}
    with pytest.raises(xk.CompilationError) as info:
        mixed_division.compile_offline(sig, "cpu")
    text = str(info.value)
    assert f"'{symbol}' between int32 and uint32: the operands have different signedness" in text, text


@xk.jit
def add_first_row(z_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    z = xl.load(z_ptr + r[:, None] * N + c[None, :], mask=m)
    z += xl.load(z_ptr + c, mask=c < N)[None, :]
    xl.store(z_ptr + r[:, None] * N + c[None, :], z, mask=m)


@xk.jit
def shift_rows_down(z_ptr, ROWS, N, BN: xl.constexpr):
    c = xl.arange(0, BN)
    for i in range(1, ROWS):
        r = ROWS - i
        above = xl.load(z_ptr + (r - 1) * N + c, mask=c < N)
        xl.store(z_ptr + r * N + c, above, mask=c < N)


@pytest.mark.parametrize("num_subgroups", [2, 4, 8])
def test_a_later_store_is_not_seen_by_an_earlier_load(backend, rng, num_subgroups):
    M, N = 29, 45
    for _ in range(3):   # (a race shows up in some runs only)
        z = rng.standard_normal((M, N)).astype(np.float32)
        got = backend.run(add_first_row, (1,), [z, M, N], BM=32, BN=64, num_subgroups=num_subgroups)[0]
        np.testing.assert_array_equal(got, z + z[0][None, :])


def test_a_loop_that_moves_rows_in_place(backend, rng):
    rows, N = 9, 100
    z = rng.standard_normal((rows, N)).astype(np.float32)
    got = backend.run(shift_rows_down, (1,), [z, rows, N], BN=128)[0]
    want = np.concatenate([z[:1], z[:-1]])
    np.testing.assert_array_equal(got[1:], want[1:])


@xk.jit
def add_into(o_ptr, x_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    xl.atomic_add(o_ptr + offs, xl.load(x_ptr + xl.program_id(0) * n + offs, mask=m), mask=m)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_float_atomic_add_with_contention(backend, rng, dtype):
    """Seven programs add into the same 53 slots (neighbours share a 32-bit word): a compare-and-swap
    loop on the word, no lost update."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    n, progs = 53, 7
    x = (rng.integers(-8, 8, (progs, n)) / 4).astype(dt)     # exact in 16 bits, and every partial sum too
    o = (rng.integers(-8, 8, 64) / 4).astype(dt)
    got = backend.run(add_into, (progs,), [o, x.reshape(-1), n], BLOCK=64)[0]
    want = o.astype(np.float64)
    want[:n] += x.astype(np.float64).sum(0)
    np.testing.assert_array_equal(got.astype(np.float64), want)


@xk.jit
def dot_to(a_ptr, b_ptr, c_ptr, OUT: xl.constexpr):
    r = xl.arange(0, 32)
    a = xl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = xl.load(b_ptr + r[:, None] * 32 + r[None, :])
    acc = xl.full((32, 32), 1.0, OUT)
    xl.store(c_ptr + r[:, None] * 32 + r[None, :], xl.dot(a, b, acc, out_dtype=OUT))


def test_dot_with_a_16_bit_out_dtype(backend, rng):
    a, b = (rng.standard_normal((32, 32)).astype(np.float16) for _ in range(2))
    c = backend.run(dot_to, (1,), [a, b, poisoned((32, 32), np.float16)], OUT=xl.float16)[2]
    want = (a.astype(np.float64) @ b.astype(np.float64) + 1.0).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-2)


def test_dot_out_dtype_must_fit_the_operands():
    sig = {"a_ptr": xk.pointer(xl.int8), "b_ptr": xk.pointer(xl.int8), "c_ptr": xk.pointer(xl.float16),
           "OUT": xl.float16}
    with pytest.raises(xk.CompilationError) as info:
        dot_to.compile_offline(sig, "cpu")
    assert "dot of int8 operands: out_dtype must be int32, got float16" in str(info.value), str(info.value)


@xk.jit
def hinted(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    xl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    xl.static_print("BLOCK is", BLOCK)
    offs = xl.multiple_of(xl.program_id(0) * BLOCK, 16) + xl.arange(0, BLOCK)
    offs = xl.max_contiguous(xl.max_constancy(offs, 1), BLOCK)
    m = offs < n
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
    xl.debug_barrier()


def test_static_checks_and_hints(backend, rng, capfd):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    o = backend.run(hinted, (2,), [x, poisoned(n, np.float32), n], BLOCK=64)[1]
    np.testing.assert_array_equal(o, 2 * x)
    sig = {"x_ptr": xk.pointer(xl.float32), "o_ptr": xk.pointer(xl.float32), "n": xl.int32}
    capfd.readouterr()
    hinted.compile_offline(dict(sig, BLOCK=32), "cpu")
    assert "BLOCK is 32" in capfd.readouterr().err
    with pytest.raises(xk.CompilationError) as info:
        hinted.compile_offline(dict(sig, BLOCK=8), "cpu")
    assert "static_assert failed: BLOCK must be a multiple of 16" in str(info.value)
    assert "xl.static_assert(BLOCK % 16 == 0" in info.value.source_line


@xk.jit
def reductions(x_ptr, m_ptr, i_ptr, j_ptr, s_ptr, p_ptr, a_ptr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    m, i = xl.max(x, axis=1, return_indices=True)
    _, j = xl.min(x, 1, True, False)              # positional, as Triton's signature: the last minimum
    xl.store(m_ptr + r, m)
    xl.store(i_ptr + r, i)
    xl.store(j_ptr + r, j)
    xl.store(s_ptr + r, xl.sum(x.to(xl.int8), axis=1, dtype=xl.int32))
    xl.store(p_ptr + r, xl.prod(x, axis=1))
    xl.store(a_ptr + r, xl.argmax(x, axis=1, tie_break_left=False))


def test_reduction_keywords(backend, rng):
    BM, BN = 16, 32
    x = rng.integers(-3, 4, (BM, BN)).astype(np.float32)      # many ties
    outs = backend.run(reductions, (1,), [x] + [poisoned(BM, d) for d in (np.float32, np.int32, np.int32,
                                                                          np.int32, np.float32, np.int32)],
                       BM=BM, BN=BN)
    m, i, j, s, p, a = outs[1:]
    np.testing.assert_array_equal(m, x.max(1))
    np.testing.assert_array_equal(i, x.argmax(1))
    np.testing.assert_array_equal(j, BN - 1 - np.argmin(x[:, ::-1], 1))
    np.testing.assert_array_equal(a, BN - 1 - np.argmax(x[:, ::-1], 1))
    np.testing.assert_array_equal(s, x.astype(np.int64).sum(1))
    np.testing.assert_allclose(p, x.astype(np.float64).prod(1), rtol=1e-6)


@xk.jit
def swizzled(o_ptr, SI: xl.constexpr, SJ: xl.constexpr, G: xl.constexpr):
    i, j = xl.broadcast(xl.arange(0, SI)[:, None], xl.arange(0, SJ)[None, :])
    ni, nj = xl.swizzle2d(i, j, SI, SJ, G)
    xl.store(o_ptr + (i * SJ + j) * 2, ni)
    xl.store(o_ptr + (i * SJ + j) * 2 + 1, nj)


@pytest.mark.parametrize("si,sj,g", [(4, 4, 2), (8, 4, 3), (16, 8, 5)])
def test_swizzle2d(backend, si, sj, g):
    o = backend.run(swizzled, (1,), [poisoned((si, sj, 2), np.int32)], SI=si, SJ=sj, G=g)[0]
    for a in range(si):
        for b in range(sj):
            ij = a * sj + b
            first = ij // (g * sj) * g
            rows, w = min(si - first, g), ij % (g * sj)
            assert tuple(o[a, b]) == (first + w % rows, w // rows)
    if (si, sj, g) == (4, 4, 2):   # the example of Triton's documentation
        new = np.empty((4, 4), np.int32)
        for a in range(4):
            for b in range(4):
                new[tuple(o[a, b])] = a * 4 + b
        np.testing.assert_array_equal(new, [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]])


@xk.jit
def literals_and_pointer_dims(x_ptr, o_ptr, s_ptr, n, BM: xl.constexpr, BN: xl.constexpr):
    rows = x_ptr + xl.arange(0, BM) * BN
    v = xl.load(xl.expand_dims(rows, 1) + xl.arange(0, BN)[None, :])       # expand_dims of a pointer tile
    three = 3
    scale = three.to(xl.float32)                                            # a Python number is a scalar
    out = xl.expand_dims(o_ptr + xl.arange(0, BM) * BN, 1) + xl.arange(0, BN)[None, :]
    xl.store(out, v.cast(xl.float32) * scale)
    acc = 0
    for i in range(n):
        acc += i
    xl.store(s_ptr, acc.to(xl.int64))


def test_python_numbers_and_pointer_tiles_behave_as_in_triton(backend, rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    o, s = backend.run(literals_and_pointer_dims, (1,), [x, poisoned((8, 16), np.float32), poisoned(1, np.int64), 11],
                       BM=8, BN=16)[1:3]
    np.testing.assert_array_equal(o, 3 * x)
    assert s[0] == 55


@xk.jit
def descriptor_dims(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    d = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    for i in range(0, d.shape[0], BM):
        o = xl.make_tensor_descriptor(o_ptr, shape=(d.shape[0], d.shape[1]), strides=d.strides, block_shape=(BM, BN))
        o.store((i, 0), d.load((i, 0)) * 2)


def test_descriptor_shape_and_strides(backend, rng):
    M, N = 37, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    o = backend.run(descriptor_dims, (1,), [x, poisoned((M, N), np.float32), M, N], BM=8, BN=16)[1]
    np.testing.assert_array_equal(o, 2 * x)


@xk.jit
def count_down(o_ptr, a, b):
    n = 0
    for i in range(a, b, -3):
        xl.store(o_ptr + n, i)
        n += 1
    xl.store(o_ptr + 100, n)


@pytest.mark.parametrize("a,b", [(20, 3), (20, 20), (5, 9), (7, -8), (10, 1)])
def test_range_with_a_negative_step(backend, a, b):
    o = backend.run(count_down, (1,), [np.full(101, -99, np.int32), a, b])[0]
    want = list(range(a, b, -3))
    assert o[100] == len(want) and list(o[:len(want)]) == want and (o[len(want):100] == -99).all()


@xk.jit
def _twice_or_next(x, TWICE: xl.constexpr):
    if TWICE:
        return x * 2
    return x + 1


@xk.jit
def _sign(v):
    if v > 0:
        return 1
    else:
        if v < 0:
            return -1
    return 0


@xk.jit
def early_exit(x_ptr, o_ptr, s_ptr, n, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    if pid * BLOCK >= n:
        return                                   # the grid is larger than the data
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    x = xl.load(x_ptr + offs, mask=m)
    xl.store(o_ptr + offs, _twice_or_next(x, True) + _twice_or_next(x, False), mask=m)
    xl.store(s_ptr + pid, _sign(xl.sum(x, axis=0)))


def test_return_inside_if(backend, rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    o, s = backend.run(early_exit, (8,), [x, poisoned(n, np.float32), np.full(8, -7, np.int32), n], BLOCK=32)[1:3]
    np.testing.assert_allclose(o, 3 * x.astype(np.float64) + 1, rtol=1e-6, atol=1e-6)
    assert list(s) == [int(np.sign(x[i * 32:(i + 1) * 32].astype(np.float64).sum())) for i in range(4)] + [-7] * 4


@xk.jit
def jumps(x_ptr, o_ptr, n, LIMIT):
    total = 0.0
    count = 0
    for i in range(n):
        v = xl.load(x_ptr + i)
        if v < 0:
            continue                       # negative values are skipped
        if total + v > LIMIT:
            break                          # stop before passing the limit
        total += v
        count += 1
    j = 0
    while j < n:
        j += 1
        if j == 3:
            break
    for k in xl.static_range(4):           # unrolled: the jump conditions are runtime values
        if k == n - 6:
            continue
        total += k
    xl.store(o_ptr, total)
    xl.store(o_ptr + 1, count.to(xl.float32))
    xl.store(o_ptr + 2, j.to(xl.float32))


def test_break_and_continue(backend, rng):
    n = 8
    x = rng.integers(-3, 6, n).astype(np.float32)
    o = backend.run(jumps, (1,), [x, poisoned(3, np.float32), n, 9.0])[1]
    t = c = 0
    for v in x:
        if v < 0:
            continue
        if t + v > 9:
            break
        t += v
        c += 1
    t += sum(k for k in range(4) if k != n - 6)
    assert list(o) == [t, c, 3]


@xk.jit
def masked_copy_with_and(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)[:, None]
    c = xl.arange(0, BN)[None, :]
    m = (r < M) and (c < N)              # elementwise on tiles, as in Triton
    keep = (c % 3 == 0) or (r == 0)
    xl.store(o_ptr + r * BN + c, xl.load(x_ptr + r * N + c, mask=m and keep, other=-1.0), mask=r < BM)


def test_and_or_on_tiles_are_elementwise(backend, rng):
    M, N = 5, 7
    x = rng.standard_normal((M, N)).astype(np.float32)
    o = backend.run(masked_copy_with_and, (1,), [x, poisoned((8, 8), np.float32), M, N], BM=8, BN=8)[1]
    r, c = np.arange(8)[:, None], np.arange(8)[None, :]
    m = (r < M) & (c < N) & ((c % 3 == 0) | (r == 0))
    want = np.where(m, np.pad(x, ((0, 3), (0, 1))), -1.0)
    np.testing.assert_array_equal(o, want)


@xk.jit(noinline=True)
def _doubled(x):
    return x * 2


@xk.jit(do_not_specialize=["seed"])
def nan_rules(x_ptr, o_ptr, seed, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs)
    xl.store(o_ptr + offs * 4, xl.maximum(x, 0.5, propagate_nan=xl.PropagateNan.ALL))
    xl.store(o_ptr + offs * 4 + 1, xl.minimum(x, 0.5, propagate_nan=xl.PropagateNan.NONE))
    xl.store(o_ptr + offs * 4 + 2, xl.clamp(x, 0.0, 1.0, propagate_nan=xl.PropagateNan.ALL))
    xl.store(o_ptr + offs * 4 + 3, _doubled(x) + seed)


def test_propagate_nan_and_jit_options(backend):
    x = np.array([np.nan, 0.2, 2.0, -1.0] * 4, np.float32)
    o = backend.run(nan_rules, (1,), [x, poisoned((16, 4), np.float32), 3], BLOCK=16)[1][:4]
    want = [[np.nan, 0.5, np.nan, np.nan], [0.5, 0.2, 0.2, 3.4], [2.0, 0.5, 1.0, 7.0], [0.5, -1.0, 0.0, 1.0]]
    np.testing.assert_allclose(o, want, rtol=1e-6)
    with pytest.raises(xk.CompilationError, match="'nope' is not a parameter of nan_rules"):
        xk.jit(do_not_specialize=["nope"])(nan_rules.fn)


@xk.jit
def row_extrema_16(x_ptr, o_ptr, N: xl.constexpr, ALL_NAN: xl.constexpr):
    """Row maxima and minima of a 16-bit tile, kept 16-bit (Triton: the reduction's dtype is the
    input's), and a chain of elementwise maxima; with ``ALL_NAN`` NaN-propagating ones."""
    rows = xl.arange(0, 8)[:, None]
    cols = xl.arange(0, N)[None, :]
    x = xl.load(x_ptr + rows * N + cols)
    if ALL_NAN:
        m = xl.maximum(xl.maximum(x, x * 0.5, propagate_nan=xl.PropagateNan.ALL), x - 1.0,
                       propagate_nan=xl.PropagateNan.ALL)
    else:
        m = xl.maximum(xl.maximum(x, x * 0.5), x - 1.0)
    xl.store(o_ptr + xl.arange(0, 8), xl.max(x, axis=1))
    xl.store(o_ptr + 8 + xl.arange(0, 8), xl.min(x, axis=1))
    xl.store(o_ptr + 16 + rows * N + cols, m)


@pytest.mark.parametrize("all_nan", [False, True])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16_bit_maxima_are_exact(backend, rng, dtype, all_nan):
    """Maxima of 16-bit values are one of them: the device keeps a chain of them in f32 between
    steps (codegen/arith._exact_narrow) and must give the same bits as NumPy on the 16-bit values,
    infinities and NaN rows included."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
    n = 64
    x = (rng.standard_normal((8, n)) * 100).astype(t)
    x[1, 5], x[2, 7], x[3, :] = np.inf, -np.inf, np.nan
    x[4, 9] = np.nan
    out = backend.run(row_extrema_16, (1,), [x, poisoned(16 + 8 * n, t)], N=n, ALL_NAN=all_nan)[1]
    out = out.astype(np.float32)
    xf = x.astype(np.float32)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # (the all-NaN row)
        np.testing.assert_array_equal(out[:8], np.nanmax(xf, axis=1))
        np.testing.assert_array_equal(out[8:16], np.nanmin(xf, axis=1))
    half, less = (xf * 0.5).astype(t).astype(np.float32), (xf - 1.0).astype(t).astype(np.float32)
    pick = np.maximum if all_nan else np.fmax
    np.testing.assert_array_equal(out[16:].reshape(8, n), pick(pick(xf, half), less))
