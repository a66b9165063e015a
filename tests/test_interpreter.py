"""The interpreter (``xekern.interpreter``): kernels run interpreted and on the CPU device, compared
with each other and with NumPy (fresh random data, odd sizes, outputs poisoned; the suite's
foundation kernels run on every backend in test_foundation.py); the
``XEKERN_INTERPRET`` knob; host-side debugging (trace, pdb at a kernel line); clear errors for
out-of-bounds accesses and for ops without a rule; the device's integer and float corner cases."""
import builtins
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import BACKENDS, close, interpreted, poisoned
from kernels import add_kernel, softmax_kernel
from xekern import interpreter, ir
from xekern.interpreter import numerics
from xekern.interpreter.rules_arith import binary, compare

ml_dtypes = pytest.importorskip("ml_dtypes")


def run_both(kernel, grid, args, **meta):
    """Launch ``kernel`` on the CPU device and interpreted, each on its own copy of ``args`` (arrays
    copied); returns (device args, interpreted args)."""
    return BACKENDS["cpu"].run(kernel, grid, args, **meta), BACKENDS["interpret"].run(kernel, grid, args, **meta)


def line_of(kernel, text: str) -> int:
    """The file line of the first source line of ``kernel`` containing ``text``."""
    src = kernel.source
    for i, line in enumerate(src.text.splitlines()):
        if text in line:
            return src.start_line + i
    raise AssertionError(f"{text!r} not in {kernel.__name__}")


# ---- speed (the suite's kernels run on every backend in tests/test_foundation.py) ------------------------

def test_softmax_interpretation_is_fast(rng):
    """37 rows of 781 columns: well under a second (a few ms on a laptop)."""
    x = rng.standard_normal((37, 781)).astype(np.float32)
    out = poisoned(x.shape, np.float32)
    k = interpreted(softmax_kernel)
    k[(37,)](out, x, 781, 781, 781, BLOCK=1024)  # compile once
    t = time.perf_counter()
    k[(37,)](out, x, 781, 781, 781, BLOCK=1024)
    assert time.perf_counter() - t < 1.0


# ---- descriptors and dot ---------------------------------------------------------------------------------

@xk.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr, ACC: xl.constexpr):
    m0 = xl.program_id(0) * BM
    n0 = xl.program_id(1) * BN
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), ACC)
    for k0 in range(0, K, BK):
        acc = xl.dot(a_desc.load((m0, k0)), b_desc.load((k0, n0)), acc)
    c_desc.store((m0, n0), acc)


# (the CPU device's driver takes seconds to build an emulated DPAS kernel: small tiles; int8 dot on
# the device is covered by test_tiles_device.py, so it is checked against NumPy only here)
@pytest.mark.parametrize("dtype,acc,BM,BN,BK,on_device", [(ml_dtypes.bfloat16, xl.float32, 32, 16, 16, True),
                                                         (np.float16, xl.float32, 32, 16, 16, True),
                                                         (np.int8, xl.int32, 32, 32, 32, False)])
def test_descriptor_gemm(rng, dtype, acc, BM, BN, BK, on_device):
    M, N, K = 77, 45, 3 * BK + 7
    if acc == xl.int32:
        a, b = (rng.integers(-128, 128, s).astype(dtype) for s in ((M, K), (K, N)))
    else:
        a, b = (rng.standard_normal(s).astype(dtype) for s in ((M, K), (K, N)))
    out = poisoned((M, N), acc.np_dtype)
    grid = (xk.cdiv(M, BM), xk.cdiv(N, BN))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if not on_device:
        interpreted(gemm)[grid](a, b, out, M, N, K, BM=BM, BN=BN, BK=BK, ACC=acc)
        np.testing.assert_array_equal(out, ref.astype(np.int64))
        return
    dev, itp = run_both(gemm, grid, [a, b, out, M, N, K], BM=BM, BN=BN, BK=BK, ACC=acc)
    scale = np.abs(ref).max()
    close(itp[2], ref, 1e-5, 1e-6 * scale)   # f64 products, f32 rounding per K block
    close(itp[2], dev[2], 1e-5, 1e-5 * scale)


