"""The spirv-ext emitter (codegen/rules_spirv_ext.py): 2D block IO and DPAS as
OpSubgroup2DBlock*INTEL / OpSubgroupMatrixMultiplyAccumulateINTEL for current drivers.

The modules are checked by ``xekern.tools.spirv.validate`` (each op against its spec, the rest by
spirv-val), and each block message is compared with the one the igc-builtins emitter sends for the
same kernel."""
import os
import re
import sys

import pytest

import xekern as xk
import xekern.language as xl
from test_tiles_device import copy_blocks, gemm_desc, row_sums_advance
from xekern.tools import spirv as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm"))
from gemm import gemm_kernel  # noqa: E402
from isa_report import signature  # noqa: E402

P, I32 = xk.pointer, xl.int32
LOAD, TRANSFORM, TRANSPOSE = ("OpSubgroup2DBlockLoadINTEL", "OpSubgroup2DBlockLoadTransformINTEL",
                              "OpSubgroup2DBlockLoadTransposeINTEL")
PREFETCH, STORE, MMA = "OpSubgroup2DBlockPrefetchINTEL", "OpSubgroup2DBlockStoreINTEL", \
    "OpSubgroupMatrixMultiplyAccumulateINTEL"
FLAGS = {"bf16": 0x3000, "f16": 0xC00, "i8": 0x33, "ui8": 0x30, "f32": 0x300}


