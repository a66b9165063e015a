"""Codegen of block operations: tensor descriptors (2D block load/store/prefetch), DPAS, SLM
block IO and named barriers.

Two implementations share one meaning, the slot order of ``layout.lane_slot_offsets``:

- GPU targets with 2D block IO (pvc, bmg) use the recipes HARDWARE.md verified with IGC 12504:
  ``llvm.genx.GenISA.LSC2DBlockRead`` for loads, inline vISA ``lsc_store_block2d`` /
  ``lsc_load_block2d ... %null`` for stores and prefetches, the OpenCL DPAS builtins for ``dpas``.
  Their register payloads are row-major (one row per component for 16-wide blocks; VNNI packs
  2 or 4 rows into a dword), which is exactly the slot order the layouts describe.
- The CPU device (and GPUs without 2D block IO for loads/stores) gets the same semantics (``nd_elementwise.py``)
  element by element: each slot's coordinates from the lane id, bounds-checked loads (zero
  padding) and stores (out-of-bounds elements skipped); DPAS is emulated with sub-group
  shuffles that fetch each A element from the lane that owns it.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_base as lane_base_py, lane_slot_offsets
from ...ir.types import DType, VectorType
from ..layouts import rows_per_register
from ..rewrite import PassError
from ..spirv_asm import is_asm
from .core import CodeGen, NamedRegister, NdDesc, VecSlots, lazy_slots, ll_type, mem_type, rule
from .recurrence import affine, at_entry, step_of, whole_step
from .cpu_tiles import TileAccess, lane_columns, uniform
from .ocl import F32, I1, I16, I32, I64, mangle_args
from .rules_arith import sub_group_shuffle, widen
from .rules_memory import lane_base, load_elem, zero
from .nd_elementwise import (_block_shift, _branch_values, _load_elementwise, _origin, _store_elementwise,
                             slots_as_vector)


# ---- descriptors ---------------------------------------------------------------------------------

@rule(ir.CreateNdTDescOp)
def _create_nd(cg: CodeGen, op: ir.CreateNdTDescOp):
    i32 = lambda v: cg.to_i32(cg.get(v))  # noqa: E731
    return [NdDesc(cg.get(op.base), [i32(v) for v in op.shape], [i32(v) for v in op.strides],
                   [i32(v) for v in op.offsets], op.result.type)]


@rule(ir.UpdateNdOffsetOp)
def _update_nd(cg: CodeGen, op: ir.UpdateNdOffsetOp):
    d: NdDesc = cg.get(op.operands[0])
    deltas = [cg.to_i32(cg.get(v)) for v in op.operands[1:]]
    return [NdDesc(d.base, d.shape, d.strides, [cg.b.add(o, x) for o, x in zip(d.offsets, deltas)], d.type)]


def _transpose32(t: DType, lay, shape, sg: int, narrow: bool = True):
    """For a transposed load whose result tile (shape (R, C), C = the memory rows) has layout
    ``lay``: (dword columns, memory rows) of the 32-bit transposed 2D block read that delivers it
    exactly, or None. A 32-bit transpose gives lane ``l`` memory row ``l`` as dwords; with 16- or
    8-bit data each dword packs 2 or 4 consecutive elements of that row, which is the VNNI B
    fragment (``lane_data = (32 / bits, 1)``) and, for 16 bits, the A fragment (``lane_data =
    (1, 1)``: component ``r`` = row ``r``). With ``narrow``, a 32-bit tile of C < sg memory rows
    laid out ``layouts.rows_per_register`` (tf32's A fragment read from A^T) is R dword columns of
    C rows: its transpose fills each register with sg / C of the R result rows, as a plain read of
    the transposed matrix would."""
    R, C = shape
    if narrow and rows_per_register(t, lay, C, sg) and R <= 8 and R % (sg // C) == 0:
        return R, C
    if lay.lane_layout != (1, sg) or C != sg:
        return None
    pack = 32 // t.bits
    if t.bits == 32 and lay.lane_data == (1, 1) or \
            t.bits < 32 and lay.lane_data == (pack, 1) or t.bits == 16 and lay.lane_data == (1, 1):
        dwords = R * t.bits // 32
        return (dwords, C) if 1 <= dwords <= 8 else None
    return None


def _block2d(cg: CodeGen) -> bool:
    return cg.family == "gpu" and cg.target.has_block2d


def _block_fits(cg: CodeGen, op, store: bool = False, narrow: bool = True) -> bool:
    """Whether a block's tile layout is the register payload of a 2D block message (one row of a
    block across the sub-group's lanes, ``lane_data`` packing VNNI pairs or sub-32-bit columns; with
    ``narrow``, also a 32-bit block narrower than the subgroup, several rows per register:
    ``layouts.rows_per_register``, as IGC reads tf32 fragments); blocks that are not are
    accessed element by element (still correct, slower)."""
    d = cg.get(op.tdesc).type
    tiles = op.attrs["tiles"]
    sg = cg.target.sg_size
    t = d.elem
    info = cg.target.block2d_for(t)
    if info is None or len(d.shape) != 2:
        return False
    h, w = d.shape
    h *= (op.attrs.get("block_grid") or (1, 1))[0]
    for tile in tiles:
        lay = tile.layout
        if op.attrs.get("transpose"):
            if _transpose32(t, lay, tile.shape, sg, narrow) is None or len(tiles) != 1:
                return False
            continue
        if lay.lane_layout != (1, sg):
            if narrow and not store and not op.attrs.get("packed") and rows_per_register(t, lay, w, sg) and \
                    w <= info.max_width and h <= info.max_height:
                continue
            return False
        ld0, ld1 = lay.lane_data
        if store:
            if (ld0, ld1) != (1, 1) or w != sg:
                return False
            continue
        packed = bool(op.attrs.get("packed"))
        if packed and (ld0 != 32 // t.bits or ld1 != 1 or h % ld0) or not packed and ld0 != 1:
            return False
        if w % (sg * ld1) or w > info.max_width or h > info.max_height:
            return False
    return True


# ---- GPU 2D block IO (pvc / bmg) --------------------------------------------------------------------

def region(cg: CodeGen, d: NdDesc, origin: List) -> List:
    """(width, height, pitch, x, y) of a 2D block message over the descriptor's tensor: width, pitch
    and x in elements, height and y in rows (a 1-D descriptor is one row)."""
    if len(d.shape) == 1:
        return [d.shape[0], cg.i32(1), d.shape[0], origin[0], cg.i32(0)]
    return [d.shape[1], d.shape[0], d.strides[0], origin[1], origin[0]]


def _surface(cg: CodeGen, d: NdDesc, origin: List):
    """(base i64, width_bytes-1, height-1, pitch_bytes-1, x, y): IGC 12504's encoding of a region."""
    b = cg.b
    eb = d.type.elem.itemsize
    width, height, pitch, x, y = region(cg, d, origin)
    m1 = lambda v: b.sub(v, cg.i32(1))  # noqa: E731
    return [b.ptrtoint(d.base, I64), m1(b.mul(width, cg.i32(eb))), m1(height), m1(b.mul(pitch, cg.i32(eb))), x, y]


