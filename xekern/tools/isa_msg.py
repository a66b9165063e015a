"""Send messages as the hardware reads them, on Xe-HPC (pvc) and Xe2 (bmg, lnl): LSC descriptors,
2D block payloads, the register layout of a 2D block's data, and the memory the message touches.
What differs between the two ISAs is one ``Platform`` record each (``PLATFORMS``, keyed by the
iga64 platform name a target record gives, ``Target.iga_platform``).

Used by the ISA evaluator (``isa_eval``): a ``send`` carries an immediate message descriptor
(``desc``) and extended descriptor (``ex_desc``); a 2D block message also has a one-GRF payload
that earlier instructions built. ``decode_lsc`` turns the descriptor into fields, ``Block2D``
reads the payload, and ``block2d_layout`` says which register byte of the response (or of a
store's data) holds which element of the block.

Sources (public):

- LSC descriptor bits: IGC's vISA (``visa/BuildIRImpl.cpp``, ``lscBlock2dComputeDataRegs`` and
  the LSC encoders) and iga64's own decoding, which ``decode_lsc`` is checked against on every
  send (the disassembly's comment, e.g. ``load_block2d.ugm.d16v.a64``); the cache controls and
  immediate offsets of each platform: iga's ``Backend/Messages/MessageDecoderLSC.cpp``
  (``decodeCacheControl``, ``decodeLscImmOff``, ``encLdStVecCachingBits16_19``);
- the 2D block payload (dword 0-1 base, 2 width-1, 3 height-1, 4 pitch-1, 5 x, 6 y, 7 block
  shape) and the register layout of each form (row pitch rounded up to a power of two, each block
  padded to whole GRFs; VNNI packs 32/bits rows per dword; transposed data is column-major):
  the CM headers' ``lsc/block2d.h`` (``block_2d_desc``, ``get_lsc_grf_elements``) and
  ``lscBlock2dComputeDataRegs``.

Example::

    >>> d = decode_lsc(0x02800283, 0x0, "ugm")
    >>> d.name, d.vnni, d.rlen
    ('load_block2d.ugm.d16v.a64', True, 8)
    >>> decode_lsc(0x6219C500, 0xFF000000, "ugm", PLATFORMS["xe2"]).name
    'load.ugm.d32x8t.a32.ca.cc.bti[255]'
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

GRF_BYTES = 64   # pvc and Xe2 (``Platform.grf_bytes``)

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
# L1/L3 cache controls as iga spells them (loads / stores), by the 3-bit field of descriptor bits
# 19:17 (iga's LSC_DF_DF .. LSC_RI_CA); 0 is the default, which iga omits
LOAD_CACHE = {0: "", 1: "uc.uc", 2: "uc.ca", 3: "ca.uc", 4: "ca.ca", 5: "st.uc", 6: "st.ca", 7: "ri.ca"}
STORE_CACHE = {0: "", 1: "uc.uc", 2: "uc.wb", 3: "wt.uc", 4: "wt.wb", 5: "st.uc", 6: "st.wb", 7: "wb.wb"}


class MessageError(Exception):
    """A send the evaluator cannot read (an unknown descriptor, an inconsistent one)."""


@dataclass(frozen=True)
class Platform:
    """What the evaluator must know of one Xe ISA that its listing does not say: the send
    descriptor fields that moved between platforms, what some messages leave in registers, the
    dpas execution size. One record per iga64 platform (``PLATFORMS``); a platform without a
    record is refused, never read as pvc."""

    iga: str                        # iga64 -p name, as ``Target.iga_platform`` gives it
    isa: str                        # what the ISA is called
    grf_bytes: int                  # bytes per GRF (the evaluator models 64)
    cache_shift: int                # LSC cache-control field: lowest bit, width
    cache_width: int
    load_cache: Dict[int, str]      # field value -> iga's spelling, loads and prefetches (2D block too)
    store_cache: Dict[int, str]     # the same for stores
    ex_desc_offset: bool            # ex_desc carries immediate address offsets (Xe2: 2D block x, y)
    widening_loads_zero: bool       # d8u32/d16u32 loads zero the upper bits (else they are undefined)
    dpas_simd: int                  # the execution size of dpas

    def cache_name(self, op: str, field: int) -> str:
        table = self.store_cache if op.startswith("store") else self.load_cache
        name = table.get(field)
        if name is None:
            raise MessageError(f"{op}: cache-control field 0x{field:x} (descriptor bits "
                               f"{self.cache_shift + self.cache_width - 1}:{self.cache_shift}) is not one the "
                               f"evaluator knows on {self.isa}")
        return name


# Xe-HPC: cache controls in descriptor bits 19:17 (iga ``decodeLscCacheControlBits17_19``); ex_desc
# holds only the surface (BTI in 31:24) and the source-1 length; d8u32/d16u32 leave the upper bits
# undefined (iga's field description); dpas SIMD16 (HARDWARE.md).
PVC = Platform(iga="12p72", isa="Xe-HPC", grf_bytes=64, cache_shift=17, cache_width=3, load_cache=dict(LOAD_CACHE),
               store_cache=dict(STORE_CACHE), ex_desc_offset=False, widening_loads_zero=False, dpas_simd=16)

# Xe2: cache controls in bits 19:16 (iga ``decodeCacheControl`` for Platform::XE2 and
# ``encLdStVecCachingBits16_19``): the 3-bit values of pvc shifted up one bit (bit 16 clear), and
# for loads three new ones, L1UC_L3CC 0x5, L1CA_L3CC 0x9 ("cc": constant-cached, IGC's argument
# load), L1RI_L3RI 0xE. Any other value with bit 16 set iga decodes by bits 19:17 alone, which
# the evaluator does not take on trust: it refuses it. ex_desc has immediate address offsets
# (iga ``decodeLscImmOff``): a flat 2D block message's x (elements, bits 21:12) and y (rows,
# bits 31:22), signed 10-bit, which the hardware adds to the payload's x and y (vISA
# ``translateLscUntypedBlock2DInst`` encodes them so, and ``emulateImmOffsetBlock2D`` adds them to
# payload dwords 5 and 6 where a platform has none); a flat untyped message's byte offset (31:12),
# a BTI one's (23:12), which the evaluator refuses. d8u32/d16u32 zero-extend. dpas SIMD16, as pvc
# (IGC 2.40's bmg listings).
XE2 = Platform(iga="xe2", isa="Xe2", grf_bytes=64, cache_shift=16, cache_width=4,
               load_cache={**{2 * k: v for k, v in LOAD_CACHE.items()}, 0x5: "uc.cc", 0x9: "ca.cc", 0xE: "ri.ri"},
               store_cache={2 * k: v for k, v in STORE_CACHE.items()}, ex_desc_offset=True,
               widening_loads_zero=True, dpas_simd=16)

PLATFORMS = {p.iga: p for p in (PVC, XE2)}


def platform(iga: str) -> Platform:
    """The record of iga64 platform ``iga`` (``Target.iga_platform``); ``MessageError`` if none."""
    p = PLATFORMS.get(iga)
    if p is None:
        raise MessageError(f"the ISA evaluator knows the platforms {sorted(PLATFORMS)}, not '{iga}'")
    return p


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
    cache: int           # L1/L3 cache control field (0 = default), as the platform encodes it
    cache_name: str      # and as iga spells it ("ca.ca"; "" for the default)
    offset: Tuple[int, int]   # 2D block messages: the immediate (x, y) offset added to the payload's (Xe2)
    rlen: int            # response length in GRFs (32 is encoded 31 for 2D block loads)
    mlen: int            # address payload length in GRFs
    bti: int             # binding table index (addr_type "bti")
    raw: int             # the descriptor
    ex_raw: int          # the extended descriptor

    @property
    def name(self) -> str:
        """iga's spelling of the message (what its disassembly comment says)."""
        return self._spelled(True)

    @property
    def message(self) -> str:
        """The kind of message: iga's spelling without a 2D block's immediate offset (Xe2), which
        says where this one reads, not what it is."""
        return self._spelled(False)

    def _spelled(self, offset: bool) -> str:
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
        if offset and self.offset != (0, 0):
            hx = lambda v: f"-0x{-v:X}" if v < 0 else f"0x{v:X}"  # noqa: E731 (iga's fmtHexSigned)
            parts.append(f"flat[A+({hx(self.offset[0])},{hx(self.offset[1])})]")
        if self.addr_type == "bti":
            parts.append(f"bti[{self.bti}]")
        elif self.addr_type != "flat":
            parts.append(self.addr_type)
        return ".".join(parts)


