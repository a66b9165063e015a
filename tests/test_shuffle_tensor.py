"""Issue 7 (seed 002): ``xl.shuffle_tensor`` (explicit redistribution of per-subgroup tiles through SLM)
and ``xl.value_barrier``. Round trips between unrelated layouts on the CPU device in its 16- and 8-wide
models vs NumPy; the IR shows the SLM store, barrier and load; pvc ISA holds the SLM messages and the
barrier."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned
from xekern.tools.isa import compile_isa

SG = {"cpu": 16, "cpu8": 8, "pvc": 16}


@xk.jit
def shuffle_round_trip(x_ptr, y_ptr, s_ptr, BM: xl.constexpr, BN: xl.constexpr, L1: xl.constexpr,
                       L2: xl.constexpr, OWN_SLM: xl.constexpr):
    r = xl.arange(0, BM)[:, None]
    c = xl.arange(0, BN)[None, :]
    x = xl.convert_layout(xl.load(x_ptr + r * BN + c), L1)
    if OWN_SLM:
        mem = xl.alloc_slm((BM, BN), xl.float32)
        y = xl.shuffle_tensor(x, L2, mem)
        back = xl.shuffle_tensor(y * 3.0, L1, mem)   # the same matrix again: the trailing barrier allows it
    else:
        y = xl.shuffle_tensor(x, L2)
        back = xl.shuffle_tensor(y * 3.0, L1)
    y, back = xl.value_barrier(y + 1.0, back)
    xl.store(y_ptr + r * BN + c, y)
    xl.store(s_ptr + r * BN + c, back)


def layouts(sg):
    """Row blocks with lanes along rows, and column blocks with lanes down columns (order [0, 1])."""
    BM, BN = 16, 4 * sg
    l1 = xl.Layout(sg_layout=[4, 1], sg_data=[4, BN], lane_layout=[1, sg], lane_data=[1, 1])
    l2 = xl.Layout(sg_layout=[1, 4], sg_data=[BM, sg], lane_layout=[sg, 1], lane_data=[1, 1], order=[0, 1])
    return BM, BN, l1, l2


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("own_slm", [False, True])
def test_shuffle_tensor_round_trip(target, own_slm, rng):
    BM, BN, l1, l2 = layouts(SG[target])
    x = rng.standard_normal((BM, BN)).astype(np.float32)
    y, back = poisoned((BM, BN), np.float32), poisoned((BM, BN), np.float32)
    shuffle_round_trip[(1,)](x, y, back, BM=BM, BN=BN, L1=l1, L2=l2, OWN_SLM=own_slm, target=target)
    np.testing.assert_allclose(y, x.astype(np.float64) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(back, x.astype(np.float64) * 3.0, rtol=1e-6)


def _sig(target, own_slm=False):
    BM, BN, l1, l2 = layouts(SG[target])
    p = xk.pointer(xl.float32)
    return dict(x_ptr=p, y_ptr=p, s_ptr=p, BM=BM, BN=BN, L1=l1, L2=l2, OWN_SLM=own_slm)


def test_shuffle_tensor_ir_goes_through_slm_even_between_equal_layouts():
    c = shuffle_round_trip.compile_offline(_sig("pvc"), target="pvc")
    xegpu = c.asm["xegpu"]
    # the frontend builds seed 002's ops; wg-to-sg spells each shuffle out as store_matrix, barrier,
    # load_matrix (with the target layout), barrier on its 16x64 matrix
    assert xegpu.count("iree_gpu.shuffle_tensor") == 2 and xegpu.count("iree_gpu.value_barrier") == 1, xegpu
    assert "xegpu.store_matrix" not in xegpu and "gpu.barrier" not in xegpu, xegpu
    assert xegpu.count("xegpu.create_mem_desc") == 2, xegpu
    sg = c.asm["sg"]
    assert "iree_gpu.shuffle_tensor" not in sg, sg
    assert sg.count("!xegpu.mem_desc<16x64xf32>, i32, i32\n") == 2, sg                    # one store each
    assert sg.count("(!xegpu.mem_desc<16x64xf32>, i32, i32) -> vector<") == 2, sg          # one load each
    own = shuffle_round_trip.compile_offline(_sig("pvc", True), target="pvc").asm["xegpu"]
    assert own.count("xegpu.create_mem_desc") == 1, own    # the caller's matrix, used twice

    @xk.jit
    def same_layout(x_ptr, y_ptr, BLOCK: xl.constexpr, L: xl.constexpr):
        offs = xl.arange(0, BLOCK)
        xl.store(y_ptr + offs, xl.shuffle_tensor(xl.convert_layout(xl.load(x_ptr + offs), L), L))

    L = xl.Layout(sg_layout=[4], sg_data=[16], lane_layout=[16], lane_data=[1])
    sg = same_layout.compile_offline(dict(x_ptr=xk.pointer(xl.float32), y_ptr=xk.pointer(xl.float32), BLOCK=64, L=L),
                                     target="pvc").asm["sg"]
    assert "xegpu.store_matrix" in sg and "xegpu.load_matrix" in sg and "gpu.barrier" in sg, sg


def test_shuffle_tensor_pvc_isa_has_slm_messages_and_barriers():
    c = shuffle_round_trip.compile_offline(_sig("pvc"), target="pvc")
    r = compile_isa(c.spirv, c.name, "pvc")
    slm_loads = sum(n for k, n in r.counts.sends.items() if k.startswith("load.slm"))
    slm_stores = sum(n for k, n in r.counts.sends.items() if k.startswith("store.slm"))
    assert slm_loads >= 1 and slm_stores >= 1, r.summary()
    assert r.counts.barriers >= 5 and r.has_barriers, r.summary()


def _error(fn, sig):
    with pytest.raises(xk.CompilationError) as e:
        xk.jit(fn).compile_offline(sig, target="cpu")
    return str(e.value)


def test_shuffle_tensor_and_value_barrier_errors():
    p = xk.pointer(xl.float32)

    def wrong_mem(x_ptr, BLOCK: xl.constexpr):
        offs = xl.arange(0, BLOCK)
        mem = xl.alloc_slm((BLOCK,), xl.float16)
        xl.shuffle_tensor(xl.load(x_ptr + offs), xl.Layout(sg_layout=[4], lane_layout=[16]), mem)

    def no_layout(x_ptr, BLOCK: xl.constexpr):
        xl.shuffle_tensor(xl.load(x_ptr + xl.arange(0, BLOCK)), None)

    def not_a_value(x_ptr):
        xl.value_barrier(xl.float32)

    assert "must have the tile's shape and dtype" in _error(wrong_mem, dict(x_ptr=p, BLOCK=64))
    assert "needs the xl.Layout" in _error(no_layout, dict(x_ptr=p, BLOCK=64))
    assert "value_barrier: argument 0" in _error(not_a_value, dict(x_ptr=p))


def test_shuffle_tensor_and_value_barrier_interpreted(monkeypatch, rng):
    """XEKERN_INTERPRET=1 runs the two ops (the matrix is written as on the device, then read back)."""
    monkeypatch.setenv("XEKERN_INTERPRET", "1")
    k = xk.jit(shuffle_round_trip.fn)     # the knob is read when a kernel is decorated
    monkeypatch.delenv("XEKERN_INTERPRET")
    BM, BN, l1, l2 = layouts(16)
    for own_slm in (False, True):
        x = rng.standard_normal((BM, BN)).astype(np.float32)
        y, back = poisoned((BM, BN), np.float32), poisoned((BM, BN), np.float32)
        launch = k[(1,)](x, y, back, BM=BM, BN=BN, L1=l1, L2=l2, OWN_SLM=own_slm, target="cpu")
        assert launch.event is None and list(launch.asm) == ["xegpu"]   # interpreted, not compiled
        assert launch.asm["xegpu"].count("iree_gpu.shuffle_tensor") == 2
        np.testing.assert_allclose(y, x.astype(np.float64) + 1.0, rtol=1e-6)
        np.testing.assert_allclose(back, x.astype(np.float64) * 3.0, rtol=1e-6)


@xk.jit(level="lane", num_subgroups=2)
def lane_neighbours(x_ptr, y_ptr, n):
    """Each work item writes its value to a scratch row, and after the value barrier reads the next
    work item's (the barrier orders every lane's store before any lane's load)."""
    i = xl.global_id(0)
    wg = xl.num_subgroups() * 16
    v = xl.load(x_ptr + i, mask=i < n, other=0.0) * 2.0
    xl.store(y_ptr + n + i, v)
    v = xl.value_barrier(v)
    nxt = xl.program_id(0) * wg + (i + 1) % wg
    if i < n:
        xl.store(y_ptr + i, v + xl.load(y_ptr + n + nxt))


def test_value_barrier_at_lane_level(rng):
    n = 7 * 32
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(2 * n, np.float32)
    launch = lane_neighbours[(n // 32,)](x, y, n, target="cpu")
    nxt = (np.arange(n) // 32) * 32 + (np.arange(n) + 1) % 32
    np.testing.assert_allclose(y[:n], 2.0 * x + 2.0 * x[nxt], rtol=1e-6)
    assert "iree_gpu.value_barrier" in launch.asm["lane"]
    assert launch.asm["llir"].count("@_Z7barrierj(i32 3)") == 1
