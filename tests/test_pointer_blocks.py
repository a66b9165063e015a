"""Pointer tiles moved by sub-group block messages (pass coalesce, codegen/pointer_blocks.py): the
lane-level axis analysis that finds block runs, and kernels written the Triton way on every backend,
at ragged sizes, with masks that cut a run in the middle, misaligned bases (a run then takes the slot
by slot loop) and odd row strides; outputs poisoned, compared with float64 NumPy."""
import ml_dtypes
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import close, poisoned
from xekern.lowering.lane_affine import LaneAffine, runs

P, I32 = xk.pointer, xl.int32
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16, "i8": np.int8, "i32": np.int32}


@xk.jit
def shifted_add(x_ptr, y_ptr, o_ptr, n, start, BLOCK: xl.constexpr):
    """Triton's tutorial 01 with the tile moved by ``start`` elements: runs stay contiguous, their
    16-byte alignment depends on ``start``."""
    offs = start + xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    x = xl.load(x_ptr + offs, mask=mask, other=1)
    y = xl.load(y_ptr + offs, mask=mask, other=2)
    xl.store(o_ptr + offs, x + y, mask=mask)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i8"])
@pytest.mark.parametrize("n,start", [(1000, 0), (1024, 0), (37, 0), (777, 3), (2049, 1), (4096, 4)])
def test_contiguous_loads_and_stores(backend, rng, dtype, n, start):
    t = DTYPES[dtype]
    total = n + 5
    x = (rng.standard_normal(total) * 20).astype(t)
    y = (rng.standard_normal(total) * 20).astype(t)
    o = poisoned(total, t)
    grid = (xk.cdiv(n - start, 256),)
    out = backend.run(shifted_add, grid, [x, y, o, n, start], BLOCK=256)[2]
    wide = np.int16 if dtype == "i8" else np.float64
    want = (x[start:n].astype(wide) + y[start:n].astype(wide)).astype(t)
    close(out[start:n], want, 1e-2 if dtype == "bf16" else 0)
    # nothing outside [start, n) written: the poison is still there
    outside = np.r_[0:start, n:total]
    assert out[outside].tobytes() == o[outside].tobytes()


@xk.jit
def rows_scale(x_ptr, o_ptr, M, N, x_stride, o_stride, BM: xl.constexpr, BN: xl.constexpr):
    """A 2D tile of a row-major matrix (row strides not multiples of anything), masked on both axes."""
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    cols = xl.program_id(1) * BN + xl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = xl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask, other=0.)
    xl.store(o_ptr + rows[:, None] * o_stride + cols[None, :], x * 3.0 - 1.0, mask=mask)


@pytest.mark.parametrize("M,N,xs,os_", [(37, 100, 100, 101), (64, 128, 131, 128), (5, 300, 305, 307)])
def test_row_strided_tiles(backend, rng, M, N, xs, os_):
    x = rng.standard_normal(M * xs).astype(np.float32)
    o = poisoned(M * os_, np.float32)
    grid = (xk.cdiv(M, 16), xk.cdiv(N, 64))
    out = backend.run(rows_scale, grid, [x, o, M, N, xs, os_], BM=16, BN=64)[1]
    want = o.copy()
    for r in range(M):
        want[r * os_:r * os_ + N] = x[r * xs:r * xs + N].astype(np.float64) * 3 - 1
    close(out, want, 1e-6, 1e-6)


