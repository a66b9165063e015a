"""Size limits are refused at once, at the op that breaks them, with the rule: a tile of more than
xl.MAX_TILE_NUMEL elements (Triton's limit), or more than xl.MAX_LANE_NUMEL elements per lane
(each is unrolled code: the compile would run for minutes)."""
import time

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl


@xk.jit
def add(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=m) + xl.load(y_ptr + offs, mask=m), mask=m)


@xk.jit(num_subgroups=1)
def outer(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    v = xl.load(x_ptr + r)
    xl.store(o_ptr + r[:, None] * BN + c[None, :], v[:, None] * c[None, :].to(xl.float32))


def test_a_huge_block_is_refused_at_once(rng):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    t0 = time.perf_counter()
    with pytest.raises(xk.CompilationError) as info:
        add[(1,)](x, y, out, n, BLOCK=1 << 22)
    elapsed = time.perf_counter() - t0
    text = str(info.value)
    assert "a tile of shape [4194304] has 4194304 elements; a tile may have at most 1048576" in text, text
    assert "xl.arange(0, BLOCK)" in text, text
    assert elapsed < 1.0, elapsed
    assert np.isnan(out).all()


def test_per_lane_limit_names_the_op_and_the_rule():
    sig = {"x_ptr": xk.pointer(xl.float32), "o_ptr": xk.pointer(xl.float32), "BM": 256, "BN": 256}
    with pytest.raises(xk.CompilationError) as info:
        outer.compile_offline(sig, "cpu")
    text = str(info.value)
    assert "a tile of shape [256, 256] gives each of the 16 lanes (1 subgroup(s) x 16) 4096 elements" in text, text
    assert f"at most {xl.MAX_LANE_NUMEL} per lane" in text and "num_subgroups" in text, text
    assert "c[None, :]" in info.value.source_line, info.value.source_line


def test_at_the_limit_the_kernel_compiles():
    """The per-lane limit is not an off-by-one: 2048 elements per lane of 16 lanes still compile.
    (Not launched: the CPU driver takes ~2 minutes to build a kernel this size.)"""
    sig = {"x_ptr": xk.pointer(xl.float32), "o_ptr": xk.pointer(xl.float32), "BM": 128, "BN": 256}
    assert len(outer.compile_offline(sig, "cpu").spirv) > 0


@xk.jit
def unrolled(x_ptr, N: xl.constexpr):
    acc = xl.zeros((16,), xl.float32)
    for i in xl.static_range(N):
        acc += xl.load(x_ptr + i * 16 + xl.arange(0, 16))
    xl.store(x_ptr + xl.arange(0, 16), acc)


def test_an_unroll_that_would_not_finish_is_refused_at_once():
    sig = {"x_ptr": xk.pointer(xl.float32), "N": 1 << 20}
    t0 = time.perf_counter()
    with pytest.raises(xk.CompilationError) as info:
        unrolled.compile_offline(sig, "cpu")
    assert time.perf_counter() - t0 < 10
    text = str(info.value)
    assert "the kernel's IR passed 100000 operations here" in text and "xl.static_range" in text, text
    assert "in unrolled" in text, text
