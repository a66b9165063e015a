"""The Xe ISA as ``iga64 -d`` prints it (Xe-HPC/pvc and Xe2/bmg), decoded for the evaluator
(``isa_eval``): register files, types and the evaluator's values (concrete bytes and symbolic
ones), operands and their regions, instructions, a kernel's program and the platform it is for
(``isa_msg.Platform``: the facts the listing does not state).

A register byte is either a concrete byte (0..255) or a symbolic byte (a negative int,
``sym_byte``): byte ``offset`` of a symbol named by an ``Interner`` key: ``("mem", buffer)`` for a
byte loaded from memory (its provenance: buffer and offset), ``("dpas", ...)`` or ``("alu", ...)``
for a value computed from symbols, ``("undef",)`` for a byte nothing wrote.

``decode`` parses one instruction (``isa.parse_isa``'s ``Instr``) into a ``Decoded``: execution
size and channel offset, NoMask, predicate, conditional modifier, saturation, operands (each a
register region as the absolute byte offset of each channel's element, an immediate, null or a
label), and what sends and dpas carry. Anything it does not know raises ``EvalError`` naming the
instruction.

    >>> prog = Program.from_text(report.text, "xe2")
    >>> prog.at(0).op, prog.at(0).n
    ('and', 1)
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from . import isa_msg as msg
from .isa import Instr, parse_isa

GRF = msg.GRF_BYTES
NUM_GRF = 256
# one flat byte array holds every register file the evaluator knows: (base, bytes per register, count)
FILES = {"r": (0, GRF, NUM_GRF), "acc": (NUM_GRF * GRF, 32, 16), "f": (NUM_GRF * GRF + 512, 4, 4),
         "cr": (NUM_GRF * GRF + 528, 4, 4)}
CELLS = NUM_GRF * GRF + 544

TYPES = {"b": (1, "s"), "ub": (1, "u"), "w": (2, "s"), "uw": (2, "u"), "d": (4, "s"), "ud": (4, "u"),
         "q": (8, "s"), "uq": (8, "u"), "hf": (2, "hf"), "bf": (2, "bf"), "f": (4, "f"), "df": (8, "df"),
         "tf32": (4, "f")}
FLOATS = {"hf", "bf", "f", "df"}


class EvalError(Exception):
    """The evaluator met something it does not model (an instruction, an operand form, a symbolic
    value where a number is needed); the message names the instruction."""


# ---- values ------------------------------------------------------------------------------------------

class Interner:
    """Small integer ids for structural keys, shared by every run that is compared, so that equal
    structures get equal ids (``key(("dpas", ...))``) and ids can be turned back into what they
    name (``keys[id]``)."""

    def __init__(self):
        self.ids: Dict[tuple, int] = {}
        self.keys: List[tuple] = []
        self.undef = self.key(("undef",))          # a register byte nothing wrote
        self.race = self.key(("race",))            # an SLM byte another thread wrote in the same phase
        self.slm_undef = self.key(("slm-undef",))  # an SLM byte nothing wrote
        self.wild = self.key(("wild",))            # a byte outside every buffer

    def key(self, k: tuple) -> int:
        i = self.ids.get(k)
        if i is None:
            i = self.ids[k] = len(self.keys)
            self.keys.append(k)
        return i

    def kind(self, cell: int) -> str:
        """What a symbolic byte is: "mem", "dpas", "alu", "undef", "race", ..."""
        return self.keys[split_byte(cell)[0]][0]


def sym_byte(sym: int, offset: int) -> int:
    """Byte ``offset`` of symbol ``sym`` (an ``Interner`` id) as a register or memory cell."""
    return -1 - ((sym << 32) | (offset & 0xFFFFFFFF))


def sym_bytes(sym: int, offset: int, n: int) -> List[int]:
    """Bytes ``offset`` .. ``offset + n - 1`` of symbol ``sym``."""
    s = sym_byte(sym, offset)
    return list(range(s, s - n, -1))


def split_byte(cell: int) -> Tuple[int, int]:
    """(symbol, offset) of a symbolic byte."""
    v = -1 - cell
    return v >> 32, v & 0xFFFFFFFF


def _to_num(raw: int, t: str):
    size, kind = TYPES[t]
    if kind == "u":
        return raw
    if kind == "s":
        return raw - (1 << 8 * size) if raw >> (8 * size - 1) else raw
    if kind == "f":
        return struct.unpack("<f", struct.pack("<I", raw))[0]
    if kind == "df":
        return struct.unpack("<d", struct.pack("<Q", raw))[0]
    if kind == "hf":
        return struct.unpack("<e", struct.pack("<H", raw))[0]
    if kind == "bf":
        return struct.unpack("<f", struct.pack("<I", raw << 16))[0]
    raise EvalError(f"type {t}")


# float formats: (significand bits with the hidden one, minimum normal exponent, maximum exponent)
_FMT = {"f": (24, -126, 127), "df": (53, -1022, 1023), "hf": (11, -14, 15), "bf": (8, -126, 127)}
RNE, RU, RD, RTZ = 0, 1, 2, 3          # cr0 bits 5:4


def _round(q, fmt: str, mode: int) -> float:
    """``q`` (int, float or Fraction) rounded to float format ``fmt`` with rounding ``mode``."""
    if isinstance(q, float) and (math.isnan(q) or math.isinf(q)):
        return q
    q = Fraction(q)
    if q == 0:
        return 0.0
    p, emin, emax = _FMT[fmt]
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    scale = max(e, emin) - (p - 1)
    m = a / Fraction(2) ** scale
    n = m.numerator // m.denominator
    rem = m - n
    if mode == RNE:
        n += 1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n & 1) else 0
    elif rem and (mode == RU and not neg or mode == RD and neg):
        n += 1
    top = ((1 << p) - 1) * Fraction(2) ** (emax - p + 1)
    if n * Fraction(2) ** scale > top:
        up = mode == RNE or (mode == RU and not neg) or (mode == RD and neg)
        r = math.inf if up else float(top)
    else:
        r = math.ldexp(n, scale)
    return -r if neg else r


_KIND_FMT = {"f": "f", "df": "df", "hf": "hf", "bf": "bf"}


def _from_num(v, t: str, mode: int = RNE, sat: bool = False) -> int:
    """A number as the raw bits of type ``t``: integers wrap (or saturate with ``sat``), floats
    round to integers toward zero and saturate, numbers round to float types with ``mode``."""
    size, kind = TYPES[t]
    bits = 8 * size
    if kind in ("s", "u"):
        if not isinstance(v, int):
            if isinstance(v, float) and math.isnan(v):
                return 0
            v = (1 << bits) if v == math.inf else -(1 << bits) if v == -math.inf else int(v)  # toward zero
            sat = True
        if sat:
            lo, hi = (0, (1 << bits) - 1) if kind == "u" else (-(1 << bits - 1), (1 << bits - 1) - 1)
            v = min(max(v, lo), hi)
        return v & ((1 << bits) - 1)
    if sat:
        v = min(max(v, 0), 1)
    f = _round(v, _KIND_FMT[kind], mode)
    if kind == "f":
        return struct.unpack("<I", struct.pack("<f", f))[0]
    if kind == "df":
        return struct.unpack("<Q", struct.pack("<d", f))[0]
    if kind == "hf":
        return struct.unpack("<H", struct.pack("<e", f))[0]
    return struct.unpack("<I", struct.pack("<f", f))[0] >> 16


# ---- operands ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """A decoded operand: a register region (``offs``: absolute byte offset of each channel's
    element), an immediate (``imm``: raw bits per channel), null, or a label."""

    kind: str                       # "reg", "imm", "null", "label"
    type: str = ""
    offs: Tuple[int, ...] = ()
    imm: Tuple[int, ...] = ()
    neg: bool = False
    abs: bool = False
    notbits: bool = False
    file: str = ""
    reg: int = 0
    sub: int = 0
    label: str = ""
    text: str = ""

    @property
    def size(self) -> int:
        return TYPES[self.type][0]

    @property
    def base(self) -> int:
        return FILES[self.file][0] + self.reg * FILES[self.file][1] + self.sub * (self.size if self.type else 1)


_REG = re.compile(r"^(?P<file>acc|null|cr|sr|ce|tm|a|f|r|n|ip|s)(?P<num>\d+)?(?:\.(?P<sub>\d+))?"
                  r"(?:<(?P<region>[\d;,]+)>)?(?::(?P<type>[a-z]+\d*))?$")
_NAN = re.compile(r"^([qs])nan\((0x[0-9A-Fa-f]+)\):(hf|f|df|bf)$")
_IMM = re.compile(r"^(?P<val>-?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan))(?::(?P<type>[a-z]+\d*))$")


def _region_offsets(region: Optional[str], n: int, is_dst: bool, where: str) -> List[int]:
    """Element offsets (in elements) of the ``n`` channels of a region."""
    if region is None:
        return list(range(n))
    parts = [int(x) for x in re.split("[;,]", region)]
    if is_dst or len(parts) == 1:
        return [i * parts[0] for i in range(n)]
    if len(parts) == 3:
        vs, w, hs = parts
        if w == 0:
            raise EvalError(f"region <{region}> has width 0: {where}")
        return [(i // w) * vs + (i % w) * hs for i in range(n)]
    if len(parts) == 2:     # ternary <vs;hs>: <1;0> walks by vs, <0;0> broadcasts, <vs;hs> rows of vs/hs
        vs, hs = parts
        if hs == 0:
            return [i * vs for i in range(n)]
        if vs == 0 or vs % hs:
            raise EvalError(f"ternary region <{region}> is not one the evaluator knows: {where}")
        return [i * hs for i in range(n)]
    raise EvalError(f"region <{region}>: {where}")


def parse_operand(tok: str, n: int, is_dst: bool, where: str) -> Operand:
    """One operand token of iga's syntax, for an instruction of ``n`` channels."""
    text = tok
    neg = ab = nb = False
    while True:
        if tok.startswith("-"):
            neg, tok = True, tok[1:]
        elif tok.startswith("~"):
            nb, tok = True, tok[1:]
        elif tok.startswith("(abs)"):
            ab, tok = True, tok[5:]
        else:
            break
    m = _IMM.match(tok) if not is_dst else None
    if m is not None:
        return _immediate(m.group("val"), m.group("type"), n, neg, where)
    m = _NAN.match(tok) if not is_dst else None
    if m is not None:     # iga's NaN: (q|s)nan(payload) of a float type: sign, all-ones exponent, quiet bit
        t = m.group(3)
        bits = {"hf": (16, 10), "f": (32, 23), "df": (64, 52), "bf": (16, 7)}.get(t)
        if bits is None:
            raise EvalError(f"NaN immediate of type :{t}: {where}")
        total, mant = bits
        quiet = 1 << mant - 1 if m.group(1) == "q" else 0
        raw = (((1 << total - mant - 1) - 1) << mant) | quiet | int(m.group(2), 16)
        raw |= (1 << total - 1) if neg else 0
        return Operand("imm", type=t, imm=(raw,) * n, text=text)
    m = _REG.match(tok)
    if m is None:
        if re.match(r"^L\d+$|^_\w+$", tok):
            return Operand("label", label=tok, text=text)
        raise EvalError(f"operand '{text}' is not one the evaluator knows: {where}")
    file = m.group("file")
    t = m.group("type") or ""
    if t and t not in TYPES:
        raise EvalError(f"type :{t} of operand '{text}' is not one the evaluator knows: {where}")
    if file == "null":
        return Operand("null", type=t, text=text)
    if file not in FILES:
        raise EvalError(f"register file of '{text}' ({file}) is not one the evaluator models: {where}")
    num, sub = int(m.group("num") or 0), int(m.group("sub") or 0)
    if num >= FILES[file][2]:
        raise EvalError(f"register '{text}' is outside its file: {where}")
    size = TYPES[t][0] if t else 1
    base = FILES[file][0] + num * FILES[file][1] + sub * size
    offs = tuple(base + e * size for e in _region_offsets(m.group("region"), n, is_dst, where))
    return Operand("reg", type=t, offs=offs, neg=neg, abs=ab, notbits=nb, file=file, reg=num, sub=sub, text=text)


