"""2D block reads and prefetches as inline vISA ``raw_sends`` (the visa emitter, workgroup-level
kernels): the message payload is built once outside loops and carried through a K loop as a
recurrence (one add per message and iteration, or one per two messages that share a register),
where IGC rebuilds the whole payload (6 movs) for every ``LSC2DBlockRead``. Reads of more than
16 dwords per lane (up to 32 registers) land in named vISA registers, which inline-vISA DPAS names
in place (``visa_dpas``). Inline vISA goes through placeholder calls (``lowering/spirv_asm.py``),
as LLVM's own inline asm stops at 128 bits.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ..emitters import named_read_bits
from ..rewrite import PassError
from .block2d import block2d_enabled, block_fits, named_piece, prefetch_shape, region, surface
from .core import CodeGen, NamedRegister, NdDesc
from .genisa import genisa_read, prefetch_block2d
from .nd_elementwise import nd_origin
from .ocl import I32, I64
from .recurrence import affine, at_entry, step_of, whole_step


# LSC message descriptor fields (Xe-HPC): what IGC 12504 itself encodes for load_block2d (read back
# from its ISA: d16 8x16 0x02400203, d16v 16x16 0x02800283, d32t 0x02408403, prefetch 0x02080203).
# The same on Xe2 (bmg, lnl, ptl), whose cache-control field is one bit wider (19:16): with bit 16
# clear, 4 << 17 still reads L1 and L3 cached (tools/isa_msg.py's PLATFORMS; the differential check)
LSC_LOAD_BLOCK2D, LSC_VNNI, LSC_TRANSPOSE, LSC_L1_L3_CACHED = 0x03, 1 << 7, 1 << 15, 4 << 17
LSC_DATA_SIZE = {8: 0, 16: 1, 32: 2, 64: 3}


def raw_bits(cg: CodeGen) -> int:
    """Bits per lane one raw read may bring (``emitters.named_read_bits``: 1024 on pvc and bmg), for
    workgroup-level kernels only (0 otherwise, and on emitters other than visa): ``payload`` builds
    the message payload per lane, which is right only when every lane of the subgroup runs the
    load; workgroup-level control flow is uniform, while a subgroup-level kernel may branch on its
    lane."""
    return named_read_bits(cg.emitter, cg.target) if cg.options.level == "wg" else 0


def split_constant(v) -> Tuple[object, int]:
    """``v`` as (value or None, constant): peels constant addends off an ``add`` chain."""
    if isinstance(v, ll.Constant):
        return None, int(v.constant)
    if isinstance(v, ll.Instruction) and v.opname == "add" and isinstance(v.operands[1], ll.Constant):
        rest, c = split_constant(v.operands[0])
        return rest, c + int(v.operands[1].constant)
    return v, 0


def payload(cg: CodeGen, surf: List, w: int, h: int, n: int):
    """The 2D block message payload as one GRF, dword ``i`` in lane ``i``: base (2 dwords), width,
    height and pitch (bytes - 1), x, y, block shape ((n-1) << 16 | (h-1) << 8 | (w-1)).

    Built as ``constant part + (lane == 5 ? x : 0) + (lane == 6 ? y : 0)``, where the constant part
    holds everything loop-invariant (the surface, the block shape and the constant addends of x and
    y): LLVM's reassociate and LICM then hoist all but the loop-varying coordinate, and messages
    that share it share its select, so a message in a K loop costs one add and its send."""
    b = cg.b
    base = surf[0]
    (xv, xc), (yv, yc) = split_constant(surf[4]), split_constant(surf[5])
    vals = [b.trunc(base, I32), b.trunc(b.lshr(base, ll.Constant(I64, 32)), I32), surf[1], surf[2], surf[3],
            cg.i32(xc), cg.i32(yc), cg.i32((n - 1) << 16 | (h - 1) << 8 | (w - 1))]
    lane = cg.lane_id()
    is_lane = lambda i: cg.lane_cached(("lane ==", i), lambda: b.icmp_unsigned("==", lane, cg.i32(i)))  # noqa: E731
    cur = cg.i32(0)
    for i in reversed(range(8)):
        cur = b.select(is_lane(i), vals[i], cur)
    for i, v in ((6, yv), (5, xv)):
        if v is not None:
            cur = b.add(cur, b.select(is_lane(i), v, cg.i32(0)))
    return cur


def message_payload(cg: CodeGen, d: NdDesc, origin: List, w: int, h: int, n: int, msg_bytes: int,
                    prefetch: bool = False) -> Tuple[str, List]:
    """The payload of a message at ``origin`` (of ``msg_bytes`` elements) as (raw operand text, its
    asm arguments). In a counted
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
                return payload(cg, surface(cg, d, [at_entry(cg.b, fn, loop, c, memo) for c in origin], msg_bytes),
                               w, h, n)

            def delta():  # x is payload dword 5, y dword 6
                lane, total = cg.lane_id(), cg.i32(0)
                for i, c in fields.items():
                    if c:
                        is_lane = cg.lane_cached(("lane ==", i), lambda: cg.b.icmp_unsigned("==", lane, cg.i32(i)))
                        total = cg.b.add(total, cg.b.select(is_lane, step_of(cg.b, loop, c), cg.i32(0)))
                return total
            if cg.target.grf_bytes == 4 * cg.target.sg_size:
                return loop.payload(cg, first, delta, tuple(sorted(fields.items())), prefetch), []
            return "$N.0", [loop.recurrence(cg.b, first, delta)]
    return "$N.0", [payload(cg, surface(cg, d, origin, msg_bytes), w, h, n)]


