"""Each pass, checked on its printed IR: layout propagation, workgroup->subgroup distribution,
blocking to instruction blocks, subgroup->lane distribution."""
import re

import xekern as xk
import xekern.language as xl
from irchecks import check

P, F32, I32 = xk.pointer, xl.float32, xl.int32
L1 = r"#xegpu.layout<sg_layout = \[4\], sg_data = \[64\], lane_layout = \[16\], lane_data = \[1\], order = \[0\]>"


def stages(kernel, target="cpu", num_subgroups=4, emitter=None, **sig):
    return kernel.compile_offline(sig, target=target, num_subgroups=num_subgroups, emitter=emitter).asm


@xk.jit
def k_add(x_ptr, o_ptr, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs) + 1.0)


def test_propagate_default_1d_layout():
    asm = stages(k_add, x_ptr=P(F32), o_ptr=P(F32), BLOCK=256)
    check(asm["layout"], r"vector.step : vector<256xi32, " + L1,
          r"xegpu.load_gather .* -> vector<256xf32, " + L1, "!convert_layout", r"xegpu.store_scatter")


def test_wg_to_sg_gives_each_subgroup_its_piece():
    asm = stages(k_add, x_ptr=P(F32), o_ptr=P(F32), BLOCK=256)
    check(asm["sg"], r"gpu.subgroup_id", r"arith.muli %\d+, %\d+ : i32", r"vector.step : vector<64xi32, "
          r"#xegpu.layout<lane_layout = \[16\], lane_data = \[1\], order = \[0\]>>",
          r"arith.addi", r"xegpu.load_gather .* -> vector<64xf32", "!vector<256x")


def test_sg_to_lane_holds_slots():
    asm = stages(k_add, x_ptr=P(F32), o_ptr=P(F32), BLOCK=256)
    # 64 elements per subgroup over 16 lanes: 4 slots, lane l holding l, l+16, l+32, l+48
    check(asm["lane"], r"gpu.lane_id", r"arith.constant dense<\[0, 16, 32, 48\]> : vector<4xi32>",
          r"xegpu.load_gather .* -> vector<4xf32>", r"xegpu.store_scatter %\d+, %\d+, %\d+ : vector<4xf32>")


@xk.jit
def k_rows(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    x = xl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    s = xl.sum(x, axis=1)
    xl.store(o_ptr + rm[:, None] * BN + rn[None, :], x - s[:, None])


def test_reduction_slices_and_broadcast_sources():
    asm = stages(k_rows, x_ptr=P(F32), o_ptr=P(F32), BM=16, BN=64)
    check(asm["layout"], r"vector.step : vector<16xi32, #xegpu.slice<", r"dims = \[1\]>>",
          r"vector.multi_reduction <add> .* -> vector<16xf32, #xegpu.slice<", "!convert_layout")
    # rows of 64 over 16 lanes: each lane adds its 4 slots, then 16 lanes reduce
    check(asm["lane"], r"vector.multi_reduction|arith.addf", r"gpu.subgroup_reduce <add> .* \{cluster_size = 16, "
          r"cluster_stride = 1\}")


@xk.jit
def k_colsum(x_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    x = xl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    xl.store(o_ptr + rn, xl.sum(x, axis=0))


def test_cross_subgroup_reduction_goes_through_slm():
    # rows split over 4 subgroups: a column sum needs every subgroup's partial sums
    asm = stages(k_colsum, x_ptr=P(F32), o_ptr=P(F32), BM=64, BN=16)
    check(asm["sg"], r"xegpu.create_mem_desc : !xegpu.mem_desc<4x16xf32>", r"vector.multi_reduction <add>",
          r"xegpu.store_matrix", r"gpu.barrier", r"xegpu.load_matrix", r"arith.addf", r"xegpu.load_matrix",
          r"arith.addf", r"xegpu.load_matrix", r"arith.addf", r"gpu.barrier")


@xk.jit
def k_convert(x_ptr, o_ptr):
    lay_a = xl.Layout(sg_layout=[4, 1], sg_data=[8, 32], lane_layout=[1, 16], lane_data=[1, 1], order=[1, 0])
    lay_b = xl.Layout(sg_layout=[1, 4], sg_data=[32, 8], lane_layout=[4, 4], lane_data=[1, 1], order=[1, 0])
    rm = xl.arange(0, 32)
    x = xl.zeros((32, 32), xl.float32, layout=lay_a) + xl.load(x_ptr + rm[:, None] * 32 + rm[None, :])
    y = xl.convert_layout(x, lay_b)
    xl.store(o_ptr + rm[:, None] * 32 + rm[None, :], y)


def test_user_layouts_anchor_and_convert_through_slm():
    asm = stages(k_convert, x_ptr=P(F32), o_ptr=P(F32))
    check(asm["xegpu"], r"arith.constant 0.0 \{layout = #xegpu.layout<sg_layout = \[4, 1\].* : vector<32x32xf32>",
          r"xegpu.convert_layout .*\{layout = #xegpu.layout<sg_layout = \[1, 4\]")
    check(asm["sg"], r"xegpu.create_mem_desc : !xegpu.mem_desc<32x32xf32>", r"xegpu.store_matrix .* vector<8x32xf32",
          r"gpu.barrier", r"xegpu.load_matrix .* -> vector<32x8xf32", r"gpu.barrier")


@xk.jit
def k_round_robin(x_ptr, o_ptr):
    lay = xl.Layout(sg_layout=[2], sg_data=[16], lane_layout=[16], lane_data=[1])
    offs = xl.arange(0, 128, layout=lay)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs))


