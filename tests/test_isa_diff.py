"""The differential check (xekern/tools/isa_diff.py): xekern's hand-written messages and DPAS
(the ``visa`` emitter) against IGC's own lowering of the standard SPIR-V ops (``spirv-ext``), both
compiled with the current compiler for pvc and for bmg (Xe2) and run by the ISA evaluator
(isa_eval.py). Nothing runs on a GPU.

The evaluator is checked on small ISA listings whose outcome is worked out by hand (pvc's and
Xe2's); the check on a corpus of kernels on each target of ``TARGETS`` (the flagship GEMM in every
dtype and layout, tensor-descriptor kernels; bmg cases are named ``<case>@bmg``); and the check's
teeth, on a hand-written descriptor bit made wrong on purpose (on bmg, a bit pvc does not have).

It found two real discrepancies, both fixed, which the corpus now guards: a K loop's payload add
(``add (M1, 32)`` in recurrence.py) ran without NoMask, so in a SIMD16 thread the second message
of each pair never advanced (every flagship GEMM); and 2D block stores of fewer than 128 bits of
rows per lane packed them into one wide integer, which IGC lays out lane by lane, while the
message reads row by row. On bmg it found none.

    XEKERN_TOOLCHAIN_DIR=/tmp/tcx python -m pytest tests/test_isa_diff.py -q
    python tests/test_isa_diff.py gemm-bf16-nn gemm-bf16-nn@bmg [--all-lanes]      # cases' reports
"""
import dataclasses
import functools
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":   # as a script: this checkout's xekern, not an installed one
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "gemm"))
sys.path.insert(0, HERE)

import xekern as xk  # noqa: E402
import xekern.language as xl  # noqa: E402
from xekern.tools import isa_diff as D  # noqa: E402
from xekern.tools import isa_eval as ev  # noqa: E402
from xekern.tools import toolchain  # noqa: E402
from gemm import gemm_kernel  # noqa: E402
from isa_report import signature  # noqa: E402
from test_levels import sg_gemm  # noqa: E402
from test_memory_safety import desc_edges  # noqa: E402
from test_tiles_device import copy_blocks, gemm_desc, row_sums_advance  # noqa: E402

P, I32 = xk.pointer, xl.int32
GRF = ev.GRF


def _have_current_compiler() -> bool:
    try:
        toolchain.get("current")
        return True
    except toolchain.ToolchainError:
        return False


needs_compiler = pytest.mark.skipif(not _have_current_compiler(),
                                    reason=f"the current Intel compiler is not installed ({toolchain.INSTALL_COMMAND})")


# ---- the evaluator on listings worked out by hand --------------------------------------------------------

def run_listing(text: str, r1: dict = (), buffers=(), simd: int = 16, dispatch_mask=None, platform: str = "12p72",
                crossthread: bytes = bytes(64), inline: bytes = b""):
    """Run an ISA listing as one SIMD16 thread of ``platform`` (an iga64 name); ``r1``: dword
    index -> value set before it runs."""
    keys = ev.Interner()
    mem = ev.Memory(list(buffers), crossthread, keys)
    wg = ev.Workgroup(ev.Program.from_text(text, platform), simd, 1, mem, keys, dispatch_mask=dispatch_mask,
                      inline=inline)
    t = wg.threads[0]
    for i, v in dict(r1).items():
        t.cells[GRF + 4 * i:GRF + 4 * i + 4] = list(int(v).to_bytes(4, "little"))
    wg.run()
    return t, keys


def dwords(t, reg: int, n: int = 16):
    return [int.from_bytes(bytes(t.cells[reg * GRF + 4 * i:reg * GRF + 4 * i + 4]), "little") for i in range(n)]


EOT = ("(W)     send.gtwy (1|M0)         null     r127    null:0  0x0            0x02000010           {EOT} "
       "// wr:1+0, rd:0; end of thread\n")

