"""Scans, flips and sorts move elements along an axis (``gpu.tile_shuffle``), gathers read them by index
(``gpu.tile_gather``); the layout passes lower each where its data lies: other subgroups through SLM, other pieces or blocks of a subgroup by
taking those values, other slots of a lane by renaming, other lanes with sub-group shuffles. Every
kind of placement is forced here with a user layout and checked against NumPy on every backend
(ragged sizes masked in, outputs poisoned); the default layouts keep the moved axis in a subgroup
(no SLM, no barrier), which the IR and, for the GPUs, the ISA show."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from xekern.tools.isa import compile_isa


@xk.jit
def placed_tile(x_ptr, M, N, LAY: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    """The ragged M x N matrix at x_ptr as a BM x BN tile (zeros outside), in layout LAY if given;
    (the tile, its mask, its row and column indices)."""
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = xl.load(x_ptr + r[:, None] * N + c[None, :], mask=m, other=0)
    if LAY is not None:
        x = xl.convert_layout(x, LAY)
    return x, m, r, c


@xk.jit
def moves_2d(x_ptr, o_ptr, M, N, AXIS: xl.constexpr, LAY: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    x, m, r, c = placed_tile(x_ptr, M, N, LAY, BM, BN)
    out = o_ptr + (r[:, None] * N + c[None, :]) * 4
    xl.store(out, xl.cumsum(x, AXIS), mask=m)
    xl.store(out + 1, xl.cumsum(x, AXIS, reverse=True), mask=m)
    xl.store(out + 2, xl.flip(x, AXIS), mask=m)
    xl.store(out + 3, xl.sort(x, AXIS), mask=m)


def layouts(sg: int) -> dict:
    """Placements of a 16 x 32 tile on 4 subgroups of ``sg`` lanes, each a different lowering along
    one axis or the other."""
    half = sg // 8                                          # lane rows for 8 columns of lanes
    return {
        # rows split between subgroups (axis 0 through SLM, moves by a rest within a piece); lanes along axis 1
        "rows": xl.Layout(sg_layout=[4, 1], sg_data=[4, 32], lane_layout=[1, sg], lane_data=[1, 1]),
        # two elements per lane along axis 1 (slots, then lanes)
        "lane_data": xl.Layout(sg_layout=[4, 1], sg_data=[4, 32], lane_layout=[half, 8], lane_data=[1, 2]),
        # columns split, more lanes than columns in a subgroup's piece (lanes hold copies)
        "lane_copies": xl.Layout(sg_layout=[1, 4], sg_data=[16, 8], lane_layout=[1, sg], lane_data=[1, 1]),
        # instruction blocks within each subgroup's piece, a 2 x 2 grid of subgroups
        "blocks": xl.Layout(sg_layout=[2, 2], sg_data=[8, 16], inst_data=[4, 8], lane_layout=[half, 8],
                            lane_data=[1, 1]),
        # subgroups 2 and 3 hold copies of 0 and 1's halves of axis 1
        "sg_copies": xl.Layout(sg_layout=[1, 4], sg_data=[16, 16], lane_layout=[1, sg], lane_data=[1, 1]),
        # round-robin: each subgroup holds every 4th row, and 2 rounds of lanes along axis 1
        "round_robin": xl.Layout(sg_layout=[4, 1], sg_data=[1, 16], lane_layout=[1, sg], lane_data=[1, 1]),
        "default": None,
    }


def expected(x, axis, M, N):
    """What the kernel stores: the moves of the padded 16 x 32 tile (0 where masked off), cut to M x N."""
    pad = np.zeros((16, 32), np.float64)
    pad[:M, :N] = x
    rev = lambda v: np.flip(v, axis)
    return [np.cumsum(pad, axis)[:M, :N], rev(np.cumsum(rev(pad), axis))[:M, :N], rev(pad)[:M, :N],
            np.sort(pad, axis)[:M, :N]]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("placement", list(layouts(16)))
def test_moves_in_every_placement(backend, rng, axis, placement):
    M, N = 13, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    sg = xk.get_target(backend.target).sg_size
    o = backend.run(moves_2d, (1,), [x, poisoned((M, N, 4), np.float32), M, N], AXIS=axis,
                    LAY=layouts(sg)[placement], BM=16, BN=32)[1]
    scan, rscan, flip, ordered = expected(x, axis, M, N)
    np.testing.assert_allclose(o[..., 0], scan, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o[..., 1], rscan, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(o[..., 2], flip)
    np.testing.assert_array_equal(o[..., 3], ordered)


@xk.jit
def gather_2d(x_ptr, i_ptr, o_ptr, M, N, AXIS: xl.constexpr, LAY: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = xl.load(x_ptr + r[:, None] * N + c[None, :], mask=m, other=0.0)
    i = xl.load(i_ptr + r[:, None] * N + c[None, :], mask=m, other=0)
    if LAY is not None:
        x = xl.convert_layout(x, LAY)
        i = xl.convert_layout(i, LAY)
    xl.store(o_ptr + r[:, None] * N + c[None, :], xl.gather(x, i, AXIS), mask=m)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("placement", list(layouts(16)))
def test_gather_in_every_placement(backend, rng, axis, placement):
    """An index of the source's shape: one gather op, lowered by placement; indices outside the tile
    (here -1 and 40) give 0."""
    M, N = 13, 29
    x = rng.standard_normal((M, N)).astype(np.float32)
    i = rng.integers(0, (16, 32)[axis], (M, N)).astype(np.int32)
    i[0, 0], i[-1, -1] = -1, 40
    sg = xk.get_target(backend.target).sg_size
    o = backend.run(gather_2d, (1,), [x, i, poisoned((M, N), np.float32), M, N], AXIS=axis,
                    LAY=layouts(sg)[placement], BM=16, BN=32)[2]
    pad, ipad = np.zeros((16, 32), np.float32), np.zeros((16, 32), np.int64)
    pad[:M, :N], ipad[:M, :N] = x, i
    inside = (ipad >= 0) & (ipad < (16, 32)[axis])
    want = np.where(inside, np.take_along_axis(pad, np.where(inside, ipad, 0), axis), 0)[:M, :N]
    np.testing.assert_array_equal(o, want)


@xk.jit
def gather_resized(x_ptr, i_ptr, o_ptr, AXIS: xl.constexpr, LAY: xl.constexpr, KM: xl.constexpr, KN: xl.constexpr):
    x = xl.load(x_ptr + xl.arange(0, 16)[:, None] * 32 + xl.arange(0, 32)[None, :])
    if LAY is not None:
        x = xl.convert_layout(x, LAY)
    offs = xl.arange(0, KM)[:, None] * KN + xl.arange(0, KN)[None, :]
    xl.store(o_ptr + offs, xl.gather(x, xl.load(i_ptr + offs), AXIS))


@pytest.mark.parametrize("axis,km,kn", [(0, 4, 32), (0, 64, 32), (1, 16, 8), (1, 16, 128)])
@pytest.mark.parametrize("placement", ["rows", "lane_copies", "blocks", "default"])
def test_gather_by_a_shorter_or_longer_index(backend, rng, axis, km, kn, placement):
    """An index shorter or longer than the source along the gathered axis: the source's layout resized
    along that axis gives the index's (pass layout), the same gather op serves."""
    x = rng.standard_normal((16, 32)).astype(np.float32)
    i = rng.integers(0, (16, 32)[axis], (km, kn)).astype(np.int32)
    sg = xk.get_target(backend.target).sg_size
    o = backend.run(gather_resized, (1,), [x, i, poisoned((km, kn), np.float32)], AXIS=axis,
                    LAY=layouts(sg)[placement], KM=km, KN=kn)[2]
    np.testing.assert_array_equal(o, np.take_along_axis(x, i, axis))