def test_round_robin_pieces():
    asm = stages(k_round_robin, num_subgroups=2, x_ptr=P(F32), o_ptr=P(F32))
    # 128 elements, 2 subgroups x 16: four pieces each, 32 apart
    sg = asm["sg"]
    assert sg.count("vector.step : vector<16xi32") == 4, sg
    assert sg.count("xegpu.load_gather") == 4 and sg.count("xegpu.store_scatter") == 4
    check(sg, r"arith.constant 32 : i32", r"arith.constant 64 : i32", r"arith.constant 96 : i32")


@xk.jit
def k_blocked(x_ptr, o_ptr):
    lay = xl.Layout(sg_layout=[2, 2], sg_data=[16, 32], inst_data=[8, 16], lane_layout=[1, 16], lane_data=[1, 1])
    rm = xl.arange(0, 32)
    rn = xl.arange(0, 64)
    x = xl.zeros((32, 64), xl.float32, layout=lay) + xl.load(x_ptr + rm[:, None] * 64 + rn[None, :])
    xl.store(o_ptr + rm[:, None] * 64 + rn[None, :], x * 2.0)


def test_blocking_cuts_inst_blocks():
    asm = stages(k_blocked, x_ptr=P(F32), o_ptr=P(F32))
    inst = asm["inst"]
    # a 16x32 subgroup tile in 8x16 blocks: 4 blocks of every op
    assert inst.count("arith.mulf") == 4, inst
    assert inst.count("xegpu.load_gather") == 4 and inst.count("vector<8x16xf32") >= 8
    check(asm["lane"], r"xegpu.load_gather .* -> vector<8xf32>")


def test_8_wide_model_uses_8_lanes():
    asm = stages(k_add, target="cpu8", x_ptr=P(F32), o_ptr=P(F32), BLOCK=256)
    check(asm["layout"], r"lane_layout = \[8\]")
    check(asm["lane"], r"arith.constant dense<\[0, 8, 16, 24, 32, 40, 48, 56\]> : vector<8xi32>")


@xk.jit
def k_shuffle(x_ptr, o_ptr, L1: xl.constexpr, L2: xl.constexpr):
    r = xl.arange(0, 16)[:, None]
    c = xl.arange(0, 64)[None, :]
    x = xl.convert_layout(xl.load(x_ptr + r * 64 + c), L1)
    y, z = xl.value_barrier(xl.shuffle_tensor(x, L2) * 2.0, x)
    xl.store(o_ptr + r * 64 + c, y + z)


