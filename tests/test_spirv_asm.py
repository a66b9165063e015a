"""Inline vISA through placeholder calls (xekern/lowering/spirv_asm.py): LLVM's SPIR-V backend stops
at 128-bit inline-asm operands, so codegen calls declarations named after the asm, and the module is
rewritten to SPV_INTEL_inline_assembly's ops afterwards. Checked on the module itself, with
spirv-val (on the module without the Intel ops, which Debian's spirv-val misreads) and with IGC."""
import os
import sys

import pytest

import xekern as xk
import xekern.language as xl
from xekern.lowering.spirv_asm import PREFIX, asm_name, lower_asm_calls, parse_name
from xekern.tools import spirv as sp
from xekern.tools.isa import compile_isa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm"))
from isa_report import signature  # noqa: E402

_ASM, _ASM_CALL, _FUNCTION_CALL = 5610, 5611, 57


@pytest.fixture(scope="module")
def flagship():
    from gemm import gemm_kernel
    return gemm_kernel.compile_offline(signature(xl.bfloat16, xl.float32, "nn", 256, 256, 32, 2, 2), target="pvc",
                                       num_subgroups=32)


def test_wide_block_reads_become_asm_calls(flagship):
    insts = sp.instructions(flagship.spirv)
    asm = {i.words[1]: i for i in insts if i.opcode == _ASM}
    calls = [i for i in insts if i.opcode == _ASM_CALL]
    assert PREFIX.encode() not in flagship.spirv, "a placeholder survived the rewrite"
    assert calls and all(c.words[2] in asm for c in calls)
    texts = {sp.words_string(a.words[4:]) for a in asm.values()}
    # the 32 x 16 x 2 reads of A and the 32 x 16 x 2 VNNI reads of B: 32 registers, twice what an LLVM
    # vector may hold: each lands in a named vISA register declared in a statement of its own; the
    # descriptor says 31 registers for 32, as in IGC's own encoding of such a read
    decls = {t.split()[1] for t in texts if t.startswith(".decl XKBLK") and "num_elts=512" in t}
    reads = [t for t in texts if t.startswith("raw_sends.15.1.0.32 ") and t.split()[-1].split(".")[0] in decls]
    assert decls and len(reads) == len(decls) and all(" 0x3f00" in t for t in reads), texts
    assert any(t.startswith("{") and "dpas.bf.bf.8.8" in t for t in texts), texts
    assert sp.validate(flagship.spirv) == []
    r = compile_isa(flagship.spirv, flagship.name, "pvc", grf_mode=256)
    assert r.counts.dpas > 0 and r.spilled_around == 0


def test_a_module_without_placeholders_is_left_as_is():
    @xk.jit
    def axpy(x_ptr, y_ptr, n, BLOCK: xl.constexpr):
        offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
        xl.store(y_ptr + offs, 2.0 * xl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    c = axpy.compile_offline(dict(x_ptr=xk.pointer(xl.float32), y_ptr=xk.pointer(xl.float32), n=xl.int32,
                                  BLOCK=64), target="cpu")
    assert lower_asm_calls(c.spirv) is c.spirv
    assert not [i for i in sp.instructions(c.spirv) if i.opcode in (_ASM, _ASM_CALL)]


def test_names_carry_text_and_constraints():
    name = asm_name(3, "raw_sends.15.1.0.16 (M1, 16) 0x0:ud 0x3000283:ud $1.0 %null.0 $0.0", "=rw,rw")
    assert parse_name(name) == ("raw_sends.15.1.0.16 (M1, 16) 0x0:ud 0x3000283:ud $1.0 %null.0 $0.0", "=rw,rw")
    with pytest.raises(ValueError, match="may not contain"):
        asm_name(0, "mov", "=rw|rw")