@xk.jit
def cat_and_topk(x_ptr, y_ptr, c_ptr, t_ptr, AXIS: xl.constexpr, K: xl.constexpr):
    r = xl.arange(0, 16)[:, None]
    c = xl.arange(0, 32)[None, :]
    x = xl.load(x_ptr + r * 32 + c)
    y = xl.load(y_ptr + r * 32 + c)
    xl.store(c_ptr + xl.arange(0, 32)[:, None] * 32 + c, xl.cat(x, y))
    if AXIS == 0:
        xl.store(t_ptr + xl.arange(0, K)[:, None] * 32 + c, xl.topk(x, K, 0))
    else:
        xl.store(t_ptr + r * K + xl.arange(0, K)[None, :], xl.topk(x, K, 1))


@pytest.mark.parametrize("axis,k", [(0, 4), (1, 8)])
def test_cat_and_topk_take_positions(backend, rng, axis, k):
    """cat (two sources one after the other) and topk (the first k of a descending sort) are gathers by
    positions: no SLM where the layout holds the axis."""
    x, y = (rng.standard_normal((16, 32)).astype(np.float32) for _ in range(2))
    shape = (k, 32) if axis == 0 else (16, k)
    c, t = backend.run(cat_and_topk, (1,), [x, y, poisoned((32, 32), np.float32), poisoned(shape, np.float32)],
                       AXIS=axis, K=k)[2:4]
    np.testing.assert_array_equal(c, np.concatenate([x, y]))
    np.testing.assert_array_equal(t, np.take(-np.sort(-x, axis), range(k), axis))


@xk.jit
def reductions_2d(x_ptr, s_ptr, m_ptr, M, N, AXIS: xl.constexpr, LAY: xl.constexpr, BM: xl.constexpr,
                  BN: xl.constexpr):
    x = placed_tile(x_ptr, M, N, LAY, BM, BN)[0]
    k = xl.arange(0, BN if AXIS == 0 else BM)
    xl.store(s_ptr + k, xl.sum(x, AXIS))
    xl.store(m_ptr + k, xl.max(x, AXIS))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("placement", list(layouts(16)))