def _shuffle_asm():
    l1 = xl.Layout(sg_layout=[4, 1], sg_data=[4, 64], lane_layout=[1, 16], lane_data=[1, 1])
    l2 = xl.Layout(sg_layout=[1, 4], sg_data=[16, 16], lane_layout=[16, 1], lane_data=[1, 1], order=[0, 1])
    return stages(k_shuffle, x_ptr=P(F32), o_ptr=P(F32), L1=l1, L2=l2)


def test_shuffle_tensor_is_an_op_until_wg_to_sg():
    asm = _shuffle_asm()
    check(asm["xegpu"], r"(%\d+) = xegpu.create_mem_desc : !xegpu.mem_desc<16x64xf32>",
          r"iree_gpu.shuffle_tensor %\d+, %\d+ \{layout = #xegpu.layout<sg_layout = \[1, 4\], sg_data = \[16, 16\]"
          r".*\} : \(vector<16x64xf32>, !xegpu.mem_desc<16x64xf32>\) -> vector<16x64xf32>", "!gpu.barrier")
    # layout propagation keeps the source's layout and gives the result the user's
    check(asm["layout"], r"iree_gpu.shuffle_tensor .*\(vector<16x64xf32, #xegpu.layout<sg_layout = \[4, 1\].*"
          r"-> vector<16x64xf32, #xegpu.layout<sg_layout = \[1, 4\]")
    # wg-to-sg: each subgroup stores its 4x64 rows, a barrier, loads its 16x16 columns, a barrier
    check(asm["sg"], r"!iree_gpu.shuffle_tensor", r"xegpu.store_matrix %\d+, %\d+, .* : vector<4x64xf32, .*"
          r"!xegpu.mem_desc<16x64xf32>", r"gpu.barrier",
          r"xegpu.load_matrix .*\(!xegpu.mem_desc<16x64xf32>, i32, i32\) -> vector<16x16xf32", r"gpu.barrier")


def test_value_barrier_is_split_with_its_operands_and_becomes_a_barrier_in_codegen():
    asm = _shuffle_asm()
    check(asm["xegpu"], r"%\d+:2 = iree_gpu.value_barrier %\d+, %\d+ : vector<16x64xf32>")
    check(asm["layout"], r"iree_gpu.value_barrier .* -> \(vector<16x64xf32, #xegpu.layout<sg_layout = \[1, 4\].*"
          r"vector<16x64xf32, #xegpu.layout<sg_layout = \[4, 1\]")
    check(asm["sg"], r"%\d+:2 = iree_gpu.value_barrier %\d+, %\d+ : \(vector<16x16xf32, .*vector<4x64xf32")
    # lane level: a 16x16 piece is 16 slots per lane, 4x64 is 16 too: still one op over both
    check(asm["lane"], r"%\d+:2 = iree_gpu.value_barrier %\d+, %\d+ : vector<16xf32>")
    llir = asm["llir"]
    # two barriers of the shuffle + the value barrier (+ those of the index-tile conversions)
    n_bar = sum(1 for line in asm["sg"].splitlines() if line.strip() == "gpu.barrier")
    assert llir.count("call spir_func void @_Z7barrierj(i32 3)") == n_bar + 1, llir


@xk.jit
def k_int8_at(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(K, M), strides=(M, 1), block_shape=(BK, BM))   # A stored K x M
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), xl.int32)
    for k0 in range(0, K, BK):
        acc = xl.dot(a_desc.load((k0, 0), transpose=True), b_desc.load((k0, 0)), acc)
    c_desc.store((0, 0), acc)


INT8_AT = dict(a_ptr=P(xl.int8), b_ptr=P(xl.int8), c_ptr=P(I32), M=I32, N=I32, K=I32, BM=32, BN=32, BK=64)


