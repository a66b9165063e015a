"""A concrete evaluator of the Xe ISA as ``iga64 -d`` prints it (Xe-HPC/pvc and Xe2/bmg): it runs
the hardware threads of one workgroup from the kernel's first instruction with concrete kernel arguments and
records, in program order, what each thread asks of the hardware: every send (its descriptor and
the concrete values of its payload), every dpas (what its operands hold) and every barrier.

Values loaded from memory are never needed as numbers: a register byte is either a concrete byte
or a symbolic one (``isa_decode.sym_byte``) that names its provenance, a buffer and an offset, or
the computation that made it. So a dpas operand says which bytes of which buffer it holds,
whatever messages loaded them; a dpas result is named by what it was computed from (a Merkle
key), so two lowerings of the same kernel compute equal keys iff their dpas chains read the same
data in the same order. (Decoding the listing: ``isa_decode``.)

Covered (the subset IGC 2.x emits for xekern's kernels): mov, sel, csel, add, add3, mul, mad,
mach, macl, shl, shr, asr, and, or, xor, not, bfn, cmp (flag registers, predication, conditional
modifiers), math.inv/sqrt, float rounding modes through ``cr0``, regions ``r1.2<8;8,1>:d``
(and the ternary forms ``<1;0>``, ``<0>``), accumulators, SIMD1..32 with channel offsets and
NoMask, ``jmpi``, ``goto``/``join`` (forward, per-lane masks), sync/nop, ``dpas`` (SIMD16 on both),
and sends: LSC 2D block load/prefetch/store (with Xe2's immediate x/y offsets), untyped LSC
loads/stores (global, SLM, the cross-thread data), fences, the barrier signal, end of thread.
What the listing does not say about its platform (cache-control encodings, what ex_desc holds,
what widening loads leave in the upper bits) comes from the program's ``isa_msg.Platform``; a
platform without a record, like anything else not covered, raises ``EvalError`` naming the
instruction's line and text: the evaluator never guesses.

Writes to ``null`` are discarded, which takes care of IGC's pvc send WAR workaround
(``mov (1|M0) null<1>:ud 0x30433:ud``).

Hardware facts the evaluator relies on (public: the vISA specification's execution model, IGC's
sources, the Xe ISA as iga64 prints it): a thread's 32 execution-mask bits start as the dispatch
SIMD size (16: channels 16-31 are off, so an instruction wider than 16 without NoMask does
nothing in them); ``r0.1``/``r0.6``/``r0.7`` are the group ids and ``r0.2`` bits 7:0 the thread's
index in its group (IGC: ``localThreadId``; its Xe2 dumps declare the same); Xe2's inline data
(the first bytes of the cross-thread data) is in r1 at dispatch (``Workgroup(inline=...)``);
``mad`` is ``src0 + src1 * src2``; float to integer conversion rounds toward zero and saturates;
``math.inv`` is computed exactly rounded (the hardware's is an approximation that IGC's division
sequences tolerate).

Example::

    >>> keys = Interner()
    >>> mem = Memory([Buffer("a_ptr", 0x2_0000_0000, 1 << 20, 2, 512)], crossthread_bytes, keys)
    >>> wg = Workgroup(Program.from_text(report.text, "xe2"), 16, 32, mem, keys, group=(0, 0, 0),
    ...                inline=inline_bytes)
    >>> threads = wg.run()
    >>> [e for e in threads[0].events if e.kind == "dpas"][:1]
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

from . import isa_msg as msg
from .isa_decode import (_ALU, CELLS, FILES, FLOATS, GRF, TYPES, Decoded, EvalError, Interner, Operand, Program,
                         _from_num, _to_num, decode, parse_operand, split_byte, sym_byte, sym_bytes)

__all__ = ["Buffer", "DpasInfo", "EvalError", "Event", "GRF", "Interner", "Memory", "Program", "TYPES", "Thread",
           "Workgroup", "block_elements", "decode", "parse_operand", "split_byte", "sym_byte", "sym_bytes"]


# ---- memory ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Buffer:
    """A kernel argument's memory: ``size`` bytes at ``base``; ``elem`` bytes per element and
    ``pitch`` elements per row say how to name an offset as (row, column) in listings."""

    name: str
    base: int
    size: int
    elem: int = 1
    pitch: int = 0

    def where(self, offset: int) -> str:
        e = offset // self.elem
        if self.pitch:
            return f"{self.name}[{e // self.pitch},{e % self.pitch}]"
        return f"{self.name}[{e}]"


class Memory:
    """The memory a workgroup's threads see: global buffers (a byte nobody stored is byte
    ``offset`` of the symbol ``("mem", buffer)``; a byte outside every buffer is ``wild``), shared
    local memory and the cross-thread data the kernel loads its arguments from. Stores are kept."""

    def __init__(self, buffers: Sequence[Buffer], crossthread: bytes, keys: Interner):
        self.keys = keys
        self.sym = {b.name: keys.key(("mem", b.name)) for b in buffers}
        self.buffers = sorted(buffers, key=lambda b: b.base)
        self.written: Dict[int, object] = {}
        self.slm: Dict[int, Tuple[int, int, int]] = {}        # address -> (cell, writer thread, barrier phase)
        self.crossthread = crossthread
        self._last: Optional[Buffer] = None

    def buffer_at(self, addr: int) -> Optional[Buffer]:
        for b in self.buffers:
            if b.base <= addr < b.base + b.size:
                return b
        return None

    def load(self, addr: int, n: int) -> List[object]:
        b = self._last
        if b is None or not b.base <= addr or addr + n > b.base + b.size:
            b = self._last = self.buffer_at(addr)
        if b is not None and addr + n <= b.base + b.size and not self.written:
            return sym_bytes(self.sym[b.name], addr - b.base, n)
        out = []
        for a in range(addr, addr + n):
            c = self.written.get(a)
            if c is None:
                b = self.buffer_at(a)
                c = sym_byte(self.sym[b.name], a - b.base) if b is not None else sym_byte(self.keys.wild, a)
            out.append(c)
        return out

    def store(self, addr: int, cells: Sequence[object]) -> None:
        for i, c in enumerate(cells):
            self.written[addr + i] = c


# ---- events ------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Event:
    """What one thread asked of the hardware at one instruction: ``kind`` is ``block2d`` (a 2D block
    load, prefetch or store), ``untyped`` (an LSC load/store of global memory, SLM or the
    cross-thread data), ``fence``, ``barrier`` (the signal), ``wait`` (``sync.bar``), ``dpas``,
    ``problem`` (something the hardware would do wrong or undefined) or ``eot``."""

    kind: str                               # also "race": an SLM read of bytes another thread wrote
    line: int                               # since the last barrier (its data is the symbol "race")
    text: str
    thread: int
    phase: int                              # barriers this thread had passed
    desc: Optional[msg.LscDesc] = None
    block: Optional[msg.Block2D] = None
    elems: Tuple[tuple, ...] = ()           # block2d: runs (row, column, count, address or None outside the
    #                                         surface), ``block_elements``; untyped: (lane, address)
    dpas: Optional["DpasInfo"] = None
    note: str = ""
    used: Optional[bool] = None             # a load: whether anything read what it loaded


def block_elements(e: Event):
    """(row, column, address or None) of every element a 2D block message touches."""
    es = msg.DATA_BYTES[e.desc.data_size][0]
    for row, c0, count, addr in e.elems:
        for i in range(count):
            yield row, c0 + i, None if addr is None else addr + i * es


@dataclass(frozen=True)
class DpasInfo:
    """A dpas's operands by what they hold: interned keys (``Interner``) of the bytes of its A
    (src2) and B (src1) registers and of its accumulator (src0), as register images; ``key``
    names the whole computation (a result byte is ``sym_byte(key, offset)``)."""

    types: Tuple[str, str, str, str]        # dst, src0 (accumulator), src1 (B), src2 (A)
    depth: int
    repeat: int
    a: int
    b: int
    acc: int
    key: int

    def a_row(self, keys: "Interner", m: int) -> tuple:
        """The bytes of A's row ``m`` (``depth`` dwords)."""
        cells = keys.keys[self.a][1]
        return cells[m * self.depth * 4:(m + 1) * self.depth * 4]

    def b_col(self, keys: "Interner", n: int) -> tuple:
        """The bytes of B's column ``n`` (one dword of each of ``depth`` GRFs)."""
        cells = keys.keys[self.b][1]
        return tuple(x for k in range(self.depth) for x in cells[k * GRF + 4 * n:k * GRF + 4 * n + 4])

    def acc_elem(self, keys: "Interner", m: int, n: int) -> tuple:
        cells = keys.keys[self.acc][1]
        return cells[m * GRF + 4 * n:m * GRF + 4 * n + 4]