# A VNNI 2D block load whose payload is built the way IGC and xekern build them: the base and the
# surface from arguments (r1), x in lane 5 only by a per-lane select, y and the block shape as
# constants. Worked out by hand: base 0x2_0000_0040, width 128 B, 32 rows, pitch 256 B, x 6, y 3,
# one block 16 rows x 16 columns of 16-bit data -> 8 GRFs from r20.
VNNI_LOAD = """
(W)     mov (8|M0)               r10.0<1>:ud   0x0:ud
(W)     mov (2|M0)               r10.0<1>:ud   r1.0<1;1,0>:ud
(W)     add (1|M0)               r10.2<1>:d    r1.2<0;1,0>:d     -1:w
(W)     mov (1|M0)               r10.3<1>:ud   0x1F:uw
(W)     mov (1|M0)               r10.4<1>:ud   0xFF:uw
(W)     mov (8|M0)               r3.0<1>:w     0x76543210:v
(W)     add (8|M0)               r3.8<1>:w     r3.0<1;1,0>:w     8:w
        cmp (16|M0)   (eq)f0.0   null<1>:w     r3.0<1;1,0>:w     5:w
(f0.0)  sel (16|M0)              r11.0<1>:d    r1.3<0;1,0>:d     0:w
        add (16|M0)              r10.0<1>:d    r10.0<1;1,0>:d    r11.0<1;1,0>:d
(W)     mov (1|M0)               r10.6<1>:d    3:w
(W)     mov (1|M0)               r10.7<1>:ud   0xF0F:uw
(W)     mov (1|M0)               null<1>:ud    0x30433:ud
        send.ugm (16|M0)         r20      r10     null:0  0x0            0x02800283           {$1} \
// wr:1+0, rd:8; load_block2d.ugm.d16v.a64
""" + EOT


def test_a_hand_built_vnni_load_reads_the_payload_and_lays_out_the_block_as_worked_out():
    buf = ev.Buffer("a", 0x2_0000_0000, 32 * 256, 2, 128)
    t, keys = run_listing(VNNI_LOAD, {0: 0x40, 1: 0x2, 2: 128, 3: 6}, [buf])
    (e,) = [x for x in t.events if x.kind == "block2d"]
    assert e.desc.name == "load_block2d.ugm.d16v.a64" and e.desc.vnni and e.desc.rlen == 8
    b = e.block
    assert (b.base, b.width, b.height, b.pitch, b.x, b.y, b.w, b.h, b.n) == \
        (0x2_0000_0040, 127, 31, 255, 6, 3, 16, 16, 1), b.fields()
    assert not e.note, e.note
    # element (row 3 + 3, column 6 + 2) of the surface: address base + 6 * 256 + 8 * 2, buffer offset
    # 0x40 + 1552 = 1616; VNNI puts block row 3, column 2 in dword row 3 // 2 = 1 (16 dwords a row),
    # dword 2, high half: byte (1 * 16 + 2) * 4 + 2 = 74 of the response
    cells = t.cells[20 * GRF + 74:20 * GRF + 76]
    assert [ev.split_byte(c) for c in cells] == [(keys.key(("mem", "a")), 1616), (keys.key(("mem", "a")), 1617)]
    # and block row 2, column 2 is the low half of the same dword
    assert ev.split_byte(t.cells[20 * GRF + 72])[1] == 0x40 + 5 * 256 + 8 * 2
    inside = sum(n for _, _, n, a in e.elems if a is not None)
    assert inside == 256, e.elems


def _xe2_load(ex_desc: int, name: str) -> str:
    """VNNI_LOAD on Xe2, its descriptor carrying immediate offsets ``ex_desc`` (iga: ``name``)."""
    old = "null:0  0x0            0x02800283           {$1} // wr:1+0, rd:8; load_block2d.ugm.d16v.a64"
    assert old in VNNI_LOAD
    new = f"null:0  0x{ex_desc:X}            0x02800283           {{$1}} // wr:1+0, rd:8; {name}"
    return VNNI_LOAD.replace(old, new)


@pytest.mark.parametrize("ex_desc, name, x, y", [
    (0x0, "load_block2d.ugm.d16v.a64", 6, 3),
    (0x1010000, "load_block2d.ugm.d16v.a64.flat[A+(0x10,0x4)]", 6 + 16, 3 + 4),
    (0x3FC000, "load_block2d.ugm.d16v.a64.flat[A+(-0x4,0x0)]", 6 - 4, 3)])
