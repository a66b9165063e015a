"""Triton's spellings of operations xekern has under other names: ``xl.add/sub/mul``,
``xl.load_tensor_descriptor`` / ``xl.store_tensor_descriptor``, ``xl.view``, ``xl.reduce_or``,
top-level ``xl.div_rn/fdiv/sqrt_rn/umulhi/softmax`` (with Triton's ``dim`` and ``keep_dims``),
``xl.philox_impl``, and ``xl.extra.libdevice``: on the CPU device, its 8-wide model and the
interpreter, against NumPy, outputs poisoned."""
import numpy as np

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from xekern.language.extra import libdevice


@xk.jit
def spellings(x_ptr, y_ptr, out_ptr, bits_ptr, ob_ptr, M: xl.constexpr, N: xl.constexpr):
    d = xl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[M, N])
    x = xl.load_tensor_descriptor(d, [0, 0])
    offs = xl.arange(0, M)[:, None] * N + xl.arange(0, N)[None, :]
    y = xl.load(y_ptr + offs)
    o = xl.make_tensor_descriptor(out_ptr, shape=[8 * M, N], strides=[N, 1], block_shape=[M, N])
    xl.store_tensor_descriptor(o, [0, 0], xl.add(x, y))
    xl.store_tensor_descriptor(o, [M, 0], xl.sub(x, y))
    xl.store_tensor_descriptor(o, [2 * M, 0], xl.mul(x, y))
    xl.store_tensor_descriptor(o, [3 * M, 0], xl.div_rn(x, y) + xl.fdiv(y, x))
    xl.store_tensor_descriptor(o, [4 * M, 0], xl.sqrt_rn(xl.abs(x)) + libdevice.exp(y))
    xl.store_tensor_descriptor(o, [5 * M, 0], xl.softmax(x))                        # dim 0
    xl.store_tensor_descriptor(o, [6 * M, 0], xl.softmax(x, dim=1, keep_dims=True))
    xl.store_tensor_descriptor(o, [7 * M, 0], xl.view(xl.view(x, (1, M, N)), M, N))
    b = xl.load(bits_ptr + offs)
    xl.store(ob_ptr + xl.arange(0, M), xl.reduce_or(b, 1))
    xl.store(ob_ptr + M + offs, xl.umulhi(b, b))


def test_spellings(backend, rng):
    M, N = 8, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = (rng.standard_normal((M, N)) + 3).astype(np.float32)
    bits = rng.integers(0, 2 ** 32, (M, N), dtype=np.uint64).astype(np.uint32)
    out, ob = backend.run(spellings, (1,), [x, y, poisoned((8 * M, N), np.float32), bits,
                                            poisoned(M + M * N, np.uint32)], M=M, N=N)[2::2]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    sm0 = np.exp(x64 - x64.max(0)) / np.exp(x64 - x64.max(0)).sum(0)
    sm1 = np.exp(x64 - x64.max(1, keepdims=True)) / np.exp(x64 - x64.max(1, keepdims=True)).sum(1, keepdims=True)
    want = [x64 + y64, x64 - y64, x64 * y64, x64 / y64 + y64 / x64, np.sqrt(np.abs(x64)) + np.exp(y64), sm0, sm1, x64]
    for i, w in enumerate(want):
        np.testing.assert_allclose(out[i * M:(i + 1) * M], w, rtol=2e-6, atol=1e-6, err_msg=f"block {i}")
    np.testing.assert_array_equal(ob[:M], np.bitwise_or.reduce(bits, axis=1))
    b64 = bits.astype(np.uint64)
    np.testing.assert_array_equal(ob[M:].reshape(M, N), ((b64 * b64) >> np.uint64(32)).astype(np.uint32))


@xk.jit
def philox_both(seed, out_ptr, N: xl.constexpr):
    c = xl.arange(0, N).to(xl.uint32)
    z = xl.zeros((N,), xl.uint32)
    a = xl.philox(seed, c, z, z, z)
    s = seed.to(xl.uint64)
    b = xl.philox_impl(c, z, z, z, (s & 0xFFFFFFFF).to(xl.uint32), (s >> 32).to(xl.uint32))
    for i in xl.static_range(4):
        xl.store(out_ptr + i * N + xl.arange(0, N), a[i])
        xl.store(out_ptr + (4 + i) * N + xl.arange(0, N), b[i])


def test_philox_impl_is_philox_with_the_seed_as_key(backend):
    N = 64
    out = backend.run(philox_both, (1,), [(1 << 40) + 12345, poisoned(8 * N, np.uint32)], N=N)[1]
    np.testing.assert_array_equal(out[:4 * N], out[4 * N:])
    assert len(np.unique(out[:N])) == N


@xk.jit
def by_target(out_ptr):
    if xl.target_info.is_cuda() or xl.target_info.is_hip() or xl.target_info.cuda_capability_geq(9, 0):
        xl.store(out_ptr, 1)
    elif xl.target_info.is_xpu():
        xl.store(out_ptr, 2)
    else:
        xl.store(out_ptr, 3 if xl.target_info.current_target() in ("cpu", "cpu8") else 4)


def test_target_info_folds_at_compile_time(backend):
    out = backend.run(by_target, (1,), [poisoned(1, np.int32)])[0]
    assert out[0] == 3
    c = by_target.compile_offline(dict(out_ptr=xk.pointer(xl.int32)), target="pvc")
    assert "arith.constant 2 " in c.asm["xegpu"] and "arith.constant 1 " not in c.asm["xegpu"], c.asm["xegpu"]