def test_slm_transpose_of_int8_a():
    """int8 A^T has no transposed 2D block load: pass slm-transpose loads the K x M tile as stored (VNNI
    blocks, lanes along M) and converts its transpose to the DPAS A layout through a blocked SLM matrix,
    whose fragments each subgroup reads back with sub-group block reads of shorts."""
    asm = stages(k_int8_at, **INT8_AT)
    check(asm["slm-transpose"], r"xegpu.load_nd %\d+, %\d+, %\d+ \{layout = #xegpu.layout<.*lane_layout = \[1, 16\], "
          r"lane_data = \[4, 1\].*-> vector<64x32xi8>", r"vector.transpose .* -> vector<32x64xi8>",
          r"xegpu.convert_layout .*\{slm_block = \[8, 32\]\}", r"xegpu.dpas")
    assert "transpose = [1, 0]" not in asm["slm-transpose"]
    check(asm["sg"], r"xegpu.create_mem_desc : !xegpu.mem_desc<32x64xi8, #xegpu.mem_layout<block = \[8, 32\]>>",
          r"xegpu.load_nd", r"xegpu.store_matrix", r'gpu.barrier \{exchange = "open", memory = "local"\}',
          r"xegpu.load_matrix", r'gpu.barrier \{exchange = "close", memory = "local"\}', r"xegpu.dpas")
    llir = asm["llir"]
    # each 8x32 A fragment: one block read of 8 rows of 16 shorts; each lane's 32 bytes of A^T: dword vector
    # stores (one of 8 dwords on pvc, where they come straight from the VNNI read: test_gemm_isa)
    assert llir.count("@_Z30intel_sub_group_block_read_us8PU3AS3Kt(") >= 1, llir
    assert re.search(r"store <(4|8) x i32> %[^,]+, ptr addrspace\(3\)", llir), llir
    for target in ("cpu8", "dg2"):
        # no 2D block IO: the stored tile is loaded with per-lane vectors of 4 rows (pair_rows_layout),
        # packed into VNNI dwords in the lane and exchanged through SLM held as rows of those dwords
        other = stages(k_int8_at, target=target, **INT8_AT)
        check(other["slm-transpose"], r"lane_layout = \[1, 8\], lane_data = \[4, \d\].*-> vector<64x32xi8>",
              r"vector.transpose", r"xegpu.convert_layout .*\{slm_block = \[1, 4\], slm_strides = \[1, 32\]\}")
        assert "transpose = [1, 0]" not in other["slm-transpose"]


@xk.jit
def k_at_steps(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr,
               STEPS: xl.constexpr):
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(K, M), strides=(M, 1), block_shape=(BK, BM))   # A stored K x M
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), xl.float32)
    for k0 in range(0, K, BK * STEPS):
        for u in xl.static_range(STEPS):
            acc = xl.dot(a_desc.load((k0 + u * BK, 0), transpose=True), b_desc.load((k0 + u * BK, 0)), acc)
    c_desc.store((0, 0), acc)


def _loop_barriers(sg: str) -> int:
    """Barriers inside the scf.for of a printed sg-level function."""
    body = sg[sg.index("scf.for"):]
    return sum(1 for line in body.splitlines() if line.strip().startswith("gpu.barrier"))


def test_slm_exchanges_in_a_loop_keep_only_the_barriers_they_need():
    """bf16 A^T goes through SLM too (slm-transpose). One exchange per iteration needs both barriers
    (its matrix is written again at the next iteration's top); the second moves to the body's end
    (nothing after it touches the matrix). With two or three K steps the later exchanges' stores
    join the first's under one barrier, and one barrier at the body's end keeps the next stores
    behind every subgroup's loads. A barrier that follows only SLM loads, each taken by a DPAS
    before it, needs no fence (lowering/slm_barriers.py)."""
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), M=I32, N=I32, K=I32,
               BM=32, BN=32, BK=32)
    fenced = r'(?m)gpu.barrier \{(exchange = "\w+", )?memory = "local"\}$'
    one = stages(k_at_steps, STEPS=1, **sig)["slm-barriers"]
    assert "slm_block = [8, 16]" in stages(k_at_steps, STEPS=1, **sig)["slm-transpose"]
    assert _loop_barriers(one) == 2 and one.count("xegpu.store_matrix") >= 1
    # its second barrier moves past the dpas that take the loads: then it needs no fence
    check(one, r"scf.for", r"xegpu.store_matrix", fenced, r"xegpu.load_matrix", r"xegpu.dpas",
          r'gpu.barrier \{exchange = "close", memory = "local", no_fence = true\}', r"scf.yield")
    two = stages(k_at_steps, STEPS=2, **sig)["slm-barriers"]
    assert _loop_barriers(two) == 2, two
    # store m0; store m1; barrier; load m0; dpas; load m1; dpas; barrier without a fence
    check(two, r"scf.for", r"xegpu.store_matrix %\S+, %(\d+)", r"xegpu.store_matrix", fenced, r"xegpu.load_matrix",
          r"xegpu.dpas", r"xegpu.load_matrix", r"xegpu.dpas", r'gpu.barrier \{memory = "local", no_fence = true\}',
          r"scf.yield")
    three = stages(k_at_steps, STEPS=3, **sig)["slm-barriers"]
    assert _loop_barriers(three) == 2 and len(re.findall(fenced, three)) == 1, three
    # all three exchanges' stores before one fenced barrier, not two by two
    check(three, r"scf.for", r"xegpu.store_matrix", r"xegpu.store_matrix", r"xegpu.store_matrix", fenced,
          r"xegpu.load_matrix", r"xegpu.dpas", r"xegpu.load_matrix", r"xegpu.dpas", r"xegpu.load_matrix",
          r"xegpu.dpas", r'gpu.barrier \{memory = "local", no_fence = true\}', r"scf.yield")