def test_xe2_adds_a_2d_block_message_s_immediate_offsets_to_its_payload(ex_desc, name, x, y):
    """Xe2's ex_desc bits 21:12 / 31:22 (signed) are added to the payload's x (elements) and y
    (rows): the listing of VNNI_LOAD with offsets reads where the payload plus them says."""
    buf = ev.Buffer("a", 0x2_0000_0000, 32 * 256, 2, 128)
    t, keys = run_listing(_xe2_load(ex_desc, name), {0: 0x40, 1: 0x2, 2: 128, 3: 6}, [buf], platform="xe2")
    (e,) = [x for x in t.events if x.kind == "block2d"]
    assert (e.desc.name, e.desc.message) == (name, "load_block2d.ugm.d16v.a64")
    assert (e.block.x, e.block.y) == (x, y) and not e.note, e.block.fields()
    # block row 3, column 2 (register bytes 74-75, as in the test above) is surface element (y + 3, x + 2)
    off = 0x40 + (y + 3) * 256 + (x + 2) * 2
    assert [ev.split_byte(c) for c in t.cells[20 * GRF + 74:20 * GRF + 76]] == \
        [(keys.key(("mem", "a")), off), (keys.key(("mem", "a")), off + 1)]


def test_the_same_descriptor_bits_are_read_per_platform():
    """IGC's argument load: the cache-control field is bits 19:17 on pvc (4: ca.ca) and 19:16 on
    Xe2 (9: L1 cached, L3 constant-cached); a value iga would read by bits 19:17 alone while bit 16
    is set is refused, as are Xe2's load-only values on a store."""
    pvc, xe2 = ev.msg.PLATFORMS["12p72"], ev.msg.PLATFORMS["xe2"]
    assert ev.msg.decode_lsc(0x6219C500, 0xFF000000, "ugm", pvc).name == "load.ugm.d32x8t.a32.ca.ca.bti[255]"
    assert ev.msg.decode_lsc(0x6219C500, 0xFF000000, "ugm", xe2).name == "load.ugm.d32x8t.a32.ca.cc.bti[255]"
    assert ev.msg.decode_lsc(0x02880203, 0, "ugm", xe2).cache_name == "ca.ca"      # pvc's 4 << 17
    with pytest.raises(ev.msg.MessageError, match=r"cache-control field 0x3 \(descriptor bits 19:16\)"):
        ev.msg.decode_lsc(0x02830203, 0, "ugm", xe2)
    with pytest.raises(ev.msg.MessageError, match="store_block2d: cache-control field 0x9"):
        ev.msg.decode_lsc(0x02090007, 0, "ugm", xe2)
    with pytest.raises(ev.msg.MessageError, match="immediate address offset"):
        ev.msg.decode_lsc(0x6219C500, 0xFF001000, "ugm", xe2)
    with pytest.raises(ev.EvalError, match="platforms"):
        ev.Program.from_text(EOT, "12p71")


def test_xe2_inline_data_is_in_r1_and_the_argument_load_reads_the_rest():
    """On Xe2 the dispatch delivers the first bytes of the cross-thread data in r1 (inline data);
    the prolog's load from binding table entry 255 reads the rest (the indirect data), as IGC's
    .inputs table says (``isa_diff._check_inputs``)."""
    text = """
(W)     and (1|M0)               r127.0<1>:ud  r0.0<0;1,0>:ud    0xFFFFFFC0:ud
(W)     send.ugm (1|M0)          r2       r127    null:0  0xFF000000            0x6219C500           {A@1,$0} \
// wr:1+0, rd:1; load.ugm.d32x8t.a32.ca.cc.bti[255]
(W)     add (1|M0)               r3.0<1>:d     r1.4<0;1,0>:d     r2.1<0;1,0>:d
""" + EOT
    data = bytes(range(64))
    t, _ = run_listing(text, platform="xe2", crossthread=data[32:], inline=data[:32])
    word = lambda o: int.from_bytes(data[o:o + 4], "little")  # noqa: E731
    assert dwords(t, 3, 1) == [word(16) + word(36)]


