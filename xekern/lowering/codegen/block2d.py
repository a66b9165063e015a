"""2D block messages for descriptor loads, stores and prefetches, as every GPU emitter shares them:
which tiles a message fits (``block_fits``), the region a message covers (``region``,
``surface``), and how a read's register payload unpacks into a tile's slots (``load_block2d``,
given the emitter's spelling of one read message).

A payload is row-major (one row per component for 16-wide blocks; VNNI packs 2 or 4 rows into a
dword), which is exactly the slot order of ``layout.lane_slot_offsets``.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ...ir.types import DType
from ..layouts import rows_per_register
from ..rewrite import PassError
from ..spirv_asm import is_asm
from .core import CodeGen, NamedRegister, NdDesc, VecSlots, unpacked
from .nd_elementwise import load_elementwise, nd_origin
from .ocl import I32, I64


def new_descriptor(cg: CodeGen, op: ir.CreateNdTDescOp) -> NdDesc:
    """The descriptor ``op`` makes, in registers (its ``block_io`` mark from surface_rules)."""
    i32 = lambda v: cg.to_i32(cg.get(v))  # noqa: E731
    return NdDesc(cg.get(op.base), [i32(v) for v in op.shape], [i32(v) for v in op.strides],
                  [i32(v) for v in op.offsets], op.result.type, bool(op.attrs.get("block_io")))


def surface_holds(cg: CodeGen, d: NdDesc):
    """An i1: whether ``d``'s surface obeys the target's 2D block rules as ``aligned_region`` uses
    it (a base 4-byte aligned for 8- and 16-bit elements, a width of at least ``min_width`` bytes
    and a multiple of ``width_align``, a 2-D pitch of at least ``min_pitch`` and a multiple of
    ``pitch_align``): what lowering/surface_rules.py proved or the launch checked, evaluated here."""
    b = cg.b
    rules = cg.target.block2d_surface
    eb = d.type.elem.itemsize
    conds = []

    def multiple(v, m):
        return b.icmp_unsigned("==", b.and_(v, ll.Constant(v.type, m - 1)), ll.Constant(v.type, 0))
    if eb < rules.width_align:
        conds.append(multiple(b.ptrtoint(d.base, I64), rules.width_align))
    width = b.mul(d.shape[-1], cg.i32(eb))
    conds += [b.icmp_signed(">=", width, cg.i32(rules.min_width)), multiple(width, rules.width_align)]
    if len(d.shape) == 2:
        pitch = b.mul(d.strides[0], cg.i32(eb))
        conds += [b.icmp_signed(">=", pitch, cg.i32(rules.min_pitch)), multiple(pitch, rules.pitch_align)]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    return ok


def block2d_enabled(cg: CodeGen, d: NdDesc) -> bool:
    """Whether descriptor ``d`` becomes 2D block messages: the emitter writes them, the target has
    them, and its surface takes them (``block_io``: lowering/surface_rules.py)."""
    return cg.emitter.block2d and cg.target.has_block2d and d.block_io


def transpose32(t: DType, lay, shape, sg: int, narrow: bool = True):
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


def block_fits(cg: CodeGen, op, store: bool = False, narrow: bool = True) -> bool:
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
            if transpose32(t, lay, tile.shape, sg, narrow) is None or len(tiles) != 1:
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


def region(cg: CodeGen, d: NdDesc, origin: List) -> List:
    """(width, height, pitch, x, y) of a 2D block message over the descriptor's tensor: width, pitch
    and x in elements, height and y in rows (a 1-D descriptor is one row)."""
    if len(d.shape) == 1:
        return [d.shape[0], cg.i32(1), d.shape[0], origin[0], cg.i32(0)]
    return [d.shape[1], d.shape[0], d.strides[0], origin[1], origin[0]]


def aligned_region(cg: CodeGen, d: NdDesc, origin: List, msg_bytes: int = 0) -> List:
    """(base i64, width bytes, height, pitch bytes, x, y) of a 2D block message whose elements are
    ``msg_bytes`` wide (0: the descriptor's; 4 for a 32-bit transposed read), with the base aligned
    down to the surface's ``base_align`` and x and the width moved by the difference: a base the
    hardware takes, whatever the tensor's (lowering/surface_rules.py proved the difference whole
    message elements). A 1-D descriptor is one row, whose pitch is chosen to satisfy the rules."""
    b = cg.b
    eb = d.type.elem.itemsize
    rules = cg.target.block2d_surface
    width, height, pitch, x, y = region(cg, d, origin)
    base = b.ptrtoint(d.base, I64)
    # the low bits from the base's low dword, taken as a vector element: from a trunc (of the
    # i64 or of an i64 ``and``) IGC (12504 and 2.x) narrows the payload's x into a 32-bit add3
    # with a 64-bit source, which its vISA verifier rejects ("add3 src operand only supports
    # integer D/W type"; row_sums_advance)
    lo = b.extract_element(b.bitcast(base, ll.VectorType(I32, 2)), cg.i32(0))
    shift = b.and_(lo, cg.i32(rules.base_align - 1))
    base = b.and_(base, ll.Constant(I64, -rules.base_align))
    width = b.add(b.mul(width, cg.i32(eb)), shift)
    if len(d.shape) == 1:  # any pitch >= the width: the next multiple of base_align
        pitch = b.and_(b.add(width, cg.i32(rules.base_align - 1)), cg.i32(-rules.base_align))
    else:
        pitch = b.mul(pitch, cg.i32(eb))
    mb = msg_bytes or eb
    return [base, width, height, pitch, b.add(x, b.udiv(shift, cg.i32(mb)) if mb > 1 else shift), y]


def surface(cg: CodeGen, d: NdDesc, origin: List, msg_bytes: int = 0):
    """(base i64, width_bytes-1, height-1, pitch_bytes-1, x, y): IGC's encoding of ``aligned_region``."""
    base, width, height, pitch, x, y = aligned_region(cg, d, origin, msg_bytes)
    m1 = lambda v: cg.b.sub(v, cg.i32(1))  # noqa: E731
    return [base, m1(width), m1(height), m1(pitch), x, y]


