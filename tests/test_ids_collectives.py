"""Issue 7: ids and sizes (seed 003's gpu.subgroup_id / lane_id / num_subgroups) in workgroup-level
kernels, and workgroup all-reduce. Run on the CPU device in its 16- and 8-wide GPU models and in
the interpreter, compared with the layout ownership model and NumPy; GPU code checked offline."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned
from xekern.layouts import ownership

def layouts_for(sg):
    """Explicit 2-D layouts for 4 subgroups: plain, round-robin over rows, and lane_data > 1."""
    return [xl.Layout(sg_layout=[2, 2], sg_data=[8, 2 * sg], lane_layout=[2, sg // 2], lane_data=[1, 2],
                      order=[1, 0]),
            xl.Layout(sg_layout=[4, 1], sg_data=[2, 4 * sg], lane_layout=[1, sg], lane_data=[1, 1],
                      order=[1, 0]),
            xl.Layout(sg_layout=[1, 4], sg_data=[16, 8], lane_layout=[sg // 4, 4], lane_data=[2, 2],
                      order=[0, 1])]


@xk.jit
def ids_2d(sg_ptr, lane_ptr, sizes_ptr, BM: xl.constexpr, BN: xl.constexpr, LAYOUT: xl.constexpr):
    r = xl.arange(0, BM)[:, None]
    c = xl.arange(0, BN)[None, :]
    xl.store(sg_ptr + r * BN + c, xl.subgroup_id((BM, BN), LAYOUT))
    xl.store(lane_ptr + r * BN + c, xl.lane_id((BM, BN), LAYOUT))
    k = xl.arange(0, 2)
    xl.store(sizes_ptr + k, xl.where(k == 0, xl.num_subgroups(), xl.subgroup_size()))


@xk.jit
def ids_1d(sg_ptr, lane_ptr, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    xl.store(sg_ptr + offs, xl.subgroup_id(BLOCK) * 1000 + xl.program_id(0))
    xl.store(lane_ptr + offs, xl.lane_id((BLOCK,)))


def expected_ids(layout, shape, which):
    out = np.full(shape, -1, np.int32)
    for coords, owners in ownership(layout, shape).items():
        ids = {o.sg if which == "sg" else o.lane for o in owners}
        assert len(ids) == 1
        out[coords] = ids.pop()
    return out


@pytest.mark.parametrize("which", [0, 1, 2])
def test_id_tiles_match_the_ownership_model(backend, which):
    # the interpreter takes either model's subgroup size from its target record: both are checked
    for b in [backend.on(t) for t in CPU_TARGETS] if backend.interpret else [backend]:
        sg = b.sg_size
        L = layouts_for(sg)[which]
        BM, BN = 16, 8 * sg
        sgs, lanes, sizes = poisoned((BM, BN), np.int32), poisoned((BM, BN), np.int32), poisoned(2, np.int32)
        b.launch(ids_2d, (1,), sgs, lanes, sizes, BM=BM, BN=BN, LAYOUT=L)
        np.testing.assert_array_equal(sgs, expected_ids(L, (BM, BN), "sg"))
        np.testing.assert_array_equal(lanes, expected_ids(L, (BM, BN), "lane"))
        np.testing.assert_array_equal(sizes, [4, sg])


def test_id_tiles_with_the_default_layout(backend):
    sg = backend.sg_size
    BLOCK = 256
    sgs, lanes = poisoned(BLOCK, np.int32), poisoned(BLOCK, np.int32)
    backend.launch(ids_1d, (1,), sgs, lanes, BLOCK=BLOCK)
    # the default 1-D layout: 4 subgroups x 64 contiguous elements, lanes round-robin within
    np.testing.assert_array_equal(sgs, np.arange(BLOCK) // 64 * 1000)
    np.testing.assert_array_equal(lanes, np.arange(BLOCK) % sg)


def _compile_error(fn, **sig):
    with pytest.raises(xk.CompilationError) as e:
        xk.jit(fn).compile_offline(sig, target="cpu")
    return str(e.value)


def test_per_subgroup_scalars_are_rejected_with_a_reason():
    def k(o_ptr):
        xl.store(o_ptr, xl.subgroup_id())
    msg = _compile_error(k, o_ptr=xk.pointer(xl.int32))
    assert "needs a tile shape" in msg and "one value for the whole workgroup" in msg


def test_replicated_layouts_have_no_single_id():
    def k(o_ptr, L: xl.constexpr):
        offs = xl.arange(0, 16)
        xl.store(o_ptr + offs, xl.subgroup_id((16,), L))
    # 4 subgroups x 16 elements on a 16-element tile: every subgroup holds every element
    L = xl.Layout(sg_layout=[4], sg_data=[16], lane_layout=[16], lane_data=[1], order=[0])
    msg = _compile_error(k, o_ptr=xk.pointer(xl.int32), L=L)
    assert "has no single subgroup id" in msg
    # the same tile has a single lane id per element
    def k2(o_ptr, L: xl.constexpr):
        offs = xl.arange(0, 16)
        xl.store(o_ptr + offs, xl.lane_id((16,), L))
    xk.jit(k2).compile_offline(dict(o_ptr=xk.pointer(xl.int32), L=L), target="cpu")


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_id_tiles_compile_for_gpus(target):
    from xekern.tools.isa import compile_isa
    sg = 16 if target == "pvc" else 8
    L = layouts_for(sg)[0]
    P = xk.pointer(xl.int32)
    c = ids_2d.compile_offline(dict(sg_ptr=P, lane_ptr=P, sizes_ptr=P, BM=16, BN=8 * sg, LAYOUT=L), target=target)
    assert "gpu.subgroup_id" in c.asm["sg"] and "gpu.lane_id" in c.asm["lane"]
    r = compile_isa(c.spirv, c.name, target)
    assert r.counts.calls == 0, r.summary()


# ---- all_reduce ----------------------------------------------------------------------------------

@xk.jit
def absmax(a, b):
    return xl.maximum(xl.abs(a), xl.abs(b))


@xk.jit
def wrapping_add(a, b):
    return a + b


@xk.jit
def all_reduce_kernel(x_ptr, out_ptr, BM: xl.constexpr, BN: xl.constexpr, OP: xl.constexpr):
    r = xl.arange(0, BM)[:, None]
    c = xl.arange(0, BN)[None, :]
    x = xl.load(x_ptr + xl.program_id(0) * BM * BN + r * BN + c)
    if OP == "absmax":
        total = xl.all_reduce(x, absmax)
    elif OP == "wrapping_add":
        total = xl.all_reduce(x, wrapping_add)
    else:
        total = xl.all_reduce(x, OP)
    # the scalar reaches every element of the program: write it through a whole tile
    xl.store(out_ptr + xl.program_id(0) * BM * BN + r * BN + c, xl.zeros_like(x) + total)


NP_REDUCE = {"add": np.sum, "mul": np.prod, "min": np.min, "max": np.max, "and": np.bitwise_and.reduce,
             "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce, "wrapping_add": np.sum,
             "absmax": lambda v: np.max(np.abs(v))}
CASES = [(op, np.int32) for op in ("add", "mul", "min", "max", "and", "or", "xor", "wrapping_add")] + \
        [(op, np.float32) for op in ("add", "mul", "min", "max", "absmax")]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{np.dtype(d).name}" for o, d in CASES])
def test_all_reduce(backend, rng, op, dtype):
    BM, BN, programs = 8, 32, 3
    if dtype == np.float32:
        x = (1 + 0.01 * rng.standard_normal((programs, BM, BN)) if op == "mul" else
             rng.standard_normal((programs, BM, BN))).astype(np.float32)
    else:
        x = rng.integers(-3 if op == "mul" else -(1 << 30), 4 if op == "mul" else 1 << 30,
                         (programs, BM, BN)).astype(np.int32)
    out = poisoned((programs, BM, BN), dtype)
    backend.launch(all_reduce_kernel, (programs,), x, out, BM=BM, BN=BN, OP=op)
    want = np.array([NP_REDUCE[op](x[p].reshape(-1)) for p in range(programs)]).astype(dtype)
    want = np.broadcast_to(want[:, None, None], out.shape)
    if dtype == np.float32:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(out, want)


def test_all_reduce_errors():
    def bad_op(o_ptr):
        xl.store(o_ptr, xl.all_reduce(xl.arange(0, 16), "median"))
    assert "not one of" in _compile_error(bad_op, o_ptr=xk.pointer(xl.int32))

    def not_jit(o_ptr):
        xl.store(o_ptr, xl.all_reduce(xl.arange(0, 16), max))
    assert "@xk.jit function" in _compile_error(not_jit, o_ptr=xk.pointer(xl.int32))


@xk.jit
def three_way(a, b, c):
    return a + b + c


@xk.jit
def bad_combine(a, b):
    return a + xl.arange(0, 3)


def test_a_combine_function_is_inlined_by_the_kernels_own_generator():
    """Its errors name the all_reduce call it was inlined for (the call chain of the kernel's code
    generator), as an error in any called @xk.jit function does."""
    def wrong_arity(o_ptr):
        xl.store(o_ptr, xl.all_reduce(xl.arange(0, 16), three_way))
    assert "combine function three_way must take two values" in _compile_error(wrong_arity,
                                                                                 o_ptr=xk.pointer(xl.int32))

    def caller(o_ptr):
        xl.store(o_ptr, xl.all_reduce(xl.arange(0, 16), bad_combine))
    msg = _compile_error(caller, o_ptr=xk.pointer(xl.int32))
    line = caller.__code__.co_firstlineno + 1
    assert "in bad_combine:" in msg and "power of 2" in msg, msg
    assert f"called from {__file__}:{line} in caller" in msg, msg


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_all_reduce_compiles_for_gpus(target):
    from xekern.tools.isa import compile_isa
    P = xk.pointer(xl.float32)
    for op in ("add", "absmax"):
        c = all_reduce_kernel.compile_offline(dict(x_ptr=P, out_ptr=P, BM=8, BN=32, OP=op), target=target)
        r = compile_isa(c.spirv, c.name, target)
        assert r.counts.calls == 0 and r.counts.barriers >= 1, r.summary()