def raw_block2d(cg: CodeGen, vt, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, tr: bool, vnni: bool,
                 into: Optional[NamedRegister] = None, stage: Optional[NamedRegister] = None):
    """A 2D block read at column ``x``, row ``y`` into ``vt`` (at most ``raw_block2d_bits`` per
    lane) or the named register ``into``, or a prefetch (neither), as one inline vISA ``raw_sends``
    of the payload ``message_payload`` builds (2 instructions per message in a K loop instead of
    IGC's 7, and 3 per 2 messages when payloads share a register).

    A prefetch in a K loop may ``stage`` its payload: copy it into the first register of ``stage``,
    the destination of a read later in the same iteration, and send it from there. Nothing waits for
    a prefetch's answer, so IGC would resolve its payload read at the end of the loop body, which on
    pvc costs its send write-after-read workaround (``-PVCSendWARWA``: two or three moves and a sync
    per prefetch); the later read's overwrite of the copy resolves it right before an LSC send
    instead, which the workaround leaves alone. One mov per prefetch instead."""
    origin = [y, x] if len(d.shape) == 2 else [x]
    lanes = cg.target.sg_size
    per_lane = into.dwords * 32 if into is not None else vt.count * vt.element.width if vt is not None else 0
    grfs = per_lane // 8 * lanes // cg.target.grf_bytes
    prefetch = vt is None and into is None
    desc = (LSC_LOAD_BLOCK2D | LSC_DATA_SIZE[bits] << 9 | (LSC_VNNI if vnni else 0) | (LSC_TRANSPOSE if tr else 0)
            | (LSC_L1_L3_CACHED if prefetch else 0) | min(grfs, 31) << 20 | 1 << 25)  # 32 GRFs: 31, as IGC
    payload, args = message_payload(cg, d, origin, w, h, n, bits // 8, prefetch)
    if into is not None:
        text = (f"raw_sends.15.1.0.{grfs} (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$0')} "
                f"%null.0 {into.name}.0")
        return cg.asm(ll.VoidType(), text, ",".join(["rw"] * len(args)), args)
    if prefetch:
        if stage is not None and not args:  # a payload in a named register: XKPAYn.<byte offset>
            name, offset = payload.split(".")
            cg.visa_registers += 1
            copy = f"XKPFT{cg.visa_registers}"
            staged = cg.staged[stage] = cg.staged.get(stage, -1) + 1  # one register of ``stage`` each
            cg.declare(f".decl {copy} v_type=G type=d num_elts={lanes} align=GRF "
                       f"alias=<{stage.name}, {staged * cg.target.grf_bytes}>")
            row = int(offset) // cg.target.grf_bytes
            text = (f"mov (M1_NM, {lanes}) {copy}(0,0)<1> {name}({row},0)<1;1,0>\n"
                    f"raw_sends.15.1.0.0 (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {copy}.0 %null.0 %null.0")
            return cg.asm(ll.VoidType(), text, "", [])
        text = f"raw_sends.15.1.0.0 (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$0')} %null.0 %null.0"
        return cg.asm(ll.VoidType(), text, ",".join(["rw"] * len(args)), args)
    text = f"raw_sends.15.1.0.{grfs} (M1, {lanes}) 0x0:ud 0x{desc:x}:ud {payload.replace('$N', '$1')} %null.0 $0.0"
    return cg.asm(vt, text, ",".join(["=rw"] + ["rw"] * len(args)), args)


def raw_read(cg: CodeGen, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, transpose: bool, vnni: bool,
             vt: ll.VectorType):
    """One 2D block read (``block2d.load_block2d``'s ``read``): a ``raw_sends`` from a payload built
    once (``raw_block2d``) when the result is at most ``raw_bits`` per lane, else IGC's own
    ``LSC2DBlockRead`` (``genisa.genisa_read``), which builds the payload again for every message.
    So is a block of less than whole registers (a 16 x 2 block of bytes: half a register): the
    message writes whole registers, which a smaller ``raw_sends`` destination cannot take (IGC 2.40
    crashes on a response length of 0)."""
    per_lane = vt.count * vt.element.width
    if per_lane <= raw_bits(cg) and per_lane * cg.target.sg_size % (8 * cg.target.grf_bytes) == 0:
        return raw_block2d(cg, vt, d, x, y, bits, w, h, n, transpose, vnni)
    return genisa_read(cg, d, x, y, bits, w, h, n, transpose, vnni, vt)


def load_named(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, tiles, dwords: int, w: int, h: int, n: int,
                packed: bool) -> List:
    """A 2D block read of more than 16 dwords per lane (up to 32 GRFs: a 32 x 32 16-bit block, two
    DPAS A blocks' worth of rows or four VNNI B blocks) into a named vISA register: no LLVM vector
    may be that wide. Inline-vISA DPAS names its operands in the register (``named_piece``)."""
    t = d.type.elem
    lanes = cg.target.sg_size
    if dwords * 32 > raw_bits(cg):
        raise PassError(f"codegen: a {h}x{w}x{n} block of {t.user_name} is {dwords} dwords per lane, more than "
                        f"{cg.target.name} reads in one message here ({raw_bits(cg) // 32})", op)
    reg = cg.named_reads.pop(op, None) or named_register(cg, dwords)
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    send = raw_block2d(cg, None, d, x, y, t.bits, w, h, n, False, packed, into=reg)
    out, k = [], 0
    for tile in tiles:
        m = len(lane_slot_offsets(tile.layout, tile.shape))
        out.append(named_piece(cg, reg, send, k * t.bits * lanes // 8, m, t, tile, packed))
        k += m
    return out


def named_register(cg: CodeGen, dwords: int) -> NamedRegister:
    """A new named vISA register of ``dwords`` per lane, declared in the kernel's entry."""
    cg.visa_registers += 1
    reg = NamedRegister(f"XKBLK{cg.visa_registers}", dwords)
    cg.declare(f".decl {reg.name} v_type=G type=d num_elts={dwords * cg.target.sg_size} align=GRF")
    return reg


def named_dwords(cg: CodeGen, op: ir.LoadNdOp) -> int:
    """The dwords per lane of ``op``'s read when it will be a named-register read (``load_named``:
    a 2D block read of more than 16 dwords on the raw path), else 0."""
    d = cg.values.get(op.tdesc)
    if not isinstance(d, NdDesc) or op.attrs.get("transpose") or not block2d_enabled(cg, d) or \
            not block_fits(cg, op, narrow=cg.emitter.narrow_block_reads):
        return 0
    bits = sum(len(lane_slot_offsets(tl.layout, tl.shape)) for tl in op.attrs["tiles"]) * d.type.elem.bits
    return bits // 32 if 16 * 32 < bits <= raw_bits(cg) else 0


def _stage_for(cg: CodeGen, op: ir.PrefetchNdOp) -> Optional[NamedRegister]:
    """The register of the first named-register read after prefetch ``op`` in its block, declared
    now (``load_named`` takes it), to stage the prefetch's payload in (``raw_block2d``); or None."""
    ops = op.parent.ops if op.parent is not None else []
    for later in ops[ops.index(op) + 1:]:
        if isinstance(later, ir.LoadNdOp):
            if later in cg.named_reads:
                reg = cg.named_reads[later]
                if cg.staged.get(reg, -1) + 1 < reg.dwords * 32 * cg.target.sg_size // 8 // cg.target.grf_bytes:
                    return reg
                continue
            dwords = named_dwords(cg, later)
            if dwords:
                reg = cg.named_reads[later] = named_register(cg, dwords)
                return reg
    return None


def raw_prefetch(cg: CodeGen, op: ir.PrefetchNdOp, d: NdDesc) -> None:
    """A prefetch as a ``raw_sends`` from a payload built once (workgroup-level kernels), else IGC's
    way (``genisa.prefetch_block2d``). In a K loop, where the emitter says so (``stage_prefetches``),
    its payload is staged in the destination of a later read (``raw_block2d``'s ``stage``)."""
    hw = prefetch_shape(cg, op, d)
    if hw is None:
        return
    if not raw_bits(cg):
        prefetch_block2d(cg, op, d)
        return
    h, w = hw
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    raw_block2d(cg, None, d, x, y, d.type.elem.bits, w, h, 1, False, False,
                stage=_stage_for(cg, op) if cg.loops and cg.emitter.stage_prefetches else None)