@xk.jit
def k_bf16_gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    acc = xl.zeros((BM, BN), xl.float32)
    for k0 in range(0, K, BK):
        acc = xl.dot(a_desc.load((0, k0)), b_desc.load((k0, 0)), acc)
    c_desc.store((0, 0), acc)


def test_merge_block_messages_where_the_emitter_says_so():
    """Blocking gives each block its own load, stamped with its place in the tile; pass
    merge-block-messages, on GPU emitters (merge_block2d), puts adjacent blocks of one subgroup load
    in one message, ``block_grid = [rows, cols]`` blocks with one result each. spirv-ext (SPIR-V block loads: LLVM
    vectors) stops at 16 dwords per lane: A 32x32 in two messages of 2x2 blocks of 8x16, B 32x64
    VNNI in four of 1x2 blocks of 16x16. visa (pvc and bmg) reads DPAS operands into named vISA
    registers of up to 32 registers (32 dwords per lane): A in one message of 4x2 blocks, B in two of
    2x2. The CPU keeps one message per block."""
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(F32), M=I32, N=I32, K=I32, BM=32, BN=64, BK=32)
    loads = lambda t, e=None, stage="merge-block-messages": [  # noqa: E731
        ln for ln in stages(k_bf16_gemm, target=t, num_subgroups=1, emitter=e, **sig)[stage].splitlines()
        if "xegpu.load_nd" in ln]
    blocks = loads("pvc", None, "inst")
    assert len(blocks) == 16 and "block_count = [4, 2], block_index = [0, 0]" in blocks[0], blocks
    for t, e, (a_grid, a_count), (b_grid, b_count) in (("bmg", "spirv-ext", ((2, 2), 2), ((1, 2), 4)),
                                                       ("pvc", "spirv-ext", ((2, 2), 2), ((1, 2), 4)),
                                                       ("pvc", None, ((4, 2), 1), ((2, 2), 2)),
                                                       ("bmg", None, ((4, 2), 1), ((2, 2), 2))):
        merged = loads(t, e)
        a_grid, b_grid = ", ".join(map(str, a_grid)), ", ".join(map(str, b_grid))
        a = [ln for ln in merged if f"block_grid = [{a_grid}], packed = false}}" in ln and
             re.search(rf"%\d+:{8 // a_count} = ", ln)]
        b = [ln for ln in merged if f"block_grid = [{b_grid}], packed = true" in ln and
             re.search(rf"%\d+:{8 // b_count} = ", ln)]
        assert len(merged) == a_count + b_count and len(a) == a_count and len(b) == b_count, (t, e, merged)
        check("\n".join(merged), rf"xegpu.load_nd .*\{{block_grid = \[{a_grid}\], packed = false\}} : "
              r"\(!xegpu.tensor_desc<8x16xbf16",
              rf"xegpu.load_nd .*\{{block_grid = \[{b_grid}\], packed = true\}} : \(!xegpu.tensor_desc<16x16xbf16")
    single = loads("cpu")
    assert len(single) == 16 and not any("block_grid" in ln for ln in single), single