@xk.jit
def arg_1d(x_ptr, o_ptr, BLOCK: xl.constexpr):
    r = xl.arange(0, BLOCK)
    x = xl.load(x_ptr + r)
    xl.store(o_ptr + r, xl.where(r == 0, xl.argmax(x, axis=0), xl.argmin(x, axis=0)), mask=r < 2)


def test_argmax_of_a_1d_tile(rng):
    x = rng.standard_normal(64).astype(np.float32)
    dev, itp = run_both(arg_1d, (1,), [x, poisoned(64, np.int32)], BLOCK=64)
    assert list(itp[1][:2]) == [x.argmax(), x.argmin()]
    np.testing.assert_array_equal(itp[1], dev[1])


@xk.jit
def tile_features(x_ptr, idx_ptr, o_ptr, t_ptr, s_ptr, cnt_ptr, M, N, R: xl.constexpr, C: xl.constexpr,
                  BM: xl.constexpr, BN: xl.constexpr):
    """Chunked gathers/scatters, a transposed descriptor load at the edges with update_nd_offset,
    a blocked SLM round trip, and a compare-and-swap counter under contention."""
    rows = xl.program_id(0) * R + xl.arange(0, R)
    idx = xl.load(idx_ptr + rows, mask=rows < M, other=0)
    g = xl.create_tdesc(x_ptr, idx * N, chunk_size=C)
    v = g.load(mask=rows < M, other=-1.0)
    xl.create_tdesc(o_ptr, rows * C, chunk_size=C).store(v * 2.0, mask=(rows < M) & (idx % 3 != 0))
    d = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    d = d.advance((xl.program_id(0) * BM - 3, -5))
    tb = d.load(transpose=True)
    m = xl.alloc_slm((BN, BM), xl.float32, block=(8, 16))
    m.store((0, 0), tb + 1.0)
    xl.barrier()
    back = m.load((0, 0), shape=(BN, BM))
    rt = xl.arange(0, BN)
    ct = xl.program_id(0) * BM + xl.arange(0, BM)
    xl.store(t_ptr + rt[:, None] * (R * 4) + ct[None, :], back)
    s = xl.arange(0, 16) % 5
    old = xl.atomic_add(cnt_ptr + s, 0)
    done = xl.arange(0, 16) < 0
    for _ in range(32):
        prev = xl.atomic_cas(s_ptr + s, old, old + 1, mask=~done)
        done = done | (prev == old)
        old = xl.where(done, old, prev)


def test_tile_features(rng):
    M, N, R, C, BM, BN = 53, 8, 32, 4, 32, 16
    grid = (xk.cdiv(M, R),)
    x = rng.standard_normal((M, N)).astype(np.float32)
    idx = rng.integers(0, M, M).astype(np.int32)
    args = [x, idx, poisoned((M, C), np.float32), poisoned((BN, R * 4), np.float32), np.zeros(5, np.int32),
            np.zeros(5, np.int32), M, N]
    dev, itp = run_both(tile_features, grid, args, R=R, C=C, BM=BM, BN=BN)
    keep = idx % 3 != 0
    np.testing.assert_array_equal(itp[2][keep], 2 * x[idx[keep], :C])
    assert np.isnan(itp[2][~keep]).all()
    pad = np.zeros((M + 64, N + 64), np.float32)
    pad[32:32 + M, 32:32 + N] = x
    for p in range(grid[0]):  # block rows p*BM-3.., columns -5..BN-6, transposed, + 1
        blk = pad[32 + p * BM - 3:32 + p * BM - 3 + BM, 32 - 5:32 - 5 + BN]
        np.testing.assert_array_equal(itp[3][:, p * BM:(p + 1) * BM], blk.T + 1)
    np.testing.assert_array_equal(itp[4], [4 * grid[0], 3 * grid[0], 3 * grid[0], 3 * grid[0], 3 * grid[0]])
    for i in (2, 3, 4):
        np.testing.assert_array_equal(itp[i], dev[i])


