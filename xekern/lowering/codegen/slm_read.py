"""DPAS operands read from SLM by one transposed LSC message into a named vISA register (pvc).

A transposed DPAS A operand comes back from SLM (``slm-transpose``) as fragment-sized blocks of
256 bytes, each one sub-group block read. IGC 12504 reads up to 256 bytes per message
(``load.slm.d32x64t``; an ``intel_sub_group_block_read8`` is two of them) and copies each
message's address into a payload register of its own inside the K loop: two instructions per
fragment. Blocking puts fragments that lie side by side in the tile and one after another in the
matrix (``messages.slm_contiguous``) into one multi-result ``load_matrix`` (pass
``merge-block-messages``);
here that becomes one ``load.slm.d64x64t`` of up to 64 qwords into a named register, its address
in a payload register set before the loop when it does not move in it: one instruction per
512 bytes on pvc. Inline-vISA DPAS names the pieces in the register (``VecSlots.message``).
"""
from __future__ import annotations

from math import prod
from typing import List, Sequence

from llvmlite import ir as ll

from ...ir.layout import lane_slot_offsets
from ..emitters import slm_read_bytes
from ..messages import LSC_VECTOR_SIZES
from ..rewrite import PassError
from .block2d import named_piece
from .core import CodeGen, NamedRegister, SlmMatrix, VecSlots
from .memory import slm_offset
from .ocl import I8, I32
from .recurrence import affine, at_entry

_SFID_SLM = 14  # LSC's shared local memory port (IGA: send.slm)
# LSC message descriptor (Xe-HPC; IGC 12504 encodes load.slm.d32x64t.a32 as 0x0240F500): load
# (opcode 0), flat a32 addresses (2 << 7), data size (d32 2, d64 3) << 9, vector size << 12,
# transposed (1 << 15), response registers << 20, one payload register (1 << 25)
_A32, _TRANSPOSE, _ONE_PAYLOAD_GRF = 2 << 7, 1 << 15, 1 << 25


def load(cg: CodeGen, op, mat: SlmMatrix, offsets: Sequence) -> List[VecSlots]:
    """The pieces of a multi-result ``load_matrix`` (``messages.slm_contiguous``) at ``offsets`` (LLVM i32)."""
    tiles = op.attrs["tiles"]
    t = mat.type.elem
    lanes, grf = cg.target.sg_size, cg.target.grf_bytes
    nbytes = sum(prod(tl.shape) for tl in tiles) * t.itemsize
    if nbytes > slm_read_bytes(cg.emitter, cg.target) or nbytes * 8 % (32 * lanes):
        raise PassError(f"codegen: {len(tiles)} SLM tiles of {nbytes} bytes are not one {cg.target.name} "
                        "message", op)
    b = cg.b
    addr = b.mul(slm_offset(cg, mat.type, list(offsets)), cg.i32(t.itemsize))
    cg.visa_registers += 1
    n = cg.visa_registers
    reg = NamedRegister(f"XKSLM{n}", nbytes * 8 // 32 // lanes)
    cg.declare(f".decl {reg.name} v_type=G type=d num_elts={reg.dwords * lanes} align=GRF")
    cg.declare(f".decl XKSLA{n} v_type=G type=ud num_elts={grf // 4} align=GRF")
    set_address = f"mov (M1_NM, 1) XKSLA{n}(0,0)<1> $0(0,0)<0;1,0>"
    loop = cg.loops[-1] if cg.loops else None
    # the address is the SLM pointer itself: the asm operand is then the value IGC puts in its own SLM
    # messages' payloads (its local addresses carry 0x10000000, read back from its vISA)
    pointer = lambda off: cg.gep(mat.ptr, I8, off)  # noqa: E731
    if loop is not None and affine(cg.fn, loop, addr) == 0:  # set once, before the loop
        cg.in_block(loop.pre, lambda: cg.asm(ll.VoidType(), set_address, "rw",
                                             [pointer(at_entry(b, cg.fn, loop, addr))]))
    else:
        cg.asm(ll.VoidType(), set_address, "rw", [pointer(addr)])
    cg.cached("slm read visible", lambda: _visible_read(cg, mat))
    desc = (_A32 | 3 << 9 | LSC_VECTOR_SIZES[nbytes // 8] << 12 | _TRANSPOSE | nbytes // grf << 20 | _ONE_PAYLOAD_GRF)
    send = cg.asm(ll.VoidType(), f"raw_sends.{_SFID_SLM}.1.0.{nbytes // grf} (M1_NM, 1) 0x0:ud 0x{desc:x}:ud "
                                 f"XKSLA{n}.0 %null.0 {reg.name}.0", "", [])
    out, at = [], 0
    for tile in tiles:
        out.append(named_piece(cg, reg, send, at, len(lane_slot_offsets(tile.layout, tile.shape)), t, tile, False))
        at += prod(tile.shape) * t.itemsize
    return out


def _visible_read(cg: CodeGen, mat: SlmMatrix):
    """One SLM load IGC can see, once per kernel. IGC 12504's TrivialLocalMemoryOpsElimination
    deletes every SLM store, fence and barrier of a kernel that has stores but no loads in SLM,
    and reads in inline asm are invisible to it: the matrix would never be written. The value
    goes to an asm ``mov`` into the null register, which LLVM cannot delete (2 instructions, before
    any loop)."""
    v = cg.b.load(mat.ptr, typ=I32, align=4)
    return cg.asm(ll.VoidType(), "mov (M1_NM, 1) %null(0,0)<1> $0(0,0)<0;1,0>", "rw", [v])
