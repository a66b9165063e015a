"""LLVM IR the SPIR-V backend cannot express, rewritten by the worker after optimization: a
bit-reversal idiom InstCombine found (``llvm.bitreverse.i6`` from ``(s & 1) << 5 | (s & 2) << 3``)
becomes shifts and masks with the same value for every input."""
import ctypes

import llvmlite.binding as llvm
import pytest

import xekern as xk
import xekern.language as xl
from xekern.lowering.llvm_worker import expand_bitreverse

_FN = """
define i32 @f(i32 %x) {
  %t = trunc i32 %x to i{n}
  %r = call i{n} @llvm.bitreverse.i{n}(i{n} %t)
  %z = zext i{n} %r to i32
  ret i32 %z
}
declare i{n} @llvm.bitreverse.i{n}(i{n})
"""


def _run(text: str, xs):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    with llvm.create_mcjit_compiler(mod, tm) as ee:
        ee.finalize_object()
        f = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)(ee.get_function_address("f"))
        return [f(x) for x in xs]


@pytest.mark.parametrize("n", [2, 6, 8, 13, 31])
def test_expanded_bitreverse_computes_the_same(n):
    text = _FN.replace("{n}", str(n))
    out = expand_bitreverse(text)
    assert "call" not in out.split("declare")[0]
    xs = list(range(min(1 << n, 4096))) + [0xFFFFFFFF, 0x12345678]
    assert _run(out, xs) == _run(text, xs)


@xk.jit
def middle_sum(x_ptr, o_ptr):
    a = xl.arange(0, 2)[:, None, None] * 512 + xl.arange(0, 32)[None, :, None] * 16 + xl.arange(0, 16)[None, None, :]
    s = xl.sum(xl.load(x_ptr + a), axis=1)
    xl.store(o_ptr + xl.arange(0, 2)[:, None] * 16 + xl.arange(0, 16)[None, :], s)


def test_the_reduction_that_made_llvm_abort(backend, rng):
    """A (2, 32, 16) tile summed over its middle axis: LLVM aborted on the optimized module."""
    import numpy as np
    from conftest import poisoned
    x = rng.standard_normal(1024).astype(np.float32)
    o = backend.run(middle_sum, (1,), [x, poisoned(32, np.float32)])[1]
    np.testing.assert_allclose(o.reshape(2, 16), x.reshape(2, 32, 16).astype(np.float64).sum(1), rtol=1e-5,
                               atol=1e-5)