# ---- a thread ------------------------------------------------------------------------------------------

def _cond(c: str, a, b) -> bool:
    if c in ("eq", "z"):
        return a == b
    if c in ("ne", "nz"):
        return a != b
    if c in ("gt", "g"):
        return a > b
    if c == "ge":
        return a >= b
    if c in ("lt", "l"):
        return a < b
    if c == "le":
        return a <= b
    if c == "un":
        return isinstance(a, float) and (math.isnan(a) or isinstance(b, float) and math.isnan(b))
    raise EvalError(f"condition ({c})")


class Thread:
    """One hardware thread: its registers (a flat list of byte cells, ``FILES``), execution mask,
    flags and program counter. ``run`` executes until ``sync.bar``, end of thread or ``max_steps``."""

    def __init__(self, prog: Program, tid: int, simd: int, memory: Memory, interner: Interner,
                 r0: Sequence[int], max_steps: int = 200000, dispatch_mask: Optional[int] = None):
        self.prog, self.tid, self.simd, self.mem, self.keys = prog, tid, simd, memory, interner
        self.cells: List[int] = [sym_byte(interner.undef, 0)] * CELLS
        for f in ("f", "cr"):
            base, size, count = FILES[f]
            self.cells[base:base + size * count] = [0] * (size * count)
        self.cells[0:GRF] = list(r0)
        # the dispatch mask: channels beyond the SIMD size are off (vISA: "32 SIMD execution masks
        # which are initialized at program entry based on the dispatch SIMD size")
        self.emask = (1 << simd) - 1 if dispatch_mask is None else dispatch_mask
        self.waiting: Dict[int, int] = {}
        self.pc = 0
        self.done = False
        self.events: List[Event] = []
        self.steps = 0
        self.max_steps = max_steps
        self.pending: Dict[int, Tuple[Event, ...]] = {}   # GRF byte -> the untyped loads whose data it holds
        self.pending_grfs: Dict[int, int] = {}               # GRF -> how many of its bytes are pending
        self.pending_of: Dict[Event, set] = {}               # a load -> the bytes that hold its data
        self.signals = 0                 # barrier signals sent
        self.phase = 0                   # barrier waits passed

    # -- registers
    def _raw(self, off: int, size: int, d: Decoded, what: str) -> int:
        c = self.cells[off:off + size]
        try:
            return int.from_bytes(bytes(c), "little")
        except (TypeError, ValueError):
            raise EvalError(f"{what} holds {self._symbolic(c)} where the evaluator needs a number: {d.text}") from None

    def _symbolic(self, cells) -> str:
        kinds = {self.keys.kind(c) for c in cells if c < 0}
        return {"undef": "bytes nothing wrote", "mem": "data loaded from memory",
                "dpas": "values computed from loaded data", "alu": "values computed from loaded data",
                "wild": "data loaded from outside every buffer", "race": "racy SLM data",
                "slm-undef": "SLM bytes nothing wrote"}.get(next(iter(kinds)), str(kinds)) \
            if len(kinds) == 1 else "symbolic bytes " + str(sorted(kinds))

    def _read(self, op: Operand, ch: int):
        """(raw bits, None) or (None, the cells) of channel ``ch`` of a source."""
        if op.kind == "imm":
            return op.imm[ch], None
        if op.kind == "null":
            return 0, None
        off = op.offs[ch]
        c = self.cells[off:off + op.size]
        try:
            return int.from_bytes(bytes(c), "little"), None
        except (TypeError, ValueError):
            return None, tuple(c)

    def _write(self, op: Operand, ch: int, raw: int) -> None:
        if op.kind == "null":
            return
        off = op.offs[ch]
        self.cells[off:off + op.size] = list(raw.to_bytes(op.size, "little"))

    def _flags(self, f: int, d: Decoded) -> int:
        base = FILES["f"][0] + 4 * f
        return self._raw(base, 4, d, f"flag register f{f}")

    def _set_flag(self, f: int, sub: int, ch: int, value: bool, d: Decoded) -> None:
        bits = self._flags(f, d)
        bit = 1 << (16 * sub + ch)
        bits = bits | bit if value else bits & ~bit
        base = FILES["f"][0] + 4 * f
        self.cells[base:base + 4] = list(bits.to_bytes(4, "little"))

    def _pred(self, d: Decoded) -> List[bool]:
        if d.pred is None:
            return [True] * d.n
        inv, f, sub, form = d.pred
        bits = self._flags(f, d) >> (16 * sub)
        if form:
            m = re.fullmatch(r"(any|all)(\d+)", form)
            if m is None:
                raise EvalError(f"predicate form .{form} is not one the evaluator knows: {d.text}")
            group = int(m.group(2))
            vals = []
            for ch in range(d.n):
                g0 = (d.chan + ch) // group * group
                sel = [(bits >> (g0 + i)) & 1 for i in range(group)]
                v = any(sel) if m.group(1) == "any" else all(sel)
                vals.append(v != inv)
            return vals
        return [bool((bits >> (d.chan + ch)) & 1) != inv for ch in range(d.n)]

    def _enabled(self, d: Decoded) -> List[bool]:
        # a predicated sel chooses between its sources in every enabled channel: not a write mask
        pred = [True] * d.n if d.op == "sel" and d.cond is None else self._pred(d)
        if d.nomask:
            return pred
        return [pred[ch] and bool((self.emask >> (d.chan + ch)) & 1) for ch in range(d.n)]

    def _mode(self) -> int:
        return (self.cells[FILES["cr"][0]] >> 4) & 3 if isinstance(self.cells[FILES["cr"][0]], int) else 0

    # -- execution
    def run(self) -> str:
        """Execute until ``"wait"`` (a ``sync.bar``), ``"eot"``; raises ``EvalError`` past ``max_steps``."""
        prog = self.prog
        while True:
            if self.pc >= len(prog.instrs):
                raise EvalError(f"thread {self.tid} ran past the last instruction without an end of thread")
            self.steps += 1
            if self.steps > self.max_steps:
                raise EvalError(f"thread {self.tid} did not finish in {self.max_steps} instructions (at instruction "
                                f"{self.pc}: {prog.at(self.pc).text})")
            d = prog.at(self.pc)
            r = self.step(d)
            if r is not None:
                return r

    def step(self, d: Decoded) -> Optional[str]:
        if self.pending and (any(g in self.pending_grfs for g in d.read_grfs) or
                             any(g in self.pending_grfs for g in d.write_grfs)):
            self._track(d)
        op = d.op
        if op == "nop" or op == "sync" and d.sub != "bar":
            self.pc += 1
            return None
        if op == "sync":
            if d.extra and d.extra[0]:
                raise EvalError(f"named barrier {d.extra[0]} is not modeled: {d.text}")
            self._event("wait", d)
            self.pc += 1
            return "wait"
        if op == "jmpi":
            taken = self._pred(d)[0] if d.pred else True
            self.pc = d.extra[0] if taken else self.pc + 1
            return None
        if op == "goto":
            return self._goto(d)
        if op == "join":
            for lane, tgt in list(self.waiting.items()):
                if tgt == self.pc:
                    self.emask |= 1 << lane
                    del self.waiting[lane]
            self.pc = d.extra[0] if not self.emask else self.pc + 1
            return None
        if op in ("send", "sendc"):
            r = self._send(d)
            self.pc += 1
            return r
        if op == "dpas":
            self._dpas(d)
        else:
            self._alu(d)
        self.pc += 1
        return None

    def _track(self, d: Decoded) -> None:
        """Follow the data of untyped loads (``pending``: GRF byte -> the loads whose data it
        holds, none of them used yet): an ALU op passes it on to its destination (a copy, a
        broadcast); a message, a dpas, a comparison or a flag uses it; a write buries it."""
        p, counts = self.pending, self.pending_grfs
        hits = set()
        for g, ws in d.read_grfs.items():
            if g in counts:
                for w in ws:
                    es = p.get(w)
                    if es:
                        hits.update(es)
        for g, ws in d.write_grfs.items():
            if g in counts:
                for w in ws:
                    if w in p:
                        self._unpend(w)
        if not hits or d.op in _PASS_ON and d.cond is None and d.dst is not None and d.dst.kind == "null":
            return           # (a move to null, the send WAR workaround, reads registers and does nothing)
        if d.op in _PASS_ON and d.cond is None and d.dst is not None and d.dst.kind == "reg" and d.dst.file == "r":
            events = tuple(hits)
            for ws in d.write_grfs.values():
                self._pend_all(ws, events)
        else:
            for e in hits:
                e.used = True
                for w in self.pending_of.pop(e, ()):
                    if w in p and all(x.used for x in p[w]):
                        self._unpend(w)

    def _pend(self, w: int, events: Tuple[Event, ...]) -> None:
        self._pend_all(range(w, w + 1), events)

    def _pend_all(self, ws, events: Tuple[Event, ...]) -> None:
        """Mark bytes ``ws`` as holding the data of ``events`` (untyped loads not used yet)."""
        p, counts = self.pending, self.pending_grfs
        for w in ws:
            if w not in p:
                counts[w // GRF] = counts.get(w // GRF, 0) + 1
            p[w] = events
        for e in events:
            self.pending_of.setdefault(e, set()).update(ws)

    def _unpend(self, w: int) -> None:
        del self.pending[w]
        g = w // GRF
        n = self.pending_grfs[g] - 1
        if n:
            self.pending_grfs[g] = n
        else:
            del self.pending_grfs[g]

    def _goto(self, d: Decoded) -> None:
        jip, uip = d.extra
        if jip <= self.pc or uip <= self.pc:
            raise EvalError(f"a backward goto is not modeled: {d.text}")
        if self.prog.at(uip).op != "join":
            raise EvalError(f"goto's target {self.prog.instrs[uip].index} is not a join: {d.text}")
        for ch, on in enumerate(self._enabled(d)):
            lane = d.chan + ch
            if on and self.emask >> lane & 1:
                self.emask &= ~(1 << lane)
                self.waiting[lane] = uip
        self.pc = jip if not self.emask else self.pc + 1

    def _event(self, kind: str, d: Decoded, **kw) -> Event:
        e = Event(kind, d.line, d.text, self.tid, self.phase, **kw)
        self.events.append(e)
        return e

    # -- ALU
    def _alu(self, d: Decoded) -> None:
        """Every channel's sources are read before any channel's result is written (a region may
        overlap the destination: ``mov (16) r2.0<1>:d r2.0<2;1,0>:ub``)."""
        if d.fast is None:
            d.fast = _fast_int(d) or False
        if d.fast and self._alu_int(d):
            return
        dst, srcs, op = d.dst, d.srcs, d.op
        dt = dst.type
        mode = self._mode()
        en = self._enabled(d)
        if d.dst.kind == "reg" and d.dst.file == "cr" and op not in ("or", "xor", "and", "mov"):
            raise EvalError(f"'{op}' of the control register is not modeled: {d.text}")
        reads = []
        for ch in range(d.n):
            if en[ch]:
                reads.append((ch, [self._read(s, ch) for s in srcs]))
        writes, flags = [], []
        for ch, rs in reads:
            raws = [raw if cells is None else cells for raw, cells in rs]
            if any(cells is not None for _, cells in rs):
                writes.append((ch, self._alu_symbolic(d, ch, raws)))
                continue
            copy = self._copied(d, ch)
            if copy is not None:     # a move without conversion copies the bits (NaN payloads too)
                s = srcs[copy]
                writes.append((ch, list(raws[copy].to_bytes(s.size, "little"))))
                continue
            vals = [self._value(s, raw) for s, raw in zip(srcs, raws)]
            if op == "cmp":
                r = _cond(d.cond[0], *self._promote(vals, srcs))
                flags.append((ch, r))
                writes.append((ch, list(((1 << 8 * dst.size) - 1 if r else 0).to_bytes(dst.size, "little"))))
                continue
            res = self._compute(d, ch, vals, srcs)
            raw = _from_num(res, dt, mode, d.sat) if not (isinstance(res, int) and op in _BITWISE and
                                                          dt not in FLOATS) else res & ((1 << 8 * dst.size) - 1)
            writes.append((ch, list(raw.to_bytes(dst.size, "little"))))
            # sel/csel with a conditional modifier (min/max) write no flag (as Mesa's flags_written says)
            if d.cond is not None and op not in ("sel", "csel"):
                flags.append((ch, _cond(d.cond[0], _to_num(raw, dt), 0)))
        if dst.kind == "reg":
            for ch, cells in writes:
                off = dst.offs[ch]
                self.cells[off:off + dst.size] = cells
        for ch, r in flags:
            self._set_flag(d.cond[1], d.cond[2], d.chan + ch, r, d)

    def _alu_int(self, d: Decoded) -> bool:
        """The common case, all at once: an integer op on concrete data. False (nothing done)
        when a source holds symbolic bytes: ``_alu`` does it channel by channel."""
        fn, convs, dbits = d.fast
        en = self._enabled(d)
        chans = [ch for ch in range(d.n) if en[ch]]
        if not chans:
            return True
        cells = self.cells
        cols = []
        for s, conv in zip(d.srcs, convs):
            if s.kind == "imm":
                raws = [s.imm[ch] for ch in chans]
            elif s.kind == "null":
                raws = [0] * len(chans)
            else:
                size, offs = s.size, s.offs
                try:
                    raws = [int.from_bytes(bytes(cells[offs[ch]:offs[ch] + size]), "little") for ch in chans]
                except (TypeError, ValueError):
                    return False
            cols.append([conv(r) for r in raws] if conv is not None else raws)
        dst = d.dst
        if d.op == "cmp":
            c = d.cond
            res = [_cond(c[0], *v) for v in zip(*cols)]
            for ch, r in zip(chans, res):
                self._set_flag(c[1], c[2], d.chan + ch, r, d)
            res = [-1 if r else 0 for r in res]
        elif d.op == "sel":
            pred = self._pred(d)
            res = [v[0] if pred[ch] else v[1] for ch, v in zip(chans, zip(*cols))]
        else:
            res = [fn(*v) for v in zip(*cols)]
        mask = (1 << dbits) - 1
        if dst.kind == "reg":
            size, offs = dst.size, dst.offs
            for ch, r in zip(chans, res):
                o = offs[ch]
                cells[o:o + size] = (r & mask).to_bytes(size, "little")
        if d.cond is not None and d.op != "cmp":
            sign = 1 << (dbits - 1) if TYPES[dst.type][1] == "s" else 0
            for ch, r in zip(chans, res):
                r &= mask
                v = r - 2 * sign if r & sign else r
                self._set_flag(d.cond[1], d.cond[2], d.chan + ch, _cond(d.cond[0], v, 0), d)
        return True

    def _copied(self, d: Decoded, ch: int) -> Optional[int]:
        """The source a mov or predicated sel copies without conversion (same type, or integer
        types of the same size; no modifier), or None."""
        if d.op == "mov":
            i = 0
        elif d.op == "sel" and d.cond is None:
            i = 0 if self._pred(d)[ch] else 1
        else:
            return None
        s, t = d.srcs[i], d.dst
        if d.sat or s.neg or s.abs or s.notbits or s.kind == "null" or not t.type:
            return None
        same = s.type == t.type or (s.size == t.size and s.type not in FLOATS and t.type not in FLOATS)
        return i if same else None

    def _value(self, s: Operand, raw: int):
        v = _to_num(raw, s.type)
        if s.notbits:
            v = ~v
        if s.abs:
            v = abs(v)
        if s.neg:
            v = -v
        return v

    @staticmethod
    def _promote(vals, srcs):
        if any(s.type in FLOATS for s in srcs):
            return [Fraction(v) if not isinstance(v, float) or math.isfinite(v) else v for v in vals]
        return vals

    def _compute(self, d: Decoded, ch: int, v: list, srcs: Sequence[Operand]):
        op = d.op
        isfloat = any(s.type in FLOATS for s in srcs)
        if isfloat and op in _BITWISE:
            raise EvalError(f"'{op}' on floats is not modeled: {d.text}")
        if isfloat:
            v = self._promote(v, srcs)
        if op == "mov":
            return v[0]
        if op == "sel":
            if d.cond is not None:     # (ge)/(gt): max, (lt)/(le): min
                return v[0] if _cond(d.cond[0], v[0], v[1]) else v[1]
            return v[0] if self._pred(d)[ch] else v[1]
        if op == "csel":
            return v[0] if _cond(d.cond[0], v[2], 0) else v[1]
        if op == "add":
            return v[0] + v[1]
        if op == "add3":
            return v[0] + v[1] + v[2]
        if op == "mul":
            return v[0] * v[1]
        if op == "mad":
            return v[0] + v[1] * v[2]
        if op == "mach":
            return (v[0] * v[1]) >> 32
        if op == "macl":
            return v[0] * v[1]
        if op == "math":
            x = Fraction(v[0]) if not isinstance(v[0], Fraction) else v[0]
            if d.sub == "inv":
                return math.inf if x == 0 else 1 / x
            r = math.sqrt(float(x)) if x >= 0 else math.nan
            return r if d.sub == "sqrt" else (math.inf if r == 0 else 1 / r)
        if op in ("shl", "shr", "asr"):
            wide = max(s.size for s in srcs[:1] + (d.dst,)) == 8
            n = v[1] & (63 if wide else 31)
            if op == "shl":
                return v[0] << n
            size = srcs[0].size
            x = v[0] & ((1 << 8 * size) - 1) if op == "shr" else v[0]
            return x >> n
        if op == "and":
            return v[0] & v[1]
        if op == "or":
            return v[0] | v[1]
        if op == "xor":
            return v[0] ^ v[1]
        if op == "not":
            return ~v[0]
        if op == "bfn":
            return eval(d.extra[0], {}, {"a": v[0], "b": v[1], "c": v[2]})  # noqa: S307 (compiled from iga's text)
        raise EvalError(f"'{op}' is not modeled: {d.text}")

    def _alu_symbolic(self, d: Decoded, ch: int, raws: list) -> List[object]:
        """The destination cells of an ALU op with a symbolic source: a plain copy keeps the bytes
        (a mov, or a predicated sel, between same-size integer types or the same type), anything
        else makes a value named by its inputs; a comparison of symbols is a decision on loaded
        data, which is not modeled."""
        dst, srcs = d.dst, d.srcs
        if d.op == "cmp" or d.cond is not None and d.op not in ("sel",):
            raise EvalError(f"a comparison of {self._symbolic(next(r for r in raws if isinstance(r, tuple)))} "
                            f"is not modeled: {d.text}")
        pick = None
        if d.op == "mov":
            pick = 0
        elif d.op == "sel" and d.cond is None:
            pick = 0 if self._pred(d)[ch] else 1
        if pick is not None:
            s = srcs[pick]
            same = s.type == dst.type or (s.size == dst.size and s.type not in FLOATS and dst.type not in FLOATS)
            if same and not (s.neg or s.abs or s.notbits or d.sat):
                raw = raws[pick]
                return list(raw) if isinstance(raw, tuple) else list(raw.to_bytes(dst.size, "little"))
        args = tuple(("c", r) if isinstance(r, int) else ("s", self.keys.key(r)) for r in raws)
        mods = tuple((s.type, s.neg, s.abs, s.notbits) for s in srcs)
        k = self.keys.key(("alu", d.op, d.sub, dst.type, d.sat, mods, args))
        return sym_bytes(k, 0, max(dst.size, 1))

    # -- dpas
    def _dpas(self, d: Decoded) -> None:
        """dpas (pvc and Xe2, SIMD16): dst(m, n) = src0(m, n) + sum_k A(m, k) * B(k, n), with A (src2) row m
        at byte ``m * depth * 4`` (depth dwords a row), B (src1) dword row k at GRF k, lane n, and
        src0/dst element (m, n) at GRF m, lane n. The result's bytes are named by the operands'
        bytes (a Merkle key): ``sym_byte(key, byte offset)``."""
        depth, rc, ops = d.extra
        (dst, dt), (s0, t0), (s1, t1), (s2, t2) = ops
        if TYPES[dt][0] != 4 or d.n != self.prog.platform.dpas_simd or dst is None or s1 is None or s2 is None:
            raise EvalError(f"dpas form (SIMD{d.n}, :{dt}) is not one the evaluator knows: {d.text}")
        c = self.cells
        size = rc * GRF
        a = self.keys.key(("A", tuple(c[s2:s2 + rc * depth * 4])))
        b = self.keys.key(("B", tuple(c[s1:s1 + depth * GRF])))
        acc = self.keys.key(("C", tuple(c[s0:s0 + size]) if s0 is not None else (0,) * size))
        types = (dt, t0, t1, t2)
        key = self.keys.key(("dpas", types, depth, rc, a, b, acc))
        c[dst:dst + size] = sym_bytes(key, 0, size)
        self._event("dpas", d, dpas=DpasInfo(types, depth, rc, a, b, acc, key))

    # -- sends
    def _send(self, d: Decoded) -> Optional[str]:
        sfid, dst, src0, src1, src1_len, ex_desc, desc = d.extra
        if sfid == "gtwy":
            if d.eot:
                self._event("eot", d)
                self.done = True
                return "eot"
            if msg.describe_gateway(desc) == "barrier signal":
                self.signals += 1
                self._event("barrier", d)
                return None
            raise EvalError(f"gateway message 0x{desc:x} is not modeled: {d.text}")
        if sfid not in ("ugm", "slm"):
            raise EvalError(f"send to '{sfid}' is not modeled: {d.text}")
        try:
            ld = msg.decode_lsc(desc, ex_desc, sfid, self.prog.platform)
        except msg.MessageError as e:
            raise EvalError(f"{e}: {d.text}") from None
        iga = d.comment.partition(";")[2].strip()
        if ld.op == "fence" and not iga.startswith(ld.name) or ld.op != "fence" and iga != ld.name:
            raise EvalError(f"the evaluator reads descriptor 0x{desc:08x} as {ld.name}, iga64 as {iga}: {d.text}")
        if ld.op == "fence":
            self._event("fence", d, desc=ld)
            if dst is not None:
                self.cells[dst * GRF:(dst + ld.rlen) * GRF] = [0] * (ld.rlen * GRF)
            return None
        if ld.op.endswith("block2d"):
            self._block2d(d, ld, dst, src0, src1, src1_len)
        elif ld.op in ("load", "store"):
            self._untyped(d, ld, dst, src0, src1, src1_len)
        else:
            raise EvalError(f"LSC message {ld.name} is not modeled: {d.text}")
        return None

    def _block2d(self, d: Decoded, ld: msg.LscDesc, dst, src0, src1, src1_len) -> None:
        """A 2D block load, prefetch or store, run by run of the block's layout: the hardware reads
        zero outside the surface (``msg.block2d_element``) and writes nothing there."""
        payload = [self._raw(src0 * GRF + 4 * i, 4, d, f"2D block payload dword {i} (r{src0}.{i})") for i in range(8)]
        b = msg.Block2D.from_dwords(payload)
        if ld.offset != (0, 0):     # Xe2: the descriptor's immediate offsets, added to the payload's x and y
            b = dataclasses.replace(b, x=b.x + ld.offset[0], y=b.y + ld.offset[1])
        es = msg.DATA_BYTES[ld.data_size][0]
        try:
            grfs, runs = msg.block_shape_runs(ld.message, es, ld.transpose, ld.vnni, b.w, b.h, b.n)
        except msg.MessageError as e:
            raise EvalError(f"{e} (payload {b.fields()}): {d.text}") from None
        cols, height, pitch = (b.width + 1) // es, b.height, b.pitch + 1
        load = ld.op == "load_block2d" and dst is not None
        store = ld.op == "store_block2d"
        if store and src1 is None:
            raise EvalError(f"a 2D block store without data: {d.text}")
        resp = [0] * (grfs * GRF) if load else None
        segs = []       # (row, first column, count, address of the first or None outside the surface)
        for roff, stride, dr, dc, count in runs:
            row, c0 = b.y + dr, b.x + dc
            lo, hi = max(c0, 0), min(c0 + count, cols)
            if not 0 <= row <= height or lo >= hi:
                segs.append((row, c0, count, None))
                continue
            if lo > c0:
                segs.append((row, c0, lo - c0, None))
            addr = b.base + row * pitch + lo * es
            segs.append((row, lo, hi - lo, addr))
            if hi < c0 + count:
                segs.append((row, hi, c0 + count - hi, None))
            r0, nbytes = roff + (lo - c0) * stride, (hi - lo) * es
            if load:
                cells = self.mem.load(addr, nbytes)
                if stride == es:
                    resp[r0:r0 + nbytes] = cells
                else:
                    for j in range(es):
                        resp[r0 + j:r0 + j + (hi - lo - 1) * stride + 1:stride] = cells[j::es]
            elif store:
                base = src1 * GRF + r0
                data = self.cells[base:base + nbytes] if stride == es else \
                    [self.cells[base + i * stride + j] for i in range(hi - lo) for j in range(es)]
                self.mem.store(addr, data)
        if load:
            self.cells[dst * GRF:dst * GRF + len(resp)] = resp
        problems = msg.block2d_problems(ld, b, grfs, src1_len if store else None)
        if ld.op == "load_block2d" and dst is None and ld.rlen:
            problems.append(f"a load with response length {ld.rlen} into null")
        self._event("block2d", d, desc=ld, block=b, elems=tuple(segs), note="; ".join(problems))

    def _untyped(self, d: Decoded, ld: msg.LscDesc, dst, src0, src1, src1_len) -> None:
        mem_es, reg_es, comp = msg.untyped_layout(ld, d.n)
        space = "slm" if ld.sfid == "slm" else "global" if ld.addr_type == "flat" and ld.addr_size == "a64" else \
            "crossthread" if ld.addr_type == "bti" and ld.bti == 255 else None
        if space is None or ld.addr_size not in ("a32", "a64"):
            raise EvalError(f"{ld.name}: address model not modeled: {d.text}")
        if ld.data_size == "d16u32h":
            raise EvalError(f"{ld.name}: data in the high half of each dword is not modeled: {d.text}")
        asz = 4 if ld.addr_size == "a32" else 8
        load = ld.op == "load"
        if ld.transpose:
            lanes = [(0, self._raw(src0 * GRF, asz, d, "the block message's address"))]
            slots = [(0, lanes[0][1] + i * mem_es, i * reg_es) for i in range(ld.vector)]
            want = -(-ld.vector * reg_es // GRF)
        else:
            en = self._enabled(d)
            lanes = [(ch, self._raw(src0 * GRF + ch * asz, asz, d, f"lane {ch}'s address")) for ch in range(d.n)
                     if en[ch]]
            slots = [(ch, a + v * mem_es, v * comp + ch * reg_es) for ch, a in lanes for v in range(ld.vector)]
            want = ld.vector * comp // GRF
        problems = []
        if load and ld.rlen != want and dst is not None:
            problems.append(f"response length {ld.rlen} GRFs, the data is {want}")
        if not load and src1_len != want:
            problems.append(f"store data {src1_len} GRFs, the data is {want}")
        if not load and src1 is None:
            raise EvalError(f"a store without data: {d.text}")
        if ld.transpose and mem_es == reg_es:    # one contiguous block of memory and of registers
            n = ld.vector * mem_es
            runs = [(slots[0][1], slots[0][2], n)]
        else:
            runs = [(addr, roff, mem_es) for _, addr, roff in slots]
        for addr, roff, n in runs:
            if load:
                if dst is not None:
                    cells = self._mem_read(space, addr, n, d)
                    if reg_es > mem_es:     # d8u32, d16u32: zero-extended on Xe2, undefined before
                        cells += [0] * (reg_es - mem_es) if self.prog.platform.widening_loads_zero else \
                            sym_bytes(self.keys.undef, 0, reg_es - mem_es)
                    self.cells[dst * GRF + roff:dst * GRF + roff + len(cells)] = cells
            else:
                self._mem_write(space, addr, self.cells[src1 * GRF + roff:src1 * GRF + roff + n], d)
        e = self._event("untyped", d, desc=ld, elems=tuple((ch, a) for ch, a, _ in slots), note="; ".join(problems))
        if load and dst is not None:
            e.used = False
            mine = (e,)
            for _, roff, n in runs:
                self._pend_all(range(dst * GRF + roff, dst * GRF + roff + max(n, reg_es)), mine)

    def _mem_read(self, space: str, addr: int, n: int, d: Decoded) -> List[object]:
        if space == "global":
            return self.mem.load(addr, n)
        if space == "crossthread":
            if addr < 0 or addr + n > len(self.mem.crossthread):
                raise EvalError(f"cross-thread data read at {addr}..{addr + n} outside its "
                                f"{len(self.mem.crossthread)} bytes: {d.text}")
            return list(self.mem.crossthread[addr:addr + n])
        out, racy = [], []
        slm, tid, phase = self.mem.slm, self.tid, self.phase
        for a in range(addr, addr + n):
            v = slm.get(a)
            if v is None:
                out.append(sym_byte(self.keys.slm_undef, a))
            elif v[1] != tid and v[2] == phase:
                racy.append(a)       # another thread wrote it since the last barrier: old or new data
                out.append(sym_byte(self.keys.race, a))
            else:
                out.append(v[0])
        if racy:
            self._event("race", d, note=f"SLM bytes 0x{racy[0]:x}..0x{racy[-1]:x} read in barrier phase "
                                        f"{self.phase} were written by another thread in the same phase")
        return out

    def _mem_write(self, space: str, addr: int, cells, d: Decoded) -> None:
        if space == "global":
            self.mem.store(addr, cells)
        elif space == "slm":
            tid, phase = self.tid, self.phase
            self.mem.slm.update(zip(range(addr, addr + len(cells)), [(c, tid, phase) for c in cells]))
        else:
            raise EvalError(f"a store to the {space} space: {d.text}")


_BITWISE = frozenset({"and", "or", "xor", "not", "bfn", "shl", "shr", "asr"})


def _fast_int(d: Decoded):
    """(op function, per-source converter from raw bits to a number, destination bits) for an
    integer ALU op ``Thread._alu_int`` can do all at once, or None."""
    if d.op not in ("mov", "add", "add3", "mul", "mad", "and", "or", "xor", "not", "shl", "shr", "asr", "mach",
                    "macl", "bfn", "cmp", "sel") or d.sat or d.dst is None or (d.op == "sel" and d.cond is not None):
        return None
    types = [s.type for s in d.srcs] + [d.dst.type]
    s0 = d.srcs[0] if d.srcs else None
    if d.op == "mov" and d.cond is None and s0.type == d.dst.type and d.dst.type and not (s0.neg or s0.abs or
                                                                                         s0.notbits):
        return (lambda a: a), [None], 8 * d.dst.size     # a move without conversion: the bits, whatever the type
    if any(t not in TYPES or TYPES[t][1] not in ("s", "u") for t in types if t) or d.dst.kind == "reg" and \
            d.dst.file == "cr" or d.cond is not None and d.op != "cmp" and not d.dst.type:
        return None
    if d.dst.kind == "null" and not d.dst.type:
        return None

    def conv(s: Operand):
        bits = 8 * s.size
        signed = TYPES[s.type][1] == "s"
        neg, ab, nb = s.neg, s.abs, s.notbits
        if not (signed or neg or ab or nb):
            return None
        half, full = 1 << (bits - 1), 1 << bits

        def f(r):
            v = r - full if signed and r & half else r
            if nb:
                v = ~v
            if ab:
                v = abs(v)
            return -v if neg else v
        return f
    convs = [conv(s) for s in d.srcs]
    op = d.op
    if op in ("shl", "shr", "asr"):
        n = 63 if max(d.srcs[0].size, d.dst.size) == 8 else 31
        keep = (1 << 8 * d.srcs[0].size) - 1
        fn = {"shl": lambda a, b: a << (b & n), "shr": lambda a, b: (a & keep) >> (b & n),
              "asr": lambda a, b: a >> (b & n)}[op]
    elif op == "bfn":
        code = d.extra[0]
        fn = lambda a, b, c: eval(code, {}, {"a": a, "b": b, "c": c})  # noqa: E731,S307 (iga's bfn text)
    else:
        fn = {"mov": lambda a: a, "add": lambda a, b: a + b, "add3": lambda a, b, c: a + b + c,
              "mul": lambda a, b: a * b, "mad": lambda a, b, c: a + b * c, "and": lambda a, b: a & b,
              "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "not": lambda a: ~a,
              "mach": lambda a, b: (a * b) >> 32, "macl": lambda a, b: a * b, "cmp": None, "sel": None}[op]
    return fn, convs, 8 * d.dst.size if d.dst.type else 32
_PASS_ON = frozenset(_ALU) - {"cmp"}


# ---- a workgroup ---------------------------------------------------------------------------------------

class Workgroup:
    """The threads of one workgroup (``threads`` of them, SIMD ``simd``) run to their end, a
    barrier releasing when every live thread has signalled it. ``only``: run just these threads
    (a kernel without barriers; the others never run)."""

    def __init__(self, prog: Program, simd: int, threads: int, memory: Memory, interner: Interner,
                 group: Tuple[int, int, int] = (0, 0, 0), only: Optional[Sequence[int]] = None,
                 max_steps: int = 200000, dispatch_mask: Optional[int] = None, ignore_barriers: bool = False,
                 inline: bytes = b""):
        self.threads = []
        self.ignore_barriers = ignore_barriers   # (a listing of some threads only: SLM contents are wrong)
        if len(inline) > GRF:
            raise EvalError(f"{len(inline)} bytes of inline data: the evaluator delivers at most one GRF (r1)")
        for t in (range(threads) if only is None else only):
            r0 = [0] * GRF
            for dw, v in ((1, group[0]), (6, group[1]), (7, group[2])):
                r0[4 * dw:4 * dw + 4] = list(int(v).to_bytes(4, "little"))
            r0[8] = t            # r0.2 bits 7:0: the thread's index in its group
            th = Thread(prog, t, simd, memory, interner, r0, max_steps, dispatch_mask)
            th.cells[GRF:GRF + len(inline)] = list(inline)   # inline data: r1 (Xe2's dispatch)
            self.threads.append(th)
        self.only = only is not None

    def run(self) -> List[Thread]:
        while not all(t.done for t in self.threads):
            progressed = False
            for t in self.threads:
                if t.done:
                    continue
                if t.events and t.events[-1].kind == "wait" and t.phase < t.signals:
                    if self.ignore_barriers:
                        t.phase = t.signals
                    elif self.only:
                        raise EvalError(f"thread {t.tid} waits at a barrier but only threads "
                                        f"{[x.tid for x in self.threads]} run")
                    if not all(o.done or o.signals >= t.signals for o in self.threads):
                        continue
                    t.phase = t.signals
                t.run()
                progressed = True
            if not progressed:
                waiting = [(t.tid, t.signals) for t in self.threads if not t.done]
                raise EvalError(f"the workgroup's threads wait for each other at barriers: (thread, signals) "
                                f"{waiting}")
        return self.threads