def test_reductions_in_every_placement(backend, rng, axis, placement):
    """Row and column reductions of several slots per lane across clusters of lanes (the whole subgroup,
    8 lanes, 2 lanes 8 apart): the transposed reduction, exact on integers."""
    M, N = 13, 29
    x = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    sg = xk.get_target(backend.target).sg_size
    k = (32, 16)[axis]
    s, m = backend.run(reductions_2d, (1,), [x, poisoned(k, np.int32), poisoned(k, np.int32), M, N], AXIS=axis,
                       LAY=layouts(sg)[placement], BM=16, BN=32)[1:3]
    pad = np.zeros((16, 32), np.int64)
    pad[:M, :N] = x
    np.testing.assert_array_equal(s, pad.sum(axis))
    np.testing.assert_array_equal(m, pad.max(axis))


@xk.jit
def moves_1d(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    m = offs < n
    x = xl.load(x_ptr + offs, mask=m, other=0)
    out = o_ptr + offs * 3
    xl.store(out, xl.cumsum(x), mask=m)
    xl.store(out + 1, xl.flip(x, 0), mask=m)
    xl.store(out + 2, xl.sort(x, descending=True), mask=m)


@pytest.mark.parametrize("n,block", [(1000, 1024), (201, 256), (5, 8)])
def test_moves_of_a_1d_tile(backend, rng, n, block):
    """1024 elements are split between subgroups (moves of 256 and more through SLM); 256 and 8 are
    copied into every subgroup (all moves in its lanes)."""
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    o = backend.run(moves_1d, (1,), [x, poisoned((n, 3), np.int32), n], BLOCK=block)[1]
    pad = np.zeros(block, np.int64)
    pad[:n] = x
    np.testing.assert_array_equal(o[:, 0], np.cumsum(pad)[:n])
    np.testing.assert_array_equal(o[:, 1], pad[::-1][:n])
    np.testing.assert_array_equal(o[:, 2], np.sort(pad)[::-1][:n])


P = xk.pointer
SIG_2D = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=xl.int32, N=xl.int32, LAY=None, BM=16, BN=32)


@pytest.mark.parametrize("axis", [0, 1])
def test_default_layouts_keep_the_moves_in_a_subgroup(axis):
    c = moves_2d.compile_offline(dict(SIG_2D, AXIS=axis), target="pvc", num_subgroups=4)
    lane = c.asm["lane"]
    assert "gpu.shuffle" in lane
    assert "load_matrix" not in lane and "store_matrix" not in lane and "gpu.barrier" not in lane


def test_a_split_axis_goes_through_slm_once_per_move():
    """A 1024-element tile on 4 subgroups of 256: each of the scan's 10 moves takes part of a
    neighbour's piece through SLM, as do the flip and the sort's 3 moves by 256 or more; the sort's
    other 52 moves stay in each subgroup's lanes and slots. One barrier per move through SLM: its
    matrix is never written again, so none after the loads."""
    sig = dict(x_ptr=P(xl.int32), o_ptr=P(xl.int32), n=xl.int32, BLOCK=1024)
    asm = moves_1d.compile_offline(sig, target="pvc", num_subgroups=4).asm
    assert asm["sg"].count('exchange = "open"') == 14
    assert asm["slm-barriers"].count("gpu.barrier") == 14 and "close" not in asm["slm-barriers"]


@xk.jit
def cumsum_1d(x_ptr, o_ptr, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, xl.cumsum(xl.load(x_ptr + offs)))


def test_moves_through_slm_take_two_matrices_in_turn():
    """A 4096-element scan on 4 subgroups crosses them at every one of its 12 moves: two SLM matrices
    (each 2 x 4096 floats: a window's source twice) serve them all, within pvc's 128 KiB."""
    c = cumsum_1d.compile_offline(dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), BLOCK=4096), target="pvc",
                                  num_subgroups=4)
    assert c.asm["sg"].count("xegpu.create_mem_desc") == 2 and c.slm_bytes == 2 * 2 * 4096 * 4
    assert c.asm["slm-barriers"].count("gpu.barrier") == 12


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("kernel", [moves_2d, gather_2d])
@pytest.mark.parametrize("axis", [0, 1])
def test_gpu_moves_use_no_slm(target, kernel, axis):
    sig = dict(SIG_2D, AXIS=axis, i_ptr=P(xl.int32)) if kernel is gather_2d else dict(SIG_2D, AXIS=axis)
    c = kernel.compile_offline(sig, target=target, num_subgroups=4)
    r = compile_isa(c.spirv, c.name, target)
    assert r.spilled_around == 0 and r.counts.scratch == 0, r.summary()
    assert not any("slm" in k for k in r.counts.sends) and r.counts.barriers == 0, r.summary()
