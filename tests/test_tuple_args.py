"""Tuple kernel arguments (``runtime/tuple_args.py``), as Triton takes them: nested tuples of
arrays, scalars and constants, flattened at launch into arguments of their own and seen as tuples
in the kernel; on the CPU device, its 8-wide model and the interpreter, against NumPy, at ragged
sizes with poisoned outputs; their specialization and cache keys; ``compile_offline`` with a tuple
signature."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def weighted_sum(ins, sizes, out_ptr, BLOCK: xl.constexpr):
    """``ins = (x_ptr, (y_ptr, z_ptr))``, ``sizes = (n, (wy, wz), None)``."""
    x_ptr, (y_ptr, z_ptr) = ins
    n, weights, nothing = sizes
    xl.static_assert(len(ins) == 2 and len(ins[1]) == 2 and nothing is None)
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    acc = xl.load(x_ptr + offs, mask=m)
    acc += weights[0] * xl.load(y_ptr + offs, mask=m)
    acc += weights[1] * xl.load(ins[1][1] + offs, mask=m)
    xl.store(out_ptr + offs, acc, mask=m)


@pytest.mark.parametrize("wz", [3.5, 1])
def test_nested_tuple_arguments(backend, rng, wz):
    n = 203
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = backend.run(weighted_sum, (xk.cdiv(n, 64),), [(x, (y, z)), (n, (-2.0, wz), None), poisoned(n, np.float32)],
                      BLOCK=64)[2]
    want = x.astype(np.float64) - 2 * y.astype(np.float64) + wz * z.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@xk.jit
def copy_first(pair, out_ptr, n, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    xl.store(out_ptr + offs, xl.load(pair[0] + offs, mask=offs < n) * pair[1], mask=offs < n)


def test_tuple_leaves_specialize_and_key_apart():
    """A leaf is specialized like an argument (dtype, an integer 1 compiled in); the tuple's nesting
    is part of the key; device arrays inside tuples are passed as device arrays, and the kernel
    writes through a NumPy array inside a tuple too."""
    x = np.arange(10, dtype=np.float32)
    o = poisoned(10, np.float32)
    copy_first[(1,)]((x, 3), o, 10, BLOCK=16)
    np.testing.assert_array_equal(o, x * 3)
    copy_first[(1,)]((xk.to_device(x), 1), o, 10, BLOCK=16)          # a 1: compiled in
    np.testing.assert_array_equal(o, x)
    keys = [k[0] for k in copy_first.cache]
    assert any(("i32", False) in k for k in keys) and all(k[0] == ("tuple", (None, None)) for k in keys)
    assert len(keys) == 2
    o16 = poisoned(10, np.float16)
    copy_first[(1,)]((x.astype(np.float16), 2), o16, 10, BLOCK=16)
    np.testing.assert_array_equal(o16, (x * 2).astype(np.float16))
    assert len(copy_first.cache) == 3


def test_compile_offline_takes_a_tuple_signature():
    c = weighted_sum.compile_offline(dict(ins=(xk.pointer(xl.float32), (xk.pointer(xl.float32),) * 2),
                                          sizes=(xl.int32, (xl.float32, xl.float32), None),
                                          out_ptr=xk.pointer(xl.float32), BLOCK=64), target="cpu")
    head = c.asm["xegpu"].splitlines()[0]
    for name in ("ins__0", "ins__1__0", "ins__1__1", "sizes__0", "sizes__1__0", "sizes__1__1", "out_ptr"):
        assert f"%{name}" in head, head
    assert "sizes__2" not in head      # None: a constant of the tuple


@xk.jit
def writes_tuple_item(pair):
    pair[0] = 1


def test_a_tuple_is_not_assignable():
    with pytest.raises(xk.CompilationError, match="a tuple cannot be changed"):
        writes_tuple_item.compile_offline(dict(pair=(xl.int32, xl.int32)), target="cpu")