def _immediate(val: str, t: str, n: int, neg: bool, where: str) -> Operand:
    """An immediate as raw bits of its type (``:v``/``:uv``: eight packed 4-bit integers, one per
    channel, read as words)."""
    if t in ("v", "uv"):
        raw = int(val, 16)
        nib = [raw >> 4 * i & 0xF for i in range(8)]
        vals = [x - 16 if t == "v" and x & 8 else x for x in nib]
        return Operand("imm", type="w" if t == "v" else "uw",
                       imm=tuple(_from_num(vals[i % 8], "w") for i in range(n)), text=val + ":" + t)
    if t not in TYPES:
        raise EvalError(f"immediate type :{t} is not one the evaluator knows: {where}")
    size, kind = TYPES[t]
    if val.lower().startswith("0x"):          # raw bits, also for float types
        raw = int(val, 16) & ((1 << 8 * size) - 1)
        if neg:
            raw = raw ^ (1 << 8 * size - 1) if kind in FLOATS else (-raw) & ((1 << 8 * size) - 1)
    elif kind in FLOATS:
        raw = _from_num(-float(val) if neg else float(val), t)
        if val not in ("inf", "nan") and Fraction(val) != Fraction(_to_num(raw, t)) * (-1 if neg else 1):
            raise EvalError(f"float immediate {val}:{t} is printed in decimal and is not exactly a :{t} value "
                            f"(disassemble with iga64 -Xprint-hex-floats): {where}")
    else:
        raw = (-int(val) if neg else int(val)) & ((1 << 8 * size) - 1)
    return Operand("imm", type=t, imm=(raw,) * n, text=("-" if neg else "") + val + ":" + t)


