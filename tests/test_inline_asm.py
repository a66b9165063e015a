"""``xl.inline_asm_elementwise`` with Intel vISA text (Triton's takes PTX): compiled for pvc, bmg
and dg2 with the current offline compiler, the text is one instruction per slot in the ISA, on the
loaded values, and the SPIR-V validates; where no driver compiles vISA (the CPU device, the
interpreter) and for what it does not take (pack > 1, several results, constraints that do not
match the arguments) the error names the rule. What the instruction computes on a GPU is not run
here (no Intel GPU)."""
import re

import pytest

import xekern as xk
import xekern.language as xl
from xekern.tools.isa import compile_isa, spirv_validate

P = xk.pointer
ROL = "rol (M1, 16) $0(0,0)<1> $1(0,0)<1;1,0> $2(0,0)<1;1,0>"


@xk.jit
def rotate(x_ptr, s_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    y = xl.inline_asm_elementwise(ROL, "=rw,rw,rw", [xl.load(x_ptr + offs, mask=m), xl.load(s_ptr + offs, mask=m)],
                                  dtype=xl.uint32, is_pure=True, pack=1)
    xl.store(o_ptr + offs, y, mask=m)


SIG = dict(x_ptr=P(xl.uint32), s_ptr=P(xl.uint32), o_ptr=P(xl.uint32), n=xl.int32, BLOCK=256)


@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
def test_the_text_is_one_instruction_per_slot(target):
    c = rotate.compile_offline(SIG, target=target, num_subgroups=4)
    assert "gpu.elementwise_inline_asm" in c.asm["lane"]
    assert spirv_validate(c.spirv)[0]
    r = compile_isa(c.spirv, c.name, target)
    slots = 256 // 4 // xk.get_target(target).sg_size
    rols = [ln for ln in r.text.splitlines() if re.search(r"\brol \(", ln)]
    assert len(rols) == slots, r.summary()
    assert all(":ud" in ln for ln in rols) and r.spilled_around == 0


@xk.jit
def asm_variants(x_ptr, o_ptr, PACK: xl.constexpr, TWO: xl.constexpr, CONSTRAINTS: xl.constexpr):
    offs = xl.arange(0, 16)
    x = xl.load(x_ptr + offs)
    dt = (xl.uint32, xl.uint32) if TWO else xl.uint32
    y = xl.inline_asm_elementwise(ROL, CONSTRAINTS, [x, x], dtype=dt, is_pure=True, pack=PACK)
    xl.store(o_ptr + offs, y)


def test_refusals_name_the_rule():
    with pytest.raises(xk.CompilationError, match="only Intel GPU drivers compile; target cpu"):
        rotate.compile_offline(SIG, target="cpu")
    sig = dict(x_ptr=P(xl.uint32), o_ptr=P(xl.uint32), PACK=1, TWO=False, CONSTRAINTS="=rw,rw,rw")
    rotate_ok = asm_variants.compile_offline(sig, target="pvc")
    assert "rol" in rotate_ok.asm["llir_unoptimized"]
    with pytest.raises(xk.CompilationError, match="only pack=1"):
        asm_variants.compile_offline(dict(sig, PACK=2), target="pvc")
    with pytest.raises(xk.CompilationError, match="one dtype"):
        asm_variants.compile_offline(dict(sig, TWO=True), target="pvc")
    with pytest.raises(xk.CompilationError, match="one input per argument"):
        asm_variants.compile_offline(dict(sig, CONSTRAINTS="=rw,rw"), target="pvc")


def test_the_interpreter_refuses_it():
    import numpy as np
    k = xk.jit(rotate.fn, interpret=True)
    x = np.arange(8, dtype=np.uint32)
    with pytest.raises(xk.CompilationError, match="no inline assembly"):
        k[(1,)](x, x, x.copy(), 8, BLOCK=16)
