"""Every GPU record against the current offline compiler (``python -m xekern toolchain``: ocloc 26.x /
IGC 2.x): small kernels compile for the record's ``ocloc_device``, disassemble with its
``iga_platform``, and the ISA shows what the record claims: the sub-group size, DPAS of the record's
width where it has DPAS, 2D block messages where it has 2D block IO (gathers where it has none), and
its largest GRF mode. Where the record has no DPAS (mtl) or no tf32, ``xl.dot`` must be refused
before codegen: IGC 2.40 would still write ``dpas`` for mtl-h, which that GPU has no engine for.

Which SPIR-V the kernels use is not a fact of the GPU but of the compiler, the emitter
(``lowering/emitters.py``): IGC 2.40 takes ``SPV_INTEL_2d_block_io`` from Xe-HPC on only, and
``SPV_INTEL_subgroup_matrix_multiply_accumulate`` on Xe-HPG and later except Meteor Lake and Arrow
Lake (IGC's SPIRVExtensions.td), although Arrow Lake H has DPAS. Records with 2D block IO get the
visa emitter, the others IGC's builtins; each case also compiles through the other emitters the
record and the current compiler allow."""
import re

import pytest

import xekern as xk
import xekern.language as xl
from test_tiles_device import copy_blocks, gemm_desc
from xekern.lowering import emitters
from xekern.tools.isa import compile_isa

P, I32 = xk.pointer, xl.int32
GPU_RECORDS = [n for n, t in xk.targets.items() if t.kind == "gpu"]


@xk.jit
def vadd(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=m) + xl.load(y_ptr + offs, mask=m), mask=m)


def isa(kernel, sig, target, **kw):
    """The ISA of the default emitter's code; the other emitters the record takes must compile too."""
    t = xk.targets[target]
    default = emitters.choose(t, emitters.OFFLINE["current"])
    assert default.name == ("visa" if t.has_block2d and t.has_dpas else "igc-builtins"), default
    for e in emitters.candidates(t, emitters.OFFLINE["current"])[1:]:
        other = kernel.compile_offline(sig, target=target, emitter=e.name)
        r = compile_isa(other.spirv, other.name, target, **kw)
        assert r.counts.calls == 0, f"{e.name}: an unresolved builtin became a call:\n" + r.summary()
    c = kernel.compile_offline(sig, target=target)
    r = compile_isa(c.spirv, c.name, target, **kw)
    assert r.counts.calls == 0, "an unresolved builtin became a call:\n" + r.summary()
    assert r.simd == xk.targets[target].sg_size, r.summary()
    return r


def dpas_lines(r):
    return [ln for ln in r.text.splitlines() if re.search(r"\bdpas\.", ln)]


@pytest.mark.parametrize("target", GPU_RECORDS)
def test_vector_add_in_the_largest_grf_mode(target):
    t = xk.targets[target]
    grf = max(t.grf_modes)
    r = isa(vadd, dict(x_ptr=P(xl.float32), y_ptr=P(xl.float32), o_ptr=P(xl.float32), n=I32, BLOCK=256), target,
            grf_mode=grf)
    assert r.grf_mode == grf and r.counts.dpas == 0, r.summary()
    assert any(k.startswith("load.ugm") for k in r.counts.sends), r.summary()


@pytest.mark.parametrize("target", GPU_RECORDS)
def test_tensor_descriptor_copy_is_2d_block_io_where_the_record_has_it(target):
    t = xk.targets[target]
    sig = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=I32, N=I32, BM=16, BN=16, TRANSPOSE=False)
    r = isa(copy_blocks, sig, target)
    if t.has_block2d:
        assert r.counts.load_block2d >= 1 and r.counts.store_block2d >= 1, r.summary()
        tr = isa(copy_blocks, dict(sig, BN=8, TRANSPOSE=True), target)
        assert "load_block2d.ugm.d32t" in tr.text, tr.summary()
    else:
        assert r.counts.load_block2d == 0 and r.counts.store_block2d == 0, r.summary()
        assert any(k.startswith("load.ugm") for k in r.counts.sends), r.summary()


def gemm_sig(ab, c):
    return dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(c), M=I32, N=I32, K=I32, BM=32, BN=32,
                BK={8: 64, 16: 32, 32: 16}[ab.bits])


@pytest.mark.parametrize("dtype", ["bf16", "tf32"])
@pytest.mark.parametrize("target", GPU_RECORDS)
def test_a_dot_is_dpas_of_the_records_width_or_refused(target, dtype):
    t = xk.targets[target]
    ab = xl.bfloat16 if dtype == "bf16" else xl.float32
    if dtype not in t.dpas:
        with pytest.raises(xk.CompilationError, match=f"{target} has no DPAS for"):
            gemm_desc.compile_offline(gemm_sig(ab, xl.float32), target=target)
        return
    r = isa(gemm_desc, gemm_sig(ab, xl.float32), target)
    lines = dpas_lines(r)
    assert len(lines) >= 1 and r.has_dpas, r.summary()
    sh = t.dpas[dtype]
    kind = {"bf16": ":bf", "tf32": ":tf32"}[dtype]
    for ln in lines:   # e.g. "dpas.8x8 (16|M0)  r3:f  r3:f  r35:bf  r11.0:bf": depth 8, repeat <= M, SIMD N
        assert re.search(rf"dpas\.8x[1-{sh.m}] \({sh.n}\|M0\)", ln) and kind in ln, ln


@pytest.mark.parametrize("target", GPU_RECORDS)
def test_float64_builds_or_is_refused_at_its_line(target):
    """A record with 64-bit floats builds a float64 vector add (the ISA computes in :df); dg2 has
    none (its driver would reject the module): xekern refuses the kernel first, naming the argument."""
    sig = dict(x_ptr=P(xl.float64), y_ptr=P(xl.float64), o_ptr=P(xl.float64), n=I32, BLOCK=256)
    if not xk.targets[target].fp64:
        with pytest.raises(xk.CompilationError, match=r"argument 'x_ptr' points to float64: float64 needs 64-bit "
                                                      rf"floating-point hardware, which {target} .* does not have"):
            vadd.compile_offline(sig, target=target)
        return
    r = isa(vadd, sig, target)
    assert ":df" in r.text, r.summary()