@xk.jit
def every_third(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    """A mask that is no bound: the runs vote (sub_group_all) and mostly take the slot loop."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = (offs < n) & (offs % 3 != 0)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=mask, other=-1.) * 2., mask=offs < n)


def test_a_mask_that_is_no_bound(backend, rng):
    n = 999
    x = rng.standard_normal(n).astype(np.float32)
    o = poisoned(n + 7, np.float32)
    out = backend.run(every_third, (xk.cdiv(n, 256),), [x, o, n], BLOCK=256)[1]
    want = np.where(np.arange(n) % 3 != 0, x.astype(np.float64) * 2, -2.0)
    close(out[:n], want, 1e-6)
    assert np.isnan(out[n:]).all()


def test_coalesce_marks_block_runs_and_leaves_strided_access():
    sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, start=I32, BLOCK=1024)
    c = shifted_add.compile_offline(sig, target="pvc", num_subgroups=4)
    coal = c.asm["coalesce"]
    # 1024 elements on 4 subgroups of 16: 16 slots per lane, two block reads of 8 rows each
    assert coal.count("block_runs = [[0, 8], [8, 8]]") == 3, coal
    assert "sub_group_block_read8" in c.asm["llir_unoptimized"]

    @xk.jit
    def strided(x_ptr, o_ptr, BLOCK: xl.constexpr):
        offs = xl.arange(0, BLOCK)
        xl.store(o_ptr + offs, xl.load(x_ptr + offs * 2))
    c = strided.compile_offline(dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), BLOCK=256), target="pvc")
    coal = c.asm["coalesce"]
    load = next(ln for ln in coal.splitlines() if "xegpu.load_gather" in ln)
    store = next(ln for ln in coal.splitlines() if "xegpu.store_scatter" in ln)
    assert "block_runs" not in load and "block_runs" in store, coal


def test_lane_affine_forms_of_lane_offsets():
    """slot j of lane l = 256 * sid + 16 * j + l + pid * 1024 (tutorial 01 on 4 subgroups): one run
    of 16 slots, read as two block reads of 8; the strided copy (offs * 2) has lane coefficient 2."""
    import xekern.ir as ir
    sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, start=I32, BLOCK=1024)
    c = shifted_add.compile_offline(sig, target="cpu", num_subgroups=4)
    lane = c.asm._items["lane"] if not isinstance(c.asm._items["lane"], str) else None
    assert lane is not None
    info = LaneAffine(lane, 16)
    tds = [op for op in lane.walk() if isinstance(op, ir.CreateTDescOp)]
    form = info.form(tds[0].operands[1])
    assert [a for _, a in form] == [1] * 16
    assert runs(form, 16) == [(0, 8), (8, 8)]
    assert runs(tuple((p, 2) for p, _ in form), 16) == []


@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
def test_contiguous_pointer_tiles_are_transposed_block_messages(target):
    """Tutorial 01's tile (1024 elements, 4 subgroups: 16 slots per lane, two runs of 8) with the
    current compiler: the loads and the store are transposed (SIMT1) LSC messages, block reads and
    writes; per-lane messages (``d32.a64``) are left only in the loops that take an edge run slot by
    slot (one per run); no spill. Before coalesce: 16 per-lane gathers per input, 16 scatters."""
    import re
    from xekern.tools.isa import compile_isa
    sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, start=I32, BLOCK=1024)
    c = shifted_add.compile_offline(sig, target=target, num_subgroups=4)
    r = compile_isa(c.spirv, c.name, target)
    runs = 1024 // 4 // xk.get_target(target).sg_size // 8      # per array: 2 (pvc, bmg), 4 (dg2)
    block = {op: len(re.findall(rf"{op}\.ugm\.d(32|64)x(32|64)t", r.text)) for op in ("load", "store")}
    lane = {op: len(re.findall(rf"{op}\.ugm\.d32\.a64", r.text)) for op in ("load", "store")}
    assert block["load"] >= 2 * runs and block["store"] >= runs, r.summary()
    assert lane["load"] <= 2 * runs and lane["store"] <= runs, (lane, r.summary())
    assert r.spilled_around == 0 and r.scratch_bytes == 0, r.summary()


@xk.jit
def gelu_rows(x_ptr, y_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """GELU over a BM x BN tile: on one subgroup 64 slots per lane, which strip-mine cuts in pieces."""
    rows = xl.program_id(0) * BM + xl.arange(0, BM)
    cols = xl.arange(0, BN)
    offs = rows[:, None] * N + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = xl.load(x_ptr + offs, mask=mask, other=0.)
    y = 0.5 * x * (1 + xl.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    xl.store(y_ptr + offs, y, mask=mask)


def test_strip_mined_chain(backend, rng):
    M, N = 21, 100
    x = rng.standard_normal(M * N).astype(np.float32)
    y = poisoned(M * N + 3, np.float32)
    out = backend.run(gelu_rows, (xk.cdiv(M, 8),), [x, y, M, N], BM=8, BN=128, num_subgroups=1)[1]
    xf = x.astype(np.float64)
    close(out[:M * N], 0.5 * xf * (1 + np.tanh(0.7978845608 * (xf + 0.044715 * xf ** 3))), 1e-5, 1e-6)
    assert np.isnan(out[M * N:]).all()
    if not backend.interpret:
        sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), M=I32, N=I32, BM=8, BN=128)
        lane = gelu_rows.compile_offline(sig, target=backend.target, num_subgroups=1).asm["strip-mine"]
        chunk = 8
        assert lane.count("xegpu.load_gather") == 8 * 128 // backend.sg_size // chunk, lane


@xk.jit
def overwrite_then_use(x_ptr, y_ptr, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs)
    xl.store(x_ptr + offs, xl.full((BLOCK,), 1.0, xl.float32))
    xl.store(y_ptr + offs, x * 3.0)


def test_a_load_does_not_move_past_a_store(backend, rng):
    """strip-mine cuts the store of ones, not the chain whose load comes before it: y is 3 * the old x."""
    x = rng.standard_normal(512).astype(np.float32)
    x0 = x.copy()
    y = poisoned(512, np.float32)
    got = backend.run(overwrite_then_use, (1,), [x, y], BLOCK=512, num_subgroups=1)
    close(got[1], 3.0 * x0.astype(np.float64), 1e-6)
    assert (got[0] == 1.0).all()


def _benchmark_kernels():
    """benchmarks/memory_bound_kernels.py: its row sum (a BM x BN tile read the Triton way)."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                        "memory_bound_kernels.py")
    spec = importlib.util.spec_from_file_location("xekern_memory_bound_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


row_sums_wide = _benchmark_kernels().row_sum_kernel


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_load_only_shuffled_is_read_at_its_uses(backend, rng, dtype):
    """A row sum's load is read by the reduction's shuffles alone. Where it would fill more than half
    of a 128-register file (16 x 256 on 4 subgroups: 128 slots of f32 per lane at 8 wide, the bf16
    load's f32 too), strip-mine reads it in pieces of 8 slots, each just before the first shuffle
    that takes one of its slots (16 loads); at 16 wide (64 slots) it stays whole. Masks cut rows and
    runs (M 37, N 201), the row stride is odd; the rows past M are never written."""
    M, N, stride = 37, 201, 203
    x = rng.standard_normal(M * stride).astype(DTYPES[dtype])
    o = poisoned(M + 3, np.float32)
    out = backend.run(row_sums_wide, (xk.cdiv(M, 16),), [x, o, M, N, stride], BM=16, BN=256, num_subgroups=4)[1]
    close(out[:M], x.astype(np.float64).reshape(M, stride)[:, :N].sum(axis=1), 1e-5, 1e-4)
    assert np.isnan(out[M:]).all()
    if not backend.interpret:
        ab = {"f32": xl.float32, "bf16": xl.bfloat16}[dtype]
        sig = dict(x_ptr=P(ab), out_ptr=P(xl.float32), M=I32, N=I32, stride=I32, BM=16, BN=256)
        lane = row_sums_wide.compile_offline(sig, target=backend.target, num_subgroups=4).asm["strip-mine"]
        assert lane.count("xegpu.load_gather") == (16 if backend.sg_size == 8 else 1), lane


def test_a_row_sum_that_fills_the_registers_does_not_spill_on_dg2():
    """The same row sum with the current compiler: dg2 (128 slots of f32 per lane, read in pieces at
    their uses) compiles without a spill; read whole it spilled 672 bytes."""
    from xekern.tools.isa import compile_isa
    sig = dict(x_ptr=P(xl.float32), out_ptr=P(xl.float32), M=I32, N=I32, stride=I32, BM=16, BN=256)
    c = row_sums_wide.compile_offline(sig, target="dg2", num_subgroups=4)
    r = compile_isa(c.spirv, c.name, "dg2")
    assert r.spilled_around == 0 and r.scratch_bytes == 0, r.summary()


@xk.jit
def other_tile(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    """A masked load whose ``other`` differs from element to element: the slot loop starts from it."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=(offs * 3 - 1).to(x_ptr.dtype.element_ty))
    xl.store(o_ptr + offs, x)


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_other_as_a_tile(backend, rng, dtype):
    n, block = 700, 256
    t = DTYPES[dtype]
    x = (rng.standard_normal(n) * 50).astype(t)
    o = poisoned(3 * block, t)
    out = backend.run(other_tile, (3,), [x, o, n], BLOCK=block)[1]
    idx = np.arange(3 * block)
    want = np.where(idx < n, np.r_[x, np.zeros(3 * block - n, t)].astype(np.float64), idx * 3.0 - 1)
    close(out, want, 0)


@xk.jit
def plain_add(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    """Tutorial 01 as written: runs start at multiples of 16 elements from the arguments."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=mask) + xl.load(y_ptr + offs, mask=mask), mask=mask)


def test_aligned_runs_are_proved_from_the_specialization():
    """Pointers the launch found 16-byte aligned (``multiple_of``, as Triton specializes them) plus
    run offsets proved multiples of 16 bytes: the runs need no alignment test (``runs_aligned``) and
    the LLVM IR has no ``& 15``. A pointer not known aligned, or a start not known to be a multiple
    of 16 elements, keeps the run-time test."""
    sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, BLOCK=1024)
    c = plain_add.compile_offline(sig, target="pvc", num_subgroups=4)
    assert c.asm["coalesce"].count("runs_aligned = true") == 3, c.asm["coalesce"]
    assert "and i64" not in c.asm["llir_unoptimized"]
    c = plain_add.compile_offline(sig, target="pvc", num_subgroups=4, multiple_of={"n": 16, "x_ptr": 16})
    assert c.asm["coalesce"].count("runs_aligned = true") == 1    # y and o: not known aligned
    shifted = dict(sig, start=I32)
    c = shifted_add.compile_offline(shifted, target="pvc", num_subgroups=4,
                                    multiple_of={"x_ptr": 16, "y_ptr": 16, "o_ptr": 16, "n": 16})
    assert "runs_aligned" not in c.asm["coalesce"]                # start: any number of elements
    c = shifted_add.compile_offline(shifted, target="pvc", num_subgroups=4)   # start a multiple of 16
    assert c.asm["coalesce"].count("runs_aligned = true") == 3


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_misaligned_device_array_bases(rng, dtype):
    """Device arrays whose data starts 1 element past an aligned address: the launch specializes
    on it (a kernel of its own, which tests the alignment at run time, as the CPU device's block
    reads follow the GPU's rule), and the results are exact; an aligned launch after it gets its own
    kernel back."""
    from xekern.runtime.arrays import DeviceArray
    t = DTYPES[dtype]
    n, block = 1000, 256
    grid = (xk.cdiv(n, block),)

    def view(a):   # a's elements 1 .. n: the base is misaligned by one element
        return DeviceArray((n,), a.dtype, a.queue, _mem=a._mem, _offset=a.dtype.itemsize)
    xs, ys = ((rng.standard_normal(n + 1) * 20).astype(t) for _ in range(2))
    x, y = xk.to_device(xs), xk.to_device(ys)
    o = xk.to_device(poisoned(n + 1, t))
    def pointer_parts():   # the key parts of the three pointers, per kernel compiled so far
        return {k[0][:3] for k in plain_add.cache if isinstance(k[0], tuple) and len(k[0]) == 5}
    plain_add[grid](view(x), view(y), view(o), n, BLOCK=block)
    out = o.numpy()
    want = (xs[1:].astype(np.float64) + ys[1:].astype(np.float64)).astype(t)
    close(out[1:], want, 1e-2 if dtype == "bf16" else 0)
    assert out[:1].tobytes() == poisoned(1, t).tobytes()
    name = {"f32": "f32", "bf16": "bf16"}[dtype]   # (the IR dtype names)
    assert (("p", name, False),) * 3 in pointer_parts()
    o2 = xk.empty((n,), t)
    plain_add[grid](x, y, o2, n, BLOCK=block)
    close(o2.numpy(), (xs[:n].astype(np.float64) + ys[:n].astype(np.float64)).astype(t),
          1e-2 if dtype == "bf16" else 0)
    assert (("p", name, True),) * 3 in pointer_parts()


def _run_tests(c):
    """The uniform run tests in a kernel's unoptimized LLVM IR (``pointer_blocks.choose``'s branches)."""
    return sum(1 for line in c.asm["llir_unoptimized"].splitlines() if line.startswith("block_io"))


def test_a_chain_is_versioned_once_per_run():
    """codegen/run_chains.py: tutorial 01's two loads, add and store share their runs and mask, so each
    run is one test, the block path (two reads, the adds, one write) and one slot loop; 2 runs per lane
    at BLOCK 1024 on 4 subgroups: 2 tests, where each access tested each run (6)."""
    sig = dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, BLOCK=1024)
    c = plain_add.compile_offline(sig, target="pvc", num_subgroups=4)
    assert _run_tests(c) == 2, c.asm["llir_unoptimized"]
    c = masks_apart.compile_offline(dict(sig, BLOCK=1024), target="pvc", num_subgroups=4)
    assert _run_tests(c) == 6     # the store's mask is another value: three accesses, each tested


@xk.jit
def masks_apart(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    """The loads' mask and the store's are different values: no chain, each access on its own."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = xl.load(y_ptr + offs, mask=offs < n - 1, other=0.0)
    xl.store(o_ptr + offs, x + y, mask=offs < n)


@xk.jit
def scaled_cast(x_ptr, y_ptr, o_ptr, n, start, BLOCK: xl.constexpr):
    """A chain reading a tile from outside it (``offs``), constants and casts: ``(x * offs + y - 1.5)``
    stored as the output's type."""
    offs = start + xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    x = xl.load(x_ptr + offs, mask=mask).to(xl.float32)
    y = xl.load(y_ptr + offs, mask=mask).to(xl.float32)
    xl.store(o_ptr + offs, (x * (offs % 7).to(xl.float32) + y - 1.5).to(o_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("n,start", [(1000, 0), (333, 5), (2048, 0)])
def test_chain_with_an_outside_tile(backend, rng, dtype, n, start):
    t = DTYPES[dtype]
    x, y = ((rng.standard_normal(n + 3) * 8).astype(t) for _ in range(2))
    o = poisoned(n + 3, t)
    out = backend.run(scaled_cast, (xk.cdiv(n - start, 256),), [x, y, o, n, start], BLOCK=256)[2]
    idx = np.arange(start, n)
    want = (x[start:n].astype(np.float64) * (idx % 7) + y[start:n].astype(np.float64) - 1.5).astype(t)
    close(out[start:n], want, 1e-2 if dtype == "bf16" else 1e-5, 1e-5)
    outside = np.r_[0:start, n:n + 3]
    assert out[outside].tobytes() == o[outside].tobytes()


def test_masks_apart_stay_correct(backend, rng):
    n = 999
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    o = poisoned(1024, np.float32)
    out = backend.run(masks_apart, (4,), [x, y, o, n], BLOCK=256)[2]
    want = x.astype(np.float64) + np.r_[y[:n - 1], 0.0]
    close(out[:n], want, 1e-6)
    assert out[n:].tobytes() == o[n:].tobytes()