@xk.jit
def ids_kernel(out_ptr):
    x, y, z = xl.program_id(0), xl.program_id(1), xl.program_id(2)
    nx, ny, nz = xl.num_programs(0), xl.num_programs(1), xl.num_programs(2)
    flat = (z * ny + y) * nx + x
    xl.store(out_ptr + flat * 2, x * 1_000_000 + y * 1000 + z)
    xl.store(out_ptr + flat * 2 + 1, nx * 100 + ny * 10 + nz)


def test_program_ids_over_a_3d_grid_and_device_arrays():
    g = (3, 2, 4)
    out = xk.empty(48, np.int32)
    out.fill_bytes(0x5A)
    interpreted(ids_kernel)[g](out)
    got = out.numpy().reshape(4, 2, 3, 2)
    z, y, x = np.indices((4, 2, 3))
    np.testing.assert_array_equal(got[..., 0], x * 1_000_000 + y * 1000 + z)
    assert (got[..., 1] == 324).all()


# ---- the device's corner cases ------------------------------------------------------------------------

@xk.jit
def corners_kernel(f_ptr, g_ptr, i_ptr, j_ptr, u_ptr, of_ptr, oi_ptr, ob_ptr, BLOCK: xl.constexpr):
    r = xl.arange(0, BLOCK)
    f = xl.load(f_ptr + r)
    g = xl.load(g_ptr + r)
    i = xl.load(i_ptr + r)
    j = xl.load(j_ptr + r)
    u = xl.load(u_ptr + r)
    of = of_ptr + r * 8
    xl.store(of + 0, xl.maximum(f, g))
    xl.store(of + 1, xl.maximum(f, g, propagate_nan=True))
    xl.store(of + 2, xl.minimum(f, g, propagate_nan=True))
    xl.store(of + 3, f % g)
    xl.store(of + 4, f // g)
    xl.store(of + 5, xl.fma(f, g, 1.0))
    xl.store(of + 6, xl.where(f != f, 7.0, f * g))
    xl.store(of + 7, xl.floor(f) + xl.ceil(g))
    oi = oi_ptr + r * 8
    xl.store(oi + 0, i // j)                 # j has zeros: the device gives 0
    xl.store(oi + 1, i % j)
    xl.store(oi + 2, xl.maximum(u, u ^ 0x80000000).to(xl.int32, bitcast=True))
    xl.store(oi + 3, (u >> 31).to(xl.int32) + (i >> 31))
    xl.store(oi + 4, xl.minimum(xl.maximum(f, -1e6), 1e6).to(xl.bfloat16).to(xl.int32))
    xl.store(oi + 5, g.to(xl.float16).to(xl.float32).to(xl.int32, bitcast=True))
    xl.store(oi + 6, (i < j).to(xl.int32) + (u < 7).to(xl.int32) * 2 + (f < g).to(xl.int32) * 4)
    xl.store(oi + 7, xl.xor_sum(i, axis=0) + xl.max(u, axis=0).to(xl.int32, bitcast=True))
    xl.store(ob_ptr + r, (f > 0) ^ (g > 0))


def test_float_and_integer_corners_match_the_device(rng):
    B = 64
    f = (rng.standard_normal(B) * 50).astype(np.float32)
    g = (rng.standard_normal(B) * 3).astype(np.float32)
    f[:4] = [np.nan, 1.0, -0.0, np.inf]
    g[:4] = [2.0, np.nan, 0.0, 3.0]
    i = rng.integers(-2**31, 2**31, B, dtype=np.int64).astype(np.int32)
    j = rng.integers(-5, 5, B).astype(np.int32)
    j[:2] = [0, -1]
    i[1] = -2**31
    u = rng.integers(0, 2**32, B, dtype=np.uint64).astype(np.uint32)
    args = [f, g, i, j, u, poisoned((B, 8), np.float32), poisoned((B, 8), np.int32), poisoned(B, np.bool_)]
    dev, itp = run_both(corners_kernel, (1,), args, BLOCK=B)
    np.testing.assert_array_equal(itp[6], dev[6])
    np.testing.assert_array_equal(itp[7], dev[7])
    np.testing.assert_array_equal(itp[5][:, [0, 1, 2, 3, 4, 6, 7]], dev[5][:, [0, 1, 2, 3, 4, 6, 7]])
    close(itp[5][:, 5], dev[5][:, 5], 1e-6)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(itp[5][:, 0], np.fmax(f, g))
        np.testing.assert_array_equal(itp[5][:, 1], np.maximum(f, g))
        safe = np.where(j == 0, 1, j)
        q = np.where(j == 0, 0, np.trunc(i.astype(np.float64) / safe)).astype(np.int64).astype(np.int32)
    np.testing.assert_array_equal(itp[6][:, 0], q)
    assert itp[6][1, 0] == -2**31 and itp[6][0, 0] == 0 and itp[6][0, 1] == 0


INT_KINDS = ["addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "andi", "ori", "xori", "shli", "shrsi",
             "shrui", "maxsi", "minsi", "maxui", "minui", "mulhisi", "mulhiui"]


@pytest.mark.parametrize("dtype", [xl.int1, xl.int8, xl.int16, xl.int32, xl.int64, xl.uint8, xl.uint32, xl.uint64])
def test_scalar_and_tile_integer_paths_agree(rng, dtype):
    """Loops run scalars through Python ints, tiles through NumPy: the same bits either way."""
    npd = dtype.np_dtype
    if dtype.is_bool:
        a, b = rng.integers(0, 2, 64).astype(bool), rng.integers(0, 2, 64).astype(bool)
    else:
        info = np.iinfo(npd)
        a = rng.integers(info.min, info.max, 64, dtype=npd, endpoint=True)
        b = rng.integers(info.min, info.max, 64, dtype=npd, endpoint=True)
        def wrapped(vals):
            return np.array([v % (1 << dtype.bits) for v in vals], np.uint64).astype(npd)
        a[:8] = wrapped([0, 1, int(info.max), int(info.min), int(info.min), dtype.bits - 1, dtype.bits, 3])
        b[:8] = wrapped([0, -1, -1, -1, 0, 1, 3, dtype.bits + 2])
    with np.errstate(all="ignore"):
        for kind in INT_KINDS:
            tile = binary(kind, a, b, dtype)
            for k in range(64):
                s = binary(kind, a[k], b[k], dtype)
                assert type(s) is npd.type and s == tile[k], (kind, a[k], b[k], s, tile[k])
        for pred in ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]:
            tile = compare(pred, a, b, dtype)
            for k in range(64):
                assert bool(compare(pred, a[k], b[k], dtype)) == bool(tile[k]), (pred, a[k], b[k])


def test_numerics_helpers():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 8388609.0], np.float32)
    np.testing.assert_array_equal(numerics.round_half_away(x), [1, 2, 3, -1, -3, 0, 8388609])
    xs = np.array([0, 1, 255, 0x80, 0x7F], np.uint8)
    np.testing.assert_array_equal(numerics.count_leading_zeros(xs, xl.uint8), [8, 7, 0, 0, 1])
    np.testing.assert_array_equal(numerics.popcount(xs, xl.uint8), [0, 1, 8, 1, 7])


