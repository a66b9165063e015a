"""Pointer casts (Triton's ``p.to(tl.pointer_type(...))``): a scalar pointer or a tile of them read
and written as another element type, on the CPU device, its 8-wide model and the interpreter,
outputs poisoned; and the cast a tile's element offsets cannot express, refused."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned


@xk.jit
def bytes_of(x_ptr, out_ptr, n, BLOCK: xl.constexpr):
    """out (uint8) = the bytes of x (float32), through a tile of float32 pointers cast to uint8 ones,
    and x's words through the base pointer cast to int32."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    p = (x_ptr + offs).to(xl.pointer_type(xl.uint8))             # offsets scale by 4
    for b in xl.static_range(4):
        v = xl.load(p + b, mask=offs < n)
        xl.store(out_ptr + 4 * offs + b, v, mask=offs < n)
    words = x_ptr.to(xl.pi32_t)
    w = xl.load(words + offs, mask=offs < n)
    xl.store(out_ptr.to(xl.pointer_type(xl.int32)) + n + offs, w, mask=offs < n)


def test_pointer_casts(backend, rng):
    n = 45
    x = rng.standard_normal(n).astype(np.float32)
    out = backend.run(bytes_of, (xk.cdiv(n, 16),), [x, poisoned(8 * n, np.uint8), n], BLOCK=16)[1]
    np.testing.assert_array_equal(out[:4 * n], x.view(np.uint8))
    np.testing.assert_array_equal(out[4 * n:].view(np.int32), x.view(np.int32))


@xk.jit
def widen_tile(x_ptr, out_ptr, BLOCK: xl.constexpr):
    p = (x_ptr + xl.arange(0, BLOCK)).to(xl.pointer_type(xl.int32))
    xl.store(out_ptr + xl.arange(0, BLOCK), xl.load(p))


def test_a_tile_cast_to_a_wider_element_is_refused():
    sig = dict(x_ptr=xk.pointer(xl.uint8), out_ptr=xk.pointer(xl.int32), BLOCK=16)
    with pytest.raises(xk.CompilationError, match="cast the base pointer first"):
        widen_tile.compile_offline(sig, target="cpu")


def test_pointer_casts_compile_for_gpus():
    from xekern.tools.isa import compile_isa
    sig = dict(x_ptr=xk.pointer(xl.float32), out_ptr=xk.pointer(xl.uint8), n=xl.int32, BLOCK=64)
    for target in ("pvc", "bmg"):
        c = bytes_of.compile_offline(sig, target=target, num_subgroups=4)
        assert "xegpu.ptrcast" in c.asm["xegpu"]
        r = compile_isa(c.spirv, c.name, target)
        assert r.spilled_around == 0, (target, r.spilled_around)


@xk.jit
def scale_into(x_ptr: xl.const, out_ptr, n, BLOCK: xl.constexpr, WRITE_X: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n)
    xl.store(out_ptr + offs, 2 * x, mask=offs < n)
    if WRITE_X == "store":
        xl.store(x_ptr.to(xl.pointer_type(xl.int32)) + offs, offs, mask=offs < n)
    if WRITE_X == "atomic":
        xl.atomic_add(x_ptr + offs, 1.0, mask=offs < n)
    if WRITE_X == "descriptor":
        d = xl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
        d.store([0], x)


def test_const_pointers_read(backend, rng):
    n = 37
    x = rng.standard_normal(n).astype(np.float32)
    out = backend.run(scale_into, (xk.cdiv(n, 16),), [x, poisoned(n, np.float32), n], BLOCK=16, WRITE_X="")[1]
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("how,what", [("store", "xl.store"), ("atomic", "atomic_add"),
                                      ("descriptor", "a descriptor store")])
def test_writing_through_a_const_pointer_is_an_error(how, what):
    sig = dict(x_ptr=xk.pointer(xl.float32), out_ptr=xk.pointer(xl.float32), n=xl.int32, BLOCK=16, WRITE_X=how)
    with pytest.raises(xk.CompilationError, match=f"{what} through 'x_ptr', a parameter annotated xl.const"):
        scale_into.compile_offline(sig, target="cpu")
