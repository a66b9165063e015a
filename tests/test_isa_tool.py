"""xekern.tools.isa: SPIR-V -> Intel GPU ISA with the offline toolchain (``python -m xekern
toolchain install``: ocloc, iga64 and spirv-val of the current IGC 2.x and of Debian 12's IGC 12504).

The modules are hand-written LLVM IR (HARDWARE.md's codegen recipes) compiled by xekern's own LLVM
worker, so these tests check the tool, not the frontend; one test runs a real xekern kernel.
CI installs the toolchain (.ci/run); a missing compiler fails these tests rather than skipping them.
"""
import pytest

import xekern as xk
import xekern.language as xl
from xekern.lowering import llvm
from xekern.tools import isa, toolchain
from xekern.tools.isa import IsaError, compile_isa, find_loops, loop_counts, parse_ptm, parse_spills, parse_zeinfo

COMPILERS = ["current", "12504"]

HEADER = 'target triple = "spirv64-unknown-unknown"\n'
DPAS16 = "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_sDv8_iDv8_f"
# SIMD8 (DG2): A and B are both int8, so Itanium mangling substitutes the second one (S_)
DPAS8 = "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iS_Dv8_f"
DPAS8_UNSUBSTITUTED = "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iDv8_iDv8_f"


def dpas_loop_kernel(n_acc: int = 1, barrier: bool = False) -> str:
    """A SIMD16 K loop: ``n_acc`` DPAS accumulators live across it, optionally a barrier per step."""
    acc = [f"  %c{j} = phi <8 x float> [zeroinitializer, %entry], [%d{j}, %loop]" for j in range(n_acc)]
    body, tail = [], []
    for j in range(n_acc):
        body += [f"  %o{j} = add i64 %off, {16 * j}",
                 f"  %pa{j} = getelementptr <8 x i16>, ptr addrspace(1) %a, i64 %o{j}",
                 f"  %va{j} = load <8 x i16>, ptr addrspace(1) %pa{j}",
                 f"  %d{j} = call spir_func <8 x float> @{DPAS16}(<8 x i16> %va{j}, <8 x i32> %vb, <8 x float> %c{j})"]
        tail += [f"  %q{j} = add i64 %l64, {16 * j}",
                 f"  %pc{j} = getelementptr <8 x float>, ptr addrspace(1) %c, i64 %q{j}",
                 f"  store <8 x float> %d{j}, ptr addrspace(1) %pc{j}"]
    if barrier:
        body.append("  call spir_func void @_Z7barrierj(i32 1)")
    return HEADER + "\n".join([
        f"declare spir_func <8 x float> @{DPAS16}(<8 x i16>, <8 x i32>, <8 x float>)",
        "declare spir_func void @_Z7barrierj(i32)",
        "declare spir_func i32 @_Z22get_sub_group_local_idv()",
        "define spir_kernel void @mm(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n)"
        " !intel_reqd_sub_group_size !0 {",
        "entry:",
        "  %lid = call spir_func i32 @_Z22get_sub_group_local_idv()",
        "  %l64 = zext i32 %lid to i64",
        "  br label %loop",
        "loop:",
        "  %i = phi i32 [0, %entry], [%in, %loop]",
        *acc,
        "  %i64 = zext i32 %i to i64",
        "  %off = add i64 %i64, %l64",
        "  %pb = getelementptr <8 x i32>, ptr addrspace(1) %b, i64 %off",
        "  %vb = load <8 x i32>, ptr addrspace(1) %pb",
        *body,
        "  %in = add i32 %i, 1",
        "  %cc = icmp slt i32 %in, %n",
        "  br i1 %cc, label %loop, label %exit",
        "exit:",
        *tail,
        "  ret void",
        "}",
        "!0 = !{i32 16}"])


def dpas8_kernel(name: str = DPAS8) -> str:
    """One SIMD8 DPAS (DG2's shape, A as int8)."""
    return HEADER + f"""declare spir_func <8 x float> @{name}(<8 x i32>, <8 x i32>, <8 x float>)
declare spir_func i32 @_Z22get_sub_group_local_idv()
define spir_kernel void @mm8(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c) !intel_reqd_sub_group_size !0 {{
  %lid = call spir_func i32 @_Z22get_sub_group_local_idv()
  %l64 = zext i32 %lid to i64
  %pa = getelementptr <8 x i32>, ptr addrspace(1) %a, i64 %l64
  %va = load <8 x i32>, ptr addrspace(1) %pa
  %pb = getelementptr <8 x i32>, ptr addrspace(1) %b, i64 %l64
  %vb = load <8 x i32>, ptr addrspace(1) %pb
  %r = call spir_func <8 x float> @{name}(<8 x i32> %va, <8 x i32> %vb, <8 x float> zeroinitializer)
  %pc = getelementptr <8 x float>, ptr addrspace(1) %c, i64 %l64
  store <8 x float> %r, ptr addrspace(1) %pc
  ret void
}}
!0 = !{{i32 8}}
"""


