"""fp-fusion (lowering/fp_fusion.py): a float multiply feeding one add or subtract is one fused
multiply-add, as Triton's ``enable_fp_fusion`` (on by default for GPUs, off on the CPU device);
``enable_fp_fusion=False`` keeps them apart, and the interpreter never fuses.

The inputs make the two differ: with ``a = 1 + 2**-12``, ``a * a`` is ``1 + 2**-11 + 2**-24``, which
float32 rounds to ``1 + 2**-11``; ``a * a - (1 + 2**-11)`` is then ``2**-24`` fused and ``0`` apart.
"""
import re

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, interpreted, poisoned
from xekern.tools.isa import compile_isa

P = xk.pointer


@xk.jit
def mul_sub(a_ptr, c_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    a = xl.load(a_ptr + offs, mask=m)
    c = xl.load(c_ptr + offs, mask=m)
    xl.store(o_ptr + offs, a * a - c, mask=m)
    xl.store(o_ptr + n + offs, c - a * a, mask=m)


@xk.jit
def layer_norm_tail(x_ptr, w_ptr, b_ptr, o_ptr, n, mean, rstd, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    x = xl.load(x_ptr + offs, mask=m)
    y = (x - mean) * rstd * xl.load(w_ptr + offs, mask=m) + xl.load(b_ptr + offs, mask=m)
    xl.store(o_ptr + offs, y, mask=m)


def inputs(n):
    a = np.full(n, 1 + 2.0 ** -12, np.float32)
    c = np.full(n, 1 + 2.0 ** -11, np.float32)
    return a, c


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("fusion", [True, False])
def test_the_device_rounds_once_when_fused(target, fusion):
    n = 333
    a, c = inputs(n)
    out = poisoned(2 * n, np.float32)
    mul_sub[(xk.cdiv(n, 128),)](a, c, out, n, BLOCK=128, enable_fp_fusion=fusion, target=target)
    want = 2.0 ** -24 if fusion else 0.0
    np.testing.assert_array_equal(out[:n], np.float32(want))
    np.testing.assert_array_equal(out[n:], np.float32(-want))


def test_the_interpreter_does_not_fuse():
    n = 45
    a, c = inputs(n)
    out = poisoned(2 * n, np.float32)
    interpreted(mul_sub)[(1,)](a, c, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, np.float32(0.0))


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_fused_arithmetic_matches_float64(rng, target):
    n = 1_001
    x, w, b = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = poisoned(n, np.float32)
    layer_norm_tail[(xk.cdiv(n, 256),)](x, w, b, out, n, 0.25, 1.5, BLOCK=256, target=target, enable_fp_fusion=True)
    want = (x.astype(np.float64) - 0.25) * 1.5 * w + b
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_the_option_takes_a_bool_and_is_part_of_the_key():
    n = 16
    a, c = inputs(n)
    out = poisoned(2 * n, np.float32)
    with pytest.raises(xk.LaunchError, match="enable_fp_fusion must be True or False"):
        mul_sub[(1,)](a, c, out, n, BLOCK=16, enable_fp_fusion="yes", target="cpu")
    sig = dict(a_ptr=P(xl.float32), c_ptr=P(xl.float32), o_ptr=P(xl.float32), n=xl.int32, BLOCK=16)
    on = mul_sub.compile_offline(sig, target="cpu", enable_fp_fusion=True)
    off = mul_sub.compile_offline(sig, target="cpu", enable_fp_fusion=False)
    assert "math.fma" in on.asm["fp-fusion"] and "math.fma" not in off.asm["fp-fusion"]
    assert on.spirv != off.spirv
    # the defaults: on for GPUs, off on the CPU device
    assert "math.fma" in mul_sub.compile_offline(sig, target="pvc").asm["fp-fusion"]
    assert "math.fma" not in mul_sub.compile_offline(sig, target="cpu").asm["fp-fusion"]


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_gpu_code_has_one_mad_per_fused_pair(target):
    sig = dict(x_ptr=P(xl.float32), w_ptr=P(xl.float32), b_ptr=P(xl.float32), o_ptr=P(xl.float32), n=xl.int32,
               mean=xl.float32, rstd=xl.float32, BLOCK=256)
    mads = {}
    for fusion in (True, False):
        c = layer_norm_tail.compile_offline(sig, target=target, enable_fp_fusion=fusion)
        r = compile_isa(c.spirv, c.name, target)
        mads[fusion] = len(re.findall(r"^\s*(?:\([^)]*\)\s*)?mad\s", r.text, re.M))
    assert mads[False] == 0 and mads[True] > 0, mads
