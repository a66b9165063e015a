"""Launch errors raised before anything runs, each naming the argument (beyond test_launch_api's list):
descriptor extents against buffer sizes, arrays in another SYCL context, unsupported dtypes and
values, bad grids, workgroups and SLM beyond the device or target."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from kernels import add_kernel


@xk.jit
def desc_copy(x_ptr, o_ptr, M, N, LD, BM: xl.constexpr, BN: xl.constexpr):
    m0 = xl.program_id(0) * BM
    n0 = xl.program_id(1) * BN
    x = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(LD, 1), block_shape=(BM, BN))
    o = xl.make_tensor_descriptor(o_ptr, shape=(M, N), strides=(LD, 1), block_shape=(BM, BN))
    o.store((m0, n0), x.load((m0, n0)))


@xk.jit
def desc_moved(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """The descriptor's base is a moved pointer: its extent is not checked at launch."""
    x = xl.make_tensor_descriptor(x_ptr + 0, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    o = xl.make_tensor_descriptor(o_ptr, shape=(BM, BN), strides=(BN, 1), block_shape=(BM, BN))
    o.store((0, 0), x.load((0, 0)))


def _grid(M, N):
    return (xk.cdiv(M, 8), xk.cdiv(N, 16))


def test_descriptor_larger_than_numpy_buffer_is_refused(rng):
    M, N = 20, 30
    x = rng.standard_normal(M * N - 1).astype(np.float32)  # one element short
    out = poisoned(M * N, np.float32)
    with pytest.raises(xk.LaunchError) as info:
        desc_copy[_grid(M, N)](x, out, M, N, N, BM=8, BN=16)
    msg = str(info.value)
    assert "argument 'x_ptr' holds 599 float32 elements" in msg and "reaches element 599" in msg, msg
    assert "shape (20, 30), strides (30, 1)" in msg and "test_launch_checks.py:" in msg, msg
    assert np.isnan(out).all()  # nothing ran


def test_descriptor_pitch_counts_in_the_extent(rng):
    M, N, LD = 5, 3, 11  # rows of 3 at a pitch of 11: needs (M-1)*LD + N = 47 elements
    x = rng.standard_normal(47).astype(np.float32)
    out = poisoned(46, np.float32)
    with pytest.raises(xk.LaunchError, match="argument 'o_ptr' holds 46 float32 elements"):
        desc_copy[_grid(M, N)](x, out, M, N, LD, BM=8, BN=16)
    out = poisoned(47, np.float32)
    desc_copy[_grid(M, N)](x, out, M, N, LD, BM=8, BN=16)  # exactly large enough
    want = poisoned(47, np.float32)
    for r in range(M):
        want[r * LD:r * LD + N] = x[r * LD:r * LD + N]
    np.testing.assert_array_equal(out, want)


def test_descriptor_extent_of_device_arrays_is_their_shape(rng):
    M, N = 16, 32
    x = xk.to_device(rng.standard_normal((M, N)).astype(np.float32))
    small = xk.empty((M - 1, N), np.float32, queue=x.queue)
    with pytest.raises(xk.LaunchError, match="argument 'o_ptr' holds 480 float32 elements"):
        desc_copy[_grid(M, N)](x, small, M, N, N, BM=8, BN=16)
    ok = xk.empty((M, N), np.float32, queue=x.queue)
    desc_copy[_grid(M, N)](x, ok, M, N, N, BM=8, BN=16)
    np.testing.assert_array_equal(ok.numpy(), x.numpy())


def test_empty_descriptor_and_moved_base_are_not_checked(rng):
    x = np.zeros(4, np.float32)
    out = poisoned(4, np.float32)
    desc_copy[(1, 1)](x, out, 0, 100, 100, BM=8, BN=16)  # M = 0: the descriptor covers nothing
    assert np.isnan(out).all()
    big = rng.standard_normal(8 * 16).astype(np.float32)
    out = poisoned(8 * 16, np.float32)
    desc_moved[(1,)](big, out, 8, 16, BM=8, BN=16)  # checkable only by the canary tests
    np.testing.assert_array_equal(out, big)
    assert desc_moved.last.extents == [["o_ptr", [["const", 8], ["const", 16]], [["const", 16], ["const", 1]],
                                        desc_moved.last.extents[0][3]]]


def test_device_array_in_another_context_is_refused():
    dpctl = xk.runtime.device.dpctl()
    q = xk.runtime.device.queue_for("opencl:cpu")
    other_ctx = dpctl.SyclContext([q.sycl_device])  # a second context on the same device (a list makes a new one)
    other_q = dpctl.SyclQueue(other_ctx, q.sycl_device)
    assert other_q.sycl_context != q.sycl_context
    a = xk.to_device(np.ones(16, np.float32), queue=other_q)
    b = xk.to_device(np.ones(16, np.float32), queue=q)
    with pytest.raises(xk.LaunchError, match="argument 'y_ptr' lives on"):
        add_kernel[(1,)](a, b, a, 16, BLOCK=16)
    mem = dpctl.memory.MemoryUSMDevice(64, queue=other_q)  # a raw USM object from the other context
    with pytest.raises(xk.LaunchError, match="argument 'out_ptr' lives in another SYCL context"):
        add_kernel[(1,)](b, b, mem, 16, BLOCK=16)


@pytest.mark.parametrize("make,message", [
    (lambda x: (x.astype(object),), "argument 'x_ptr': arrays of object are not supported"),
    (lambda x: (np.array(["a"] * 64),), "argument 'x_ptr': arrays of <U1 are not supported"),
    (lambda x: (x.astype(np.longdouble),), "arrays of float128 are not supported"),
    (lambda x: (x, x, x, 1 << 64), "argument 'n': the integer 18446744073709551616 does not fit in 64 bits"),
    (lambda x: (x, x, x, -(1 << 63) - 1), "does not fit in 64 bits"),
    (lambda x: (x, x, x, np.complex64(1)), "argument 'n': NumPy scalars of complex64 are not supported"),
    (lambda x: (x, x, x, None), "argument 'n' is None"),
    (lambda x: (x, x, x, [4]), "argument 'n': list is not a kernel argument"),
    (lambda x: (x, x, x, 2.0 + 1j), "argument 'n': complex is not a kernel argument"),
])
def test_unsupported_argument_types_are_named(make, message):
    x = np.zeros(64, np.float32)
    args = make(x)
    args = args + (x,) * (3 - len(args)) + ((4,) if len(args) < 4 else ())
    with pytest.raises(xk.LaunchError) as info:
        add_kernel[(1,)](*args, BLOCK=16)
    assert message in str(info.value), str(info.value)


def test_integers_are_never_truncated(rng):
    """An int beyond 32 bits specializes the kernel to a 64-bit parameter instead of wrapping."""
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(64, np.float32)
    launch = add_kernel[(1,)](x, x, out, (1 << 40) + 64, BLOCK=64)  # offs < n for every lane
    assert "%n: i64" in launch.asm["xegpu"]
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("grid,message", [
    ((1 << 31,), "exceeds the limit of 2147483647 workgroups"),
    ((1, 1, 1, 1), "tuple of 1 to 3 positive integers"),
    ((True,), "grid dimensions must be integers"),
    (("2",), "grid dimensions must be integers"),
    (None, "tuple of 1 to 3 positive integers"),
    ((2, 0), "is empty or negative"),
    (lambda meta: (meta["n"] // 1000,), "is empty or negative"),
    (lambda meta: "x", "tuple of 1 to 3 positive integers"),
])
def test_bad_grids_are_refused_before_launch(grid, message):
    x = np.zeros(64, np.float32)
    out = poisoned(64, np.float32)
    with pytest.raises(xk.LaunchError) as info:
        add_kernel[grid](x, x, out, 64, BLOCK=64)
    assert message in str(info.value), str(info.value)
    assert np.isnan(out).all()


def test_numpy_integer_grids_are_accepted():
    x = np.arange(64, dtype=np.float32)
    out = poisoned(64, np.float32)
    add_kernel[(np.int64(2),)](x, x, out, 64, BLOCK=32)
    np.testing.assert_array_equal(out, 2 * x)


class _Device:
    def __init__(self, wg, slm):
        self.name, self.max_work_group_size, self.local_mem_size = "small test device", wg, slm


class _Queue:
    def __init__(self, wg, slm):
        self.sycl_device = _Device(wg, slm)


def test_workgroup_and_slm_beyond_the_device_are_refused():
    x = np.zeros(64, np.float32)
    ck = add_kernel[(1,)](x, x, x.copy(), 64, BLOCK=64, num_subgroups=8).kernel
    with pytest.raises(xk.LaunchError, match=r"needs workgroups of 128 work items; 'small test device' allows 64"):
        ck.kernel_for(_Queue(64, 1 << 20))
    ck.slm_bytes = 4096
    with pytest.raises(xk.LaunchError, match="needs 4096 bytes of shared local memory; 'small test device' has 1024"):
        ck.kernel_for(_Queue(1024, 1024))


@xk.jit
def slm_hog(o_ptr, R: xl.constexpr):
    m = xl.alloc_slm((R, 1024), xl.float32)
    r = xl.arange(0, 1024)
    m.store((0, 0), xl.zeros((1, 1024), xl.float32))
    xl.barrier()
    xl.store(o_ptr + r, xl.reshape(m.load((0, 0), shape=(1, 1024)), (1024,)))


@pytest.mark.parametrize("target,rows,limit", [("cpu", 65, 262144), ("dg2", 17, 65536), ("pvc", 33, 131072)])
def test_slm_beyond_the_target_is_a_compilation_error(target, rows, limit):
    with pytest.raises(xk.CompilationError) as info:
        slm_hog.compile_offline(dict(o_ptr=xk.pointer(xl.float32), R=rows), target=target)
    msg = str(info.value)
    assert f"{rows * 4096}" in msg and str(limit) in msg and "test_launch_checks.py" in msg, msg


def test_slm_within_the_target_compiles():
    slm_hog.compile_offline(dict(o_ptr=xk.pointer(xl.float32), R=16), target="dg2")


@xk.jit
def count_into(x_ptr, hist_ptr, n, BLOCK: xl.constexpr):
    """Atomics through a pointer moved inside a loop: hist_ptr is written, x_ptr only read."""
    offs = xl.arange(0, BLOCK)
    h = hist_ptr
    for start in range(0, n, BLOCK):
        m = start + offs < n
        v = xl.load(x_ptr + start + offs, mask=m, other=0)
        xl.atomic_add(h + (v & 3), xl.full([BLOCK], 1, xl.int32), mask=m)


def test_read_only_array_written_by_the_kernel_is_refused(backend, rng):
    n = 301
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    out.setflags(write=False)
    with pytest.raises(xk.LaunchError) as info:
        backend.launch(add_kernel, (xk.cdiv(n, 64),), x, y, out, n, BLOCK=64)
    msg = str(info.value)
    assert "argument 'out_ptr' is a read-only NumPy array" in msg and "kernels.py:" in msg, msg
    assert np.isnan(out).all()
    # a contiguous np.broadcast_to view (read-only) as the output: also refused (its writes were dropped)
    with pytest.raises(xk.LaunchError, match="argument 'out_ptr' is a read-only"):
        backend.launch(add_kernel, (xk.cdiv(n, 64),), x, y, np.broadcast_to(poisoned(n, np.float32), (n,)), n,
                       BLOCK=64)


def test_read_only_inputs_are_fine(backend, rng):
    n = 301
    x = rng.standard_normal(n).astype(np.float32)
    x.setflags(write=False)
    y = np.broadcast_to(rng.standard_normal(n).astype(np.float32), (n,))  # a read-only view
    out = poisoned(n, np.float32)
    backend.launch(add_kernel, (xk.cdiv(n, 64),), x, y, out, n, BLOCK=64)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_atomics_through_a_loop_carried_pointer_count_as_writes(backend, rng):
    n = 203
    x = rng.integers(0, 1000, n).astype(np.int32)
    x.setflags(write=False)  # read only: fine
    hist = np.zeros(4, np.int32)
    backend.launch(count_into, (1,), x, hist, n, BLOCK=32)
    np.testing.assert_array_equal(hist, np.bincount(x & 3, minlength=4))
    hist.setflags(write=False)
    with pytest.raises(xk.LaunchError, match="argument 'hist_ptr' is a read-only NumPy array"):
        backend.launch(count_into, (1,), x, hist, n, BLOCK=32)