def load_nd(cg: CodeGen, op: ir.LoadNdOp, read, named=None) -> List:
    """A descriptor load as the GPU emitters write it: ``load_block2d`` with the emitter's ``read``
    (and ``named``) where the surface and the block allow a 2D block message, else element by
    element."""
    d: NdDesc = cg.get(op.tdesc)
    if block2d_enabled(cg, d) and block_fits(cg, op, narrow=cg.emitter.narrow_block_reads):
        return load_block2d(cg, op, d, read, named=named)
    return load_elementwise(cg, op, d)


def load_block2d(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, read, named=None) -> List:
    """A 2D block load as one message ``read(cg, d, x, y, bits, w, h, n, transpose, vnni, vt)`` (the
    emitter's spelling of the message), unpacked into the result tiles' slots. A message of more
    than 16 dwords per lane goes to ``named(cg, op, d, tiles, dwords, w, h, n, packed)`` (the visa
    emitter's reads into named registers)."""
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
        return [load_transposed32(cg, op, d, tiles[0], read)]
    slots = sum(len(lane_slot_offsets(tl.layout, tl.shape)) for tl in tiles)
    if slots * t.bits > 16 * 32 and named is not None:
        return named(cg, op, d, tiles, slots * t.bits // 32, w, h, n, packed)
    # bits per payload component: a dword for VNNI and 32-bit data, else one row's share of a lane;
    # more than 16 components travel as dwords (LLVM's SPIR-V backend and spirv-val cap vectors at 16)
    natural = 32 if packed or t.bits >= 32 else t.bits * tiles[0].layout.lane_data[-1]
    word = natural if slots * t.bits // natural <= 16 else 32
    count = slots * t.bits // word
    vt = ll.VectorType(ll.IntType(word), count)
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    vec = read(cg, d, x, y, t.bits, w, h, n, tr, packed, vt)
    out, k = [], 0
    for tile in tiles:
        m = len(lane_slot_offsets(tile.layout, tile.shape))
        part = vec if m * t.bits == count * word else cg.b.shuffle_vector(
            vec, ll.Constant(vt, None), ll.Constant(ll.VectorType(I32, m * t.bits // word),
                                                    list(range(k * t.bits // word, (k + m) * t.bits // word))))
        if word != natural:  # back to the block's own element vector (a free reinterpretation)
            part = cg.b.bitcast(part, ll.VectorType(ll.IntType(natural), m * t.bits // natural))
        slots = unpacked(cg, part, m, t)
        if is_asm(vec):  # element-major per lane: slot k starts k * bits * lanes / 8 bytes in
            slots.message = (vec, k * t.bits * cg.target.sg_size // 8)
        out.append(slots)
        k += m
    return out


def load_transposed32(cg: CodeGen, op, d: NdDesc, tile, read) -> List:
    """A transposed block read as 32-bit elements (``transpose_bit_width = 32``), see ``transpose32``."""
    t = d.type.elem
    dwords, rows = transpose32(t, tile.layout, tile.shape, cg.target.sg_size)
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    # x is in elements of the message: dwords of the memory row
    x = cg.b.udiv(cg.b.mul(x, cg.i32(t.bits)), cg.i32(32)) if t.bits < 32 else x
    vec = read(cg, d, x, y, 32, dwords, rows, 1, True, False, ll.VectorType(I32, dwords * rows // cg.target.sg_size))
    m = len(lane_slot_offsets(tile.layout, tile.shape))
    if t.bits < 32 and tile.layout.lane_data == (1, 1):  # A fragment: one element per component
        vec = cg.b.bitcast(vec, ll.VectorType(ll.IntType(t.bits), m))
    return unpacked(cg, vec, m, t)


def named_piece(cg: CodeGen, reg: NamedRegister, send, offset: int, m: int, t: DType, tile, packed: bool) -> VecSlots:
    """The ``m`` slots of a block at byte ``offset`` of ``reg``, for inline-vISA DPAS to name in
    place (``message``). Blocking reads into named registers only for such DPAS operands, so
    nothing asks for them as an LLVM vector (``make_vec`` says so if something ever does)."""
    natural = 32 if packed or t.bits >= 32 else t.bits * tile.layout.lane_data[-1]

    def no_vector():
        raise PassError(f"codegen: a piece of the {reg.dwords}-dword block read {reg.name} is used as a vector; "
                        "blocking reads into named registers only for inline-vISA DPAS operands")
    return unpacked(cg, None, m, t, m * t.bits // natural, (reg, offset), (send, no_vector))


def store_shape(cg: CodeGen, op: ir.StoreNdOp, d: NdDesc) -> Tuple[int, int]:
    """(rows, columns) of a 2D block store, which is sub-group wide and 1..8 rows."""
    h, w = (d.type.shape if len(d.type.shape) == 2 else (1, d.type.shape[0]))
    if w != cg.target.sg_size or h > 8:
        raise PassError(f"codegen: 2D block stores are {cg.target.sg_size} wide and at most 8 rows, got {h}x{w}", op)
    return h, w


def prefetch_shape(cg: CodeGen, op: ir.PrefetchNdOp, d: NdDesc) -> Optional[Tuple[int, int]]:
    """(rows, columns) of a prefetch's 2D block message: its subgroup block, cut to the target's
    largest block for the element type; None when the target has no 2D block for it."""
    shape = op.attrs.get("block") or d.type.shape
    h, w = (shape if len(shape) == 2 else (1, shape[0]))
    info = cg.target.block2d_for(d.type.elem)
    if info is None:
        return None
    return min(h, info.max_height), min(w, info.max_width)