def test_an_inputs_table_unlike_the_check_s_model_of_argument_delivery_is_refused():
    v = D.Variant("visa", "", "", 16, 1, False, [], {}, [("r1", "inline", 0), ("r2+0x4", "cti", 0x24)], "xe2", 32)
    D._check_inputs(D.Case("t", None, {}, {}, {}), v, 64)
    v.inputs.append(("r3", "cti", 0x28))
    with pytest.raises(D.IsaDiffError, match=r"from cti\+0x28 at r3, not where .* \(r2\+0x8\)"):
        D._check_inputs(D.Case("t", None, {}, {}, {}), v, 64)


def test_a_simd32_instruction_without_nomask_leaves_channels_16_to_31_of_a_simd16_thread():
    text = """
(W)     mov (16|M0)              r10.0<1>:d    0:w
(W)     mov (16|M0)              r11.0<1>:d    0:w
        add (32|M0)              r10.0<1>:d    r10.0<1;1,0>:d    5:w
(W)     add (32|M0)              r12.0<1>:d    r10.0<1;1,0>:d    1:w
""" + EOT
    t, _ = run_listing(text)
    assert dwords(t, 10) == [5] * 16 and dwords(t, 11) == [0] * 16, "channels 16-31 are off at SIMD16 dispatch"
    assert dwords(t, 12) == [6] * 16 and dwords(t, 13) == [1] * 16, "NoMask runs all 32"
    t, _ = run_listing(text, dispatch_mask=(1 << 32) - 1)
    assert dwords(t, 11) == [5] * 16


def test_goto_turns_lanes_off_until_their_join():
    text = """
(W)     mov (8|M0)               r3.0<1>:w     0x76543210:v
(W)     add (8|M0)               r3.8<1>:w     r3.0<1;1,0>:w     8:w
(W)     mov (16|M0)              r4.0<1>:d     0:w
        cmp (16|M0)   (lt)f0.0   null<1>:w     r3.0<1;1,0>:w     4:w
(f0.0)  goto (16|M0)                         L100                  L100
        mov (16|M0)              r4.0<1>:d     7:w
L100:
        join (16|M0)                         L200
L200:
        add (16|M0)              r4.0<1>:d     r4.0<1;1,0>:d     1:w
""" + EOT
    t, _ = run_listing(text)
    assert dwords(t, 4) == [1] * 4 + [8] * 12


def test_integer_ops_regions_and_flags():
    text = """
(W)     mov (8|M0)               r3.0<1>:w     0x76543210:v
(W)     mov (8|M0)               r3.8<1>:w     -1:w
(W)     mov (16|M0)              r4.0<1>:d     r3.0<1;1,0>:w
(W)     mov (16|M0)              r5.0<1>:d     r3.0<1;1,0>:uw
(W)     mov (16|M0)              r6.0<2>:b     r3.0<1;1,0>:w
(W)     mov (16|M0)              r7.0<1>:d     r6.0<2;1,0>:ub
(W)     asr (1|M0)               r8.0<1>:d     r4.8<0;1,0>:d     31:w
(W)     shr (1|M0)               r8.1<1>:d     r5.8<0;1,0>:d     4:w
(W)     bfn.(s0&s1|s2) (1|M0)    r8.2<1>:ud    r4.3<0;0>:ud      r4.5<0;0>:ud      r4.6<0>:ud
(W)     add3 (1|M0)              r8.3<1>:d     r4.7<0;0>:d       r4.6<0;0>:d       -r4.5<0>:d
(W)     mul (1|M0)               acc0.0<1>:d   r5.8<0;1,0>:d     r5.8<0;1,0>:uw
(W)     mach (1|M0)              r8.4<1>:d     r5.8<0;1,0>:ud    r5.8<0;1,0>:ud
(W)     macl (1|M0)              r8.5<1>:d     r5.8<0;1,0>:ud    r5.8<0;1,0>:ud
(W)     sel (1|M0)    (lt)f1.0   r8.6<1>:d     r4.7<0;1,0>:d     r4.3<0;1,0>:d
(W)     cmp (16|M0)   (gt)f1.1   null<1>:d     r4.0<1;1,0>:d     2:w
(W)     mov (1|M0)               r9.0<1>:uw    f1.1<0;1,0>:uw
(W)     mov (1|M0)               r9.1<1>:uw    0x0:uw
""" + EOT
    t, _ = run_listing(text)
    assert dwords(t, 4) == list(range(8)) + [0xFFFFFFFF] * 8             # :w sign-extends
    assert dwords(t, 5) == list(range(8)) + [0xFFFF] * 8                  # :uw zero-extends
    assert dwords(t, 7) == list(range(8)) + [0xFF] * 8                    # bytes of a stride-2 region
    d = dwords(t, 8, 7)
    assert d[0] == 0xFFFFFFFF and d[1] == 0xFFF
    assert d[2] == (3 & 5) | 6 and d[3] == 7 + 6 - 5
    assert d[4] == (0xFFFF * 0xFFFF) >> 32 and d[5] == (0xFFFF * 0xFFFF) & 0xFFFFFFFF
    assert d[6] == 3                                                      # sel.lt: the minimum
    assert dwords(t, 9, 1) == [0b11111000]                               # lanes 3..7 > 2; lanes 8-15 are -1


