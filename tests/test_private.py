"""Issue 7 (seed 003, memory attribution): ``xl.alloc_private``, arrays of one work item in lane-level
kernels, read and written with runtime indices. Per-item insertion sort and 2-D histograms on the CPU
device (16- and 8-wide models) vs NumPy at odd sizes; the size limit, the level and placement rules;
the LLVM alloca and pvc ISA (dynamic indexing becomes IGC's stateless private memory there)."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned
from xekern.tools.isa import compile_isa

P = xk.pointer


@xk.jit(level="lane", num_subgroups=2)
def sort_rows(x_ptr, o_ptr, n, W: xl.constexpr):
    """Each work item insertion-sorts its row of W values in a private array."""
    i = xl.global_id(0)
    buf = xl.alloc_private((W,), xl.float32)
    for k in range(W):
        v = xl.load(x_ptr + i * W + k, mask=i < n, other=0.0)
        j = k
        while j > 0 and buf[xl.maximum(j - 1, 0)] > v:   # (both sides run: keep the index in bounds)
            buf[j] = buf[j - 1]
            j -= 1
        buf[j] = v
    if i < n:
        for k in range(W):
            xl.store(o_ptr + i * W + k, buf[k])


@xk.jit(level="lane")
def histograms(x_ptr, h_ptr, n, K: xl.constexpr, B: xl.constexpr):
    """Each work item counts its K values in 0..B-1, separately at even and odd positions."""
    i = xl.global_id(0)
    hist = xl.alloc_private((2, B), xl.int32)
    for b in range(B):
        hist[0, b] = 0
        hist[1, b] = 0
    for k in range(K):
        v = xl.load(x_ptr + i * K + k, mask=i < n, other=0)
        hist[k % 2, v] += 1
    if i < n:
        for p in range(2):
            for b in range(B):
                xl.store(h_ptr + (i * 2 + p) * B + b, hist[p, b])


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_private_insertion_sort_per_work_item(target, rng):
    n, W = 203, 7   # 203 rows: the last workgroup is ragged
    x = rng.standard_normal((n, W)).astype(np.float32)
    o = poisoned((n, W), np.float32)
    sort_rows[(xk.cdiv(n, 2 * xk.targets[target].sg_size),)](x, o, n, W=W, target=target)
    np.testing.assert_array_equal(o, np.sort(x, axis=1))


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_private_2d_histogram_with_dynamic_indices(target, rng):
    n, K, B = 157, 45, 5
    x = rng.integers(0, B, size=(n, K)).astype(np.int32)
    h = poisoned((n, 2, B), np.int32)
    launch = histograms[(xk.cdiv(n, 4 * xk.targets[target].sg_size),)](x, h, n, K=K, B=B, target=target)
    ref = np.stack([np.stack([np.bincount(r[p::2], minlength=B) for p in (0, 1)]) for r in x])
    np.testing.assert_array_equal(h, ref)
    lane = launch.asm["lane"]
    assert "gpu.alloc_private : memref<2x5xi32, #gpu.address_space<private>>" in lane, lane
    assert "memref.store" in lane and "memref.load" in lane


def test_private_array_is_an_entry_alloca_in_function_storage():
    c = histograms.compile_offline(dict(x_ptr=P(xl.int32), h_ptr=P(xl.int32), n=xl.int32, K=45, B=5), target="pvc")
    llir = c.asm["llir"]
    entry = llir[llir.index("entry:"):]
    entry = entry[:entry.index("\n\n")] if "\n\n" in entry else entry
    assert "alloca [10 x i32]" in entry, llir       # once per work item, before any branch
    assert llir.count("alloca") == 1


def test_private_array_pvc_isa():
    """On pvc, IGC 12504 keeps a dynamically indexed private array in its stateless private memory:
    the arrays of a thread's 16 lanes take 16 x W x 4 bytes of per-thread scratch space (rounded up to
    1 KiB), accessed with load.ugm / store.ugm messages; no spill."""
    W = 64
    c = sort_rows.compile_offline(dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), n=xl.int32, W=W), target="pvc")
    r = compile_isa(c.spirv, c.name, "pvc")
    assert r.spilled_around == 0, r.summary()
    assert r.scratch_bytes >= 16 * W * 4, r.summary()
    loads = sum(v for k, v in r.counts.sends.items() if k.startswith("load.ugm"))
    stores = sum(v for k, v in r.counts.sends.items() if k.startswith("store.ugm"))
    assert loads >= 2 and stores >= 2, r.summary()


def _error(fn, sig, target="cpu", level="lane"):
    with pytest.raises(xk.CompilationError) as e:
        xk.jit(fn, level=level).compile_offline(sig, target=target)
    return str(e.value)


def test_private_memory_limit_names_the_line():
    def too_big(o_ptr):
        a = xl.alloc_private((1024,), xl.float32)
        b = xl.alloc_private((3100,), xl.float32)   # 4096 + 12400 bytes > 16 KiB on pvc
        xl.store(o_ptr, a[0] + b[0])

    msg = _error(too_big, dict(o_ptr=P(xl.float32)), target="pvc")
    assert "private memory use 16496 bytes per work item" in msg and "pvc limit of 16384 bytes" in msg, msg
    assert "b = xl.alloc_private((3100,), xl.float32)" in msg, msg   # the kernel's own line
    # dg2 runs 8 lanes per thread: twice the room
    xk.jit(too_big, level="lane").compile_offline(dict(o_ptr=P(xl.float32)), target="cpu8")


def test_private_memory_rules():
    p = dict(o_ptr=P(xl.float32))

    def at_workgroup(o_ptr):
        xl.alloc_private((4,), xl.float32)

    def in_loop(o_ptr):
        for k in range(3):
            xl.alloc_private((4,), xl.float32)

    def const_out_of_bounds(o_ptr):
        a = xl.alloc_private((4, 2), xl.float32)
        a[1, 2] = 1.0

    def wrong_rank(o_ptr):
        a = xl.alloc_private((4, 2), xl.float32)
        xl.store(o_ptr, a[1])

    def sliced(o_ptr):
        a = xl.alloc_private((4,), xl.float32)
        xl.store(o_ptr, a[:])

    for level in ("workgroup", "subgroup"):
        msg = _error(at_workgroup, p, level=level)
        assert "xl.alloc_private is a lane-level operation" in msg and f"written at {level} level" in msg, msg
    assert "at the top level of the kernel" in _error(in_loop, p)
    assert "index 2 is out of bounds for dimension 1 of size 2" in _error(const_out_of_bounds, p)
    assert "takes 2 indices, got 1" in _error(wrong_rank, p)
    assert "not with slices" in _error(sliced, p)
