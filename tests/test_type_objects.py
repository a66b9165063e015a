"""Triton's type objects and markers in kernels: ``xl.block_type``, ``xl.constexpr_type``,
``xl.void``, ``xl.slice``, ``xl.tuple``, ``xl.condition``, ``xl.async_task``, and the functions
``xl.map_elementwise`` and ``xl.bitonic_merge``: on the CPU device, its 8-wide model and the
interpreter, against NumPy, at ragged sizes, outputs poisoned."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def compare(x, y):
    """Triton's test_map_elementwise function: -1, 0 or 1."""
    return xl.where(x < y, -1, xl.where(x == y, 0, 1))


@xk.jit
def crossed(a0, a1, b0, b1):
    """Two elements of each argument per call (pack=2): one result, two values."""
    return a1 + b0, a0 - b1


@xk.jit
def two_results(a, b):
    return a * b, a - b


@xk.jit
def mapped(x_ptr, y_ptr, c_ptr, p_ptr, m_ptr, d_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    mask = offs < n
    x = xl.load(x_ptr + offs, mask=mask, other=0.)
    y = xl.load(y_ptr + offs, mask=mask, other=0.)
    xl.store(c_ptr + offs, xl.map_elementwise(compare, x, y), mask=mask)
    (p,) = xl.map_elementwise(crossed, x, y, pack=2)
    xl.store(p_ptr + offs, p, mask=mask)
    m, d = xl.map_elementwise(two_results, x, 2.0)          # a scalar broadcast to the tile
    xl.store(m_ptr + offs, m, mask=mask)
    xl.store(d_ptr + offs, d, mask=mask)


def test_map_elementwise(backend, rng):
    n, block = 53, 64
    x = rng.integers(-3, 4, n).astype(np.float32)
    y = rng.integers(-3, 4, n).astype(np.float32)
    outs = [poisoned(n, np.int32)] + [poisoned(n, np.float32) for _ in range(3)]
    c, p, m, d = backend.run(mapped, (1,), [x, y] + outs + [n], BLOCK=block)[2:6]
    np.testing.assert_array_equal(c, np.sign(x - y).astype(np.int32))
    xz, yz = (np.r_[v, np.zeros(block - n, np.float32)] for v in (x, y))   # the masked-off elements: 0
    want = np.empty(block, np.float32)
    want[0::2] = xz[1::2] + yz[0::2]
    want[1::2] = xz[0::2] - yz[1::2]
    np.testing.assert_array_equal(p, want[:n])
    np.testing.assert_array_equal(m, x * 2)
    np.testing.assert_array_equal(d, x - 2)


@xk.jit
def merged(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr, DESC: xl.constexpr):
    r = xl.arange(0, BM)
    c = xl.arange(0, BN)
    x = xl.load(x_ptr + r[:, None] * BN + c[None, :])
    xl.store(o_ptr + r[:, None] * BN + c[None, :], xl.bitonic_merge(x, descending=DESC))


@pytest.mark.parametrize("desc", [0, 1])
def test_bitonic_merge_sorts_bitonic_rows(backend, rng, desc):
    bm, bn = 4, 32
    half = bn // 2
    rows = []
    for i in range(bm):   # rising then falling (or the reverse), with ties, rotated: still bitonic
        a = np.sort(rng.integers(-9, 9, half))
        b = np.sort(rng.integers(-9, 9, half))[::-1]
        rows.append(np.r_[a, b] if i % 2 else np.r_[b, a])
    x = np.array(rows, np.float32)
    o = backend.run(merged, (1,), [x, poisoned((bm, bn), np.float32)], BM=bm, BN=bn, DESC=desc)[1]
    want = np.sort(x, 1)
    np.testing.assert_array_equal(o, want[:, ::-1] if desc else want)


@xk.jit
def typed(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=0.)
    xl.static_assert(x.type == xl.block_type(xl.float32, [BLOCK]))
    xl.static_assert(isinstance(x.type, xl.block_type) and x.type.is_block())
    xl.static_assert(x.type.element_ty == xl.float32 and x.type.scalar == x.dtype)
    xl.static_assert(x.type.get_block_shapes() == (BLOCK,) and x.type.numel == BLOCK)
    xl.static_assert(xl.constexpr(BLOCK).type == xl.constexpr_type(BLOCK))
    xl.static_assert(not xl.float32.is_block() and xl.float32.scalar == xl.float32)
    t = xl.tuple([x, x * 2.0, 3])
    xl.static_assert(len(t) == 3 and isinstance(t, xl.tuple))
    head = t[0:2]
    a, b = head
    i = 0
    total = xl.zeros((BLOCK,), xl.float32)
    while xl.condition(i < t[2], disable_licm=True):
        total += a
        i += 1
    with xl.async_task([0]):
        total += b
    col = offs[:, None]
    row = col[xl.slice(None, None, None), None]
    xl.store(o_ptr + row, total[:, None, None], mask=(offs < n)[:, None, None])


def test_type_objects_and_markers(backend, rng):
    n, block = 29, 32
    x = rng.standard_normal(n).astype(np.float32)
    o = backend.run(typed, (1,), [x, poisoned(n, np.float32), n], BLOCK=block)[1]
    np.testing.assert_allclose(o, x * 3 + x * 2, rtol=1e-6)


def test_what_the_objects_refuse():
    with pytest.raises(TypeError, match="0d block_type"):
        xl.block_type(xl.float32, [])
    with pytest.raises(TypeError, match="element dtype"):
        xl.block_type(3, [4])
    assert xl.void.bits == 0 and repr(xl.void) == "xl.void"
    assert xl.constexpr_type(3) == xl.constexpr_type(xl.constexpr(3)) != xl.constexpr_type(4)
    assert xl.slice(1, None).as_python() == slice(1, None) and xl.slice().is_whole()


@xk.jit
def sliced_tile(x_ptr, o_ptr, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs)[1:3])


@xk.jit
def other_with(o_ptr):
    with xl.condition(True):
        xl.store(o_ptr, 1.0)


def test_errors_name_the_rule():
    sig = dict(x_ptr=xk.pointer(xl.float32), o_ptr=xk.pointer(xl.float32), BLOCK=16)
    with pytest.raises(xk.CompilationError, match="only be indexed with ':' and None"):
        sliced_tile.compile_offline(sig, target="cpu")
    with pytest.raises(xk.CompilationError, match="only as 'with xl.async_task"):
        other_with.compile_offline(dict(o_ptr=xk.pointer(xl.float32)), target="cpu")