def test_an_unknown_instruction_is_named_not_guessed():
    text = "(W)     mov (1|M0)               r10.0<1>:ud   0x1:ud\n" \
           "(W)     rol (1|M0)               r10.0<1>:ud   r10.0<0;1,0>:ud   0x3:uw\n" + EOT
    with pytest.raises(ev.EvalError, match=r"'rol' is not one the evaluator knows: instruction 1: \(W\) rol "):
        run_listing(text)


def test_a_float_immediate_iga_printed_inexactly_is_refused():
    text = "(W)     mov (1|M0)               r4.0<1>:f     2.524355e-29:f\n" + EOT
    with pytest.raises(ev.EvalError, match="printed in decimal"):
        run_listing(text)
    t, _ = run_listing("(W)     mov (1|M0)               r4.0<1>:f     0x10000000:f\n" + EOT)
    assert dwords(t, 4, 1) == [0x10000000]


def test_an_unknown_send_descriptor_is_refused():
    text = "        send.ugm (16|M0)         r20      r10     null:0  0x0            0x0280023F" \
           "           {$1} // wr:1+0, rd:8; ???\n" + EOT
    with pytest.raises(ev.EvalError, match="LSC opcode 0x3f"):
        run_listing(text)


# ---- the corpus --------------------------------------------------------------------------------------------

GEMM_DTYPES = {"bf16": (xl.bfloat16, xl.float32, 32), "f16": (xl.float16, xl.float32, 32),
               "int8": (xl.int8, xl.int32, 64)}
# the targets whose default emitter is visa, each with the whole corpus; a case's name is
# suffixed "@<target>" but on pvc (the names the corpus has always had)
TARGETS = ("pvc", "bmg")


def case_name(name: str, target: str) -> str:
    return name if target == "pvc" else f"{name}@{target}"


def gemm_case(dtype: str, layout: str, target: str = "pvc") -> D.Case:
    """The flagship GEMM (examples/gemm: 256x256 tile, 32 subgroups, 256 GRF, 2 K steps per K-loop
    iteration, prefetch distance 2; the same configuration on pvc and bmg) on a problem a little
    smaller than one tile in M and N (edges), its K loop running 3 iterations; threads 0 and 31 of
    workgroup 0 (all 32 for tn, whose A^T goes through SLM). bf16 nn also runs workgroup 5 of a
    640x640 problem: tile (512, 256), which the kernel finds with integer divisions."""
    ab, acc, bk = GEMM_DTYPES[dtype]
    size = 3 * 2 * bk                            # 3 K-loop iterations of 2 K steps
    m = n = 640 if (dtype, layout) == ("bf16", "nn") else size
    k = size
    shapes = {"a_ptr": (k, m) if layout[0] == "t" else (m, k), "b_ptr": (n, k) if layout[1] == "t" else (k, n),
              "c_ptr": (m, n), "bias_ptr": (1, n)}
    groups = ((0, 0, 0), (5, 0, 0)) if (dtype, layout) == ("bf16", "nn") else ((0, 0, 0),)
    return D.Case(case_name(f"gemm-{dtype}-{layout}", target), gemm_kernel,
                  signature(ab, acc, layout, 256, 256, bk, 2, 2),
                  dict(M=m, N=n, K=k, stride_ab=0, stride_bb=0, stride_cb=0), shapes, num_subgroups=32,
                  grf_mode=256, groups=groups, threads=(0, 31), target=target)


