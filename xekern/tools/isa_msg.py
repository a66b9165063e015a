"""Xe-HPC (pvc) send messages as the hardware reads them: LSC descriptors, 2D block payloads, the
register layout of a 2D block's data, and the memory the message touches.

Used by the ISA evaluator (``isa_eval``): a ``send`` carries an immediate message descriptor
(``desc``) and extended descriptor (``ex_desc``); a 2D block message also has a one-GRF payload
that earlier instructions built. ``decode_lsc`` turns the descriptor into fields, ``Block2D``
reads the payload, and ``block2d_layout`` says which register byte of the response (or of a
store's data) holds which element of the block.

Sources (public):

- LSC descriptor bits: IGC's vISA (``visa/BuildIRImpl.cpp``, ``lscBlock2dComputeDataRegs`` and
  the LSC encoders) and iga64's own decoding, which ``decode_lsc`` is checked against on every
  send (the disassembly's comment, e.g. ``load_block2d.ugm.d16v.a64``);
- the 2D block payload (dword 0-1 base, 2 width-1, 3 height-1, 4 pitch-1, 5 x, 6 y, 7 block
  shape) and the register layout of each form (row pitch rounded up to a power of two, each block
  padded to whole GRFs; VNNI packs 32/bits rows per dword; transposed data is column-major):
  the CM headers' ``lsc/block2d.h`` (``block_2d_desc``, ``get_lsc_grf_elements``) and
  ``lscBlock2dComputeDataRegs``.

Example::

    >>> d = decode_lsc(0x02800283, 0x0, "ugm")
    >>> d.name, d.vnni, d.rlen
    ('load_block2d.ugm.d16v.a64', True, 8)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

GRF_BYTES = 64   # pvc

LSC_OPS = {0x00: "load", 0x01: "load_strided", 0x02: "load_quad", 0x03: "load_block2d", 0x04: "store",
           0x05: "store_strided", 0x06: "store_quad", 0x07: "store_block2d", 0x08: "atomic_iinc",
           0x09: "atomic_idec", 0x0A: "atomic_load", 0x0B: "atomic_store", 0x0C: "atomic_add",
           0x0D: "atomic_sub", 0x0E: "atomic_min", 0x0F: "atomic_max", 0x10: "atomic_umin", 0x11: "atomic_umax",
           0x12: "atomic_cmpxchg", 0x13: "atomic_fadd", 0x14: "atomic_fsub", 0x15: "atomic_fmin",
           0x16: "atomic_fmax", 0x17: "atomic_fcmpxchg", 0x18: "atomic_and", 0x19: "atomic_or", 0x1A: "atomic_xor",
           0x1F: "fence"}
DATA_SIZES = {0: "d8", 1: "d16", 2: "d32", 3: "d64", 4: "d8u32", 5: "d16u32", 6: "d16u32h"}
# (bytes in memory, bytes in a register) per data size
DATA_BYTES = {"d8": (1, 1), "d16": (2, 2), "d32": (4, 4), "d64": (8, 8), "d8u32": (1, 4), "d16u32": (2, 4),
              "d16u32h": (2, 4)}
VECTOR_SIZES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 8, 5: 16, 6: 32, 7: 64}
ADDR_SIZES = {1: "a16", 2: "a32", 3: "a64"}
ADDR_TYPES = {0: "flat", 1: "bss", 2: "ss", 3: "bti"}
# L1/L3 cache controls as iga spells them (loads / stores); 0 is the default, which iga omits
LOAD_CACHE = {0: "", 1: "uc.uc", 2: "uc.ca", 3: "ca.uc", 4: "ca.ca", 5: "st.uc", 6: "st.ca", 7: "ri.ca"}
STORE_CACHE = {0: "", 1: "uc.uc", 2: "uc.wb", 3: "wt.uc", 4: "wt.wb", 5: "st.uc", 6: "st.wb", 7: "wb.wb"}


class MessageError(Exception):
    """A send the evaluator cannot read (an unknown descriptor, an inconsistent one)."""


@dataclass(frozen=True)
class LscDesc:
    """The fields of an LSC message descriptor (``desc``) and extended descriptor (``ex_desc``)."""

    sfid: str            # "ugm", "slm", "tgm"
    op: str              # LSC_OPS name: "load_block2d", "store", "fence", ...
    data_size: str       # "d16", "d32", ...
    vector: int          # elements per address (non-block messages)
    transpose: bool      # block messages: data order transposed (one address, "t" in iga's name)
    vnni: bool           # load_block2d: VNNI transform
    addr_size: str       # "a32", "a64" ("a64" for 2D block messages)
    addr_type: str       # "flat", "bti", ...
    cache: int           # L1/L3 cache control field (0 = default)
    rlen: int            # response length in GRFs (32 is encoded 31 for 2D block loads)
    mlen: int            # address payload length in GRFs
    bti: int             # binding table index (addr_type "bti")
    raw: int             # the descriptor
    ex_raw: int          # the extended descriptor

    @property
    def cache_name(self) -> str:
        return (STORE_CACHE if self.op.startswith("store") else LOAD_CACHE)[self.cache]

    @property
    def name(self) -> str:
        """iga's spelling of the message (what its disassembly comment says)."""
        if self.op == "fence":
            return f"fence.{self.sfid}"
        if self.op.endswith("block2d"):
            dt = self.data_size + ("v" if self.vnni else "") + ("t" if self.transpose else "")
            parts = [self.op, self.sfid, dt, "a64"]
        else:
            dt = self.data_size + (f"x{self.vector}" if self.vector > 1 or self.transpose else "") + \
                ("t" if self.transpose else "")
            parts = [self.op, self.sfid, dt, self.addr_size]
        if self.cache:
            parts.append(self.cache_name)
        if self.addr_type == "bti":
            parts.append(f"bti[{self.bti}]")
        elif self.addr_type != "flat":
            parts.append(self.addr_type)
        return ".".join(parts)


