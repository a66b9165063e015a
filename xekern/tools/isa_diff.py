"""A differential check of xekern's hand-written GPU code against Intel's own lowering.

On pvc and bmg (Xe-HPC and Xe2), xekern writes a workgroup-level kernel's 2D block loads and
prefetches as inline vISA ``raw_sends`` with payloads and descriptors it builds itself, and its
DPAS as inline vISA (the ``visa`` emitter, the default on both).
The same kernel can instead use the standard SPIR-V ops (``SPV_INTEL_2d_block_io``,
``SPV_INTEL_subgroup_matrix_multiply_accumulate``), which IGC lowers itself (``spirv-ext``).
``check`` compiles a kernel both ways with the current compiler and compares what the hardware
will do, as a concrete evaluator of the ISA (``isa_eval``) runs the threads of a workgroup with
concrete arguments. ``Case.target`` names the target record; its ``iga_platform`` chooses what
the evaluator knows of that ISA (``isa_msg.PLATFORMS``: cache-control encodings, Xe2's immediate
offsets, ...), and zeinfo says how the arguments arrive (Xe2's inline data in r1,
``_check_inputs``). It compares:

- every 2D block message: load (plain, VNNI, transposed), prefetch and store, by its descriptor
  (data size, VNNI, transpose, cache controls) and what its payload makes it touch (surface base,
  width, height and pitch, and each element's row and column). The two emitters legitimately
  group blocks into messages differently (xekern reads up to 32 GRFs in one message; IGC's
  SPIR-V ops 16), and IGC schedules them differently, so messages are compared as the multiset,
  over the whole thread, of the elements they touch under each descriptor kind: element-wise,
  not message-wise, and order-free (a K loop's iterations still differ, by their coordinates).
  Response and data lengths, message lengths and payload bits the hardware ignores are checked
  against the block each message describes (``isa_msg.block2d_problems``), on both sides;
- every dpas: precisions, systolic depth, repeat count, and what its A and B registers hold,
  byte by byte, by provenance (which buffer bytes, whatever message loaded them), and its
  accumulator, named by the dpas chain that produced it. Chains are compared exactly (order of
  accumulation included); dpas ops as a multiset (IGC interleaves independent chains freely);
- untyped LSC messages (SLM stores and loads, scattered global stores, the argument load) as the
  multiset of 4-byte units (bytes for smaller data) each kind reads or writes (a load whose data
  reaches nothing, as xekern's SLM load that keeps IGC from deleting its SLM stores, is left
  out and reported); barrier signals and waits by count (fences too, reported but not failing:
  xekern leaves a barrier's fence out where only consumed SLM reads precede it);
- the memory the workgroup leaves behind: every byte stored, by what it holds.

Threads are compared one by one (the same subgroup of the same workgroup): all of a workgroup's
threads run when the kernel has barriers or SLM, else ``Case.threads``. IGC's lowering (the
baseline) runs as the hardware does; ``check(all_lanes=True)`` runs xekern's code with all 32
channels enabled at dispatch, to tell differences that come only from instructions wider than
the SIMD16 thread (the K-loop payload add without NoMask in tests/test_isa_diff.py's docstring).

The emitter is chosen by ``compile_offline``'s ``emitter`` option (``EMITTERS``).

Example::

    >>> from xekern.tools.isa_diff import Case, check
    >>> r = check(Case("gemm-bf16-nn", gemm_kernel, sig, scalars=dict(M=192, ...), shapes=...))
    >>> r.ok, print(r.report())
    >>> check(Case("gemm-bf16-nn@bmg", ..., target="bmg")).ok

The corpus of kernels it is run on lives in ``tests/test_isa_diff.py``; ``python
tests/test_isa_diff.py [NAME ...] [--all-lanes]`` prints each case's report.
"""
from __future__ import annotations

import glob
import os
import re
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import XekernError
from ..targets import get_target
from . import isa_eval as ev
from .isa import compile_isa

# The two emitters compared, as ``kernel.compile_offline(emitter=...)`` names them.
EMITTERS = {"visa": {"emitter": "visa"}, "spirv-ext": {"emitter": "spirv-ext"}}
BASELINE = "spirv-ext"          # IGC's own lowering: the reference
SUBJECT = "visa"                # xekern's hand-written messages and DPAS

BUFFER_BASE = 0x2_0000_0000     # buffers are placed 4 GiB apart from here (above 4 GiB: the base
BUFFER_STRIDE = 0x1_0000_0000   # address's upper dword matters too; IGC tags SLM addresses 0x10000000)


class IsaDiffError(XekernError):
    """The two emitters' ISA does different things; the message lists both sides."""


@dataclass(frozen=True)
class Case:
    """One kernel to check: ``signature`` as for ``compile_offline``; ``scalars`` the value of each
    scalar argument; ``shapes`` each pointer argument's (rows, row pitch) in elements, which sizes
    its buffer and names its bytes ``a[row, col]`` in listings; ``groups`` the workgroup ids run;
    ``threads`` the subgroups run (None: all; a kernel with barriers always runs all); ``target``
    the target record it is compiled for (one whose ``iga_platform`` ``isa_msg.PLATFORMS`` has)."""

    name: str
    kernel: object
    signature: Dict[str, object]
    scalars: Dict[str, object]
    shapes: Dict[str, Tuple[int, int]]
    num_subgroups: Optional[int] = None
    grf_mode: Optional[int] = None
    groups: Tuple[Tuple[int, int, int], ...] = ((0, 0, 0),)
    threads: Optional[Tuple[int, ...]] = None
    target: str = "pvc"


