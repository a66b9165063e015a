"""fp8 (``xl.float8e5``: e5m2, ``xl.float8e4nv``: e4m3fn, and the fnuz ``xl.float8e4b8``,
``xl.float8e5b16``): storage dtypes computed in f32. Every byte
widens exactly; f32 narrows to nearest even and saturates to the largest finite value (Triton's
cvt.rn.satfinite), checked bit for bit against ml_dtypes (with that saturation) on the CPU device,
its 8-wide model and the interpreter; arithmetic rounds once per op; ``xl.dot`` of fp8 operands is
an f16 product of the exact values; Triton's promotion rules."""
import math

import ml_dtypes
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned

FORMATS = {"float8e5": (xl.float8e5, ml_dtypes.float8_e5m2, 57344.0),
           "float8e4nv": (xl.float8e4nv, ml_dtypes.float8_e4m3fn, 448.0),
           "float8e4b8": (xl.float8e4b8, ml_dtypes.float8_e4m3fnuz, 240.0),     # fnuz: no inf, no -0, NaN 0x80
           "float8e5b16": (xl.float8e5b16, ml_dtypes.float8_e5m2fnuz, 57344.0)}


def to_fp8(x, fmt):
    """NumPy's reference: nearest even (ml_dtypes), saturated to the largest finite value."""
    _, npdt, top = FORMATS[fmt]
    x = np.asarray(x, np.float32)
    return np.where(np.isnan(x), x, np.clip(x, -top, top)).astype(npdt)


@xk.jit
def widen(x_ptr, y_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(y_ptr + offs, xl.load(x_ptr + offs, mask=offs < n).to(xl.float32), mask=offs < n)


@xk.jit
def narrow(x_ptr, y_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(y_ptr + offs, xl.load(x_ptr + offs, mask=offs < n).to(y_ptr.dtype.element_ty), mask=offs < n)


@xk.jit
def fma_fp8(x_ptr, y_ptr, z_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n)
    y = xl.load(y_ptr + offs, mask=offs < n)
    xl.store(z_ptr + offs, x * y + 0.5, mask=offs < n)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_byte_widens_exactly(backend, fmt):
    dt, npdt, _ = FORMATS[fmt]
    x = np.arange(256, dtype=np.uint8).view(npdt)
    y = backend.run(widen, (2,), [x, poisoned(256, np.float32), 256], BLOCK=128)[1]
    ref = x.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(y[~np.isnan(ref)], ref[~np.isnan(ref)])


@pytest.mark.parametrize("fmt", FORMATS)
def test_narrowing_rounds_to_even_and_saturates(backend, rng, fmt):
    dt, npdt, top = FORMATS[fmt]
    # every fp8 value, the midpoints between neighbours (ties), a hair either side of them,
    # subnormals, overflow, infinities and NaN, and random magnitudes over the whole range
    grid = np.sort(np.unique(np.arange(256, dtype=np.uint8).view(npdt).astype(np.float32)))
    grid = grid[np.isfinite(grid)]
    mid = (grid[:-1] + grid[1:]) / 2
    x = np.concatenate([grid, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)),
                        [top * 1.01, -top * 1.5, 1e30, np.inf, -np.inf, np.nan, 0.0, -0.0],
                        rng.standard_normal(301) * np.exp2(rng.integers(-20, 18, 301))]).astype(np.float32)
    n = x.size
    y = backend.run(narrow, (xk.cdiv(n, 256),), [x, poisoned(n, npdt), n], BLOCK=256)[1]
    same_bits(y, to_fp8(x, fmt))


def same_bits(got, ref):
    """Bit for bit, except that any NaN matches any NaN (the device writes 0x7f/0xff, Triton's
    canonical NaN; ml_dtypes' e5m2 NaN is 0x7e)."""
    nan = np.isnan(ref.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(got.view(np.uint8)[~nan], ref.view(np.uint8)[~nan])


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_op_computes_in_f32_and_rounds(backend, rng, fmt):
    dt, npdt, _ = FORMATS[fmt]
    n = 1000
    x = to_fp8(rng.standard_normal(n) * 4, fmt)
    y = to_fp8(rng.standard_normal(n) * 4, fmt)
    z = backend.run(fma_fp8, (xk.cdiv(n, 256),), [x, y, poisoned(n, npdt), n], BLOCK=256)[2]
    xy = to_fp8(x.astype(np.float32) * y.astype(np.float32), fmt)      # each op rounds to fp8
    same_bits(z, to_fp8(xy.astype(np.float32) + np.float32(0.5), fmt))


@xk.jit
def dot8(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    m0, n0 = xl.program_id(0) * BM, xl.program_id(1) * BN
    acc = xl.zeros((BM, BN), dtype=xl.float32)
    for k in range(0, K, BK):
        acc = xl.dot(a_desc.load([m0, k]), b_desc.load([k, n0]), acc)
    c_desc.store([m0, n0], acc)


@pytest.mark.parametrize("fa,fb", [("float8e5", "float8e5"), ("float8e4nv", "float8e5"), ("float8e4b8", "float8e5b16")])
def test_dot_of_fp8_operands(rng, fa, fb):
    M, N, K = 45, 37, 70
    a = to_fp8(rng.standard_normal((M, K)), fa)
    b = to_fp8(rng.standard_normal((K, N)), fb)
    c = poisoned((M, N), np.float32)
    dot8[(xk.cdiv(M, 32), xk.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * math.sqrt(K))


def test_promotion_follows_triton():
    from xekern.frontend.semantic import ArithSemantic
    p = ArithSemantic.promote
    assert p(xl.float16, xl.bfloat16) == xl.float16
    assert p(xl.float8e5, xl.float8e4nv) == xl.float16
    assert p(xl.bfloat16, xl.float8e5) == xl.float32
    assert p(xl.float8e5, xl.float16) == xl.float16
    assert p(xl.float8e5, xl.float8e5) == xl.float8e5
    assert p(xl.float8e5, xl.float8e5, div_or_mod=True) == xl.float32
    assert p(xl.int32, xl.float8e4nv) == xl.float8e4nv


def test_fp8_compiles_for_gpus():
    """The conversions and the f16 product compile with the current IGC on pvc and bmg, no spill."""
    from xekern.tools.isa import compile_isa
    P = xk.pointer
    for target in ("pvc", "bmg"):
        c = dot8.compile_offline(dict(a_ptr=P(xl.float8e4nv), b_ptr=P(xl.float8e5), c_ptr=P(xl.float32),
                                      M=xl.int32, N=xl.int32, K=xl.int32, BM=32, BN=32, BK=32),
                                 target=target, num_subgroups=4)
        r = compile_isa(c.spirv, c.name, target)
        assert r.spilled_around == 0 and r.counts.dpas > 0, (target, r.spilled_around, r.counts)
