"""Random numbers with Triton's meaning: Philox-4x32-10 counters, bit for bit the numbers Triton's
``tl.randint`` / ``tl.rand`` / ``tl.randn`` give for the same seed and offsets.

The generator is counter based: the numbers for offset ``i`` depend on ``(seed, i)`` only, so a
kernel regenerates a dropout mask from the seed instead of storing it (Triton's tutorial 04). The
counter is ``(offset, 0, 0, 0)`` and the key the seed's low and high 32-bit halves; ten rounds of
Philox-4x32 (Salmon et al., SC'11; the rounds check against Random123's known-answer vectors in
tests/test_random.py). Offsets are 32-bit integer tiles (64-bit offsets are refused: their 64-bit
Philox needs a 128-bit product).

    r = xl.rand(seed, offsets)                 # float32 in [0, 1)
    keep = xl.rand(seed, offsets) > p          # a dropout mask
    a, b, c, d = xl.randint4x(seed, offsets)   # four uint32 streams
"""
from __future__ import annotations

from ..ir import types as T
from .core import builtin, unwrap

N_ROUNDS_DEFAULT = 10
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85        # the key's per-round increments (golden ratio, sqrt(3) - 1)
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57    # the round multipliers


def _rounds(_sem, n_rounds) -> int:
    n = unwrap(n_rounds)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise TypeError(f"n_rounds must be a positive constant integer, got {n!r}")
    return n


def _philox(_sem, seed, c0, c1, c2, c3, n_rounds):
    """Philox-4x32 on the 32-bit counters ``c0..c3`` with the key from ``seed``."""
    s = _sem.to_tensor(seed)
    if s.is_tile or not s.dtype.is_int or s.dtype.is_bool:
        raise ValueError(f"the seed must be an integer scalar, got {s.type}")
    s = _sem.cast(s, T.uint64)
    k0 = _sem.cast(_sem.binary("and", s, 0xFFFFFFFF), T.uint32)
    k1 = _sem.cast(_sem.binary("and", _sem.binary("rshift", s, 32), 0xFFFFFFFF), T.uint32)
    return _philox_rounds(_sem, c0, c1, c2, c3, k0, k1, n_rounds)


def _philox_rounds(_sem, c0, c1, c2, c3, k0, k1, n_rounds):
    """``n_rounds`` rounds of Philox-4x32 on the counters ``c0..c3`` with the key ``(k0, k1)``."""
    k0, k1 = (_sem.cast(_sem.to_tensor(k), T.uint32, bitcast=_sem.to_tensor(k).dtype.bits == 32)
              for k in (k0, k1))
    cs = []
    for c in (c0, c1, c2, c3):
        c = _sem.to_tensor(c)
        if not c.dtype.is_int or c.dtype.is_bool or c.dtype.bits != 32:
            raise ValueError(f"Philox counters (offsets) must be 32-bit integers, got {c.dtype.user_name}"
                             + ("; 64-bit offsets are not supported" if c.dtype.bits == 64 else ""))
        cs.append(c if c.dtype == T.uint32 else _sem.cast(c, T.uint32, bitcast=True))
    c0, c1, c2, c3 = cs
    xor = lambda a, b: _sem.binary("xor", a, b)  # noqa: E731
    for _ in range(_rounds(_sem, n_rounds)):
        hi_a, lo_a = _sem.mulhi(_ROUND_A, c0, signed=False), _sem.binary("mul", _ROUND_A, c0)
        hi_b, lo_b = _sem.mulhi(_ROUND_B, c2, signed=False), _sem.binary("mul", _ROUND_B, c2)
        c0, c1, c2, c3 = xor(xor(hi_b, c1), k0), lo_b, xor(xor(hi_a, c3), k1), lo_a
        k0, k1 = _sem.binary("add", k0, _KEY_A), _sem.binary("add", k1, _KEY_B)
    return c0, c1, c2, c3


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """Philox-4x32 rounds on the counters ``c0..c3`` with the key ``(k0, k1)`` (32-bit integers):
    Triton's ``tl.philox_impl``."""
    return _philox_rounds(_sem, c0, c1, c2, c3, k0, k1, n_rounds)


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """Philox-4x32 of the counters ``(c0, c1, c2, c3)`` under ``seed``: four uint32 tiles."""
    return _philox(_sem, seed, c0, c1, c2, c3, n_rounds)


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """Four tiles of random uint32 for ``offset`` (the counter ``(offset, 0, 0, 0)``)."""
    off = _sem.to_tensor(offset)
    zero = _sem.binary("mul", off, 0)
    return _philox(_sem, seed, off, zero, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """A tile of random uint32 for ``offset`` (the first of ``randint4x``)."""
    return randint4x(seed, offset, n_rounds, _sem=_sem)[0]


def _uniform(_sem, x):
    """uint32 -> float32 in [0, 1): the bits as int32, folded to non-negative (``-x - 1``), times
    the largest scale whose product with 2^31 - 1 stays below 1."""
    x = _sem.cast(_sem.to_tensor(x), T.int32, bitcast=True)
    x = _sem.where(_sem.compare("lt", x, 0), _sem.binary("sub", _sem.unary("neg", x), 1), x)
    return _sem.binary("mul", x, 4.6566127342e-10)


@builtin
def uint_to_uniform_float(x, _sem=None):
    """A random 32-bit integer tile as float32 uniform in [0, 1)."""
    t = _sem.to_tensor(x)
    if t.dtype.bits != 32 or not t.dtype.is_int:
        raise ValueError(f"uint_to_uniform_float takes 32-bit integers, got {t.dtype.user_name}")
    return _uniform(_sem, t)


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """A tile of float32 uniform in [0, 1) for ``offset``."""
    return _uniform(_sem, randint4x(seed, offset, n_rounds, _sem=_sem)[0])


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """Four tiles of float32 uniform in [0, 1)."""
    return tuple(_uniform(_sem, r) for r in randint4x(seed, offsets, n_rounds, _sem=_sem))


def _normal_pair(_sem, u1, u2):
    """Box-Muller: two standard normal tiles from two uniform ones."""
    u1 = _sem.minmax("max", 1.0e-7, u1)
    th = _sem.binary("mul", 6.283185307179586, u2)
    r = _sem.math("sqrt", _sem.binary("mul", -2.0, _sem.math("log", u1)))
    return _sem.binary("mul", r, _sem.math("cos", th)), _sem.binary("mul", r, _sem.math("sin", th))


@builtin
def pair_uniform_to_normal(u1, u2, _sem=None):
    """Box-Muller transform of two uniform tiles into two standard normal tiles."""
    return _normal_pair(_sem, u1, u2)


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """A tile of float32 from the standard normal distribution for ``offset``."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds, _sem=_sem)
    return _normal_pair(_sem, _uniform(_sem, i1), _uniform(_sem, i2))[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT, _sem=None):
    """Four tiles of standard normal float32."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds, _sem=_sem)
    return _normal_pair(_sem, u1, u2) + _normal_pair(_sem, u3, u4)
