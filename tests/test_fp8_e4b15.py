"""``xl.float8e4b15``, Triton's own fp8 (e4m3 with bias 15, no inf or NaN, largest 1.875): its bits
come in as uint8 and are bitcast; widening is exact (the f16 whose exponent's top bit is clear),
narrowing goes through f16 (nearest even), clamps the magnitude at 1.75 (inf and NaN too) and
rounds the f16 bits half away from zero, as Triton converts; checked bit for bit against a NumPy
model of Triton's conversion on the CPU device, its 8-wide model and the interpreter, with
arithmetic computed in f32 and rounded once."""
import numpy as np

import xekern as xk
import xekern.language as xl
from conftest import poisoned


def decode(b):
    """Triton's upcast: sign, 4 exponent bits (bias 15), 3 mantissa bits; no inf or NaN."""
    b = np.asarray(b, np.int64)
    e, m = (b >> 3) & 15, b & 7
    mag = np.where(e == 0, m / 8 * 2.0 ** -14, (1 + m / 8) * 2.0 ** (e - 15))
    return np.where(b & 0x80, -mag, mag)


def encode(x):
    """Triton's downcast: to f16 (nearest even), |x| clamped at 1.75, then the f16 bits times 2
    plus 0x80, high byte (half away from zero), and the sign."""
    with np.errstate(over="ignore"):   # (beyond f16: inf, then clamped)
        h = np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.int64)
    mag = np.minimum(h & 0x7FFF, 0x3F00)
    return ((h >> 8) & 0x80 | ((mag * 2 + 0x80) >> 8)).astype(np.uint8)


@xk.jit
def e4b15_ops(bits_ptr, x_ptr, wide_ptr, enc_ptr, sum_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    f8 = xl.load(bits_ptr + offs, mask=m).to(xl.float8e4b15, bitcast=True)
    xl.store(wide_ptr + offs, f8.to(xl.float32), mask=m)
    x = xl.load(x_ptr + offs, mask=m)
    enc = x.to(xl.float8e4b15)
    xl.store(enc_ptr + offs, enc.to(xl.uint8, bitcast=True), mask=m)
    s = f8 + enc                                     # computed in f32, rounded once to e4b15
    xl.store(sum_ptr + offs, s.to(xl.uint8, bitcast=True), mask=m)


def test_float8e4b15_conversions(backend, rng):
    bits = np.arange(256, dtype=np.uint8)
    edge = np.array([0.0, -0.0, 1.75, 1.8, 1.875, -2.0, 100.0, np.inf, -np.inf, np.nan, 2.0 ** -17,
                     3 * 2.0 ** -18, 2.0 ** -20, 1.0 + 1 / 16, 1.0 + 3 / 16, -1.0 - 1 / 16, 65504.0, 1e6],
                    np.float32)
    x = np.r_[edge, (rng.standard_normal(256 - len(edge)) * 0.7).astype(np.float32)]
    n = 256
    outs = [poisoned(n, np.float32), poisoned(n, np.uint8), poisoned(n, np.uint8)]
    wide, enc, tot = backend.run(e4b15_ops, (xk.cdiv(n, 64),), [bits, x] + outs + [n], BLOCK=64)[2:5]
    np.testing.assert_array_equal(wide, decode(bits).astype(np.float32))
    np.testing.assert_array_equal(enc, encode(x))
    assert decode(0x7F) == 1.875 and encode(np.float32(1.875)) == 0x7E     # 1.875 decodes, saturates to 1.75
    want = encode(decode(bits).astype(np.float32) + decode(encode(x)).astype(np.float32))
    np.testing.assert_array_equal(tot, want)
