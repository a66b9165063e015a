"""Interop: dpnp arrays (``__sycl_usm_array_interface__``) are passed zero-copy, on their own queue,
and the launch is asynchronous (it returns the SYCL event); anything else that is not an array on a
SYCL device is refused with a message naming the argument. dpnp is in the ``test`` extra."""
import numpy as np
import pytest

import dpnp
import xekern as xk
import xekern.language as xl
from xekern.errors import LaunchError
from xekern.runtime import device as dev


@xk.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    xl.store(out_ptr + offs, alpha * xl.load(x_ptr + offs, mask=m) + xl.load(y_ptr + offs, mask=m), mask=m)


def test_dpnp_arrays_are_zero_copy_on_their_queue(rng):
    q = dev.queue_for(None)
    n = 3000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = dpnp.asarray(a, sycl_queue=q), dpnp.asarray(b, sycl_queue=q)
    out = dpnp.full(n, np.nan, dtype=np.float32, sycl_queue=q)
    ptr = out.__sycl_usm_array_interface__["data"][0]
    launch = scale_add[(xk.cdiv(n, 1024),)](x, y, out, n, 2.0, BLOCK=1024)
    assert launch.event is not None            # asynchronous: the SYCL event comes back
    launch.wait()
    assert out.__sycl_usm_array_interface__["data"][0] == ptr   # written in place
    np.testing.assert_allclose(dpnp.asnumpy(out), 2 * a + b, rtol=1e-6)
    xk.synchronize()


def test_dpnp_view_with_an_offset(rng):
    q = dev.queue_for(None)
    a = rng.standard_normal(64).astype(np.float32)
    x = dpnp.asarray(a, sycl_queue=q)
    out = dpnp.zeros(64, dtype=np.float32, sycl_queue=q)
    scale_add[(1,)](x[32:], x[32:], out[32:], 32, 1.0, BLOCK=32).wait()
    got = dpnp.asnumpy(out)
    np.testing.assert_allclose(got[32:], 2 * a[32:], rtol=1e-6)
    assert (got[:32] == 0).all()


class _TorchLike:
    """A DLPack producer on a device xekern cannot reach (like a CUDA torch tensor)."""

    def __dlpack__(self, **kw):
        raise BufferError("not here")

    def __dlpack_device__(self):
        return (2, 0)   # kDLCUDA


@pytest.mark.parametrize("bad,words", [(_TorchLike(), "_TorchLike lives on CUDA \\(device 0\\), not on the host"),
                                       ([1.0, 2.0], "list is not a kernel argument")])
def test_other_objects_are_refused_clearly(bad, words):
    q = dev.queue_for(None)
    out = dpnp.zeros(4, dtype=np.float32, sycl_queue=q)
    with pytest.raises(LaunchError, match=words) as e:
        scale_add[(1,)](bad, out, out, 4, 1.0, BLOCK=4)
    assert "x_ptr" in str(e.value)