def decode_lsc(desc: int, ex_desc: int, sfid: str) -> LscDesc:
    """The fields of an LSC descriptor; raises ``MessageError`` for an opcode that is not LSC."""
    opcode = desc & 0x3F
    op = LSC_OPS.get(opcode)
    if op is None:
        raise MessageError(f"LSC opcode 0x{opcode:x} (descriptor 0x{desc:08x}) is not one the evaluator knows")
    block2d = op.endswith("block2d")
    addr_type = ADDR_TYPES[(desc >> 29) & 3]
    return LscDesc(sfid=sfid, op=op, data_size=DATA_SIZES.get((desc >> 9) & 7, f"dsize{(desc >> 9) & 7}"),
                   vector=1 if block2d else VECTOR_SIZES[(desc >> 12) & 7],
                   transpose=bool(desc >> 15 & 1), vnni=block2d and bool(desc >> 7 & 1),
                   addr_size="a64" if block2d else ADDR_SIZES.get((desc >> 7) & 3, "a?"), addr_type=addr_type,
                   cache=(desc >> 17) & 7, rlen=(desc >> 20) & 31, mlen=(desc >> 25) & 15,
                   bti=(ex_desc >> 24) & 0xFF if addr_type == "bti" else 0, raw=desc, ex_raw=ex_desc)


# ---- 2D block messages ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Block2D:
    """A 2D block message's payload as the hardware reads it (one GRF, dword ``i`` = field ``i``).
    ``width``, ``height`` and ``pitch`` are the payload's values (bytes - 1, rows - 1, bytes - 1);
    ``x`` is in elements of the message's data size, ``y`` in rows; ``w``, ``h``, ``n`` the block
    shape (elements, rows, blocks side by side). ``reserved`` holds payload bits the hardware
    ignores that are set (a payload built wrong)."""

    base: int
    width: int
    height: int
    pitch: int
    x: int
    y: int
    w: int
    h: int
    n: int
    reserved: Tuple[str, ...] = ()

    @staticmethod
    def from_dwords(d: List[int]) -> "Block2D":
        s32 = lambda v: v - (1 << 32) if v & 0x80000000 else v  # noqa: E731
        reserved = []
        for i, name in ((2, "width"), (3, "height"), (4, "pitch")):
            if d[i] >> 24:
                reserved.append(f"{name} bits 24-31 = 0x{d[i] >> 24:x}")
        if d[7] >> 20:
            reserved.append(f"block shape bits 20-31 = 0x{d[7] >> 20:x}")
        return Block2D(base=d[0] | d[1] << 32, width=d[2] & 0xFFFFFF, height=d[3] & 0xFFFFFF,
                       pitch=d[4] & 0xFFFFFF, x=s32(d[5]), y=s32(d[6]), w=(d[7] & 0xFF) + 1,
                       h=(d[7] >> 8 & 0xFF) + 1, n=(d[7] >> 16 & 0xF) + 1, reserved=tuple(reserved))

    def fields(self) -> str:
        return (f"base=0x{self.base:x} width={self.width + 1}B height={self.height + 1} pitch={self.pitch + 1}B "
                f"x={self.x} y={self.y} block={self.n}x{self.h}x{self.w}")


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def block2d_layout(d: LscDesc, b: Block2D) -> Tuple[int, List[Tuple[int, int, int]]]:
    """(GRFs of data, [(register byte offset, memory row, memory column)]) of a 2D block message:
    where each element of the block (row and column in the surface, column in elements of the
    data size) sits in the response (a load) or in the data (a store). The row pitch in the
    register is the block's row length rounded up to a power of two, each block of ``n`` starts on
    a GRF; VNNI packs ``4 / element bytes`` consecutive rows into each dword of a column;
    transposed data (d32/d64) holds memory column ``c`` as register row ``c``."""
    grfs, rel = block_shape_layout(d.name, DATA_BYTES[d.data_size][0], d.transpose, d.vnni, b.w, b.h, b.n)
    return grfs, [(roff, b.y + dr, b.x + dc) for roff, dr, dc in rel]