# ---- the XEKERN_INTERPRET knob --------------------------------------------------------------------------

def test_env_knob_is_read_when_a_kernel_is_decorated(monkeypatch):
    monkeypatch.setenv("XEKERN_INTERPRET", "1")

    @xk.jit
    def twice(x_ptr, n, BLOCK: xl.constexpr):
        offs = xl.arange(0, BLOCK)
        xl.store(x_ptr + offs, offs * 2, mask=offs < n)

    monkeypatch.delenv("XEKERN_INTERPRET")
    assert twice.interpret  # decided at decoration, like Triton
    x = poisoned(10, np.int32)
    launch = twice[(1,)](x, 10, BLOCK=16)
    assert launch.event is None and list(launch.asm) == ["xegpu"]
    assert isinstance(twice.last, interpreter.InterpretedKernel)
    np.testing.assert_array_equal(x, np.arange(0, 20, 2))
    assert not xk.jit(twice.fn).interpret


def test_env_knob_in_a_fresh_process(tmp_path):
    script = tmp_path / "knob.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import xekern as xk
        import xekern.language as xl

        @xk.jit
        def twice(x_ptr, n, BLOCK: xl.constexpr):
            offs = xl.arange(0, BLOCK)
            xl.store(x_ptr + offs, offs * 2, mask=offs < n)

        x = np.full(10, -1, np.int32)
        launch = twice[(1,)](x, 10, BLOCK=16).wait()
        print(twice.interpret, launch.event, list(launch.asm), x.tolist())
    """))
    env = dict(os.environ, XEKERN_INTERPRET="1")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == f"True None ['xegpu'] {list(range(0, 20, 2))}"


# ---- host-side debugging ----------------------------------------------------------------------------------

@xk.jit(interpret=True)
def debug_kernel(x_ptr, out_ptr, n, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=0.0)
    acc = xl.zeros((BLOCK,), xl.float32)
    for k in range(0, 3):
        acc += x * k
    y = acc + 1.0  # the breakpoint line
    xl.store(out_ptr + offs, y, mask=offs < n)


def test_breakpoint_at_a_kernel_line_reaches_pdb_with_the_kernels_variables(rng, monkeypatch):
    n = 40
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    seen = []

    def fake_breakpoint(*a, **k):
        f = sys._getframe(1)
        seen.append((f.f_code.co_filename, f.f_lineno, dict(f.f_locals)))
    monkeypatch.setattr(builtins, "breakpoint", fake_breakpoint)
    line = line_of(debug_kernel, "the breakpoint line")
    with interpreter.break_at(line, file=__file__) as bp:
        debug_kernel[(3,)](x, out, n, BLOCK=16)
    assert bp.hits == 3 and len(seen) == 3
    for p, (file, lineno, local) in enumerate(seen):
        assert (file, lineno) == (__file__, line)  # pdb's `list` shows the kernel
        assert local["program_id"] == (p, 0, 0) and local["pid"] == p and local["k"] == 2
        want = np.zeros(16, np.float32)
        m = min(16, n - 16 * p)
        want[:m] = x[16 * p:16 * p + m]
        np.testing.assert_array_equal(local["x"], want)
        np.testing.assert_array_equal(local["acc"], want * 3)
        assert "y" not in local  # not assigned yet
    np.testing.assert_allclose(out, x * 3 + 1, rtol=1e-6)
    with interpreter.break_at(line, program=1):
        debug_kernel[(3,)](x, out, n, BLOCK=16)
    assert len(seen) == 4 and seen[-1][2]["program_id"] == (1, 0, 0)


def test_trace_prints_every_op_through_builtins_print(rng, monkeypatch):
    lines, events = [], []
    monkeypatch.setattr(builtins, "print", lambda *a, **k: lines.append(" ".join(map(str, a))))
    x = rng.standard_normal(20).astype(np.float32)
    with interpreter.trace(), interpreter.trace(events.append):
        debug_kernel[(2,)](x, poisoned(20, np.float32), 20, BLOCK=16)
    assert any(s.startswith("pid (1, 0, 0)") and "xegpu.load_gather" in s for s in lines)
    assert len(lines) == len(events) and events[-1].program_id == (1, 0, 0)
    loads = [e for e in events if e.op.op_name == "xegpu.load_gather" and e.program_id == (0, 0, 0)]
    np.testing.assert_array_equal(loads[0].results[0], x[:16])
    n = len(lines)
    debug_kernel[(2,)](x, poisoned(20, np.float32), 20, BLOCK=16)  # the context ended: quiet again
    assert len(lines) == n


@xk.jit(interpret=True)
def print_kernel(x_ptr):
    pid = xl.program_id(0)
    print("pid is", pid)
    x = xl.load(x_ptr + pid)
    xl.device_print("x", x, xl.arange(0, 2))
    xl.store(x_ptr + pid, x + 1)


def test_print_written_in_a_kernel_runs_on_the_host_without_debug(capsys):
    x = np.arange(3, dtype=np.int32)
    print_kernel[(3,)](x)
    printed = capsys.readouterr().out.splitlines()
    scalars = [s for s in printed if "pid is" in s]
    assert scalars == [f"pid ({p}, 0, 0) pid is {p}" for p in range(3)]
    assert [s for s in printed if s.startswith("pid (2, 0, 0) idx")] == ["pid (2, 0, 0) idx (0) x 2 0",
                                                                         "pid (2, 0, 0) idx (1) x 2 1"]
    np.testing.assert_array_equal(x, [1, 2, 3])


@xk.jit(interpret=True)
def breakpoint_kernel(x_ptr, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs) * 2
    breakpoint()  # the kernel's breakpoint
    xl.store(x_ptr + offs, x + 1)


def test_breakpoint_written_in_a_kernel_run_on_the_host(monkeypatch):
    stops = []

    def fake_breakpoint(*a, **k):
        f = sys._getframe(1)
        stops.append((f.f_code.co_filename, f.f_lineno, dict(f.f_locals)))
    monkeypatch.setattr(builtins, "breakpoint", fake_breakpoint)
    x = np.arange(12, dtype=np.int32)
    breakpoint_kernel[(3,)](x, BLOCK=4)
    assert len(stops) == 3
    line = line_of(breakpoint_kernel, "the kernel's breakpoint")
    for p, (file, lineno, local) in enumerate(stops):
        assert (file, lineno) == (__file__, line)
        assert local["pid"] == p and local["BLOCK"] == 4 and local["program_id"] == (p, 0, 0)
        np.testing.assert_array_equal(local["x"], 2 * np.arange(4 * p, 4 * p + 4))
        np.testing.assert_array_equal(local["offs"], np.arange(4 * p, 4 * p + 4))
    np.testing.assert_array_equal(x, 2 * np.arange(12) + 1)  # the kernel ran on after each stop


def test_breakpoint_in_a_kernel_drives_pdb(monkeypatch):
    """pdb itself, fed from a script: ``p x`` at the kernel's breakpoint prints the program's x."""
    import io
    import pdb
    out = io.StringIO()
    script = io.StringIO("p x.tolist()\np pid\nc\n" * 2)
    monkeypatch.setattr(builtins, "breakpoint",
                        lambda *a, **k: pdb.Pdb(stdin=script, stdout=out, nosigint=True).set_trace(sys._getframe(1)))
    x = np.arange(8, dtype=np.int32) + 5
    breakpoint_kernel[(2,)](x, BLOCK=4)
    text = out.getvalue()
    assert "[10, 12, 14, 16]" in text and "[18, 20, 22, 24]" in text, text
    assert os.path.basename(__file__) in text  # pdb shows where: the kernel's own file
    np.testing.assert_array_equal(x, 2 * (np.arange(8) + 5) + 1)


def test_breakpoint_compiles_to_nothing_on_the_device(monkeypatch):
    monkeypatch.setattr(builtins, "breakpoint", lambda *a, **k: pytest.fail("no pdb on the device"))
    kernel = xk.jit(breakpoint_kernel.fn, interpret=False, debug=True)
    x = np.arange(8, dtype=np.int32)
    launch = kernel[(2,)](x, BLOCK=4)
    np.testing.assert_array_equal(x, 2 * np.arange(8) + 1)
    # the frontend keeps it (the interpreter stops there); pass drop-breakpoints takes it out
    assert "debug.breakpoint" in launch.asm["xegpu"] and "debug.breakpoint" not in launch.asm["drop-breakpoints"]


@xk.jit(interpret=True)
def assert_kernel(x_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=0)
    xl.device_assert(x >= 0, "x must not be negative")


def test_device_assert_raises_with_the_kernel_line():
    x = np.array([0, 1, -2, 3], np.int32)
    with pytest.raises(interpreter.DeviceAssertionError) as e:
        assert_kernel[(1,)](x, 4, BLOCK=4)
    msg = str(e.value)
    assert "program (0, 0, 0)" in msg and "x must not be negative" in msg and "[(2,)]" in msg
    assert 'xl.device_assert(x >= 0, "x must not be negative")' in msg
    assert_kernel[(1,)](np.abs(x), 4, BLOCK=4)  # holds: no error


# ---- errors ----------------------------------------------------------------------------------------------------

@xk.jit(interpret=True)
def unmasked_copy(x_ptr, out_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs)
    xl.store(out_ptr + offs, x, mask=offs < n)


@xk.jit(interpret=True)
def unmasked_store(x_ptr, out_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK) - 1
    xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=(offs >= 0) & (offs < n), other=0.0))


@xk.jit(interpret=True)
def desc_copy(x_ptr, out_ptr, M, N, ROWS, BM: xl.constexpr, BN: xl.constexpr):
    d = xl.make_tensor_descriptor(x_ptr, shape=(ROWS, N), strides=(N, 1), block_shape=(BM, BN))
    o = xl.make_tensor_descriptor(out_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    o.store((xl.program_id(0) * BM, 0), d.load((xl.program_id(0) * BM, 0)))


def test_an_unmasked_out_of_bounds_load_is_a_clear_error():
    x = np.zeros(100, np.float32)
    with pytest.raises(interpreter.OutOfBoundsError) as info:
        unmasked_copy[(1,)](x, np.zeros(100, np.float32), 100, BLOCK=128)
    msg = str(info.value)
    for part in ("kernel 'unmasked_copy'", "program (0, 0, 0)", "load of element 100 of x_ptr",
                 "100 elements of float32", "tile position (100,)", "28 of the 128", f"{__file__}:",
                 "x = xl.load(x_ptr + offs)"):
        assert part in msg, msg
    assert isinstance(info.value, xk.XekernError) and isinstance(info.value, IndexError)


def test_an_unmasked_out_of_bounds_store_is_a_clear_error():
    out = poisoned(64, np.float32)
    with pytest.raises(interpreter.OutOfBoundsError, match=r"store of element -1 of out_ptr .* position \(0,\)"):
        unmasked_store[(1,)](np.ones(64, np.float32), out, 64, BLOCK=64)


def test_masked_accesses_and_descriptor_edges_are_not_errors(rng):
    x = rng.standard_normal((20, 16)).astype(np.float32)
    out = poisoned((20, 16), np.float32)
    desc_copy[(2,)](x, out, 20, 16, 20, BM=16, BN=16)  # the second block hangs over the bottom edge
    np.testing.assert_array_equal(out, x)


def test_a_descriptor_reaching_past_its_argument_is_a_clear_error():
    x = np.zeros((20, 16), np.float32)
    with pytest.raises(interpreter.OutOfBoundsError, match="descriptor load .* element 320 of x_ptr"):
        desc_copy[(2,)](x, np.zeros((20, 16), np.float32), 20, 16, 40, BM=16, BN=16)  # says 40 rows


class MysteryOp(ir.Op):
    NAME = "xegpu.mystery"

    def __init__(self, value, loc=None):
        super().__init__([value], [], loc=loc)


def _one_op_function(op_class):
    f = ir.FuncOp("hand_built", [], [])
    b = ir.Builder(f.body, ir.Loc(__file__, 1, 0, "hand_built"))
    pid = b(ir.BlockIdOp, 0)
    b.create(op_class, pid)
    b.create(ir.ReturnOp)
    return f


def test_an_op_without_a_rule_is_a_compilation_error_naming_it():
    with pytest.raises(xk.CompilationError, match="interpreter: no rule for 'xegpu.mystery' \\(MysteryOp\\)"):
        interpreter.run_function(_one_op_function(MysteryOp), (1,), {})


def test_one_rule_adds_an_op_such_as_a_device_print(monkeypatch):
    printed = []
    monkeypatch.setattr(builtins, "print", lambda *a, **k: printed.append(" ".join(map(str, a))))
    monkeypatch.setitem(interpreter.RULES, MysteryOp, lambda ctx, op, args: ctx.print("pid is", args))
    interpreter.run_function(_one_op_function(MysteryOp), (3,), {})
    assert printed == ["pid (0, 0, 0) pid is 0", "pid (1, 0, 0) pid is 1", "pid (2, 0, 0) pid is 2"]


def test_a_device_assert_rule_reports_the_failing_program(monkeypatch):
    def check(ctx, op, args):
        ctx.assert_(op, np.arange(4) < 3 - args[0], "lanes stay under 3 - pid")
    monkeypatch.setitem(interpreter.RULES, MysteryOp, check)
    with pytest.raises(interpreter.DeviceAssertionError) as info:
        interpreter.run_function(_one_op_function(MysteryOp), (3,), {})
    msg = str(info.value)
    assert "kernel 'hand_built', program (0, 0, 0): device assertion failed at tile positions [(3,)]" in msg
    assert "lanes stay under 3 - pid" in msg and isinstance(info.value, AssertionError)


def test_numpy_arguments_are_updated_in_place_and_fortran_order_is_written_back(rng):
    k = interpreted(add_kernel)
    x = np.asfortranarray(rng.standard_normal((3, 5)).astype(np.float32))
    out = np.asfortranarray(poisoned((3, 5), np.float32))
    k[(1,)](x, x, out, 15, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(xk.LaunchError, match="non-contiguous NumPy view"):
        k[(1,)](x[:, ::2], x[:, ::2], out[:, ::2], 4, BLOCK=16)


# ---- no SYCL device -------------------------------------------------------------------------------------------

def test_interpret_mode_needs_no_sycl_device(monkeypatch, rng):
    from xekern.runtime import device as dev

    def no_device(*a, **k):
        raise AssertionError("the interpreter asked dpctl for a device")

    for name in ("dpctl", "default_device", "queue_for", "as_device"):
        monkeypatch.setattr(dev, name, no_device)
    x = rng.standard_normal(32).astype(np.float32)
    out = poisoned(32, np.float32)
    interp = xk.jit(unmasked_copy.fn, interpret=True)
    interp[(2,)](x, out, 32, BLOCK=16)
    np.testing.assert_array_equal(out, x)


def test_interpret_knob_in_a_process_without_devices(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, xekern as xk, xekern.language as xl\n"
        "@xk.jit\n"
        "def add1(x_ptr, n, BLOCK: xl.constexpr):\n"
        "    offs = xl.arange(0, BLOCK)\n"
        "    xl.store(x_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n"
        "x = np.arange(5, dtype=np.float32)\n"
        "add1[(1,)](x, 5, BLOCK=8)\n"
        "import dpctl\n"
        "print(x.tolist(), len(dpctl.get_devices()))\n")
    env = dict(os.environ, XEKERN_INTERPRET="1", ONEAPI_DEVICE_SELECTOR="level_zero:gpu:7",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1.0, 2.0, 3.0, 4.0, 5.0] 0"