class _DLPackOnly:
    """An array seen only through DLPack: ``__dlpack__`` and ``__dlpack_device__`` of the one it wraps."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class _HostDLPack(_DLPackOnly):
    """An array seen only through DLPack on the host (kDLCPU), like a CPU torch tensor."""


def test_host_dlpack_producers_are_copied_in_and_out(backend, rng):
    n = 1001
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    x, o = _HostDLPack(a), _HostDLPack(out)
    assert not hasattr(x, "__array__") and not hasattr(x, "__sycl_usm_array_interface__")
    backend.launch(scale_add, (xk.cdiv(n, 256),), x, b, o, n, 0.5, BLOCK=256)
    np.testing.assert_allclose(out, 0.5 * a.astype(np.float64) + b, rtol=1e-6)  # written back through DLPack
    ro = np.full(n, np.nan, np.float32)
    ro.setflags(write=False)
    with pytest.raises(LaunchError, match="argument 'out_ptr' is a read-only NumPy array"):
        backend.launch(scale_add, (xk.cdiv(n, 256),), x, b, _HostDLPack(ro), n, 0.5, BLOCK=256)


class _OneAPIDLPack(_DLPackOnly):
    """A dpnp array seen only through DLPack (kDLOneAPI): no __sycl_usm_array_interface__."""


class _LegacyOneAPIDLPack(_OneAPIDLPack):
    """The same before DLPack 1.0: ``__dlpack__`` takes no max_version and gives a "dltensor" capsule."""

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__(stream=stream)


@pytest.mark.parametrize("wrap", [_OneAPIDLPack, _LegacyOneAPIDLPack])
def test_oneapi_dlpack_producers_are_zero_copy(rng, wrap):
    import gc
    import sys
    q = dev.queue_for(None)
    n = 1001
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x = dpnp.asarray(a, sycl_queue=q)
    out = dpnp.full(n, np.nan, dtype=np.float32, sycl_queue=q)
    ptr = out.__sycl_usm_array_interface__["data"][0]
    xo, oo = wrap(x), wrap(out)
    assert xo.__dlpack_device__()[0] == 14 and not hasattr(oo, "__sycl_usm_array_interface__")
    refs = sys.getrefcount(x.get_array().usm_data), sys.getrefcount(out.get_array().usm_data)
    launch = scale_add[(xk.cdiv(n, 256),)](xo, b, oo, n, 0.5, BLOCK=256)
    assert launch.event is not None
    launch.wait()
    assert out.__sycl_usm_array_interface__["data"][0] == ptr          # the dpnp array saw the writes
    np.testing.assert_allclose(dpnp.asnumpy(out), 0.5 * a.astype(np.float64) + b, rtol=1e-6)
    scale_add[(xk.cdiv(n, 256),)](xo, xo, x, n, 1.0, BLOCK=256).wait()  # in place, read and written
    np.testing.assert_allclose(dpnp.asnumpy(x), 2.0 * a, rtol=1e-6)
    xk.synchronize()
    gc.collect()
    # each launch's tensors were freed exactly once (their deleters drop the reference they hold); x,
    # passed as a dpnp array too, is known to the launch fast path while it lives (runtime/usm_args.py):
    # one reference to its allocation, dropped with x
    assert (sys.getrefcount(x.get_array().usm_data), sys.getrefcount(out.get_array().usm_data)) == \
        (refs[0] + 1, refs[1])


def _read_only(a):
    a.get_array().flags.writable = False
    return a


@pytest.mark.parametrize("make,arg,words", [
    (lambda q: dpnp.zeros(8, dtype=np.complex64, sycl_queue=q), 0, "DLPack dtype \\(code 5, 64 bits\\)"),
    (lambda q: dpnp.zeros(16, dtype=np.float32, sycl_queue=q)[::2], 0, "non-contiguous DLPack view"),
    (lambda q: _read_only(dpnp.zeros(8, dtype=np.float32, sycl_queue=q)), 2, "read-only DLPack tensor")])
def test_oneapi_dlpack_mistakes_are_refused_clearly(make, arg, words):
    q = dev.queue_for(None)
    bad = make(q)
    out = dpnp.full(8, np.nan, dtype=np.float32, sycl_queue=q)
    args = [out, out, out]
    args[arg] = _OneAPIDLPack(bad)
    with pytest.raises(LaunchError, match=words) as e:
        scale_add[(1,)](*args, 8, 1.0, BLOCK=8)
    assert ("x_ptr", "y_ptr", "out_ptr")[arg] in str(e.value)
    if arg == 2:  # reading a read-only tensor is fine
        y = np.arange(1, 9, dtype=np.float32)
        scale_add[(1,)](args[2], dpnp.asarray(y, sycl_queue=q), out, 8, 3.0, BLOCK=8).wait()
        np.testing.assert_array_equal(dpnp.asnumpy(out), y)   # 3 * 0 + y
