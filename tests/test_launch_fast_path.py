"""The launch fast paths (runtime/usm_args.py, runtime/launch_memo.py) give the same results as the
full path and hold no array: a repeated launch with the same arguments, a changed argument, an
interface object whose interface changes, arrays dropped after a launch."""
import gc
import weakref

import dpnp
import numpy as np

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from xekern.runtime import device as dev, usm_args


@xk.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    xl.store(out_ptr + offs, alpha * xl.load(x_ptr + offs, mask=m) + xl.load(y_ptr + offs, mask=m), mask=m)


class _Iface:
    """A bare __sycl_usm_array_interface__ producer whose interface can be pointed elsewhere."""

    def __init__(self, arr):
        self.arr = arr

    @property
    def __sycl_usm_array_interface__(self):
        return self.arr.__sycl_usm_array_interface__


def test_repeated_and_changed_launches_match_numpy(rng):
    n = 1000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = xk.to_device(a), xk.to_device(b)
    outs = [xk.to_device(poisoned(n, np.float32)) for _ in range(2)]
    for alpha in (2.0, 2.0, 3.0, 3.0):          # repeated, then a changed scalar
        for out in outs + outs:                  # alternating outputs
            out.copy_from(poisoned(n, np.float32))
            axpy[(4,)](x, y, out, n, alpha, BLOCK=256).wait()
            np.testing.assert_allclose(out.numpy(), alpha * a.astype(np.float64) + b, rtol=1e-6, atol=1e-6)
    axpy[(4,)](x, y, outs[0], n - 7, 3.0, BLOCK=256).wait()   # a changed size: the tail keeps old values
    np.testing.assert_allclose(outs[0].numpy()[:n - 7], 3.0 * a[:n - 7].astype(np.float64) + b[:n - 7], rtol=1e-6, atol=1e-6)


def test_dpnp_views_and_repeats(rng):
    q = dev.queue_for(None)
    a = rng.standard_normal(96).astype(np.float32)
    x = dpnp.asarray(a, sycl_queue=q)
    out = dpnp.asarray(poisoned(96, np.float32), sycl_queue=q)
    for lo in (32, 32, 16, 16):
        axpy[(1,)](x[lo:], x[lo:], out[lo:], 96 - lo, 1.0, BLOCK=128).wait()
        np.testing.assert_allclose(dpnp.asnumpy(out)[lo:], 2 * a[lo:], rtol=1e-6, atol=1e-6)
    xv, ov = x[8:], out[8:]
    for _ in range(3):
        axpy[(1,)](xv, xv, ov, 88, 0.5, BLOCK=128).wait()
    np.testing.assert_allclose(dpnp.asnumpy(out)[8:], 1.5 * a[8:].astype(np.float64), rtol=1e-6, atol=1e-6)


def test_an_interface_that_changes_is_read_again(rng):
    n = 64
    a = rng.standard_normal(n).astype(np.float32)
    x = xk.to_device(a)
    o1, o2 = xk.to_device(poisoned(n, np.float32)), xk.to_device(poisoned(n, np.float32))
    out = _Iface(o1)
    axpy[(1,)](x, x, out, n, 1.0, BLOCK=64).wait()
    out.arr = o2                                  # the same object now points at other memory
    axpy[(1,)](x, x, out, n, 2.0, BLOCK=64).wait()
    axpy[(1,)](x, x, out, n, 2.0, BLOCK=64).wait()
    np.testing.assert_allclose(o1.numpy(), 2 * a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(o2.numpy(), 3 * a, rtol=1e-6, atol=1e-6)


def test_numpy_arguments_are_copied_at_every_launch(rng):
    n = 100
    a = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    for k in range(3):
        x = a + k
        axpy[(1,)](x, x, out, n, 1.0, BLOCK=128)
        np.testing.assert_allclose(out, 2 * (a.astype(np.float64) + k), rtol=1e-6, atol=1e-6)


def test_no_array_is_kept_alive():
    q = dev.queue_for(None)
    n = 64
    x = xk.to_device(np.ones(n, np.float32))
    out = xk.empty(n, np.float32)
    d = dpnp.ones(n, dtype=np.float32, sycl_queue=q)
    for _ in range(2):                            # the second launch is a memo hit
        axpy[(1,)](x, d, out, n, 1.0, BLOCK=64).wait()
    u = d.get_array()
    assert id(u) in usm_args._by_array
    wx, wu, wo = weakref.ref(x), weakref.ref(u), weakref.ref(out)
    del x, d, u, out
    gc.collect()
    assert wx() is None and wu() is None and wo() is None
    assert axpy._memo is None
    assert all(e.ref() is not None for e in usm_args._by_array.values())