@functools.lru_cache(maxsize=None)
def block_shape_layout(name: str, es: int, transpose: bool, vnni: bool, w: int, h: int,
                       n: int) -> Tuple[int, Tuple[Tuple[int, int, int], ...]]:
    """``block2d_layout`` relative to the block's origin: (GRFs, ((register offset, row, column), ...))."""
    grfs, runs = block_shape_runs(name, es, transpose, vnni, w, h, n)
    return grfs, tuple((roff + i * stride, dr, dc + i) for roff, stride, dr, dc, count in runs for i in range(count))


@functools.lru_cache(maxsize=None)
def block_shape_runs(name: str, es: int, transpose: bool, vnni: bool, w: int, h: int,
                     n: int) -> Tuple[int, Tuple[Tuple[int, int, int, int, int], ...]]:
    """(GRFs, runs): the block's layout as runs of ``count`` elements of one memory row, contiguous
    in memory from column ``dc``, at register offsets ``roff``, ``roff + stride``, ... (a plain
    block's row; a VNNI block's row, a dword apart; a transposed block's row, a register row apart)."""
    shape = f"{n}x{h}x{w}"
    if transpose:
        if vnni or n != 1 or es < 4:
            raise MessageError(f"{name}: a transposed 2D block is d32/d64, one block, no VNNI (block {shape})")
        pitch = _pow2(h)
        runs = [(r * es, pitch * es, r, 0, w) for r in range(h)]
        return -(-w * pitch * es // GRF_BYTES), tuple(runs)
    if vnni:
        if es > 2:
            raise MessageError(f"{name}: VNNI is for d8/d16 data (block {shape})")
        per = 4 // es
        row_pitch = _pow2(w * per)                     # elements
        rows = -(-h // per)
        block = -(-row_pitch * rows * es // GRF_BYTES) * GRF_BYTES
        runs = [(k * block + ((r // per) * row_pitch + r % per) * es, 4, r, k * w, w)
                for k in range(n) for r in range(h)]
        return k_grfs(block, n), tuple(runs)
    row_pitch = _pow2(w)
    block = -(-row_pitch * h * es // GRF_BYTES) * GRF_BYTES
    runs = [(k * block + r * row_pitch * es, es, r, k * w, w) for k in range(n) for r in range(h)]
    return k_grfs(block, n), tuple(runs)


def k_grfs(block_bytes: int, n: int) -> int:
    return block_bytes * n // GRF_BYTES


def block2d_element(d: LscDesc, b: Block2D, row: int, col: int) -> Optional[int]:
    """The address of element (row, col) of the surface, or None outside it (the hardware reads
    zero there and writes nothing)."""
    es = DATA_BYTES[d.data_size][0]
    if row < 0 or row > b.height or col < 0 or (col + 1) * es > b.width + 1:
        return None
    return b.base + row * (b.pitch + 1) + col * es


def block2d_problems(d: LscDesc, b: Block2D, grfs: int, data_len: Optional[int]) -> List[str]:
    """What is wrong with a 2D block message as the hardware would read it: response or data
    length that does not match the block, payload bits set where the hardware has none, and the
    surface rules of HARDWARE.md (base 64-byte aligned; width >= 64 B, a multiple of 4; pitch >=
    64 B, a multiple of 16, >= width). An empty list: nothing found."""
    out = [f"payload {r}" for r in b.reserved]
    if d.op == "load_block2d":
        want = 31 if grfs == 32 else grfs
        if d.rlen not in (0, want):   # rd:0 is a prefetch
            out.append(f"response length {d.rlen} GRFs, the block is {grfs}")
    elif d.op == "store_block2d":
        if data_len is not None and data_len != grfs:
            out.append(f"store data {data_len} GRFs, the block is {grfs}")
        if d.rlen:
            out.append(f"a store with response length {d.rlen}")
    if d.mlen != 1:
        out.append(f"message length {d.mlen} GRFs (a 2D block payload is 1)")
    if b.base % 64:
        out.append(f"base 0x{b.base:x} not 64-byte aligned")
    if b.width + 1 < 64 or (b.width + 1) % 4:
        out.append(f"surface width {b.width + 1} B (>= 64, a multiple of 4)")
    if b.pitch + 1 < 64 or (b.pitch + 1) % 16 or b.pitch < b.width:
        out.append(f"surface pitch {b.pitch + 1} B (>= 64, a multiple of 16, >= width)")
    return out


# ---- untyped LSC messages (gathers, scatters, block loads and stores of SLM and global memory) ----

def untyped_layout(d: LscDesc, lanes: int) -> Tuple[int, int, int]:
    """(memory bytes per element, register bytes per element, register bytes per vector component)
    of an untyped load/store: component ``v`` of lane ``l`` is at ``v * component + l * reg``
    (each component padded to whole GRFs); a transposed (block) message holds its ``vector``
    elements one after another."""
    mem, reg = DATA_BYTES[d.data_size]
    comp = -(-lanes * reg // GRF_BYTES) * GRF_BYTES
    return mem, reg, comp


GATEWAY = {0x4: "barrier signal", 0x10: "eot"}


def describe_gateway(desc: int) -> str:
    return GATEWAY.get(desc & 0x1F, f"gateway 0x{desc:x}")


def cache_names() -> Dict[int, str]:
    return dict(LOAD_CACHE)