# LSC2DBlockRead with IGC 2.x's 13th operand (cache controls), which IGC 12504 ignores
BLOCK2D_KERNEL = HEADER + """declare <8 x i32> @llvm.genx.GenISA.LSC2DBlockRead.v8i32(i64, i32, i32, i32, i32, i32, i32, i32, i32, i32, i1, i1, i32)
define spir_kernel void @blk(ptr addrspace(1) %a, ptr addrspace(1) %c, i32 %n) !intel_reqd_sub_group_size !0 {
entry:
  %base = ptrtoint ptr addrspace(1) %a to i64
  %cb = ptrtoint ptr addrspace(1) %c to i64
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%in, %loop]
  %acc = phi <8 x i32> [zeroinitializer, %entry], [%acc2, %loop]
  call void asm sideeffect "lsc_load_block2d.ugm.ca.ca (M1, 16) %null:d16.1x16x16nn flat[$0,$1,$2,$3,$4,$5]", "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u"(i64 %base, i32 127, i32 63, i32 127, i32 0, i32 %i)
  %v = call <8 x i32> @llvm.genx.GenISA.LSC2DBlockRead.v8i32(i64 %base, i32 127, i32 63, i32 127, i32 0, i32 %i, i32 16, i32 16, i32 16, i32 1, i1 false, i1 true, i32 0)
  %acc2 = add <8 x i32> %acc, %v
  %in = add i32 %i, 16
  %cc = icmp slt i32 %in, %n
  br i1 %cc, label %loop, label %exit
exit:
  %e = extractelement <8 x i32> %acc2, i32 0
  call void asm sideeffect "lsc_store_block2d.ugm (M1, 16) flat[$0,$1,$2,$3,$4,$5] $6:d32.1x16x1nn", "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u,rw"(i64 %cb, i32 63, i32 7, i32 63, i32 0, i32 0, i32 %e)
  ret void
}
!0 = !{i32 16}
"""


def spirv(llir: str) -> bytes:
    return llvm.to_spirv(llir, want_llir=False)[0]


@pytest.fixture(scope="module")
def dpas_spv():
    return spirv(dpas_loop_kernel(barrier=True))


def test_toolchain_installed():
    """Both compilers are in the toolchain folder, recorded and runnable; the default is the current one."""
    for name, major in (("current", 24), ("12504", 22)):
        c = toolchain.get(name)
        assert int(c.ocloc_version.split(".")[0]) >= major and c.igc_version != "unknown", (name, c.manifest)
        packages = {p["package"]: p for p in c.manifest["packages"]}
        assert {"libc6", "intel-opencl-icd"} <= set(packages) and all(len(p["sha256"]) == 64 for p in packages.values())
        assert isa.ocloc_version(name) == c.ocloc_version and "pvc" in isa.ocloc_devices(name)
    assert toolchain.get().name == "current" and "bmg" in isa.ocloc_devices() and "ptl" in isa.ocloc_devices()
    assert toolchain.spirv_tool("spirv-val") is not None
    assert any(line.startswith("default for ISA checks: current") for line in toolchain.info())


def test_spirv_validate(dpas_spv):
    assert isa.spirv_validate(dpas_spv) == (True, "")
    bad = dpas_spv[:-8]  # cut the function's last instructions: a structurally invalid module
    ok, msg = isa.spirv_validate(bad)
    assert not ok and "error" in msg.lower(), msg
    ok, msg = isa.spirv_validate(b"\x03\x02\x23\x07" + b"\x00" * 3)
    assert not ok and msg