@dataclass
class Variant:
    """One emitter's compilation of a case: the ISA and what the kernel's zeinfo says about it."""

    emitter: str
    text: str
    compiler: str
    simd: int
    threads: int                     # threads per workgroup
    barriers: bool
    args: List[dict]                 # zeinfo payload_arguments
    arg_names: Dict[int, str]        # arg_index -> parameter name
    inputs: List[Tuple[str, str, int]]   # the .inputs table: (register, "inline" or "cti", offset)
    platform: str = ev.msg.PVC.iga   # the iga64 platform of the target (``isa_msg.PLATFORMS``)
    inline: int = 0                  # bytes of cross-thread data delivered as inline data (in r1)


# ---- compiling -------------------------------------------------------------------------------------------

def compile_variant(case: Case, emitter: str, compiler: Optional[str] = None) -> Variant:
    """Compile ``case`` with one emitter for its target and read IGC's dump for what the
    evaluator needs (``compile_isa`` with a work directory)."""
    opts = dict(EMITTERS[emitter])
    if case.num_subgroups is not None:
        opts["num_subgroups"] = case.num_subgroups
    c = case.kernel.compile_offline(case.signature, target=case.target, **opts)
    with tempfile.TemporaryDirectory(prefix="xekern-isadiff-") as d:
        r = compile_isa(c.spirv, c.name, case.target, grf_mode=case.grf_mode, work_dir=d, compiler=compiler,
                        iga_options=("-Xprint-hex-floats",))
        zeinfo = _read_first(os.path.join(d, "dump", "*.zeinfo"))
        asm = ""
        for path in sorted(glob.glob(os.path.join(d, "dump", "*_simd*.asm"))):
            text = open(path, errors="replace").read()
            if re.search(rf"^//\.kernel {re.escape(c.name)}\s*$", text, re.M):
                asm = text
    block = _zeinfo_kernel(zeinfo, c.name)
    if "per_thread_payload_arguments" in block:
        raise IsaDiffError(f"{case.name} ({emitter}): the kernel takes per-thread payload arguments (local ids "
                           f"the runtime delivers), which the check does not model; xekern's kernels compute them "
                           f"from r0 (a required workgroup size)")
    simd = int(_field(block, "simd_size") or r.simd or 16)
    wg = re.search(r"required_work_group_size:\s*\[\s*(\d+),\s*(\d+),\s*(\d+)\s*\]", block)
    size = int(wg.group(1)) * int(wg.group(2)) * int(wg.group(3)) if wg else c.workgroup_size
    barriers = bool(int(_field(block, "barrier_count") or 0)) or bool(int(_field(block, "slm_size") or 0))
    return Variant(emitter, r.text, r.compiler_version, simd, -(-size // simd), barriers, _payload_args(block),
                   _arg_names(zeinfo, c.name), _inputs(asm), get_target(case.target).iga_platform,
                   int(_field(block, "inline_data_payload_size") or 0))


def _read_first(pattern: str) -> str:
    paths = sorted(glob.glob(pattern))
    return open(paths[0], errors="replace").read() if paths else ""


def _zeinfo_kernel(zeinfo: str, kernel: str) -> str:
    blocks = re.split(r"^  - name:\s+", zeinfo.split("kernels_misc_info:")[0], flags=re.M)[1:]
    for b in blocks:
        if b.split("\n", 1)[0].strip() == kernel:
            return b
    raise IsaDiffError(f"kernel {kernel} is not in IGC's zeinfo")


def _field(block: str, name: str) -> Optional[str]:
    m = re.search(rf"^\s+{name}:\s+(\S+)\s*$", block, re.M)
    return m.group(1) if m else None


def _payload_args(block: str) -> List[dict]:
    part = block.split("payload_arguments:", 1)[1] if "payload_arguments:" in block else ""
    part = re.split(r"^    \w+:", part, maxsplit=1, flags=re.M)[0]
    out = []
    for item in re.split(r"^\s+- ", part, flags=re.M)[1:]:
        out.append(dict(re.findall(r"(\w+):\s+(\S+)", item)))
    return out


def _arg_names(zeinfo: str, kernel: str) -> Dict[int, str]:
    misc = zeinfo.split("kernels_misc_info:", 1)[1] if "kernels_misc_info:" in zeinfo else ""
    for b in re.split(r"^  - name:\s+", misc, flags=re.M)[1:]:
        if b.split("\n", 1)[0].strip() == kernel:
            return {int(i): n for i, n in re.findall(r"- index:\s+(\d+)\s*\n\s+name:\s+(\S+)", b)}
    return {}


def _inputs(asm: str) -> List[Tuple[str, str, int]]:
    """``// .inputs``: (register position, "inline" or "cti", offset) of each kernel input IGC
    placed: from the inline data the dispatch delivers (Xe2) or from the cross-thread data."""
    row = re.compile(r"^//\s*\|\s*\S+\s*\|\s*:\w+\s*\|\s*0x[0-9A-Fa-f]+\s*\|\s*(\S+)\s*\|"
                     r"\s*(inline|cti)\+(0x[0-9A-Fa-f]+)", re.M)
    return [(at, frm, int(off, 16)) for at, frm, off in row.findall(asm)]


# ---- running ---------------------------------------------------------------------------------------------

def buffers(case: Case) -> List[ev.Buffer]:
    """Each pointer argument's buffer, 4 GiB apart (so no two overlap, whatever a kernel adds)."""
    out = []
    for i, (name, (rows, pitch)) in enumerate(sorted(case.shapes.items())):
        elem = _elem_bytes(case.signature[name])
        out.append(ev.Buffer(name, BUFFER_BASE + i * BUFFER_STRIDE, max(rows * pitch * elem, 1), elem, pitch))
    return out


def _elem_bytes(t) -> int:
    elem = getattr(t, "elem", None) or getattr(t, "pointee", None) or getattr(t, "dtype", None)
    size = getattr(elem, "itemsize", None)
    if size is None:
        raise IsaDiffError(f"cannot tell the element size of a pointer of type {t!r}")
    return size


def crossthread(case: Case, v: Variant, bufs: Sequence[ev.Buffer], grid: Tuple[int, int, int]) -> bytes:
    """The cross-thread data the kernel loads its arguments from (zeinfo ``payload_arguments``):
    pointers as their buffers' addresses, scalars as given, implicit arguments as a launch of
    ``grid`` workgroups would set them."""
    size = max([int(a["offset"]) + int(a["size"]) for a in v.args] + [64])
    out = bytearray(-(-size // 64) * 64)
    base = {b.name: b.base for b in bufs}
    local = (v.threads * v.simd, 1, 1)
    for a in v.args:
        kind, off, n = a["arg_type"], int(a["offset"]), int(a["size"])
        if kind in ("arg_bypointer", "arg_byvalue"):
            name = v.arg_names.get(int(a["arg_index"]))
            if name in base:
                raw = base[name]
            elif name in case.scalars:
                raw = _scalar_bits(case.scalars[name], case.signature.get(name), n)
            else:
                raise IsaDiffError(f"{case.name}: no value for kernel argument {a.get('arg_index')} ({name})")
            values = [raw]
        elif kind in ("local_size", "enqueued_local_size"):
            values = list(local)
        elif kind == "group_count":
            values = list(grid)
        elif kind == "global_size":
            values = [g * s for g, s in zip(grid, local)]
        elif kind == "global_id_offset":
            values = [0, 0, 0]
        elif kind == "work_dimensions":
            values = [3]
        else:
            raise IsaDiffError(f"{case.name}: implicit kernel argument '{kind}' is not one the check fills")
        each = n // len(values)
        for i, x in enumerate(values):
            out[off + i * each:off + (i + 1) * each] = (int(x) & ((1 << 8 * each) - 1)).to_bytes(each, "little")
    _check_inputs(case, v, len(out))
    return bytes(out)


def _check_inputs(case: Case, v: Variant, size: int) -> None:
    """The check's model of how arguments reach the registers, held against IGC's ``.inputs``
    table: the dispatch delivers the first ``v.inline`` bytes of the cross-thread data (zeinfo
    ``inline_data_payload_size``; 0 on pvc, 32 on Xe2) as inline data in r1; the rest is the
    indirect data, which the kernel's prolog loads from address 0 of binding table entry 255
    (``r0.0 & ~63`` plus a relocation taken as 0) into the GRFs after r0 and the inline data.
    So an input from inline+X sits at r1 + X and one from cti+X at r(1 + inline GRFs) + X - inline
    (the compute runtime keeps "cross-thread minus inline" in the indirect heap: NEO's
    ``MutableIndirectData::setAddress``)."""
    first = 1 + -(-v.inline // ev.GRF)
    for at, frm, off in v.inputs:
        m = re.fullmatch(r"r(\d+)(?:\+0x([0-9A-Fa-f]+))?", at)
        where = int(m.group(1)) * ev.GRF + int(m.group(2) or "0", 16) if m else None
        want = ev.GRF + off if frm == "inline" else first * ev.GRF + off - v.inline
        if off >= size or (frm == "inline") != (off < v.inline) or where != want:
            raise IsaDiffError(f"{case.name} ({v.emitter}): IGC's .inputs table places an input from {frm}+0x{off:x} "
                               f"at {at}, not where the check's model of inline data ({v.inline} bytes) and the "
                               f"argument load puts it (r{want // ev.GRF}+0x{want % ev.GRF:x}), in "
                               f"{size} bytes of cross-thread data")


def _scalar_bits(value, t, n: int) -> int:
    if isinstance(value, float) or getattr(t, "is_floating", False):
        fmt = {4: "<f", 8: "<d", 2: "<e"}[n]
        return int.from_bytes(struct.pack(fmt, float(value)), "little")
    return int(value)


@dataclass
class Run:
    """One emitter's run of one workgroup: the threads (their events) and the memory left behind."""

    emitter: str
    group: Tuple[int, int, int]
    threads: List[ev.Thread]
    memory: ev.Memory


def run_variant(case: Case, v: Variant, keys: ev.Interner, group: Tuple[int, int, int],
                all_lanes: bool = False, max_steps: int = 200000) -> Run:
    """Run one workgroup of ``v`` (``all_lanes``: with a dispatch mask of 32 channels, the other
    reading of SIMD32 instructions without NoMask in a SIMD16 kernel)."""
    bufs = buffers(case)
    grid = tuple(max(g + 1, 1) for g in group)
    data = crossthread(case, v, bufs, grid)
    mem = ev.Memory(bufs, data[v.inline:], keys)
    only = None if v.barriers or case.threads is None else [t for t in case.threads if t < v.threads]
    prog = ev.Program.from_text(v.text, v.platform)
    wg = ev.Workgroup(prog, v.simd, v.threads, mem, keys, group=group, only=only, max_steps=max_steps,
                      dispatch_mask=(1 << 32) - 1 if all_lanes else None, inline=data[:v.inline])
    return Run(v.emitter, group, wg.run(), mem)


# ---- what a thread did, normalized -----------------------------------------------------------------------

def _kind(e: ev.Event) -> str:
    d = e.desc
    if d.op == "load_block2d":
        return "prefetch" if not d.rlen else "load"
    return "store" if d.op.startswith("store") else d.op


def block2d_key(e: ev.Event) -> tuple:
    """What a 2D block message is apart from where it reads: kind (load, prefetch, store), data
    size, VNNI, transpose, cache controls, and its surface (base, width, height, pitch)."""
    d, b = e.desc, e.block
    return (_kind(e), d.data_size, d.vnni, d.transpose, d.cache_name, (b.base, b.width, b.height, b.pitch))


def block2d_coverage(t: ev.Thread) -> Dict[tuple, Tuple[Tuple[int, int, int], ...]]:
    """Every element the thread's 2D block messages touch, under each ``block2d_key`` and row: a
    multiset of columns as (first, end, how many times) segments, merged, so that two sets of
    messages that touch the same elements as often compare equal however they group them."""
    deltas: Dict[tuple, Counter] = {}
    for e in t.events:
        if e.kind == "block2d":
            k = block2d_key(e)
            for row, c0, count, _ in e.elems:
                dl = deltas.setdefault((k, row), Counter())
                dl[c0] += 1
                dl[c0 + count] -= 1
    out = {}
    for kr, dl in deltas.items():
        segs: List[List[int]] = []
        m, prev = 0, None
        for c in sorted(dl):
            if not dl[c]:
                continue
            if m:
                if segs and segs[-1][1] == prev and segs[-1][2] == m:
                    segs[-1][1] = c
                else:
                    segs.append([prev, c, m])
            m += dl[c]
            prev = c
        if segs:
            out[kr] = tuple(tuple(s) for s in segs)
    return out


def _coverage_excess(a: Dict[tuple, tuple], b: Dict[tuple, tuple]) -> Tuple[Dict[tuple, list], int]:
    """Where coverage ``a`` touches elements more often than ``b``: (key and row -> [(first, end)]
    column segments, how many element touches in all)."""
    out: Dict[tuple, list] = {}
    total = 0
    for kr in set(a) | set(b):
        sa, sb = a.get(kr, ()), b.get(kr, ())
        if sa == sb:
            continue
        cuts = sorted({c for s in sa + sb for c in s[:2]})
        for c0, c1 in zip(cuts, cuts[1:]):
            n = sum(m for x0, x1, m in sa if x0 <= c0 and c1 <= x1) - \
                sum(m for x0, x1, m in sb if x0 <= c0 and c1 <= x1)
            if n > 0:
                out.setdefault(kr, []).append((c0, c1))
                total += n * (c1 - c0)
    return out, total


def untyped_units(t: ev.Thread) -> Counter:
    """Every 4-byte unit (bytes for smaller elements) each untyped LSC message reads or writes,
    under (load/store, memory): SLM, global or the cross-thread data."""
    out: Counter = Counter()
    for e in t.events:
        if e.kind != "untyped" or e.used is False:
            continue
        d = e.desc
        mem = "slm" if d.sfid == "slm" else "crossthread" if d.addr_type == "bti" else "global"
        size = ev.msg.DATA_BYTES[d.data_size][0]
        unit = 4 if size >= 4 else 1
        for _, addr in e.elems:
            out.update((d.op, mem, a) for a in range(addr, addr + size, unit))
    return out


def sync_counts(t: ev.Thread) -> Counter:
    out: Counter = Counter()
    for e in t.events:
        if e.kind in ("barrier", "wait"):
            out[e.kind] += 1
        elif e.kind == "fence":
            out[f"fence.{e.desc.sfid}"] += 1
    return out


def problems(t: ev.Thread) -> Counter:
    """What the evaluator found wrong in the thread's messages (by message name and problem)."""
    out: Counter = Counter()
    for e in t.events:
        if e.note and e.kind != "race":
            for p in e.note.split("; "):
                out[(e.desc.message if e.desc else e.kind, p)] += 1
    return out


# ---- describing values ------------------------------------------------------------------------------------

class Describer:
    """Names for what registers and memory hold, for listings: buffer bytes as ``a[row,col]``
    ranges, dpas results as ``dpas#i`` (the i-th dpas of the thread's listing)."""

    def __init__(self, bufs: Sequence[ev.Buffer], keys: ev.Interner):
        self.bufs = {b.name: b for b in bufs}
        self.keys = keys
        self.dpas_names: Dict[int, str] = {}

    def name_dpas(self, t: ev.Thread, prefix: str) -> None:
        """Name the thread's dpas results ``<prefix>dpas#i`` (i: position in the thread), but for
        those already named (the same computation on the other side keeps its name)."""
        n = 0
        for e in t.events:
            if e.kind == "dpas":
                self.dpas_names.setdefault(e.dpas.key, f"{prefix}dpas#{n}")
                n += 1

    def element(self, cells: Sequence[int]):
        """('const', value) | ('m', buffer, offset) | ('dpas', name, m, n) | ('other', text)."""
        if all(c >= 0 for c in cells):
            return ("const", int.from_bytes(bytes(cells), "little"))
        syms = [ev.split_byte(c) if c < 0 else None for c in cells]
        s0 = syms[0]
        if s0 is not None and all(s is not None and s[0] == s0[0] and s[1] == s0[1] + i for i, s in enumerate(syms)):
            k = self.keys.keys[s0[0]]
            if k[0] == "mem":
                return ("m", k[1], s0[1])
            if k[0] == "dpas":
                m, n = divmod(s0[1], ev.GRF)
                return ("dpas", self.dpas_names.get(s0[0], f"dpas<{s0[0]}>"), m, n // 4)
            return ("other", k[0])
        kinds = sorted({self.keys.keys[s[0]][0] if s is not None else "const" for s in syms})
        return ("other", "+".join(kinds))

    def value(self, cells: Sequence[int]) -> str:
        """What one element's bytes hold: a constant, a buffer element, a dpas result element."""
        x = self.element(cells)
        if x[0] == "const":
            return f"{x[1]:#x}"
        if x[0] == "m":
            b = self.bufs[x[1]]
            return b.where(x[2]) + ("" if x[2] % b.elem == 0 else f"+{x[2] % b.elem}B")
        if x[0] == "dpas":
            return f"{x[1]}[{x[2]},{x[3]}]"
        return x[1]

    def region(self, cells: Sequence[object], es: int) -> str:
        """A register region of ``es``-byte elements: the buffer rectangles it holds, zeros, dpas
        results, in a few words."""
        elems = [self.element(cells[i:i + es]) for i in range(0, len(cells), es)]
        parts = []
        zeros = sum(1 for x in elems if x == ("const", 0))
        consts = sum(1 for x in elems if x[0] == "const") - zeros
        by_buf: Dict[str, List[Tuple[int, int]]] = {}
        for x in elems:
            if x[0] == "m":
                b = self.bufs[x[1]]
                row, col = divmod(x[2] // b.elem, b.pitch) if b.pitch else (0, x[2] // b.elem)
                by_buf.setdefault(x[1], []).append((row, col))
        for name, rc in by_buf.items():
            rows = [r for r, _ in rc]
            cols = [c for _, c in rc]
            box = (max(rows) - min(rows) + 1) * (max(cols) - min(cols) + 1)
            dense = "" if box == len(set(rc)) else f"{len(rc)} of "
            parts.append(f"{dense}{name}[{_span(rows)},{_span(cols)}]")
        dp = sorted({x[1] for x in elems if x[0] == "dpas"})
        if dp:
            parts.append(" ".join(dp[:4]) + (" ..." if len(dp) > 4 else ""))
        other = Counter(x[1] for x in elems if x[0] == "other")
        parts += [f"{n}x {k}" for k, n in other.items()]
        if zeros:
            parts.append("0" if zeros == len(elems) else f"{zeros} zeros")
        if consts:
            parts.append(f"{consts} constants")
        return " + ".join(parts) or "-"

    def where(self, addr: Optional[int]) -> str:
        if addr is None:
            return "outside"
        for b in self.bufs.values():
            if b.base <= addr < b.base + b.size:
                return b.where(addr - b.base)
        return f"0x{addr:x}"

    def base(self, addr: int) -> str:
        for b in self.bufs.values():
            if b.base <= addr < b.base + b.size or addr == b.base:
                return b.name + (f"+0x{addr - b.base:x}" if addr != b.base else "")
        return f"0x{addr:x}"


def _span(xs: Sequence[int]) -> str:
    lo, hi = min(xs), max(xs)
    return str(lo) if lo == hi else f"{lo}:{hi + 1}"


def describe_message(e: ev.Event, ds: Describer) -> str:
    d = e.desc
    if e.kind == "block2d":
        b = e.block
        inside = sum(n for _, _, n, a in e.elems if a is not None)
        total = sum(n for _, _, n, _ in e.elems)
        return (f"[{e.line}] {d.message} {ds.base(b.base)} {b.width + 1}Bx{b.height + 1}/{b.pitch + 1}B "
                f"x={b.x} y={b.y} {b.n}x{b.h}x{b.w} rlen={d.rlen}, {inside}/{total} inside")
    if e.kind == "untyped":
        addrs = [a for _, a in e.elems]
        where = (lambda a: f"0x{a:x}") if d.sfid == "slm" or d.addr_type == "bti" else ds.where  # noqa: E731
        span = f"{where(min(addrs))}..{where(max(addrs))}" if addrs else "no lanes"
        return f"[{e.line}] {d.name} {len(addrs)} elements {span}"
    return f"[{e.line}] {e.kind} {e.text}"


def describe_dpas(e: ev.Event, t: ev.Thread, ds: Describer, other: Optional[Tuple[set, set, set]] = None) -> str:
    """One dpas: shape, precisions, and what A, B and the accumulator hold; with ``other`` (the
    A, B and accumulator keys of the other side's unmatched dpas), which operands have no
    counterpart there."""
    info = e.dpas
    keys = t.keys
    a = [c for m in range(info.repeat) for c in info.a_row(keys, m)]
    b = [c for n in range(16) for c in info.b_col(keys, n)]
    acc = list(keys.keys[info.acc][1])
    es_a = ev.TYPES[info.types[3]][0]
    es_b = ev.TYPES[info.types[2]][0]
    name = ds.dpas_names.get(info.key, "dpas")
    text = (f"[{e.line}] {name} {info.depth}x{info.repeat} :{info.types[0]} = :{info.types[1]} + "
            f":{info.types[3]} x :{info.types[2]}  A={ds.region(a, es_a)}  B={ds.region(b, es_b)}  "
            f"acc={ds.region(acc, 4)}")
    if other is not None:
        odd = [n for n, k, ks in (("A", info.a, other[0]), ("B", info.b, other[1]), ("acc", info.acc, other[2]))
               if k not in ks]
        text += f"  [{', '.join(odd)} unlike the other side's]" if odd else "  [operands as on the other side]"
    return text


# ---- comparing -------------------------------------------------------------------------------------------

@dataclass
class Finding:
    """One difference between the two emitters (or a problem in one of them): what it is, and the
    listings of both sides (empty for a thread whose differences of this ``kind`` are only
    counted, the same kind having been listed for other threads)."""

    what: str
    left: List[str]
    right: List[str]
    kind: str = ""


@dataclass
class DiffResult:
    case: Case
    variants: Dict[str, Variant]
    runs: List[Tuple[Run, Run]]
    findings: List[Finding] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    stats: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def report(self, width: int = 100, limit: int = 12) -> str:
        head = (f"{self.case.name}: {SUBJECT} vs {BASELINE} ({self.variants[BASELINE].compiler}): "
                + ("the same" if self.ok else f"{len(self.findings)} difference(s)"))
        lines = [head] + [f"  {s}" for s in self.stats] + [f"  warning: {w}" for w in self.warnings]
        counted = [f for f in self.findings if f.kind]
        for f in self.findings:
            if not f.kind:
                lines.append(f"== {f.what}")
                lines += side_by_side(f.left, f.right, SUBJECT, BASELINE, width, limit)
        if counted:
            lines.append("== and the same kinds of difference (not listed again):")
            lines += [f"  {f.what.rstrip(':').split('; the messages')[0]}" for f in counted]
        return "\n".join(lines)


def side_by_side(left: List[str], right: List[str], lname: str, rname: str, width: int = 100,
                 limit: int = 12) -> List[str]:
    """Two listings in two columns (long lines wrap), at most ``limit`` entries a side."""
    def wrap(items):
        out = []
        for s in items[:limit]:
            first = True
            while s or first:
                out.append(("" if first else "    ") + s[:width - (0 if first else 4)])
                s = s[width - (0 if first else 4):]
                first = False
        if len(items) > limit:
            out.append(f"... and {len(items) - limit} more")
        return out or ["(nothing)"]
    lw, rw = wrap(left), wrap(right)
    rows = [f"  {lname:<{width}} | {rname}", f"  {'-' * width} | {'-' * width}"]
    for i in range(max(len(lw), len(rw))):
        rows.append(f"  {lw[i] if i < len(lw) else '':<{width}} | {rw[i] if i < len(rw) else ''}")
    return rows


DESCRIBED_THREADS = 2    # threads whose differences of one kind are listed in full (the rest: counted)
LISTED = 12              # entries of a listing described (the rest: counted)


def compare(case: Case, pair: Tuple[Run, Run], keys: ev.Interner) -> Tuple[List[Finding], List[str], List[str]]:
    """(findings, warnings, statistics) of one workgroup run by both emitters. The differences of
    one kind are listed for the first ``DESCRIBED_THREADS`` threads that have them, the others
    are named with their counts."""
    sub, base = pair
    ds = Describer(buffers(case), keys)
    findings: List[Finding] = []
    warnings: List[str] = []
    g = pair[0].group
    for ts, tb in zip(sub.threads, base.threads):
        ds.name_dpas(tb, f"t{tb.tid}.")
        ds.name_dpas(ts, f"{SUBJECT}:t{ts.tid}.")
    seen: Counter = Counter()

    def found(kind: str, what: str, left, right) -> None:
        seen[kind] += 1
        if seen[kind] <= DESCRIBED_THREADS:
            findings.append(Finding(what, left(), right()))
        else:
            findings.append(Finding(what, [], [], kind=kind))
    for ts, tb in zip(sub.threads, base.threads):
        tag = f"group {g} thread {ts.tid}"
        # 2D block messages
        cs, cb = block2d_coverage(ts), block2d_coverage(tb)
        if cs != cb:
            (only_s, ns), (only_b, nb) = _coverage_excess(cs, cb), _coverage_excess(cb, cs)
            found("block2d", f"{tag}: 2D block messages touch different elements "
                             f"({ns} only in {SUBJECT}, {nb} only in {BASELINE}); the messages holding them:",
                  lambda: _messages_with(ts, only_s, ds), lambda: _messages_with(tb, only_b, ds))
        # dpas
        ks = Counter(e.dpas.key for e in ts.events if e.kind == "dpas")
        kb = Counter(e.dpas.key for e in tb.events if e.kind == "dpas")
        if ks != kb:
            found("dpas", f"{tag}: dpas ops that differ ({sum((ks - kb).values())} only in {SUBJECT}, "
                          f"{sum((kb - ks).values())} only in {BASELINE}, of {sum(ks.values())} / "
                          f"{sum(kb.values())})",
                  lambda: _dpas_with(ts, ks - kb, ds, tb, kb - ks), lambda: _dpas_with(tb, kb - ks, ds, ts, ks - kb))
        # untyped messages, barriers, fences
        us, ub = untyped_units(ts), untyped_units(tb)
        if us != ub:
            found("untyped", f"{tag}: untyped LSC messages touch different bytes",
                  lambda: _untyped_with(ts, us - ub, ds), lambda: _untyped_with(tb, ub - us, ds))
        ss, sb = sync_counts(ts), sync_counts(tb)
        bar = ("barrier", "wait")
        if {k: ss[k] for k in bar} != {k: sb[k] for k in bar}:
            found("sync", f"{tag}: barrier signals and waits differ",
                  lambda: [f"{k}: {n}" for k, n in sorted(ss.items())],
                  lambda: [f"{k}: {n}" for k, n in sorted(sb.items())])
        elif ss != sb:   # xekern leaves out a barrier's fence when only SLM reads, each consumed, precede it
            notes = ", ".join(f"{k} {ss[k]} / {sb[k]}" for k in sorted(set(ss) | set(sb)) if ss[k] != sb[k])
            warnings.append(f"{tag}: fences differ ({SUBJECT} / {BASELINE}): {notes}")
        for side, t in ((SUBJECT, ts), (BASELINE, tb)):
            dead = [e for e in t.events if e.kind == "untyped" and e.used is False]
            if dead:
                warnings.append(f"{tag}: {side}: {len(dead)} untyped load(s) whose data nothing reads (left out of "
                                f"the comparison), e.g. {describe_message(dead[0], ds)}")
        races = [e for e in ts.events + tb.events if e.kind == "race"]
        if races:
            warnings.append(f"{tag}: {len(races)} SLM read(s) of bytes another thread wrote since the last barrier "
                            f"(their data is tagged, so any use shows as a difference), e.g. "
                            f"{SUBJECT if races[0] in ts.events else BASELINE} [{races[0].line}]: {races[0].note}")
        ps, pb = problems(ts), problems(tb)
        if ps - pb or pb - ps:
            found("problems", f"{tag}: messages the hardware would read wrong",
                  lambda: [f"{n}x {m}: {p}" for (m, p), n in sorted((ps - pb).items())],
                  lambda: [f"{n}x {m}: {p}" for (m, p), n in sorted((pb - ps).items())])
        common = ps & pb
        warnings += [f"{tag}: both emitters: {n}x {m}: {p}" for (m, p), n in sorted(common.items())]
    # the memory the workgroup leaves behind
    ws, wb = sub.memory.written, base.memory.written
    if ws != wb:
        diff = sorted(a for a in set(ws) | set(wb) if ws.get(a) != wb.get(a))
        findings.append(Finding(f"group {g}: {len(diff)} bytes of memory end up different",
                                _stores(diff, ws, ds), _stores(diff, wb, ds)))
    stats = [f"group {g}: threads run {len(sub.threads)}; per thread ({SUBJECT} / {BASELINE}) "
             f"instructions {sum(t.steps for t in sub.threads) // max(len(sub.threads), 1)} / "
             f"{sum(t.steps for t in base.threads) // max(len(base.threads), 1)}, 2D block messages "
             f"{_count(sub, 'block2d')} / {_count(base, 'block2d')}, dpas {_count(sub, 'dpas')} / "
             f"{_count(base, 'dpas')}, untyped {_count(sub, 'untyped')} / {_count(base, 'untyped')}; "
             f"bytes stored {len(ws)} / {len(wb)}"]
    return findings, warnings, stats


def _count(r: Run, kind: str) -> int:
    return sum(1 for t in r.threads for e in t.events if e.kind == kind) // max(len(r.threads), 1)


def _messages_with(t: ev.Thread, excess: Dict[tuple, list], ds: Describer) -> List[str]:
    """The thread's 2D block messages that touch elements of ``excess`` (``_coverage_excess``)."""
    out, total = [], 0
    for e in t.events:
        if e.kind != "block2d":
            continue
        k = block2d_key(e)
        n = 0
        for row, c0, count, _ in e.elems:
            for x0, x1 in excess.get((k, row), ()):
                n += max(0, min(x1, c0 + count) - max(x0, c0))
        if n:
            total += 1
            if len(out) < LISTED:
                size = sum(c for _, _, c, _ in e.elems)
                out.append(describe_message(e, ds) + (f", {n} of them" if n != size else ""))
    return _limited(out, total)


def _dpas_with(t: ev.Thread, keys: Counter, ds: Describer, other: ev.Thread, other_keys: Counter) -> List[str]:
    theirs = [e.dpas for e in other.events if e.kind == "dpas" and other_keys.get(e.dpas.key)]
    sets = ({x.a for x in theirs}, {x.b for x in theirs}, {x.acc for x in theirs})
    mine = [e for e in t.events if e.kind == "dpas" and keys.get(e.dpas.key)]
    return _limited([describe_dpas(e, t, ds, sets) for e in mine[:LISTED]], len(mine))


def _limited(lines: List[str], total: int) -> List[str]:
    """A listing of the first ``LISTED`` of ``total`` entries, saying how many more there are."""
    return lines + ([f"(and {total - len(lines)} more)"] if total > len(lines) else [])


def _untyped_with(t: ev.Thread, units: Counter, ds: Describer) -> List[str]:
    out = []
    for e in t.events:
        if e.kind == "untyped":
            d = e.desc
            mem = "slm" if d.sfid == "slm" else "crossthread" if d.addr_type == "bti" else "global"
            if any(units.get((d.op, mem, a)) for _, a in e.elems):
                out.append(describe_message(e, ds))
    return out


def _stores(addrs: List[int], image: Dict[int, object], ds: Describer) -> List[str]:
    """The differing bytes of a memory image, by element and what it holds."""
    out, seen = [], set()
    for a in addrs:
        where = ds.where(a)
        if where in seen:
            continue
        seen.add(where)
        if len(out) == LISTED:
            out.append("(and more)")
            break
        b = next((b for b in ds.bufs.values() if b.base <= a < b.base + b.size), None)
        size = b.elem if b is not None else 4
        start = a - (a - b.base) % size if b is not None else a
        cells = [image.get(x) for x in range(start, start + size)]
        if all(c is None for c in cells):
            out.append(f"{where}: not written")
        elif any(c is None for c in cells):
            out.append(f"{where}: partly written")
        else:
            out.append(f"{where}: {ds.value(cells)}")
    return out


class Session:
    """One case: both emitters' compilations and IGC's own lowering's runs (the baseline, run as
    the hardware runs it), computed once and shared by checks of xekern's code in either reading
    of the dispatch mask (``check(all_lanes=...)``). ``variants`` may be given (a changed xekern
    compiled by the caller, a cached baseline)."""

    def __init__(self, case: Case, compiler: Optional[str] = None, variants: Optional[Dict[str, Variant]] = None):
        self.case = case
        self.variants = dict(variants or {})
        for e in (SUBJECT, BASELINE):
            if e not in self.variants:
                self.variants[e] = compile_variant(case, e, compiler)
        self.keys = ev.Interner()
        self.baseline: Dict[Tuple[int, int, int], Run] = {}

    def check(self, all_lanes: bool = False) -> DiffResult:
        """Run each workgroup of ``case.groups`` with xekern's code and compare with the baseline.
        ``all_lanes``: run xekern's code with 32 channels enabled at dispatch (not what a SIMD16
        thread has: what it would do if the hardware ran them), to tell which differences come
        from instructions wider than the thread."""
        case = self.case
        res = DiffResult(case, self.variants, [])
        for g in case.groups:
            if g not in self.baseline:
                self.baseline[g] = run_variant(case, self.variants[BASELINE], self.keys, g)
            pair = (run_variant(case, self.variants[SUBJECT], self.keys, g, all_lanes), self.baseline[g])
            res.runs.append(pair)
            f, w, s = compare(case, pair, self.keys)
            res.findings += f
            res.warnings += _merged(w)
            res.stats += s
        if all_lanes:
            res.stats.append(f"{SUBJECT} ran with all 32 channels enabled at dispatch (not the hardware's 16)")
        return res


def _merged(warnings: List[str]) -> List[str]:
    """Warnings that differ only in their thread, once, with the threads listed."""
    by: Dict[str, List[str]] = {}
    for w in warnings:
        m = re.match(r"(group \([^)]*\)) thread (\d+): (.*)$", w, re.S)
        key, tid = ((m.group(1) + ": " + m.group(3)), m.group(2)) if m else (w, None)
        by.setdefault(key, []).append(tid)
    out = []
    for key, tids in by.items():
        if tids == [None]:
            out.append(key)
        else:
            head, _, rest = key.partition(": ")
            out.append(f"{head} thread{'s' if len(tids) > 1 else ''} {_ranges([int(t) for t in tids])}: {rest}")
    return out


def _ranges(xs: List[int]) -> str:
    xs = sorted(set(xs))
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def check(case: Case, compiler: Optional[str] = None, all_lanes: bool = False,
          variants: Optional[Dict[str, Variant]] = None) -> DiffResult:
    """Compile ``case`` with both emitters (or take ``variants``), run each workgroup of
    ``case.groups`` and compare (``Session.check``)."""
    return Session(case, compiler, variants).check(all_lanes)


def assert_same(case: Case, **kw) -> DiffResult:
    """``check``, raising ``IsaDiffError`` with both listings side by side on any difference."""
    r = check(case, **kw)
    if not r.ok:
        raise IsaDiffError(r.report())
    return r