def genisa_reads(llir: str):
    """(kind, element bytes, width, height, count) of each IGC-builtin 2D block read in LLVM IR."""
    out = []
    for args in re.findall(r'call <\d+ x i\d+> @"?llvm\.genx\.GenISA\.LSC2DBlockRead\.\w+"?\(([^)]*)\)', llir):
        v = [a.split()[-1] for a in args.split(",")]
        bits, w, h, n, tr, vnni = (int(x) if x.lstrip("-").isdigit() else x for x in v[6:12])
        kind = TRANSPOSE if tr in (1, "true") else TRANSFORM if vnni in (1, "true") else LOAD
        out.append((kind, bits // 8, w, h, n))
    return sorted(out)


def check(c, table=True):
    problems = sp.validate(c.spirv)
    assert not problems, "\n".join(problems)
    if table:
        llir = c.asm["llir"]
        assert "GenISA" not in llir and "asm sideeffect" not in llir and "matrix_mad" not in llir, \
            "an IGC builtin is left in a module of the SPIR-V-ops table"
    return sp.shapes(c.spirv)


GEMMS = [(xl.bfloat16, "nn"), (xl.bfloat16, "tn"), (xl.float16, "nt"), (xl.int8, "nn"), (xl.int8, "tn"),
         (xl.float32, "nn")]


@pytest.mark.parametrize("ab,layout", GEMMS, ids=[f"{a.user_name}-{lay}" for a, lay in GEMMS])
def test_flagship_gemm_uses_the_spirv_ops(ab, layout):
    acc = xl.int32 if ab.is_int else xl.float32
    bk = {8: 64, 16: 32, 32: 16}[ab.bits]
    sig = signature(ab, acc, layout, 256, 256, bk, 2)
    new = gemm_kernel.compile_offline(sig, target="pvc", num_subgroups=32, emitter="spirv-ext")
    # igc-builtins: every 2D block read is IGC's LSC2DBlockRead intrinsic (none a raw_sends), which
    # ``genisa_reads`` sees in the LLVM IR
    old = gemm_kernel.compile_offline(sig, target="pvc", num_subgroups=32, emitter="igc-builtins")
    got = check(new)
    assert "SPV_INTEL_2d_block_io" in sp.extensions(new.spirv)
    assert "SPV_INTEL_subgroup_matrix_multiply_accumulate" in sp.extensions(new.spirv)
    assert not sp.ops(old.spirv), "the igc-builtins emitter must not emit the new ops"
    mma = [s for s in got if s[0] == MMA]
    # 32x64 per subgroup: 4 x 4 DPAS 8x16 per K step, 2 K steps in a BK tile
    assert len(mma) == 32 and {s[1:] for s in mma} == {(256 // ab.bits, 8, FLAGS[ab.name])}, mma
    # the same 2D block read messages as igc-builtins (same payload, same unpacking), but for tf32's
    # A fragments (8 rows of 8): igc-builtins reads them 8 dwords wide, two rows per register
    # (layouts.rows_per_register), this one element by element (SPV_INTEL_2d_block_io's narrow reads
    # are unchecked)
    reads = sorted(s for s in got if s[0] in (LOAD, TRANSFORM, TRANSPOSE))
    igc = genisa_reads(old.asm["llir_unoptimized"])
    narrow = [s for s in igc if s[0] == LOAD and s[2] < 16]
    assert bool(narrow) == (ab.bits == 32) and not [s for s in reads if s[0] == LOAD and s[2] < 16], (reads, igc)
    assert reads == [s for s in igc if s not in narrow], (reads, igc)
    if layout[0] == "t":  # 16-bit and int8 A^T: read as stored (VNNI), transposed through SLM
        assert not any(s[0] == TRANSPOSE for s in reads) and new.slm_bytes > 0, reads
    if ab.bits < 32:  # B is VNNI: a transform load, or (B^T) a 32-bit transposed one
        assert any(s[0] == (TRANSFORM if layout[1] == "n" else TRANSPOSE) for s in reads), reads
    assert [s for s in got if s[0] == PREFETCH], "the K-loop prefetches"
    assert {s[1:] for s in got if s[0] == STORE} == {(acc.itemsize, 16, 8, 1)}, "C is stored as 16x8 blocks"


def test_bmg_int8_a_transposed_through_slm():
    """bmg (merged B blocks) reads int8 A^T and B with VNNI reads of two payload sizes in one kernel:
    both go through the one Subgroup2DBlockLoadTransformINTEL declaration."""
    c = gemm_kernel.compile_offline(signature(xl.int8, xl.int32, "tn", 256, 256, 64, 2), target="bmg",
                                    num_subgroups=32, emitter="spirv-ext")
    got = check(c)
    assert len({s[1:] for s in got if s[0] == TRANSFORM}) == 2 and c.slm_bytes > 0, got


def test_per_op_kernels_use_the_spirv_ops():
    sig = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=I32, N=I32, BM=16, BN=16)
    plain = check(copy_blocks.compile_offline(dict(sig, TRANSPOSE=False), target="pvc", emitter="spirv-ext"))
    assert {s[0] for s in plain} == {LOAD, STORE}, plain
    tr = check(copy_blocks.compile_offline(dict(sig, BN=8, TRANSPOSE=True), target="pvc", emitter="spirv-ext"))
    assert TRANSPOSE in {s[0] for s in tr}, tr
    pre = check(row_sums_advance.compile_offline(
        dict(x_ptr=P(xl.float16), o_ptr=P(xl.float32), M=I32, K=I32, BM=16, BK=32), target="pvc", emitter="spirv-ext"))
    assert PREFETCH in {s[0] for s in pre} and LOAD in {s[0] for s in pre}, pre
    for ab, c in ((xl.bfloat16, xl.float32), (xl.uint8, xl.int32)):
        g = check(gemm_desc.compile_offline(dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(c), M=I32, N=I32, K=I32, BM=32,
                                                 BN=32, BK=256 // ab.bits), target="pvc", emitter="spirv-ext"))
        assert {s[3] for s in g if s[0] == MMA} == {FLAGS[ab.name]}, g


def test_not_for_gpus_without_2d_block_io():
    """dg2 (and Xe-LPG) have no 2D block IO, and IGC 2.40 takes SPV_INTEL_2d_block_io only from Xe-HPC
    on: the emitter is not offered there; IGC's builtins give the same 8-wide dpas."""
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), M=I32, N=I32, K=I32, BM=32, BN=32,
               BK=32)
    with pytest.raises(xk.LaunchError, match="spirv-ext emitter is for GPUs with 2D block IO"):
        gemm_desc.compile_offline(sig, target="dg2", emitter="spirv-ext")
    c = gemm_desc.compile_offline(sig, target="dg2")
    assert c.asm["emitter"].startswith("igc-builtins") and not sp.ops(c.spirv)


def test_emitter_is_chosen_by_driver_knob_and_option(monkeypatch):
    sig = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=I32, N=I32, BM=16, BN=16, TRANSPOSE=False)
    monkeypatch.delenv("XEKERN_EMITTER", raising=False)
    for target in ("pvc", "bmg"):  # the current compiler takes the ops, but inline vISA is chosen first
        c = copy_blocks.compile_offline(sig, target=target)
        assert c.asm["emitter"].startswith("visa") and not sp.ops(c.spirv), c.asm["emitter"]
    assert sp.ops(copy_blocks.compile_offline(sig, target="bmg", emitter="spirv-ext").spirv)
    with pytest.raises(xk.LaunchError, match="spirv-ext emitter needs a driver that takes SPV_INTEL_2d_block_io"):
        copy_blocks.compile_offline(sig, target="bmg", compiler="12504", emitter="spirv-ext")
    with pytest.raises(xk.LaunchError, match="visa emitter writes 2D block messages and DPAS"):
        copy_blocks.compile_offline(sig, target="dg2", emitter="visa")
    monkeypatch.setenv("XEKERN_EMITTER", "spirv-ext")
    assert sp.ops(copy_blocks.compile_offline(sig, target="pvc").spirv), "XEKERN_EMITTER=spirv-ext on pvc"
    assert not sp.ops(copy_blocks.compile_offline(sig, target="cpu").spirv), "the CPU device never gets it"
    monkeypatch.setenv("XEKERN_EMITTER", "igc-builtins")
    c = copy_blocks.compile_offline(sig, target="bmg")
    assert c.asm["emitter"].startswith("igc-builtins") and "GenISA.LSC2DBlockRead" in c.asm["llir_unoptimized"]


def test_checker_catches_a_broken_op():
    """The spec check is not vacuous: a store whose payload pointer is the base pointer is refused."""
    sig = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=I32, N=I32, BM=16, BN=16, TRANSPOSE=False)
    spirv = bytearray(copy_blocks.compile_offline(sig, target="pvc", emitter="spirv-ext").spirv)
    store = next(i for i in sp.instructions(bytes(spirv)) if i.opcode == 6235)
    words = list(store.words)
    words[4] = words[5]  # payload := the CrossWorkgroup base pointer
    at = (store.offset + 1) * 4
    spirv[at:at + 4 * len(words)] = b"".join(w.to_bytes(4, "little") for w in words)
    assert any("payload pointer is not a Function pointer" in p for p in sp.check_ops(bytes(spirv)))
