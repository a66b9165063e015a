"""Issue 7 (seeds 000 and 003): programming levels. A kernel written at subgroup level
(``@xk.jit(level="subgroup")``, the RFC's VC mode: tiles are one subgroup's data) or at lane level
(``level="lane"``, SIMT: scalars of one work item) enters the pipeline at that level. Run on the CPU
device in its 16- and 8-wide models vs NumPy; the subgroup GEMM's pvc ISA holds dpas."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned
from xekern.lowering.pipeline import passes_for
from xekern.tools.isa import compile_isa

ml_dtypes = pytest.importorskip("ml_dtypes")
P, I32 = xk.pointer, xl.int32


@xk.jit(level="subgroup", num_subgroups=2)
def sg_gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    # each subgroup computes one BM x BN tile of C; a workgroup's subgroups take consecutive row blocks
    m0 = (xl.program_id(0) * xl.num_subgroups() + xl.subgroup_id()) * BM
    n0 = xl.program_id(1) * BN
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), xl.float32)
    for k0 in range(0, K, BK):
        acc = xl.dot(a_desc.load((m0, k0)), b_desc.load((k0, n0)), acc)
    c_desc.store((m0, n0), acc)


@xk.jit(level="lane", num_subgroups=2)
def lane_saxpy(x_ptr, y_ptr, out_ptr, a, n):
    i = xl.global_id(0)
    if i < n:
        xl.store(out_ptr + i, a * xl.load(x_ptr + i) + xl.load(y_ptr + i))


@xk.jit(level="lane", num_subgroups=2)
def lane_sum(x_ptr, sum_ptr, swap_ptr, ids_ptr, n):
    i = xl.global_id(0)
    v = xl.load(x_ptr + i, mask=i < n, other=0.0)
    s = xl.subgroup_reduce(v, "add")          # every lane gets its subgroup's sum
    if xl.lane_id() == 0:
        xl.atomic_add(sum_ptr, s)
    xl.store(swap_ptr + i, xl.shuffle(v, 1, "xor"), mask=i < n)   # the neighbour lane's value
    xl.store(ids_ptr + i, xl.subgroup_id() * 1000 + xl.lane_id(), mask=i < n)


def test_levels_enter_the_pipeline_at_their_level():
    assert [p.name for p in passes_for("wg")] == [
        "drop-breakpoints", "fp-fusion", "block-pointers", "surface-rules", "transpose-loads", "slm-transpose", "layout",
        "narrow-conversions", "hoist-conversions", "global-order", "split-edges", "sg", "slm-barriers", "inst",
        "merge-block-messages", "lane", "defer-reductions", "strip-mine", "coalesce", "sink-loads", "emitter-decisions"]
    # a subgroup-level kernel enters at the layout step (a subgroup's layouts, no sg_layout)
    assert [p.name for p in passes_for("sg")] == [
        "drop-breakpoints", "fp-fusion", "surface-rules", "layout", "slm-barriers", "inst", "merge-block-messages",
        "lane", "defer-reductions", "strip-mine", "coalesce", "sink-loads", "emitter-decisions"]
    assert [p.name for p in passes_for("lane")] == ["drop-breakpoints", "fp-fusion", "surface-rules",
                                                    "defer-reductions", "strip-mine", "coalesce", "sink-loads",
                                                    "emitter-decisions"]
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), M=I32, N=I32, K=I32,
               BM=8, BN=16, BK=16)
    c = sg_gemm.compile_offline(sig, target="pvc")
    stages = ["xegpu"] + [p.name for p in passes_for("sg")] + ["emitter"]
    assert list(c.asm)[:len(stages) + 1] == stages[:5] + ["sg"] + stages[5:], list(c.asm)   # (sg: its IR with layouts)
    assert 'level = "sg"' in c.asm["xegpu"] and "#xegpu.layout" not in c.asm["xegpu"], c.asm["xegpu"]
    ir = c.asm["layout"]
    assert "sg_layout" not in ir, ir
    # subgroup shapes straight from the frontend: 8x16 A, 16x16 B (VNNI), 8x16 acc
    assert "xegpu.dpas %" in ir and "(vector<8x16xbf16, #xegpu.layout<inst_data = [8, 16]" in ir, ir
    assert "vector<16x16xbf16, #xegpu.layout<inst_data = [16, 16], lane_layout = [1, 16], lane_data = [2, 1]" in ir
    lane = lane_saxpy.compile_offline(dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), out_ptr=P(xl.float32),
                                           a=xl.float32, n=I32), target="cpu")
    assert list(lane.asm)[:11] == ["xegpu", "lane", "drop-breakpoints", "fp-fusion", "surface-rules", "defer-reductions",
                                   "strip-mine", "coalesce", "sink-loads", "emitter-decisions", "emitter"], list(lane.asm)
    assert 'level = "lane"' in lane.asm["xegpu"]


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("M,N,K,BM,BN", [(45, 37, 53, 8, 16), (70, 45, 40, 16, 32)])
def test_subgroup_level_gemm(target, M, N, K, BM, BN, rng):
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = poisoned((M, N), np.float32)
    grid = (xk.cdiv(M, BM * 2), xk.cdiv(N, BN))
    sg_gemm[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=16, target=target)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


@xk.jit(level="subgroup", num_subgroups=2)
def sg_row_sums(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    # each subgroup sums BM rows of x through a descriptor, BN columns at a time
    m0 = (xl.program_id(0) * xl.num_subgroups() + xl.subgroup_id()) * BM
    x = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM,), xl.float32)
    for n0 in range(0, N, BN):
        acc += xl.sum(x.load((m0, n0)).to(xl.float32), axis=1)
    xl.store(o_ptr + m0 + xl.arange(0, BM), acc, mask=m0 + xl.arange(0, BM) < M)


SG_KERNELS = [
    ("gemm bf16", sg_gemm, dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), M=I32, N=I32,
                                K=I32, BM=8, BN=16, BK=16)),
    ("gemm f16", sg_gemm, dict(a_ptr=P(xl.float16), b_ptr=P(xl.float16), c_ptr=P(xl.float32), M=I32, N=I32,
                               K=I32, BM=8, BN=16, BK=16)),
    ("row sums f16", sg_row_sums, dict(x_ptr=P(xl.float16), o_ptr=P(xl.float32), M=I32, N=I32, BM=8, BN=32)),
]


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("name,kernel,sig", SG_KERNELS, ids=[k[0] for k in SG_KERNELS])
def test_subgroup_level_kernels_compile_with_the_current_compiler(target, name, kernel, sig):
    """IGC 2.x's LSC2DBlockRead takes 13 operands (IGC 12504's 12 were an internal compiler error):
    a subgroup-level kernel's 2D block reads are that intrinsic on every emitter that is not visa's
    raw path (which is for workgroup-level kernels only)."""
    c = kernel.compile_offline(sig, target=target)
    r = compile_isa(c.spirv, c.name, target)
    assert r.counts.calls == 0 and r.counts.load_block2d >= 1 and not r.spills, r.summary()
    if "gemm" in name:
        assert r.counts.dpas_shapes.get("dpas.8x8", 0) >= 1 and r.counts.store_block2d >= 1, r.summary()


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_subgroup_level_row_sums(target, rng):
    M, N = 45, 70
    x = rng.standard_normal((M, N)).astype(np.float16)
    o = poisoned(M + 3, np.float32)
    sg_row_sums[(xk.cdiv(M, 16),)](x, o, M, N, BM=8, BN=32, target=target)
    np.testing.assert_allclose(o[:M], x.astype(np.float64).sum(axis=1), rtol=1e-3, atol=1e-3)
    assert np.isnan(o[M:]).all()


def test_subgroup_level_gemm_pvc_isa_has_dpas_with_igc_12504():
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), M=I32, N=I32, K=I32,
               BM=8, BN=16, BK=16)
    c = sg_gemm.compile_offline(sig, target="pvc", compiler="12504")
    r = compile_isa(c.spirv, c.name, "pvc", compiler="12504")
    assert r.counts.dpas_shapes.get("dpas.8x8", 0) >= 1 and r.counts.calls == 0, r.summary()
    assert r.counts.load_block2d >= 2 and r.counts.store_block2d >= 1, r.summary()


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_lane_level_saxpy(target, rng):
    n = 1001
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n + 7, np.float32)
    wg = 2 * {"cpu": 16, "cpu8": 8}[target]
    lane_saxpy[(xk.cdiv(n, wg),)](x, y, out, 1.5, n, target=target)
    np.testing.assert_allclose(out[:n], 1.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert np.isnan(out[n:]).all()   # nothing written past n


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_lane_level_reduction_shuffle_and_ids(target, rng):
    sg = {"cpu": 16, "cpu8": 8}[target]
    n = 7 * 2 * sg      # whole subgroups, so every lane has a neighbour for the xor shuffle
    x = rng.standard_normal(n).astype(np.float32)
    total = np.zeros(1, np.float32)
    swap, ids = poisoned(n, np.float32), poisoned(n, np.int32)
    lane_sum[(n // (2 * sg),)](x, total, swap, ids, n, target=target)
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(swap, x[np.arange(n) ^ 1])
    local = np.arange(n) % (2 * sg)
    np.testing.assert_array_equal(ids, local // sg * 1000 + local % sg)


def _error(fn, sig, level):
    with pytest.raises(xk.CompilationError) as e:
        xk.jit(fn, level=level).compile_offline(sig, target="cpu")
    return str(e.value)


def test_workgroup_only_operations_are_refused_at_lower_levels():
    p = P(xl.float32)

    def convert(x_ptr):
        t = xl.zeros((8, 16), xl.float32)
        xl.convert_layout(t, xl.Layout(lane_layout=[1, 16]))

    def sg_layout(x_ptr):
        xl.zeros((8, 16), xl.float32, layout=xl.Layout(sg_layout=[2, 1], lane_layout=[1, 16]))

    def sg_id_tile(x_ptr):
        xl.subgroup_id((16,))

    def shuffle_tensor(x_ptr):
        xl.shuffle_tensor(xl.zeros((16,), xl.float32), xl.Layout(lane_layout=[16]))

    def all_reduce(x_ptr):
        xl.all_reduce(xl.zeros((16,), xl.float32), "add")

    def tile(x_ptr):
        xl.store(x_ptr + xl.arange(0, 16), 1.0)

    def dot(x_ptr):
        xl.dot(x_ptr, x_ptr)

    def lane_tile(x_ptr):
        xl.store(x_ptr, xl.sum(xl.broadcast_to(xl.load(x_ptr), (4,))))

    def two_layouts(x_ptr):
        a = xl.zeros((8, 16), xl.float32, layout=xl.Layout(lane_layout=[1, 16]))
        b = xl.zeros((8, 16), xl.float32, layout=xl.Layout(lane_layout=[2, 8]))
        xl.store(x_ptr + xl.arange(0, 8)[:, None] * 16 + xl.arange(0, 16)[None, :], a + b)

    def global_id(x_ptr):
        xl.store(x_ptr + xl.global_id(0), 1.0)

    def shuffle(x_ptr):
        xl.shuffle(xl.zeros((16,), xl.float32), 1)

    sig = dict(x_ptr=p)
    e = _error(convert, sig, "subgroup")
    assert "xl.convert_layout is a workgroup-level operation" in e and "level='subgroup'" in e, e
    assert "has sg_layout/sg_data" in _error(sg_layout, sig, "subgroup")
    assert "xl.subgroup_id() is a scalar here" in _error(sg_id_tile, sig, "subgroup")
    assert "xl.shuffle_tensor is a workgroup-level operation" in _error(shuffle_tensor, sig, "subgroup")
    assert "xl.all_reduce is a workgroup-level operation" in _error(all_reduce, sig, "subgroup")
    assert "is used in two layouts" in _error(two_layouts, sig, "subgroup")
    e = _error(tile, sig, "lane")
    assert "xl.arange is a workgroup or subgroup-level operation" in e and "test_levels.py" in e, e
    assert "xl.dot is a workgroup or subgroup-level operation" in _error(dot, sig, "lane")
    e = _error(lane_tile, sig, "lane")   # no builtin check: the walk over the lane-level IR finds the tile
    assert "lane level: 'vector.broadcast' makes a tile vector<4xf32>" in e and "test_levels.py" in e, e
    assert "xl.global_id is a lane-level operation" in _error(global_id, sig, "workgroup")
    assert "xl.shuffle is a lane-level operation" in _error(shuffle, sig, "subgroup")
    with pytest.raises(xk.CompilationError, match="level='warp' is not one of"):
        xk.jit(tile, level="warp")
    with pytest.raises(xk.CompilationError, match="interpreter runs workgroup-level kernels only"):
        xk.jit(tile, level="lane", interpret=True)