# ---- instructions ---------------------------------------------------------------------------------------

_EXEC = re.compile(r"^\((\d+)\|M(\d+)\)$")
_COND = re.compile(r"^\((eq|ne|gt|ge|lt|le|ov|un|z|nz)\)(f\d)\.(\d)$")
_PRED = re.compile(r"^(W)?&?(~)?(?:(f\d)\.(\d)(?:\.(any|all)(\d+)h|\.(anyv|allv))?)?$")


@dataclass
class Decoded:
    """One instruction, parsed once: everything its execution needs."""

    line: int
    text: str
    op: str                          # "add", "send", "dpas", ... (the mnemonic's base)
    sub: str                         # the mnemonic's suffix: "ugm", "8x8", "inv", "(s0&s1|s2)"
    n: int = 1                       # execution size
    chan: int = 0                    # channel offset (M0, M16)
    nomask: bool = False
    pred: Optional[Tuple[bool, int, int, str]] = None   # (inverted, flag, sub, any/all form)
    cond: Optional[Tuple[str, int, int]] = None         # (condition, flag, sub)
    sat: bool = False
    dst: Optional[Operand] = None
    srcs: Tuple[Operand, ...] = ()
    extra: tuple = ()
    eot: bool = False
    comment: str = ""
    fast: object = None              # ``_fast_int``'s plan (False: none), made on first execution
    reads: frozenset = frozenset()   # GRF bytes the instruction reads / writes (``Thread.pending``)
    writes: frozenset = frozenset()
    read_grfs: Dict[int, Tuple[int, ...]] = field(default_factory=dict)    # GRF -> its bytes in reads
    write_grfs: Dict[int, Tuple[int, ...]] = field(default_factory=dict)