def decode_lsc(desc: int, ex_desc: int, sfid: str, plat: Platform = PVC) -> LscDesc:
    """The fields of an LSC descriptor on platform ``plat``; raises ``MessageError`` for an opcode
    that is not LSC, a cache-control value the platform has no meaning for, or an immediate
    address offset of an untyped message (Xe2; a 2D block message's x and y offsets are read)."""
    opcode = desc & 0x3F
    op = LSC_OPS.get(opcode)
    if op is None:
        raise MessageError(f"LSC opcode 0x{opcode:x} (descriptor 0x{desc:08x}) is not one the evaluator knows")
    block2d = op.endswith("block2d")
    addr_type = ADDR_TYPES[(desc >> 29) & 3]
    cache = (desc >> plat.cache_shift) & ((1 << plat.cache_width) - 1) if op != "fence" else 0
    if cache and sfid == "slm":
        raise MessageError(f"{op}.slm with cache-control bits 0x{cache:x} (SLM has no cache controls)")
    offset = (0, 0)
    if plat.ex_desc_offset:
        s10 = lambda v: v - 0x400 if v & 0x200 else v  # noqa: E731
        if block2d and addr_type == "flat":
            offset = (s10(ex_desc >> 12 & 0x3FF), s10(ex_desc >> 22 & 0x3FF))
        elif ex_desc & (0xFFF000 if addr_type == "bti" else 0xFFFFF000 if addr_type == "flat" else 0):
            raise MessageError(f"{op}: ex_desc 0x{ex_desc:08x} carries an immediate address offset "
                               f"(bits {'23' if addr_type == 'bti' else '31'}:12 on {plat.isa}), which the "
                               f"evaluator does not model")
    return LscDesc(sfid=sfid, op=op, data_size=DATA_SIZES.get((desc >> 9) & 7, f"dsize{(desc >> 9) & 7}"),
                   vector=1 if block2d else VECTOR_SIZES[(desc >> 12) & 7],
                   transpose=bool(desc >> 15 & 1), vnni=block2d and bool(desc >> 7 & 1),
                   addr_size="a64" if block2d else ADDR_SIZES.get((desc >> 7) & 3, "a?"), addr_type=addr_type,
                   cache=cache, cache_name=plat.cache_name(op, cache) if cache else "", offset=offset,
                   rlen=(desc >> 20) & 31, mlen=(desc >> 25) & 15,
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