def test_missing_toolchain_names_the_command_that_installs_it(monkeypatch, tmp_path, dpas_spv):
    monkeypatch.setenv("XEKERN_TOOLCHAIN_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "")
    ok, msg = isa.spirv_validate(dpas_spv)
    assert not ok and "python -m xekern toolchain install" in msg
    with pytest.raises(IsaError, match="no offline GPU compiler is installed .*; install it with: python -m xekern toolchain install"):
        compile_isa(dpas_spv, "mm", "pvc")
    with pytest.raises(IsaError, match="the 12504 offline GPU compiler is not installed .* toolchain install 12504"):
        compile_isa(dpas_spv, "mm", "pvc", compiler="12504")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_pvc_dpas_loop(dpas_spv, compiler):
    r = compile_isa(dpas_spv, "mm", "pvc", compiler=compiler)
    assert r.compiler == compiler and r.compiler_version.startswith("ocloc ")
    assert (r.device, r.simd, r.grf_mode) == ("pvc", 16, 128)
    c = r.counts
    assert c.dpas == 1 and c.dpas_shapes == {"dpas.8x8": 1}
    assert c.barriers == 1 and c.sends["barrier.signal"] == 1 and c.sends["eot"] == 1
    assert c.sends["load.ugm"] >= 2 and c.sends["store.ugm"] >= 1
    assert c.scratch == 0 and c.calls == 0 and c.load_block2d == 0
    assert c.total == c.dpas + sum(c.sends.values()) + c.barriers + c.control + c.sync + c.other
    assert r.has_dpas and r.has_barriers and not r.spills and r.scratch_bytes == 0
    loop = loop_counts(r)
    assert loop.dpas == 1 and loop.barriers == 1 and loop.sends.get("eot", 0) == 0
    assert 0 < loop.total < c.total and loop.dpas_share == pytest.approx(1 / loop.total)
    text = r.summary()
    assert "128 GRF" in text and "dpas.8x8 x1" in text and "innermost loop" in text


@pytest.mark.parametrize("compiler", COMPILERS)
def test_pvc_grf_modes_and_spills(compiler):
    spv = spirv(dpas_loop_kernel(n_acc=24))  # 24 x 8 accumulator registers live across the loop
    small = compile_isa(spv, "mm", "pvc", grf_mode=128, compiler=compiler)
    assert small.grf_mode == 128 and small.options == isa.GRF_OPTIONS[128]
    assert small.spills and small.spills[0].regs == 128 and small.spilled_around > 0
    assert small.scratch_bytes > 0 and (small.uses_stateless_spill_fill or compiler == "current")
    assert small.counts.scratch_reads > 0 and small.counts.scratch_writes > 0
    assert loop_counts(small).scratch > 0
    large = compile_isa(spv, "mm", "pvc", grf_mode=256, compiler=compiler)
    assert large.grf_mode == 256 and "-ze-opt-large-register-file" in large.options
    assert not large.spills and large.scratch_bytes == 0 and large.counts.scratch == 0
    assert large.counts.dpas == small.counts.dpas == 24
    assert "spilled around" in small.summary() and "no spill" in large.summary()


@pytest.mark.parametrize("compiler", COMPILERS)
def test_pvc_block2d_load_prefetch_store(compiler):
    r = compile_isa(spirv(BLOCK2D_KERNEL), "blk", "pvc", compiler=compiler)
    c = r.counts
    assert (c.load_block2d, c.prefetch_block2d, c.store_block2d) == (1, 1, 1)
    loop = loop_counts(r)
    assert (loop.load_block2d, loop.prefetch_block2d, loop.store_block2d) == (1, 1, 0)


def test_dg2_dpas():
    r = compile_isa(spirv(dpas8_kernel()), "mm8", "dg2")
    assert (r.device, r.simd, r.grf_mode) == ("dg2-g10", 8, 128)
    assert r.counts.dpas == 1 and r.counts.dpas_shapes == {"dpas.8x8": 1} and r.has_dpas
    assert "(8|M0)" in next(ln for ln in r.text.splitlines() if "dpas" in ln)
    assert loop_counts(r) is None and not r.warnings


def test_dg2_unsubstituted_dpas_name_is_flagged():
    """IGC quirk: without the Itanium substitution the builtin stays an unresolved call: no dpas."""
    r = compile_isa(spirv(dpas8_kernel(DPAS8_UNSUBSTITUTED)), "mm8", "dg2")
    assert r.counts.dpas == 0 and r.counts.calls > 0 and not r.has_dpas
    assert any("could not resolve" in w for w in r.warnings)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_xekern_kernel(target):
    @xk.jit
    def add(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
        offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
        xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) + xl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    p = xk.pointer(xl.float32)
    c = add.compile_offline({"x_ptr": p, "y_ptr": p, "o_ptr": p, "n": xl.int32, "BLOCK": 256}, target=target)
    r = compile_isa(c.spirv, c.name, target)
    assert r.simd == xk.targets[target].sg_size
    assert r.counts.sends.get("load.ugm", 0) >= 2 and r.counts.sends.get("store.ugm", 0) >= 1
    assert r.counts.dpas == 0 and r.counts.calls == 0 and not r.spills


def test_errors(dpas_spv):
    with pytest.raises(IsaError, match="GRF modes"):
        compile_isa(dpas_spv, "mm", "dg2", grf_mode=256)
    with pytest.raises(IsaError, match="not an Intel GPU"):
        compile_isa(dpas_spv, "mm", "cpu")
    with pytest.raises(IsaError, match="unknown target"):
        compile_isa(dpas_spv, "mm", "nosuchgpu")
    with pytest.raises(IsaError, match="kernels in the binary: mm"):
        compile_isa(dpas_spv, "nosuchkernel", "pvc")
    with pytest.raises(IsaError, match="subgroup size 8"):  # IGC: PVC has no SIMD8
        compile_isa(spirv(dpas8_kernel()), "mm8", "pvc")
    with pytest.raises(IsaError, match="ocloc could not compile"):
        compile_isa(b"not spir-v", "mm", "pvc")


def test_bmg_device(dpas_spv):
    """bmg needs a newer compiler than Debian 12's 22.43: the current one knows it, the old one says so."""
    assert compile_isa(dpas_spv, "mm", "bmg").counts.dpas == 1
    with pytest.raises(IsaError) as e:
        compile_isa(dpas_spv, "mm", "bmg", compiler="12504")
    msg = str(e.value)
    assert "does not know device 'bmg'" in msg and "pvc" in msg and isa.ocloc_version("12504") in msg
    assert "toolchain install current" in msg


# ---- parsers on synthetic text ---------------------------------------------------------------------

def test_parse_spills():
    out = ("Compilation from IR - skipping loading of FCL\n\n"
           "warning: kernel gemm  compiled SIMD16 allocated 128 regs and spilled around 217\n\n"
           "[bmg-g21] warning: in kernel 'my_k': compiled SIMD32 allocated 256 regs and spilled around 2\n"
           "Build succeeded.\n")
    s = parse_spills(out)
    assert [(w.kernel, w.simd, w.regs, w.spilled_around) for w in s] == [("gemm", 16, 128, 217),
                                                                         ("my_k", 32, 256, 2)]
    assert parse_spills("Build succeeded.\n") == []


SYNTHETIC_ISA = """\
L0:
(W)     mov (16|M0)              r10.0<1>:f    0.0:f
        send.ugm (16|M0)         r20      r8      null:0  0x0            0x04403580           {$1} // wr:2+0, rd:4; load.ugm.d32x4.a64
L100:
        add (16|M0)              r4.0<1>:q     r4.0<1;1,0>:q     32:w
L200:
        dpas.8x8 (16|M0)         r10:f         r10:f             r27:bf            r23.0:bf         {$2}
        send.ugm (16|M0)         r30      r3      null:0  0x0            0x02400203           {$3} // wr:1+0, rd:4; load_block2d.ugm.d16.a64
        send.ugm (16|M0)         null     r3      null:0  0x0            0x02080203           {$4} // wr:1+0, rd:0; load_block2d.ugm.d16.a64.ca.ca
(W)     add (1|M0)               r1.15<1>:d    r1.15<0;1,0>:d    1:w
(W)     cmp (16|M0)   (lt)f0.0   null<1>:d     r1.15<0;1,0>:d    r1.14<0;1,0>:d   {I@1}
(W&f0.0) jmpi                                L200
(W&~f0.1) jmpi                               L400
(W)     send.dc0 (16|M0)         r3       r0      null:0  0x0            0x022C2000           {$5} // wr:1h+0, rd:2; hword scratch block read x4
        sync.nop                             null                             {Compacted,$5.dst}
(W)     jmpi                                 L100
L400:
(W)     send.gtwy (1|M0)         null     r36     null:0  0x0            0x02000004           {$3} // wr:1+0, rd:0; signal barrier
(W)     sync.bar                             0x0
        send.ugm (16|M0)         null     r7      r3:4    0x0            0x02000407           {$7} // wr:1+4, rd:0; store_block2d.ugm.d32.a64
(W)     send.gtwy (8|M0)         null     r127    null:0  0x0            0x02000010           {EOT} // wr:1+0, rd:0; end of thread
L9999:
        illegal
"""


def test_synthetic_counts_and_loops():
    c = isa.count_isa(SYNTHETIC_ISA)
    assert c.total == 17  # "illegal" padding is not an instruction
    assert (c.dpas, c.load_block2d, c.prefetch_block2d, c.store_block2d) == (1, 1, 1, 1)
    assert c.sends == {"load.ugm": 1, "barrier.signal": 1, "eot": 1}
    assert (c.barriers, c.scratch_reads, c.scratch_writes, c.control, c.sync, c.other) == (1, 1, 0, 3, 1, 4)
    loops = find_loops(SYNTHETIC_ISA)
    assert [(lp.label, lp.size) for lp in loops] == [("L200", 6), ("L100", 11)]  # the forward jmpi is no loop
    inner = loop_counts(SYNTHETIC_ISA)
    assert (inner.total, inner.dpas, inner.load_block2d, inner.prefetch_block2d, inner.control, inner.other) == \
        (6, 1, 1, 1, 1, 2)
    assert inner.scratch == 0 and loops[1].counts.scratch_reads == 1
    assert inner.dpas_share == pytest.approx(1 / 6)


def test_simt_while_loop_and_no_loop():
    text = ("L16:\n        add (16|M0)   r4.0<1>:d   r4.0<1;1,0>:d   1:w\n"
            "        while (16|M0)                        L16\n"
            "        join (16|M0)                         L64\nL64:\n"
            "(W)     send.gtwy (8|M0)  null  r127  null:0  0x0  0x02000010  {EOT} // wr:1+0, rd:0; end of thread\n")
    assert [(lp.label, lp.size) for lp in find_loops(text)] == [("L16", 2)]
    assert loop_counts("L0:\n        mov (1|M0)  r1.0<1>:d  0:w\n") is None


# PTM.txt as Debian's ocloc writes it (no patch-list headers): captured from a pvc dpas kernel with a
# barrier, 256 GRF, and a spilling gemm's MEDIA_VFE_STATE token.
SYNTHETIC_PTM = """\
ProgramBinaryHeader:
\t4 Magic 1229870147
\t4 NumberOfKernels 2
Kernel #0
KernelBinaryHeader:
\t4 KernelHeapSize 768
\tKernelName other
Kernel #1
KernelBinaryHeader:
\t4 KernelNameSize 4
\t4 KernelHeapSize 704
\tKernelName mm
Unidentified PatchToken:
\t4 Token 18
\t4 Size 16
\tHex 0 0 0 0 0 4 0 0
Unidentified PatchToken:
\t4 Token 23
\t4 Size 140
\tHex 0 0 0 0 0 0 0 0 0 0 0 0 10 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 0 0 1 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4 1 4 0 0 0 0 0 0 0 0 0
"""


# zeinfo as IGC 2.40 writes it for a 256-GRF kernel that spills (trimmed)
SYNTHETIC_ZEINFO = """\
---
version:         '1.73'
kernels:
  - name:            other
    execution_env:
      simd_size:       16
  - name:            gemm_kernel
    execution_env:
      grf_count:       256
      has_dpas:        true
      simd_size:       16
      spill_size:      8640
      barrier_count:   1
    payload_arguments:
      - arg_type:        arg_bypointer
        size:            8
    per_thread_memory_buffers:
      - type:            scratch
        usage:           single_space
        size:            16384
      - type:            global
        usage:           private_space
        size:            512
kernels_misc_info:
  - name:            gemm_kernel
"""


def test_parse_zeinfo():
    p = parse_zeinfo(SYNTHETIC_ZEINFO, "gemm_kernel")
    assert (p["NumGRFRequired"], p["HasDPAS"], p["LargestCompiledSIMDSize"], p["HasBarriers"]) == (256, 1, 16, 1)
    assert (p["SpillSize"], p["PerThreadScratchSpace"], p["PerThreadPrivateMemorySize"]) == (8640, 16384, 512)
    assert parse_zeinfo(SYNTHETIC_ZEINFO, "other") == {"NumGRFRequired": 128, "LargestCompiledSIMDSize": 16}
    with pytest.raises(IsaError, match="kernels there: other, gemm_kernel"):
        parse_zeinfo(SYNTHETIC_ZEINFO, "missing")


def test_parse_ptm():
    p = parse_ptm(SYNTHETIC_PTM, "mm")
    assert p["KernelHeapSize"] == 704 and "Magic" not in p
    assert (p["LargestCompiledSIMDSize"], p["HasBarriers"], p["CompiledSIMD16"]) == (16, 1, 1)
    assert (p["NumGRFRequired"], p["HasDPAS"], p["NumThreadsRequired"]) == (256, 1, 4)
    assert p["UsesStatelessSpillFill"] == 0 and p["PerThreadScratchSpace"] == 1024
    assert parse_ptm(SYNTHETIC_PTM, "other") == {"KernelHeapSize": 768}
    with pytest.raises(IsaError, match="kernels there: other, mm"):
        parse_ptm(SYNTHETIC_PTM, "missing")
