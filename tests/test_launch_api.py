"""The launch API: grids (tuples, callables, 3-D), options, asm stages, device arrays, argument errors."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from kernels import add_kernel


@xk.jit
def ids_kernel(out_ptr, BLOCK: xl.constexpr):
    """Each workgroup writes its (x, y, z) ids and the grid size."""
    x, y, z = xl.program_id(0), xl.program_id(1), xl.program_id(2)
    nx, ny, nz = xl.num_programs(0), xl.num_programs(1), xl.num_programs(2)
    flat = (z * ny + y) * nx + x
    vals = xl.arange(0, BLOCK)
    code = x * 1_000_000 + y * 1000 + z + (nx * 100 + ny * 10 + nz) * 0
    res = xl.where(vals == 0, code, nx * 100 + ny * 10 + nz)
    xl.store(out_ptr + flat * 2 + vals, res, mask=vals < 2)


@pytest.mark.parametrize("grid", [(3,), (3, 2), (3, 2, 4)])
def test_program_ids_over_1_2_3d_grids(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    out = poisoned(2 * g[0] * g[1] * g[2], np.int32)
    ids_kernel[grid](out, BLOCK=16)
    out = out.reshape(g[2], g[1], g[0], 2)
    for z in range(g[2]):
        for y in range(g[1]):
            for x in range(g[0]):
                assert out[z, y, x, 0] == x * 1_000_000 + y * 1000 + z
                assert out[z, y, x, 1] == g[0] * 100 + g[1] * 10 + g[2]


def test_grid_callable_gets_the_meta_parameters(rng):
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (xk.cdiv(meta["n"], meta["BLOCK"]),)
    add_kernel[grid](x, x, out, n, BLOCK=512)
    assert seen["BLOCK"] == 512 and seen["n"] == n
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("num_subgroups", [1, 2, 8, 16])
def test_num_subgroups_option(rng, num_subgroups):
    n = 3001
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    launch = add_kernel[(xk.cdiv(n, 256),)](x, x, out, n, BLOCK=256, num_subgroups=num_subgroups)
    assert launch.kernel.workgroup_size == 16 * num_subgroups
    np.testing.assert_array_equal(out, 2 * x)


def test_asm_has_every_stage():
    x = np.ones(16, np.float32)
    launch = add_kernel[(1,)](x, x, x.copy(), 16, BLOCK=16)
    asm = launch.asm
    for stage in ("xegpu", "layout", "sg", "inst", "lane", "llir", "spirv"):
        assert stage in asm and len(asm[stage]) > 100, stage
    assert "xegpu.load_gather" in asm["xegpu"] and "spir_kernel" in asm["llir"]
    assert "OpEntryPoint Kernel" in asm["spirv"]
    assert add_kernel.asm["xegpu"] == asm["xegpu"]


def test_device_arrays_are_zero_copy_and_async(rng):
    n = 1 << 14
    a = rng.standard_normal(n).astype(np.float32)
    da, db = xk.to_device(a), xk.to_device(a)
    out = xk.empty(n, np.float32, queue=da.queue)
    launch = add_kernel[(n // 1024,)](da, db, out, n, BLOCK=1024)
    assert launch.event is not None
    launch.wait()
    np.testing.assert_array_equal(out.numpy(), 2 * a)
    assert launch.elapsed_ns > 0
    xk.synchronize()
    m = xk.to_device(np.zeros((3, 5), np.float16))
    assert (m.itemsize, m.strides, m.strides[0] // m.itemsize, m.nbytes) == (2, (10, 2), 5, 30)


def test_device_and_queue_options():
    x = np.arange(32, dtype=np.float32)
    out = poisoned(32, np.float32)
    add_kernel[(1,)](x, x, out, 32, BLOCK=32, device="opencl:cpu")
    np.testing.assert_array_equal(out, 2 * x)
    q = xk.runtime.device.queue_for("opencl:cpu")
    out[:] = np.nan
    add_kernel[(1,)](x, x, out, 32, BLOCK=32, queue=q)
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("call,message", [
    (lambda x: add_kernel[(1,)](x, x, x), "missing argument 'n'"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, 5, 6, 7), "takes 5 arguments"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, BLOCK=16, BLOKC=3), "has no parameter 'BLOKC'"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, n=4, BLOCK=16), "argument 'n' given twice"),
    (lambda x: add_kernel[(1,)](x, x, x, "4", BLOCK=16), "argument 'n': str is not a kernel argument"),
    (lambda x: add_kernel[(1,)](x.astype(np.complex64), x, x, 4, BLOCK=16), "complex64 are not supported"),
    (lambda x: add_kernel[(0,)](x, x, x, 4, BLOCK=16), "empty or negative"),
    (lambda x: add_kernel[(-2,)](x, x, x, 4, BLOCK=16), "empty or negative"),
    (lambda x: add_kernel[()](x, x, x, 4, BLOCK=16), "tuple of 1 to 3 positive integers"),
    (lambda x: add_kernel[(1.5,)](x, x, x, 4, BLOCK=16), "grid dimensions must be integers"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, BLOCK=16, num_subgroups=3), "num_subgroups must be a power of 2"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, BLOCK=16, num_subgroups=1024), "allows at most 8192"),
    (lambda x: add_kernel[(1,)](x[::2], x[::2], x[::2], 4, BLOCK=16), "non-contiguous NumPy view"),
    (lambda x: add_kernel[(1,)](x, x, x, 4, BLOCK=16, target="pvc"), "cannot run on"),
    (lambda x: add_kernel(x, x, x, 4, BLOCK=16), "is launched with add_kernel[grid]"),
])
def test_launch_errors_are_clear(call, message):
    x = np.zeros(64, np.float32)
    with pytest.raises(xk.LaunchError) as info:
        call(x)
    assert message in str(info.value), str(info.value)