def small_cases(target: str = "pvc"):
    """The tensor-descriptor kernels of tests/test_tiles_device.py and the subgroup-level GEMM,
    on edges (sizes that are not multiples of the blocks) and in two workgroups each."""
    return [dataclasses.replace(c, name=case_name(c.name, target), target=target) for c in _small_cases()]


def _small_cases():
    f32 = dict(x_ptr=P(xl.float32), o_ptr=P(xl.float32), M=I32, N=I32)
    out = [
        D.Case("copy_blocks", copy_blocks, dict(f32, BM=16, BN=16, TRANSPOSE=False), dict(M=37, N=53),
               dict(x_ptr=(37, 53), o_ptr=(37, 53)), groups=((0, 0, 0), (1, 2, 0))),
        D.Case("copy_blocks-transposed", copy_blocks, dict(f32, BM=16, BN=8, TRANSPOSE=True), dict(M=37, N=53),
               dict(x_ptr=(37, 53), o_ptr=(53, 37)), groups=((0, 0, 0), (1, 2, 0))),
        D.Case("row_sums_advance", row_sums_advance, dict(x_ptr=P(xl.float16), o_ptr=P(xl.float32), M=I32, K=I32,
                                                          BM=16, BK=32),
               dict(M=45, K=130), dict(x_ptr=(45, 130), o_ptr=(1, 45)), groups=((0, 0, 0), (2, 0, 0))),
    ]
    out.append(D.Case("sg_gemm", sg_gemm, dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32),
                                               M=I32, N=I32, K=I32, BM=8, BN=16, BK=16),
                      dict(M=45, N=48, K=48), dict(a_ptr=(45, 48), b_ptr=(48, 48), c_ptr=(45, 48)),
                      groups=((0, 0, 0), (1, 2, 0))))
    for name, ab, acc, bk in (("bf16", xl.bfloat16, xl.float32, 32), ("u8", xl.uint8, xl.int32, 64)):
        m, n, k = 40, 48, 3 * bk
        out.append(D.Case(f"gemm_desc-{name}", gemm_desc, dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(acc), M=I32, N=I32,
                                                               K=I32, BM=32, BN=32, BK=bk),
                          dict(M=m, N=n, K=k), dict(a_ptr=(m, k), b_ptr=(k, n), c_ptr=(m, n)),
                          groups=((0, 0, 0), (1, 1, 0))))
    # blocks of half a register (4 subgroups of 2 rows x 16 bytes), hanging over the edges
    i8 = P(xl.int8)
    out.append(D.Case("desc_edges-i8", desc_edges, dict(x_ptr=i8, o_ptr=i8, dump_ptr=i8, M=I32, N=I32, LD=I32, OM=I32,
                                                        ON=I32, BM=8, BN=16),
                      dict(M=37, N=53, LD=64, OM=-5, ON=-3), dict(x_ptr=(37, 64), o_ptr=(37, 64), dump_ptr=(80, 128)),
                      groups=((0, 0, 0), (2, 3, 0))))
    return out


CASES = {c.name: c for t in TARGETS for c in [gemm_case(d, lay, t) for d in GEMM_DTYPES
                                              for lay in ("nn", "nt", "tn", "tt")] + small_cases(t)}


@functools.lru_cache(maxsize=None)
def session(name: str) -> D.Session:
    """Each case compiled with both emitters once per test module, its baseline run once."""
    return D.Session(CASES[name])


@functools.lru_cache(maxsize=None)
def result(name: str, all_lanes: bool = False) -> D.DiffResult:
    return session(name).check(all_lanes=all_lanes)


@needs_compiler
@pytest.mark.parametrize("name", list(CASES))
def test_xekern_messages_and_dpas_do_what_igc_does(name):
    """Every 2D block message (descriptor and payload), dpas (operands by provenance, chains),
    SLM message, barrier and stored byte of the hand-written path matches IGC's lowering."""
    r = result(name)
    assert r.ok, r.report()