def _grf_use(d: Decoded) -> Decoded:
    """Fill ``d.reads`` / ``d.writes`` with the GRF bytes (offsets in the register file) the
    instruction reads / writes, for ``Thread.pending``."""
    def span(op):
        if op is None or op.kind != "reg" or op.file != "r":
            return set()
        return {b for off in op.offs for b in range(off, off + op.size)}
    if d.op in ("send", "sendc"):
        sfid, dst, src0, src1, src1_len, ex_desc, desc = d.extra
        mlen, rlen = (desc >> 25) & 15, (desc >> 20) & 31
        rlen = 32 if rlen == 31 else rlen
        r = set(range(src0 * GRF, (src0 + mlen) * GRF))
        if src1 is not None:
            r |= set(range(src1 * GRF, (src1 + src1_len) * GRF))
        d.reads = frozenset(r)
        d.writes = frozenset(range(dst * GRF, (dst + rlen) * GRF)) if dst is not None else frozenset()
    elif d.op == "dpas":
        depth, rc, ops = d.extra
        (dst, _), (s0, _), (s1, _), (s2, _) = ops
        r = set(range(s1, s1 + depth * GRF)) | set(range(s2, s2 + rc * depth * 4))
        if s0 is not None:
            r |= set(range(s0, s0 + rc * GRF))
        d.reads, d.writes = frozenset(r), frozenset(range(dst, dst + rc * GRF))
    elif d.dst is not None:
        d.reads = frozenset(set().union(*[span(s) for s in d.srcs]) if d.srcs else set())
        d.writes = frozenset(span(d.dst))
    d.read_grfs = _by_grf(d.reads)
    d.write_grfs = _by_grf(d.writes)
    return d


