"""Random numbers (language/random.py): Philox-4x32-10 checked against Random123's known-answer
vectors, and xl.randint4x / rand / randn against a float64 NumPy model of Triton's random.py, bit
for bit where Triton's are integers or one rounding (rand), on every backend; tutorial 04's
seeded dropout."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from test_triton_ports import load_port

M32 = 0xFFFFFFFF


def philox_model(seed: int, c, rounds=10):
    """Philox-4x32 of the counters ``c`` (four uint64 arrays) under the 64-bit ``seed``."""
    c0, c1, c2, c3 = (np.asarray(x, np.uint64) & np.uint64(M32) for x in c)
    k0, k1 = np.uint64(seed & M32), np.uint64((seed >> 32) & M32)
    for _ in range(rounds):
        pa, pb = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (((pb >> np.uint64(32)) ^ c1 ^ k0) & np.uint64(M32), pb & np.uint64(M32),
                          ((pa >> np.uint64(32)) ^ c3 ^ k1) & np.uint64(M32), pa & np.uint64(M32))
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(M32), (k1 + np.uint64(0xBB67AE85)) & np.uint64(M32)
    return [x.astype(np.uint32) for x in (c0, c1, c2, c3)]


def uniform_model(i: np.ndarray) -> np.ndarray:
    x = i.view(np.int32).astype(np.int64)
    return np.where(x < 0, -x - 1, x).astype(np.float32) * np.float32(4.6566127342e-10)


@xk.jit
def philox_kernel(c_ptr, o_ptr, seed, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    c0 = xl.load(c_ptr + offs * 4 + 0)
    c1 = xl.load(c_ptr + offs * 4 + 1)
    c2 = xl.load(c_ptr + offs * 4 + 2)
    c3 = xl.load(c_ptr + offs * 4 + 3)
    r0, r1, r2, r3 = xl.philox(seed, c0, c1, c2, c3)
    xl.store(o_ptr + offs * 4 + 0, r0)
    xl.store(o_ptr + offs * 4 + 1, r1)
    xl.store(o_ptr + offs * 4 + 2, r2)
    xl.store(o_ptr + offs * 4 + 3, r3)


KAT = [  # Random123 kat_vectors, philox4x32_10: counter, key (k0, k1), expected
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(backend, ctr, key, want):
    c = np.tile(np.array(ctr, np.uint32), (16, 1))
    seed = key[0] | key[1] << 32
    o = backend.run(philox_kernel, (1,), [c, poisoned((16, 4), np.uint32), seed], BLOCK=16)[1]
    assert [hex(v) for v in o[5]] == [hex(v) for v in want]
    assert (o == o[0]).all()
    assert [list(map(int, col[:1])) for col in philox_model(seed, [c[:, k] for k in range(4)])] == \
        [[v] for v in want]


@xk.jit
def streams(o_ptr, f_ptr, g_ptr, seed, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    a, b, c, d = xl.randint4x(seed, offs)
    xl.store(o_ptr + offs * 5 + 0, a, mask=m)
    xl.store(o_ptr + offs * 5 + 1, b, mask=m)
    xl.store(o_ptr + offs * 5 + 2, c, mask=m)
    xl.store(o_ptr + offs * 5 + 3, d, mask=m)
    xl.store(o_ptr + offs * 5 + 4, xl.randint(seed, offs), mask=m)
    u1, u2, u3, u4 = xl.rand4x(seed, offs)
    xl.store(f_ptr + offs * 3 + 0, xl.rand(seed, offs), mask=m)
    xl.store(f_ptr + offs * 3 + 1, u2, mask=m)
    xl.store(f_ptr + offs * 3 + 2, xl.uint_to_uniform_float(d), mask=m)
    n1, n2, n3, n4 = xl.randn4x(seed, offs)
    xl.store(g_ptr + offs * 3 + 0, xl.randn(seed, offs), mask=m)
    xl.store(g_ptr + offs * 3 + 1, n2, mask=m)
    xl.store(g_ptr + offs * 3 + 2, n4, mask=m)


@pytest.mark.parametrize("seed", [0, 1234567, -5, (1 << 40) + 17])
def test_streams_match_tritons_generator(backend, seed):
    n = 1001
    o, f, g = backend.run(streams, (4,), [poisoned((n, 5), np.uint32), poisoned((n, 3), np.float32),
                                          poisoned((n, 3), np.float32), seed, n], BLOCK=256)[:3]
    c = np.arange(n)
    r = philox_model(seed & ((1 << 64) - 1), [c, 0 * c, 0 * c, 0 * c])
    for k in range(4):
        np.testing.assert_array_equal(o[:, k], r[k])
    np.testing.assert_array_equal(o[:, 4], r[0])
    u = [uniform_model(x) for x in r]
    np.testing.assert_array_equal(f[:, 0], u[0])
    np.testing.assert_array_equal(f[:, 1], u[1])
    np.testing.assert_array_equal(f[:, 2], u[3])
    assert 0 <= f.min() and f.max() < 1

    def normal(a, b):   # Box-Muller in float64 from the float32 uniforms
        a = np.maximum(1e-7, a.astype(np.float64))
        th, rad = 2 * np.pi * b.astype(np.float64), np.sqrt(-2 * np.log(a))
        return rad * np.cos(th), rad * np.sin(th)
    np.testing.assert_allclose(g[:, 0], normal(u[0], u[1])[0], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(g[:, 1], normal(u[0], u[1])[1], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(g[:, 2], normal(u[2], u[3])[1], rtol=2e-5, atol=2e-5)


@xk.jit
def wide_offsets(o_ptr, seed, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK).to(xl.int64)
    xl.store(o_ptr + offs, xl.randint(seed, offs))


def test_64_bit_offsets_are_refused():
    sig = {"o_ptr": xk.pointer(xl.uint32), "seed": xl.int32, "BLOCK": 16}
    with pytest.raises(xk.CompilationError) as info:
        wide_offsets.compile_offline(sig, "cpu")
    assert "Philox counters (offsets) must be 32-bit integers, got int64; 64-bit offsets are not supported" \
        in str(info.value), str(info.value)


def test_tutorial_04_seeded_dropout(backend, rng):
    port = load_port("04_low_memory_dropout")
    n, p = 3001, 0.3
    x = rng.standard_normal(n).astype(np.float32)
    outs = [backend.run(port._seeded_dropout, (xk.cdiv(n, 1024),), [x, poisoned(n, np.float32), n, p, seed],
                        BLOCK_SIZE=1024)[1] for seed in (123, 123, 512)]
    keep = uniform_model(philox_model(123, [np.arange(n)] + [np.zeros(n)] * 3)[0]) > np.float32(p)
    np.testing.assert_allclose(outs[0], np.where(keep, x / np.float32(1 - p), 0.0), rtol=1e-6)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])
    assert abs(keep.mean() - (1 - p)) < 0.05
    mask = rng.random(n) > p
    out = backend.run(port._dropout, (xk.cdiv(n, 1024),), [x, mask, poisoned(n, np.float32), n, p],
                      BLOCK_SIZE=1024)[2]
    np.testing.assert_allclose(out, np.where(mask, x / np.float32(1 - p), 0.0), rtol=1e-6)


def test_tutorial_04_runs_as_a_script():
    load_port("04_low_memory_dropout").main()