@needs_compiler
@pytest.mark.parametrize("target", TARGETS)
def test_division_finds_the_tile_of_workgroup_5(target):
    """bf16 nn, 640x640: workgroup 5 computes tile (512, 256) (GROUP_M 8: pid // in_group, pid % group_m),
    found by IGC's integer-division sequences (float reciprocal, RTZ double mad): thread 0's A rows
    start at 512, its B columns at 256 (on bmg, payload coordinates plus immediate offsets)."""
    name = case_name("gemm-bf16-nn", target)
    r = result(name)
    _, base = r.runs[1]
    bufs = {b.name: b for b in D.buffers(CASES[name])}
    loads = [e for e in base.threads[0].events if e.kind == "block2d" and e.desc.rlen]
    assert min(e.block.y for e in loads if e.block.base == bufs["a_ptr"].base) == 512
    assert min(e.block.x for e in loads if e.block.base == bufs["b_ptr"].base) == 256


# ---- the check's teeth ---------------------------------------------------------------------------------

def _corrupted(name: str, monkeypatch, **constants) -> D.DiffResult:
    """The check of case ``name`` with xekern's hand-written descriptor constants replaced
    (lsc.py's ``LSC_*``), against the cached IGC baseline."""
    from xekern.lowering.codegen import lsc
    s = session(name)   # (first: a session made under the patch would keep its corrupted compile for every test)
    for k, v in constants.items():
        monkeypatch.setattr(lsc, k, v)
    v = D.compile_variant(s.case, D.SUBJECT)
    return D.Session(s.case, variants={D.SUBJECT: v, D.BASELINE: s.variants[D.BASELINE]}).check()


@needs_compiler
def test_a_wrong_vnni_bit_is_caught_and_the_message_named(monkeypatch):
    r = _corrupted("gemm_desc-bf16", monkeypatch, LSC_VNNI=0)
    assert not r.ok
    text = r.report()
    first = r.findings[0]
    assert "2D block messages touch different elements" in first.what, text
    assert any("load_block2d.ugm.d16.a64 b_ptr" in x for x in first.left), text      # B read without VNNI
    assert any("load_block2d.ugm.d16v.a64 b_ptr" in x for x in first.right), text
    assert any("dpas" in f.what for f in r.findings), text


@needs_compiler
def test_wrong_cache_bits_are_caught_and_the_message_named(monkeypatch):
    r = _corrupted("row_sums_advance", monkeypatch, LSC_L1_L3_CACHED=2 << 17)   # L1 uncached, L3 cached
    assert not r.ok
    text = r.report()
    assert any("load_block2d.ugm.d16.a64.uc.ca x_ptr" in x for f in r.findings for x in f.left), text
    assert any("load_block2d.ugm.d16.a64.ca.ca x_ptr" in x for f in r.findings for x in f.right), text


@needs_compiler
def test_a_wrong_transpose_bit_is_caught_and_the_message_named(monkeypatch):
    r = _corrupted("copy_blocks-transposed", monkeypatch, LSC_TRANSPOSE=0)
    text = r.report()
    msgs = [f for f in r.findings if "2D block messages" in f.what]
    assert msgs and any("load_block2d.ugm.d32.a64 x_ptr" in x for x in msgs[0].left), text
    assert any("load_block2d.ugm.d32t.a64 x_ptr" in x for x in msgs[0].right), text


@needs_compiler
def test_on_bmg_a_cache_bit_pvc_does_not_have_is_caught_and_the_message_named(monkeypatch):
    """Xe2's cache-control field is one bit wider (19:16): bit 16 turns xekern's L1 and L3
    cached (4 << 17, "ca.ca") into L1 cached, L3 constant-cached ("ca.cc")."""
    r = _corrupted("row_sums_advance@bmg", monkeypatch, LSC_L1_L3_CACHED=4 << 17 | 1 << 16)
    assert not r.ok
    text = r.report()
    assert any("load_block2d.ugm.d16.a64.ca.cc x_ptr" in x for f in r.findings for x in f.left), text
    assert any("load_block2d.ugm.d16.a64.ca.ca x_ptr" in x for f in r.findings for x in f.right), text


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(CASES)
    for n in names:
        print(result(n, all_lanes="--all-lanes" in sys.argv).report())