def _by_grf(offsets) -> Dict[int, Tuple[int, ...]]:
    out: Dict[int, List[int]] = {}
    for w in sorted(offsets):
        out.setdefault(w // GRF, []).append(w)
    return {g: tuple(ws) for g, ws in out.items()}


def decode(ins: Instr, labels: Dict[str, int]) -> Decoded:
    """Parse one ``Instr`` (``isa.parse_isa``); raises ``EvalError`` for what is not modeled."""
    where = f"instruction {ins.index}: {ins.pred and '(' + ins.pred + ') ' or ''}{ins.op} {ins.operands}".strip()
    text = ins.operands
    swsb = ""
    m = re.search(r"\{([^}]*)\}\s*$", text)
    if m:
        swsb, text = m.group(1), text[:m.start()].strip()
    base, _, sub = ins.op.partition(".")
    d = Decoded(ins.index, where, base, sub, eot="EOT" in swsb.split(","), comment=ins.comment)
    if ins.pred:
        pm = _PRED.match(ins.pred.replace(" ", ""))
        if pm is None:
            raise EvalError(f"predicate ({ins.pred}) is not one the evaluator knows: {where}")
        d.nomask = pm.group(1) == "W"
        if pm.group(3):
            form = (pm.group(5) or "") + (pm.group(6) or "") or (pm.group(7) or "")
            d.pred = (pm.group(2) == "~", int(pm.group(3)[1]), int(pm.group(4)), form)
    toks = text.split()
    if toks and _EXEC.match(toks[0]):
        em = _EXEC.match(toks.pop(0))
        d.n, d.chan = int(em.group(1)), int(em.group(2))
    if toks and _COND.match(toks[0]):
        cm = _COND.match(toks.pop(0))
        d.cond = (cm.group(1), int(cm.group(2)[1]), int(cm.group(3)))
    if base in ("nop",) or base == "sync" and sub != "bar":
        return d
    if base == "sync":   # sync.bar <id>
        d.extra = (int(toks[0], 0) if toks else 0,)
        return d
    if base in ("jmpi", "goto", "join"):
        for t in toks:
            if t not in labels:
                raise EvalError(f"branch target {t} is not a label: {where}")
        d.extra = tuple(labels[t] for t in toks)
        return d
    if base in ("send", "sendc"):
        return _decode_send(d, toks, where)
    if toks and toks[0].startswith("(sat)"):
        d.sat, toks[0] = True, toks[0][5:]
    if not toks:
        raise EvalError(f"no operands: {where}")
    if base == "dpas":
        return _decode_dpas(d, toks, where)
    if base not in _ALU:
        raise EvalError(f"instruction '{ins.op}' is not one the evaluator knows: {where}")
    d.dst = parse_operand(toks[0], d.n, True, where)
    d.srcs = tuple(parse_operand(t, d.n, False, where) for t in toks[1:])
    want = _ALU[base]
    if len(d.srcs) != want:
        raise EvalError(f"'{base}' with {len(d.srcs)} sources (expected {want}): {where}")
    if base == "math" and sub not in ("inv", "sqrt", "rsqt"):
        raise EvalError(f"math function '{sub}' is not one the evaluator knows: {where}")
    if base == "bfn":
        if not re.fullmatch(r"\(([s012&|^~() ]+)\)", sub):
            raise EvalError(f"bfn function '{sub}' is not one the evaluator knows: {where}")
        d.extra = (compile(sub.replace("s0", "a").replace("s1", "b").replace("s2", "c"), "<bfn>", "eval"),)
    return d


_ALU = {"mov": 1, "sel": 2, "csel": 3, "add": 2, "add3": 3, "mul": 2, "mad": 3, "mach": 2, "macl": 2, "shl": 2,
        "shr": 2, "asr": 2, "and": 2, "or": 2, "xor": 2, "not": 1, "bfn": 3, "cmp": 2, "math": 1}


def _decode_send(d: Decoded, toks: List[str], where: str) -> Decoded:
    if len(toks) != 5:
        raise EvalError(f"send with operands {toks} is not one the evaluator knows: {where}")
    dst, src0, src1, exd, desc = toks
    try:
        ex_desc, desc_v = int(exd, 0), int(desc, 0)
    except ValueError:
        raise EvalError(f"send with a descriptor in a register ({exd} {desc}) is not modeled: {where}") from None
    reg = lambda t: None if t.startswith("null") else int(re.match(r"r(\d+)", t).group(1))  # noqa: E731
    src1_len = int(src1.split(":")[1]) if ":" in src1 else 0
    d.extra = (d.sub, reg(dst), reg(src0), reg(src1), src1_len, ex_desc, desc_v)
    return d


def _decode_dpas(d: Decoded, toks: List[str], where: str) -> Decoded:
    m = re.fullmatch(r"(\d+)x(\d+)", d.sub)
    if m is None or len(toks) != 4:
        raise EvalError(f"dpas form '{d.sub}' with {len(toks)} operands is not one the evaluator knows: {where}")
    ops = []
    for t in toks:
        om = re.fullmatch(r"(null|r(\d+)(?:\.(\d+))?):([a-z0-9]+)", t)
        if om is None or om.group(4) not in TYPES:
            raise EvalError(f"dpas operand '{t}' is not one the evaluator knows: {where}")
        ops.append((None if om.group(1) == "null" else int(om.group(2)) * GRF + int(om.group(3) or 0) *
                    TYPES[om.group(4)][0], om.group(4)))
    d.extra = (int(m.group(1)), int(m.group(2)), tuple(ops))
    return d


class Program:
    """A kernel's instructions (``isa.parse_isa``), decoded on first use, for one platform
    (an iga64 platform name, ``isa_msg.PLATFORMS``; pvc's "12p72" unless told)."""

    def __init__(self, instrs: Sequence[Instr], labels: Dict[str, int], source: str = "",
                 platform: str = msg.PVC.iga):
        self.instrs = list(instrs)
        self.labels = labels
        self.decoded: List[Optional[Decoded]] = [None] * len(self.instrs)
        self.source = source
        try:
            self.platform = msg.platform(platform)
        except msg.MessageError as e:
            raise EvalError(str(e)) from None
        if self.platform.grf_bytes != GRF:
            raise EvalError(f"{self.platform.isa} has {self.platform.grf_bytes}-byte GRFs; the evaluator models {GRF}")

    @staticmethod
    def from_text(text: str, platform: str = msg.PVC.iga) -> "Program":
        instrs, labels = parse_isa(text)
        return Program(instrs, labels, text, platform)

    def at(self, pc: int) -> Decoded:
        d = self.decoded[pc]
        if d is None:
            d = self.decoded[pc] = _grf_use(decode(self.instrs[pc], self.labels))
        return d