def _genisa_read(cg: CodeGen, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, transpose: bool, vnni: bool,
                 vt: ll.VectorType):
    """One 2D block read message: inline vISA from a payload built once when the result is at most
    ``raw_block2d_bits`` per lane (``_raw_block2d``), else IGC 12504's ``LSC2DBlockRead`` intrinsic
    (HARDWARE.md), which builds the payload again for every message."""
    if vt.count * vt.element.width <= _raw_bits(cg):
        return _raw_block2d(cg, vt, d, x, y, bits, w, h, n, transpose, vnni)
    surf = _surface(cg, d, [y, x] if len(d.shape) == 2 else [x])
    args = surf[:4] + [x, y, cg.i32(bits), cg.i32(w), cg.i32(h), cg.i32(n), ll.Constant(I1, int(transpose)),
                       ll.Constant(I1, int(vnni))]
    return cg.ocl.intrinsic(cg.b, f"llvm.genx.GenISA.LSC2DBlockRead.v{vt.count}i{vt.element.width}", vt, args)


def _unpacked(cg: CodeGen, vec, count: int, t: DType, words: int = 0, message=None, make_vec=None) -> VecSlots:
    """The ``count`` slots of dtype ``t`` in a block-read vector (low bits first), made on demand.
    Without ``vec``, ``make_vec`` makes it (a vector of ``words`` components, see ``VecSlots``)."""
    per = count // (vec.type.count if vec is not None else words)
    bits = t.bits

    def make(i):
        b = cg.b
        e = b.extract_element(vec if vec is not None else slots.vec, cg.i32(i // per))
        v = e if per == 1 else b.trunc(b.lshr(e, ll.Constant(e.type, (i % per) * bits)), ll.IntType(bits))
        if v.type.width != bits:
            v = b.trunc(v, ll.IntType(bits))
        return v if v.type == ll_type(t) else b.bitcast(v, ll_type(t))
    if vec is not None:
        return lazy_slots(cg, vec, count, per, make)
    slots = VecSlots([None] * count, None, per, make, cg.b, message, make_vec)
    return slots


def _load_block2d(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, read=_genisa_read) -> List:
    """A 2D block load as one message ``read(cg, d, x, y, bits, w, h, n, transpose, vnni, vt)`` (the
    table's spelling of the message), unpacked into the result tiles' slots."""
    t = d.type.elem
    h, w = (d.type.shape if len(d.type.shape) == 2 else (1, d.type.shape[0]))
    gv, n = op.attrs.get("block_grid") or (1, len(op.results))
    h *= gv
    tr = bool(op.attrs.get("transpose"))
    packed = bool(op.attrs.get("packed"))
    info = cg.target.block2d_for(t)
    if info is None or w * n > info.max_width_x_array or h > info.max_height or n > info.max_array:
        raise PassError(f"codegen: a {h}x{w}x{n} block of {t.user_name} exceeds {cg.target.name}'s 2D block load "
                        f"limits", op)
    tiles = op.attrs["tiles"]
    if tr:
        return [_load_transposed32(cg, op, d, tiles[0], read)]
    slots = sum(len(lane_slot_offsets(tl.layout, tl.shape)) for tl in tiles)
    if slots * t.bits > 16 * 32 and read is _genisa_read:
        return _load_named(cg, op, d, tiles, slots * t.bits // 32, w, h, n, packed)
    # bits per payload component: a dword for VNNI and 32-bit data, else one row's share of a lane;
    # more than 16 components travel as dwords (LLVM's SPIR-V backend and spirv-val cap vectors at 16)
    natural = 32 if packed or t.bits >= 32 else t.bits * tiles[0].layout.lane_data[-1]
    word = natural if slots * t.bits // natural <= 16 else 32
    count = slots * t.bits // word
    vt = ll.VectorType(ll.IntType(word), count)
    _, _, _, x, y = region(cg, d, _origin(cg, d, op))
    vec = read(cg, d, x, y, t.bits, w, h, n, tr, packed, vt)
    out, k = [], 0
    for tile in tiles:
        m = len(lane_slot_offsets(tile.layout, tile.shape))
        part = vec if m * t.bits == count * word else cg.b.shuffle_vector(
            vec, ll.Constant(vt, None), ll.Constant(ll.VectorType(I32, m * t.bits // word),
                                                    list(range(k * t.bits // word, (k + m) * t.bits // word))))
        if word != natural:  # back to the block's own element vector (a free reinterpretation)
            part = cg.b.bitcast(part, ll.VectorType(ll.IntType(natural), m * t.bits // natural))
        slots = _unpacked(cg, part, m, t)
        if is_asm(vec):  # element-major per lane: slot k starts k * bits * lanes / 8 bytes in
            slots.message = (vec, k * t.bits * cg.target.sg_size // 8)
        out.append(slots)
        k += m
    return out


def _load_named(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, tiles, dwords: int, w: int, h: int, n: int,
                packed: bool) -> List:
    """A 2D block read of more than 16 dwords per lane (up to 32 GRFs: a 32 x 32 16-bit block, two
    DPAS A blocks' worth of rows or four VNNI B blocks) into a named vISA register: no LLVM vector
    may be that wide. Inline-vISA DPAS names its operands in the register (``_named_piece``)."""
    t = d.type.elem
    lanes = cg.target.sg_size
    if dwords * 32 > _raw_bits(cg):
        raise PassError(f"codegen: a {h}x{w}x{n} block of {t.user_name} is {dwords} dwords per lane, more than "
                        f"{cg.target.name} reads in one message here ({_raw_bits(cg) // 32})", op)
    cg.visa_registers += 1
    reg = NamedRegister(f"XKBLK{cg.visa_registers}", dwords)
    cg.declare(f".decl {reg.name} v_type=G type=d num_elts={dwords * lanes} align=GRF")
    _, _, _, x, y = region(cg, d, _origin(cg, d, op))
    send = _raw_block2d(cg, None, d, x, y, t.bits, w, h, n, False, packed, into=reg)
    out, k = [], 0
    for tile in tiles:
        m = len(lane_slot_offsets(tile.layout, tile.shape))
        out.append(_named_piece(cg, reg, send, k * t.bits * lanes // 8, m, t, tile, packed))
        k += m
    return out


def _named_piece(cg: CodeGen, reg: NamedRegister, send, offset: int, m: int, t: DType, tile, packed: bool) -> VecSlots:
    """The ``m`` slots of a block at byte ``offset`` of ``reg``, for inline-vISA DPAS to name in
    place (``message``). Blocking reads into named registers only for such DPAS operands, so
    nothing asks for them as an LLVM vector (``make_vec`` says so if something ever does)."""
    natural = 32 if packed or t.bits >= 32 else t.bits * tile.layout.lane_data[-1]

    def no_vector():
        raise PassError(f"codegen: a piece of the {reg.dwords}-dword block read {reg.name} is used as a vector; "
                        "blocking reads into named registers only for inline-vISA DPAS operands")
    return _unpacked(cg, None, m, t, m * t.bits // natural, (reg, offset), (send, no_vector))


# LSC message descriptor fields (Xe-HPC): what IGC 12504 itself encodes for load_block2d (read back
# from its ISA: d16 8x16 0x02400203, d16v 16x16 0x02800283, d32t 0x02408403, prefetch 0x02080203)
_LSC_LOAD_BLOCK2D, _LSC_VNNI, _LSC_TRANSPOSE, _LSC_L1_L3_CACHED = 0x03, 1 << 7, 1 << 15, 4 << 17
_LSC_DATA_SIZE = {8: 0, 16: 1, 32: 2, 64: 3}


def _raw_bits(cg: CodeGen) -> int:
    """The target's ``raw_block2d_bits``, for workgroup-level kernels only: ``_payload`` builds the
    message payload per lane, which is right only when every lane of the subgroup runs the load;
    workgroup-level control flow is uniform, while a subgroup-level kernel may branch on its lane."""
    return cg.target.raw_block2d_bits if cg.options.level == "wg" else 0


def _split_constant(v) -> Tuple[object, int]:
    """``v`` as (value or None, constant): peels constant addends off an ``add`` chain."""
    if isinstance(v, ll.Constant):
        return None, int(v.constant)
    if isinstance(v, ll.Instruction) and v.opname == "add" and isinstance(v.operands[1], ll.Constant):
        rest, c = _split_constant(v.operands[0])
        return rest, c + int(v.operands[1].constant)
    return v, 0


def _payload(cg: CodeGen, surf: List, w: int, h: int, n: int):
    """The 2D block message payload as one GRF, dword ``i`` in lane ``i``: base (2 dwords), width,
    height and pitch (bytes - 1), x, y, block shape ((n-1) << 16 | (h-1) << 8 | (w-1)).

    Built as ``constant part + (lane == 5 ? x : 0) + (lane == 6 ? y : 0)``, where the constant part
    holds everything loop-invariant (the surface, the block shape and the constant addends of x and
    y): LLVM's reassociate and LICM then hoist all but the loop-varying coordinate, and messages
    that share it share its select, so a message in a K loop costs one add and its send."""
    b = cg.b
    base = surf[0]
    (xv, xc), (yv, yc) = _split_constant(surf[4]), _split_constant(surf[5])
    vals = [b.trunc(base, I32), b.trunc(b.lshr(base, ll.Constant(I64, 32)), I32), surf[1], surf[2], surf[3],
            cg.i32(xc), cg.i32(yc), cg.i32((n - 1) << 16 | (h - 1) << 8 | (w - 1))]
    lane = cg.lane_id()
    is_lane = lambda i: cg.cached(("lane ==", i), lambda: b.icmp_unsigned("==", lane, cg.i32(i)))  # noqa: E731
    cur = cg.i32(0)
    for i in reversed(range(8)):
        cur = b.select(is_lane(i), vals[i], cur)
    for i, v in ((6, yv), (5, xv)):
        if v is not None:
            cur = b.add(cur, b.select(is_lane(i), v, cg.i32(0)))
    return cur


def _message_payload(cg: CodeGen, d: NdDesc, origin: List, w: int, h: int, n: int,
                     prefetch: bool = False) -> Tuple[str, List]:
    """The payload of a message at ``origin`` as (raw operand text, its asm arguments). In a counted
    loop whose induction variable moves the origin by a whole number of elements per iteration (a
    K loop) it is built before the loop and moved by an add per iteration: in a named vISA register
    shared with another message of the same step (``Loop.payload``) when a GRF holds one dword per
    lane, else an LLVM recurrence (``Loop.recurrence``). Elsewhere it is built where the message is.
    An LLVM value is one argument, named ``$N`` in the text: the caller numbers it."""
    loop, fn = (cg.loops[-1] if cg.loops else None), cg.fn
    if loop is not None and all(loop.invariant(fn, f) for f in [d.base, *d.shape, *d.strides]):
        fields = dict(zip((6, 5) if len(origin) == 2 else (5,), [affine(fn, loop, c) for c in origin]))
        if None not in fields.values() and any(fields.values()) and \
                all(whole_step(loop, c) for c in fields.values()):
            def first():
                memo = {}
                return _payload(cg, _surface(cg, d, [at_entry(cg.b, fn, loop, c, memo) for c in origin]), w, h, n)

            def delta():  # x is payload dword 5, y dword 6
                lane, total = cg.lane_id(), cg.i32(0)
                for i, c in fields.items():
                    if c:
                        is_lane = cg.cached(("lane ==", i), lambda: cg.b.icmp_unsigned("==", lane, cg.i32(i)))
                        total = cg.b.add(total, cg.b.select(is_lane, step_of(cg.b, loop, c), cg.i32(0)))
                return total
            if cg.target.grf_bytes == 4 * cg.target.sg_size:
                return loop.payload(cg, first, delta, tuple(sorted(fields.items())), prefetch), []
            return "$N.0", [loop.recurrence(cg.b, first, delta)]
    return "$N.0", [_payload(cg, _surface(cg, d, origin), w, h, n)]


def _raw_block2d(cg: CodeGen, vt, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, tr: bool, vnni: bool,
                 into: Optional[NamedRegister] = None):
    """A 2D block read at column ``x``, row ``y`` into ``vt`` (at most ``raw_block2d_bits`` per
    lane) or the named register ``into``, or a prefetch (neither), as one inline vISA ``raw_sends``
    of the payload ``_message_payload`` builds (2 instructions per message in a K loop instead of
    IGC's 7, and 3 per 2 messages when payloads share a register)."""
    origin = [y, x] if len(d.shape) == 2 else [x]
    lanes = cg.target.sg_size
    per_lane = into.dwords * 32 if into is not None else vt.count * vt.element.width if vt is not None else 0
    grfs = per_lane // 8 * lanes // cg.target.grf_bytes
    prefetch = vt is None and into is None
    desc = (_LSC_LOAD_BLOCK2D | _LSC_DATA_SIZE[bits] << 9 | (_LSC_VNNI if vnni else 0) | (_LSC_TRANSPOSE if tr else 0)
            | (_LSC_L1_L3_CACHED if prefetch else 0) | min(grfs, 31) << 20 | 1 << 25)  # 32 GRFs: 31, as IGC
    payload, args = _message_payload(cg, d, origin, w, h, n, prefetch)
    if into is not None:
        text = (f"raw_sends.15.1.0.{grfs} (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$0')} "
                f"%null.0 {into.name}.0")
        return cg.asm(ll.VoidType(), text, ",".join(["rw"] * len(args)), args)
    if prefetch:
        text = f"raw_sends.15.1.0.0 (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$0')} %null.0 %null.0"
        return cg.asm(ll.VoidType(), text, ",".join(["rw"] * len(args)), args)
    text = f"raw_sends.15.1.0.{grfs} (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$1')} %null.0 $0.0"
    return cg.asm(vt, text, ",".join(["=rw"] + ["rw"] * len(args)), args)


def _load_transposed32(cg: CodeGen, op, d: NdDesc, tile, read=_genisa_read) -> List:
    """A transposed block read as 32-bit elements (``transpose_bit_width = 32``), see ``_transpose32``."""
    t = d.type.elem
    dwords, rows = _transpose32(t, tile.layout, tile.shape, cg.target.sg_size)
    _, _, _, x, y = region(cg, d, _origin(cg, d, op))
    # x is in elements of the message: dwords of the memory row
    x = cg.b.udiv(cg.b.mul(x, cg.i32(t.bits)), cg.i32(32)) if t.bits < 32 else x
    vec = read(cg, d, x, y, 32, dwords, rows, 1, True, False, ll.VectorType(I32, dwords * rows // cg.target.sg_size))
    m = len(lane_slot_offsets(tile.layout, tile.shape))
    if t.bits < 32 and tile.layout.lane_data == (1, 1):  # A fragment: one element per component
        vec = cg.b.bitcast(vec, ll.VectorType(ll.IntType(t.bits), m))
    return _unpacked(cg, vec, m, t)


def _inline_asm(cg: CodeGen, text: str, args: List, constraints: str) -> None:
    """Inline vISA. IGC 12504 silently drops an asm statement whose ``rw.u`` (uniform) operand it
    cannot prove uniform (e.g. a block origin computed with a runtime division): every uniform
    operand goes through a shuffle from lane 0, which IGC sees as uniform and which costs nothing
    when the value already was."""
    args = [_uniform(cg, a) if c == "rw.u" and isinstance(a.type, ll.IntType) else a
            for a, c in zip(args, constraints.split(","))]
    cg.asm(ll.VoidType(), text, constraints, args)


def _uniform(cg: CodeGen, a):
    """``a`` through a shuffle from lane 0, once per value and basic block (the blocks of a stored
    tile share their surface); a constant as it is."""
    if isinstance(a, ll.Constant):
        return a
    return cg.cached_here(("uniform", a), lambda: sub_group_shuffle(cg, "idx", a, cg.i32(0)))


def _store_block2d(cg: CodeGen, op: ir.StoreNdOp, d: NdDesc) -> None:
    """``lsc_store_block2d`` in chunks of rows whose per-lane data is 128 bits (inline-asm operands
    must be scalars or 128-bit vectors); store blocks are 16 elements wide, 1..8 rows."""
    t = d.type.elem
    h, w = store_shape(cg, op, d)
    vals = cg.slots(op.operands[0])
    rows = max(1, min(h, 128 // t.bits))
    surf = _surface(cg, d, _origin(cg, d, op))
    for r0 in range(0, h, rows):
        n = min(rows, h - r0)
        if t.bits * n == 128:
            _store_rows(cg, d, surf, r0, w, n, slots_as_vector(cg, vals, r0, n, t.bits))
            continue
        ints = [cg.b.bitcast(v, ll.IntType(t.bits)) if not isinstance(v.type, ll.IntType) else v
                for v in vals[r0:r0 + n]]
        wide = ll.IntType(max(8, t.bits * n))  # fewer bits: pack into one scalar
        data = ll.Constant(wide, 0)
        for i, v in enumerate(ints):
            data = cg.b.or_(data, cg.b.shl(cg.b.zext(v, wide), ll.Constant(wide, i * t.bits)))
        _store_rows(cg, d, surf, r0, w, n, data)


def _store_rows(cg: CodeGen, d: NdDesc, surf: List, r0: int, w: int, n: int, data) -> None:
    """One ``lsc_store_block2d`` of ``n`` rows from row ``r0`` of the stored block."""
    y = cg.b.add(surf[5], cg.i32(r0))
    text = (f"lsc_store_block2d.ugm (M1, {cg.target.sg_size}) flat[$0,$1,$2,$3,$4,$5] "
            f"$6:d{d.type.elem.bits}.1x{w}x{n}nn")
    _inline_asm(cg, text, surf[:5] + [y, data], "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u,rw")


def prefetch_shape(cg: CodeGen, op: ir.PrefetchNdOp, d: NdDesc) -> Optional[Tuple[int, int]]:
    """(rows, columns) of a prefetch's 2D block message: its subgroup block, cut to the target's
    largest block for the element type; None when the target has no 2D block for it."""
    shape = op.attrs.get("block") or d.type.shape
    h, w = (shape if len(shape) == 2 else (1, shape[0]))
    info = cg.target.block2d_for(d.type.elem)
    if info is None:
        return None
    return min(h, info.max_height), min(w, info.max_width)


def store_shape(cg: CodeGen, op: ir.StoreNdOp, d: NdDesc) -> Tuple[int, int]:
    """(rows, columns) of a 2D block store, which is sub-group wide and 1..8 rows."""
    h, w = (d.type.shape if len(d.type.shape) == 2 else (1, d.type.shape[0]))
    if w != cg.target.sg_size or h > 8:
        raise PassError(f"codegen: 2D block stores are {cg.target.sg_size} wide and at most 8 rows, got {h}x{w}", op)
    return h, w


def _prefetch_block2d(cg: CodeGen, op: ir.PrefetchNdOp, d: NdDesc) -> None:
    t = d.type.elem
    hw = prefetch_shape(cg, op, d)
    if hw is None:
        return
    h, w = hw
    origin = _origin(cg, d, op)
    if _raw_bits(cg):
        _, _, _, x, y = region(cg, d, origin)
        _raw_block2d(cg, None, d, x, y, t.bits, w, h, 1, False, False)
        return
    surf = _surface(cg, d, origin)
    text = (f"lsc_load_block2d.ugm.ca.ca (M1, {cg.target.sg_size}) %null:d{t.bits}.1x{w}x{h}nn "
            f"flat[$0,$1,$2,$3,$4,$5]")
    _inline_asm(cg, text, surf, "rw.u,rw.u,rw.u,rw.u,rw.u,rw.u")


def fused_loads(func: ir.FuncOp, family: str) -> set:
    """Loads whose every use is a DPAS that reads its operands from memory itself (the CPU device):
    their register copies are never needed, so they are not built."""
    if family != "cpu":
        return set()
    uses = {v: [o for o, _ in readers] for v, readers in ir.users(func).items()}
    fused = set()
    for o in func.walk():
        if not isinstance(o, ir.LoadNdOp) or len(o.tdesc.type.shape) != 2:
            continue
        ok = True
        for r in o.results:
            for u in uses.get(r, []):
                if not (isinstance(u, ir.DpasOp) and _loaded_as_is(u, 0) and _loaded_as_is(u, 1)
                        and r in u.operands[:2] and u.attrs["tiles"][-1].layout.lane_data == (1, 1)):
                    ok = False
        if ok and any(uses.get(r) for r in o.results):
            fused.add(o)
    return fused


def _loaded_as_is(dpas: ir.DpasOp, i: int) -> bool:
    """Whether DPAS operand ``i`` is the result of a 2-D load in the very tile the DPAS reads. A
    transpose between them (``xl.dot(a, b.T)``) is free at lane level and leaves no op behind,
    only the load's own tile (``lane_layout = [16, 1]`` where DPAS reads ``[1, 16]``): reading
    such an operand from memory at the DPAS's coordinates would read it untransposed."""
    v = dpas.operands[i]
    load = v.op
    if not isinstance(load, ir.LoadNdOp):
        return False
    tiles = load.attrs.get("tiles", ())
    k = list(load.results).index(v)
    return k < len(tiles) and tiles[k] == dpas.attrs["tiles"][i]


@rule(ir.LoadNdOp)
def _load_nd(cg: CodeGen, op: ir.LoadNdOp):
    if op in cg.fused:  # read again, element by element, by the DPAS that uses it
        return [[] for _ in op.results]
    d: NdDesc = cg.get(op.tdesc)
    return _load_block2d(cg, op, d) if _block2d(cg) and _block_fits(cg, op) else _load_elementwise(cg, op, d)


@rule(ir.StoreNdOp)
def _store_nd(cg: CodeGen, op: ir.StoreNdOp):
    d: NdDesc = cg.get(op.tdesc)
    if _block2d(cg) and _block_fits(cg, op, store=True):
        _store_block2d(cg, op, d)
    else:
        _store_elementwise(cg, op, d)
    return []


@rule(ir.PrefetchNdOp)
def _prefetch_nd(cg: CodeGen, op: ir.PrefetchNdOp):
    if _block2d(cg):
        _prefetch_block2d(cg, op, cg.get(op.tdesc))
    return []  # the CPU device has no use for a prefetch; gathers need none


# ---- DPAS --------------------------------------------------------------------------------------------

def _owners(tile: VectorType, sg: int) -> Dict[Tuple[int, ...], Tuple[int, int]]:
    """Element coordinates -> (lane, slot) of its first owner in a sub-group of ``sg`` lanes."""
    offs = lane_slot_offsets(tile.layout, tile.shape)
    table = {}
    for lane in range(sg):
        base = lane_base_py(tile.layout, tile.shape, lane)
        for s, o in enumerate(offs):
            table.setdefault(tuple(b + x for b, x in zip(base, o)), (lane, s))
    return table


def _dpas_emulated(cg: CodeGen, op: ir.DpasOp):
    """DPAS, element by element: lane ``l`` owns C's column ``l``; each A element is fetched with a
    shuffle from the lane that owns it, B's column is the lane's own."""
    tiles = op.attrs["tiles"]
    ta, tb, tc = tiles[0], tiles[1], tiles[-1]
    (M, K), (_, N) = ta.shape, tb.shape
    sg = cg.target.sg_size
    if tb.layout.lane_layout != (1, sg) or tc.layout.lane_layout != (1, sg) or tc.layout.lane_data != (1, 1) \
            or tb.layout.lane_data[1] != 1:
        raise PassError("codegen: dpas operands need B and C spread one column per lane", op)
    a_slots, b_slots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    c_slots = cg.slots(op.operands[2]) if len(op.operands) > 2 else None
    owner_a = _owners(ta, sg)
    b_index = {o: s for s, o in enumerate(lane_slot_offsets(tb.layout, tb.shape))}
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    b = cg.b
    a_cache = {}
    from_memory = _shared_reader(cg, op, op.operands[0]) if cg.family == "cpu" and _loaded_as_is(op, 0) else None
    if from_memory is not None and tc.layout.lane_data == (1, 1) and _loaded_as_is(op, 1):
        read_b = _shared_reader(cg, op, op.operands[1])
        if read_b is not None:
            return _dpas_from_memory(cg, op, ta, tb, tc, from_memory, read_b)

    def a_val(i, k):
        v = a_cache.get((i, k))
        if v is None:
            if from_memory is not None:  # every lane reads the same element: a broadcast load
                raw = from_memory(i, k)
            else:  # fetch it from the lane that owns it
                lane, slot = owner_a[(i, k)]
                raw = sub_group_shuffle(cg, "idx", a_slots[slot], cg.i32(lane))
            v = a_cache[(i, k)] = _widen_operand(cg, raw, ea)
        return v

    out = []
    for j, (i, oc) in enumerate(lane_slot_offsets(tc.layout, tc.shape)):
        acc = c_slots[j] if c_slots is not None else zero(ec)
        for k in range(K):
            bv = _widen_operand(cg, b_slots[b_index[(k, oc)]], eb)
            if ec.is_floating:
                acc = cg.ocl.intrinsic(b, "llvm.fma.f32", F32, [a_val(i, k), bv, acc])
            else:
                acc = b.add(acc, b.mul(a_val(i, k), bv))
        out.append(acc)
    return [out]


def _shared_reader(cg: CodeGen, op: ir.Op, v):
    """``_operand_reader(cg, v)``, shared by the DPAS ops of one block that read the same tile (the
    blocks of a subgroup's tile are separate DPAS ops): its row and column parts are built once.
    Safe for dominance: each op's lowering is single-entry single-exit, so what an op of a block
    built dominates the ops after it in that block."""
    key = ("dpas_reader", id(op.parent), v)
    if key not in cg._cache:
        cg._cache[key] = _operand_reader(cg, v)
    return cg._cache[key]


def _operand_reader(cg: CodeGen, v):
    """When ``v`` was just loaded through a 2-D descriptor: a function (i, j) -> the element at
    (i, j) of that tile read from memory (bounds-checked: zero outside the tensor; i, j may be LLVM
    values), with ``.access`` the unchecked form (``cpu_tiles.TileAccess``). None otherwise. Lets
    the CPU's DPAS read operands from memory (a broadcast load when the address is the same in
    every lane) instead of moving them between lanes."""
    load = v.op
    if not isinstance(load, ir.LoadNdOp):
        return None
    d: NdDesc = cg.get(load.tdesc)
    if len(d.type.shape) != 2:
        return None
    index = list(load.results).index(v)
    r_off, c_off = _block_shift(load, d, index)
    origin = _origin(cg, d, load)
    tr = bool(load.attrs.get("transpose"))
    t = d.type.elem
    bb = cg.b
    r0, c0 = bb.add(origin[0], cg.i32(r_off)), bb.add(origin[1], cg.i32(c_off))
    et = mem_type(t)
    as_i32 = lambda x: cg.i32(x) if isinstance(x, int) else x  # noqa: E731
    # built once per reader (before the DPAS loop): the clamp bounds and the row stride
    tops = [bb.select(bb.icmp_signed(">", n, cg.i32(0)), bb.sub(n, cg.i32(1)), cg.i32(0)) for n in d.shape[:2]]
    stride = cg.to_i64(d.strides[0])
    bases = (r0, c0)
    parts = {}  # (dimension, coordinate) -> (in bounds, clamped offset in elements): a row's part is
    # shared by every element of the row. Coordinates are ints or LLVM values (kept alive by the module)

    def part(dim, x):
        key = (dim, x if isinstance(x, int) else id(x))
        hit = parts.get(key)
        if hit is None:
            c = bb.add(bases[dim], as_i32(x))
            ok = bb.and_(bb.icmp_signed(">=", c, cg.i32(0)), bb.icmp_signed("<", c, d.shape[dim]))
            c = bb.select(bb.icmp_signed("<", c, cg.i32(0)), cg.i32(0), c)
            off = cg.to_i64(bb.select(bb.icmp_signed(">", c, tops[dim]), tops[dim], c))
            hit = parts[key] = (ok, bb.mul(off, stride) if dim == 0 else off)
        return hit

    def read(i, j):
        if tr:
            i, j = j, i
        (ok_r, off_r), (ok_c, off_c) = part(0, i), part(1, j)
        return bb.select(bb.and_(ok_r, ok_c), load_elem(cg, cg.gep(d.base, et, bb.add(off_r, off_c)), t), zero(t))

    def prepare(i=None, j=None):
        """Build the part of row ``i`` / column ``j`` here (before a loop that reads them)."""
        if tr:
            i, j = j, i
        if i is not None:
            part(0, i)
        if j is not None:
            part(1, j)
    read.prepare = prepare
    read.access = TileAccess(cg, d, [r0, c0], tr)
    return read


def _dpas_from_memory(cg: CodeGen, op: ir.DpasOp, ta, tb, tc, read_a, read_b):
    """DPAS on the CPU device with both operands read from memory, as a loop over K: per step
    every lane broadcasts A's column element of each row and multiplies it by its own B element
    (the outer-product micro-kernel: accumulators stay in registers, one vector load of B's row
    and one broadcast of A per row). When both tiles lie inside their tensors (tested once), the
    loop reads without bounds checks through lane-linear addresses (``cpu_tiles``), one loop per
    group of rows whose accumulators fit in registers (``target.fma_dot_slots``); the checked
    loop handles the edges."""
    (M, K), (_, N) = ta.shape, tb.shape
    b = cg.b
    sg = cg.target.sg_size
    c_offs = lane_slot_offsets(tc.layout, tc.shape)
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    init = list(cg.slots(op.operands[2])) if len(op.operands) > 2 else [zero(ec)] * len(c_offs)
    # A's row parts and B's column parts do not change with k: built here, before the branch and the
    # loops, so that they dominate both (and the later DPAS ops of the block that share the readers)
    col = lane_base(cg, tc.layout, tc.shape)[1]
    cols_v = {oc: b.add(col, cg.i32(oc)) if oc else col for _, oc in c_offs}
    for i, oc in c_offs:
        read_a.prepare(i=i)
        read_b.prepare(j=cols_v[oc])

    def fma(x, y, acc):
        if ec.is_floating:
            return cg.ocl.intrinsic(b, "llvm.fma.f32", F32, [x, y, acc])
        return b.add(acc, b.mul(x, y))

    def checked_step(k, offs):
        rows, cols = {}, {}
        for i, oc in offs:
            if i not in rows:
                rows[i] = _widen_operand(cg, read_a(i, k), ea)
            if oc not in cols:
                cols[oc] = _widen_operand(cg, read_b(k, cols_v[oc]), eb)
        return rows, cols

    def fast_step(k, offs):
        rows, cols = {}, {}
        for i, oc in offs:
            if oc not in cols:
                cols[oc] = _widen_operand(cg, load_elem(cg, read_b.access.address(k, oc, lane=True), eb), eb)
        for i, oc in offs:
            if i not in rows:
                rows[i] = _widen_operand(cg, load_elem(cg, read_a.access.address(i, k), ea), ea)
        return rows, cols

    def k_loop(step, offs, start):
        pre = b.block
        loop = cg.fn.append_basic_block("dpas.k")
        done = cg.fn.append_basic_block("dpas.done")
        b.branch(loop)
        b.position_at_end(loop)
        k = b.phi(I32)
        k.add_incoming(cg.i32(0), pre)
        accs = [b.phi(v.type) for v in start]
        for p, v in zip(accs, start):
            p.add_incoming(v, pre)
        rows, cols = step(k, offs)
        new = [fma(rows[i], cols[oc], acc) for (i, oc), acc in zip(offs, accs)]
        k1 = b.add(k, cg.i32(1))
        end = b.block
        for p, v in zip(accs, new):
            p.add_incoming(v, end)
        k.add_incoming(k1, end)
        b.cbranch(b.icmp_signed("<", k1, cg.i32(K)), loop, done)
        b.position_at_end(done)
        return new

    def by_rows(step, prepare=()):
        """One K loop per group of rows whose accumulators fit in registers (balanced groups)."""
        for access in prepare:
            access.prepare()
        loops = -(-len(c_offs) // cg.target.fma_dot_slots)
        rows = -(-M // loops)
        out = [None] * len(c_offs)
        for r0 in range(0, M, rows):
            part = [j for j, (i, _) in enumerate(c_offs) if r0 <= i < r0 + rows]
            for j, v in zip(part, k_loop(step, [c_offs[j] for j in part], [init[j] for j in part])):
                out[j] = v
        return [out]

    if not (lane_columns(tc, sg) and lane_columns(tb, sg) and tb.shape[1] == tc.shape[1]):
        return by_rows(checked_step)
    access_a, access_b = read_a.access, read_b.access
    inside = uniform(cg, b.and_(access_a.inside(M, K), access_b.inside(K, N)))
    return _branch_values(cg, inside, lambda: by_rows(fast_step, (access_a, access_b)),
                          lambda: by_rows(checked_step), names=("dpas.inside", "dpas.edge", "dpas.end"))


def _widen_operand(cg: CodeGen, v, t: DType):
    if t.is_floating:
        return widen(cg, v, t)
    return cg.b.sext(v, I32) if t.is_signed else cg.b.zext(v, I32)


# IGC 12504's spelling (short/int operands)
_DPAS_NAMES = {"bf16": "bf16_bf16_matrix_mad_k16", "f16": "f16_f16_matrix_mad_k16",
               "i8": "i8_i8_matrix_mad_k32", "ui8": "u8_u8_matrix_mad_k32", "f32": "tf32_tf32_matrix_mad_k8_f32"}


def _pack(cg: CodeGen, slots: List, per: int, bits: int, as_float=False):
    """Pack ``per`` consecutive slots (low bits first) into each component of a vector (reusing
    the vector the slots came from when it already is that vector)."""
    b = cg.b
    if isinstance(slots, VecSlots) and slots.per == per and (as_float or per > 1 or
                                                             isinstance(slots.vec.type.element, ll.IntType)):
        vec = slots.vec
        want = ll.IntType(bits * per) if not as_float else vec.type.element
        if vec.type.element != want and not as_float:
            vec = b.bitcast(vec, ll.VectorType(want, vec.type.count))
        return vec
    comps = []
    for c in range(len(slots) // per):
        group = slots[c * per:(c + 1) * per]
        if as_float:
            comps.append(group[0])
            continue
        wide = ll.IntType(bits * per)
        acc = None
        for j, v in enumerate(group):
            if not isinstance(v.type, ll.IntType):
                v = b.bitcast(v, ll.IntType(bits))
            x = b.zext(v, wide) if per > 1 else v
            if j:
                x = b.shl(x, ll.Constant(wide, j * bits))
            acc = x if acc is None else b.or_(acc, x)
        comps.append(acc)
    vt = ll.VectorType(comps[0].type, len(comps))
    vec = ll.Constant(vt, None)
    for i, c in enumerate(comps):
        vec = b.insert_element(vec, c, cg.i32(i))
    return vec


def _dpas_builtin(cg: CodeGen, op: ir.DpasOp):
    """The OpenCL DPAS builtins of the target (HARDWARE.md: names and operand types per sub-group
    size); ``tf32`` gives A as pairs of rows per float, one call covers all rows."""
    tiles = op.attrs["tiles"]
    ta, tc = tiles[0], tiles[-1]
    ea = ta.elem
    a, bslots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    c = cg.slots(op.operands[2]) if len(op.operands) > 2 else \
        [zero(tc.elem)] * len(lane_slot_offsets(tc.layout, tc.shape))
    M = ta.shape[0]
    tf32 = ea.name == "f32"
    rows = M
    unsigned = ea.name == "ui8"
    bvec = _pack(cg, bslots, max(1, 32 // ea.bits), ea.bits, as_float=tf32)
    if tf32:  # IGC 12504 takes tf32 operands as raw bits: A as short8 (two per float), B as int8
        bvec = cg.b.bitcast(bvec, ll.VectorType(I32, bvec.type.count))
    a_per_row = len(a) // M if not tf32 else 1
    out = []
    for r0 in range(0, M, rows):
        if tf32:  # A comes as row pairs per float (components = ceil(M / 2)); one call covers M
            avec = _pack(cg, a, 1, 32, as_float=True)
            avec = cg.b.bitcast(avec, ll.VectorType(I16, 2 * avec.type.count))
            cpart = c
        else:
            whole = r0 == 0 and rows == M
            avec = _pack(cg, a if whole else a[r0 * a_per_row:(r0 + rows) * a_per_row], a_per_row, ea.bits)
            cpart = c if whole else c[r0:r0 + rows]
        cvec = _pack(cg, cpart, 1, 32, as_float=True) if len(cpart) > 1 else cpart[0]
        av = avec if len(a if tf32 else cpart) > 1 or tf32 else cg.b.extract_element(avec, cg.i32(0))
        base = f"intel_sub_group_{_DPAS_NAMES[ea.name]}"
        mangled = "_Z" + str(len(base)) + base + mangle_args([av.type, bvec.type, cvec.type],
                                                              unsigned=(0, 1) if unsigned else ())
        r = cg.call(mangled, cvec.type, [av, bvec, cvec], convergent=True)
        if isinstance(cvec.type, ll.VectorType):
            if rows == M or tf32:
                return [lazy_slots(cg, r, cvec.type.count, 1, lambda i, r=r: cg.b.extract_element(r, cg.i32(i)))]
            out.extend(cg.b.extract_element(r, cg.i32(i)) for i in range(cvec.type.count))
        else:
            out.append(r)
        if tf32:
            break
    return [out]


@rule(ir.DpasOp)
def _dpas(cg: CodeGen, op: ir.DpasOp):
    if cg.family == "gpu" and cg.target.has_dpas:
        from .visa_dpas import dpas_visa, visa_dpas
        if visa_dpas(cg, op):
            return dpas_visa(cg, op)
        return _dpas_builtin(cg, op)
    return _dpas_emulated(cg, op)


# ---- named barriers ---------------------------------------------------------------------------------

@rule(ir.AllocNBarrierOp)
def _alloc_nbarrier(cg: CodeGen, op):
    cg.nbarriers = op.attrs["count"]
    return []


@rule(ir.InitNBarrierOp)
def _init_nbarrier(cg: CodeGen, op):
    ids = [cg.get(v) for v in op.operands]
    if cg.family == "gpu" and cg.target.named_barriers:
        ptr = cg.call("_Z18named_barrier_initi", ll.PointerType(addrspace=3), [ids[1]], convergent=True)
        return [("hw", ptr)]
    return [("wg", None)]


@rule(ir.NBarrierArriveOp)
def _nbarrier_arrive(cg: CodeGen, op):
    # arriving publishes this subgroup's writes; the wait below is where subgroups meet
    cg.call("_Z21__spirv_MemoryBarrierii", ll.VoidType(), [cg.i32(2), cg.i32(0x100 | 0x200 | 0x8)])
    return []


@rule(ir.NBarrierWaitOp)
def _nbarrier_wait(cg: CodeGen, op):
    kind, ptr = cg.get(op.operands[0])
    if kind == "hw":
        cg.call("_Z24work_group_named_barrierPU3AS314__namedBarrierj", ll.VoidType(), [ptr, cg.i32(3)],
                convergent=True)
    else:  # the CPU device (and DG2) have no hardware named barriers: the workgroup barrier is stronger
        cg.call("_Z7barrierj", ll.VoidType(), [cg.i32(3)], convergent=True)
    return []
