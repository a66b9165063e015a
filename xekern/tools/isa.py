"""SPIR-V -> real Intel GPU ISA, offline, and what is in it.

The offline GPU compiler churns (device names, option spellings, binary formats), so every call
to ``spirv-val``, ``ocloc`` and ``iga64`` lives here and nowhere else (HARDWARE.md, "The offline
GPU toolchain"). ``compile_isa`` runs::

    ocloc compile -file k.spv -spirv_input -device <target.ocloc_device> -output k -out_dir D [-options ...]
    ocloc disasm -file D/k_*.bin -dump OUT -device <...> -ignore_isa_padding
    iga64 -d -p=<target.iga_platform> OUT/<kernel>_KernelHeap.dat

and returns an ``IsaReport``: the ISA text, ocloc's messages (spills), the kernel's patch tokens
(``NumGRFRequired``, ``HasDPAS``, ``PerThreadScratchSpace``, ...) and instruction counts by kind.
``loop_counts`` restricts the counts to the innermost loop (the K loop of a GEMM).

Example::

    >>> from xekern.tools.isa import compile_isa, loop_counts
    >>> r = compile_isa(compiled.spirv, compiled.name, "pvc", grf_mode=256)
    >>> print(r.summary())
    >>> loop = loop_counts(r)
    >>> loop.dpas / loop.total          # the dpas share of the K loop

Every tool failure (missing tool, a device this ocloc does not know, IGC rejecting the module,
an option IGC ignored) raises ``IsaError`` carrying the tool's own message.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import XekernError
from ..lowering.grf import build_options
from ..targets import Target, get_target

# The -options spelling of each GRF mode. Verified with ocloc 22.43 / IGC 12504 (NumGRFRequired in
# PTM.txt): "-ze-opt-large-register-file" and "-cl-intel-256-GRF-per-thread" both give 256 on pvc;
# "-cl-intel-128-GRF-per-thread" gives 128. ocloc accepts unknown options silently, which is why
# compile_isa checks NumGRFRequired afterwards.
GRF_OPTIONS: Dict[int, str] = {m: build_options(m, "ocloc") for m in (128, 256)}  # lowering/grf.py

TIMEOUT = 600.0  # seconds per tool run; IGC takes well under a second on small kernels

# Patch tokens ocloc prints as "Unidentified PatchToken" when it has no patch-list headers (always,
# for Debian's ocloc). Token numbers and field order: IGC's ocl_igc_shared/executable_format
# patch_list.h / patch_shared.h (ICBE 1081, IGC 12504; checked against known values: NumGRFRequired
# 128/256, HasDPAS, HasBarriers). Every field is a uint32; None marks a field that is not kept.
_PATCH_TOKENS: Dict[int, Tuple[Optional[str], ...]] = {
    23: ("RequiredWorkGroupSizeX", "RequiredWorkGroupSizeY", "RequiredWorkGroupSizeZ",
         "LargestCompiledSIMDSize", "CompiledSubGroupsNumber", "HasBarriers", "DisableMidThreadPreemption",
         "CompiledSIMD8", "CompiledSIMD16", "CompiledSIMD32", "HasDeviceEnqueue", "MayAccessUndeclaredResource",
         "UsesFencesForReadWriteImages", "UsesStatelessSpillFill", "UsesMultiScratchSpaces", "IsCoherent",
         "IsInitializer", "IsFinalizer", "SubgroupIndependentForwardProgressRequired",
         "CompiledForGreaterThan4GBBuffers", "NumGRFRequired", "WorkgroupWalkOrderDims", "HasGlobalAtomics",
         "HasDPAS", "HasRTCalls", "NumThreadsRequired", "StatelessWritesCount", "IndirectStatelessCount",
         "UseBindlessMode", "HasStackCalls"),                       # SPatchExecutionEnvironment
    18: (None, "PerThreadScratchSpace"),                            # SPatchMediaVFEState (slot 0)
    55: (None, "PerThreadScratchSpaceSlot1"),                       # SPatchMediaVFEState, slot 1
    38: (None, None, None, "PerThreadPrivateMemorySize", None),     # SPatchAllocateStatelessPrivateSurface
}

# IGC's own kernel for a module with unresolved external functions (seen when a builtin name is
# mis-mangled: the call becomes an indirect ``calla`` and no dpas is emitted).
_SYMBOL_TABLE_KERNEL = "Intel_Symbol_Table_Void_Program"

_BRANCHES = frozenset({"jmpi", "brc", "brd", "goto", "while"})
_CONTROL = frozenset({"jmpi", "brc", "brd", "goto", "join", "if", "else", "endif", "while", "break", "cont",
                      "halt", "ret"})
_CALLS = frozenset({"call", "calla"})
_SENDS = frozenset({"send", "sendc", "sends", "sendsc"})


class IsaError(XekernError):
    """An offline GPU tool is missing or failed; the message carries the tool's own words."""


# ---- the tools -------------------------------------------------------------------------------------

_INSTALL = "install them with: apt-get install -y intel-opencl-icd libigc-tools spirv-tools (HARDWARE.md)"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise IsaError(f"'{name}' is not on PATH; {_INSTALL}")
    return path


def _run(cmd: Sequence[str], cwd: str, what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise IsaError(f"{what} did not finish in {TIMEOUT:.0f} s: {' '.join(cmd)}") from None
    except OSError as e:
        raise IsaError(f"{what} could not be started ({e}): {' '.join(cmd)}") from None


def _output(r: subprocess.CompletedProcess) -> str:
    return "\n".join(s.strip() for s in (r.stdout, r.stderr) if s and s.strip())


@functools.lru_cache(maxsize=None)
def _ocloc_version(ocloc: str) -> str:
    with tempfile.TemporaryDirectory(prefix="xekern-ocloc-") as d:
        r = _run([ocloc, "query", "OCL_DRIVER_VERSION"], d, "ocloc query")
        path = os.path.join(d, "OCL_DRIVER_VERSION")
        if r.returncode == 0 and os.path.exists(path):
            with open(path, errors="replace") as f:
                return f.read().strip("\x00 \n") or "unknown"
    return "unknown"


@functools.lru_cache(maxsize=None)
def _ocloc_devices(ocloc: str) -> Tuple[str, ...]:
    with tempfile.TemporaryDirectory(prefix="xekern-ocloc-") as d:
        text = _output(_run([ocloc, "compile", "--help"], d, "ocloc compile --help"))
    m = re.search(r"<device_type> can be:\s*(.*?)(?:\s+or hexadecimal|\n)", text)
    names = (x.strip() for x in m.group(1).split(",")) if m else ()
    return tuple(n for n in names if n and n != "version")  # "version": a <major>.<minor>.<revision> value


def ocloc_version() -> str:
    """The compute-runtime version of the installed ocloc (``22.43.24595`` on Debian 12)."""
    return _ocloc_version(_tool("ocloc"))


def ocloc_devices() -> Tuple[str, ...]:
    """The device names the installed ocloc accepts for ``-device`` (from ``ocloc compile --help``)."""
    return _ocloc_devices(_tool("ocloc"))


def spirv_validate(spirv: bytes) -> Tuple[bool, str]:
    """``(ok, message)`` from ``spirv-val``; ``ok`` is False with an explanation if the tool is missing.

    >>> spirv_validate(compiled.spirv)
    (True, '')
    """
    tool = shutil.which("spirv-val")
    if tool is None:
        return False, f"spirv-val is not on PATH; {_INSTALL}"
    with tempfile.TemporaryDirectory(prefix="xekern-spv-") as d:
        path = os.path.join(d, "k.spv")
        with open(path, "wb") as f:
            f.write(spirv)
        try:
            r = _run([tool, path], d, "spirv-val")
        except IsaError as e:
            return False, str(e)
    return r.returncode == 0, _output(r)


# ---- reading the ISA -------------------------------------------------------------------------------

_LABEL = re.compile(r"^\s*([A-Za-z_][\w$.]*):\s*(?://.*)?$")
_INSTR = re.compile(r"^\s*(?:\((?P<pred>[^)]*)\)\s*)?(?P<op>[a-z][a-z0-9_]*(?:\.(?:\([^)]*\)|[\w]+))*)"
                    r"(?P<rest>.*)$")


@dataclass(frozen=True)
class Instr:
    """One line of IGA's disassembly: ``(pred) op operands {swsb} // comment``."""

    index: int        # position among the instructions of the kernel
    op: str           # full mnemonic: "dpas.8x8", "send.ugm", "sync.bar", "bfn.(s0|s1&s2)"
    pred: str         # "W&~f0.0", or ""
    operands: str     # the text between the mnemonic and the comment
    comment: str      # IGA's comment (for sends: "wr:1+0, rd:4; load_block2d.ugm.d16.a64")

    @property
    def base(self) -> str:
        return self.op.split(".", 1)[0]


def parse_isa(text: str) -> Tuple[List[Instr], Dict[str, int]]:
    """IGA text -> (instructions, label -> index of the instruction it precedes). Padding
    (``illegal``) and comment lines are dropped."""
    instrs: List[Instr] = []
    labels: Dict[str, int] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        m = _INSTR.match(line)
        if m is None or m.group("op") == "illegal":
            continue
        rest, _, comment = m.group("rest").partition("//")
        instrs.append(Instr(len(instrs), m.group("op"), m.group("pred") or "", rest.strip(), comment.strip()))
    return instrs, labels


@dataclass
class InstrCounts:
    """Instruction counts by kind; ``total`` is their sum. ``sends`` holds the send messages that are
    not counted elsewhere, by type (``load.ugm``, ``store.slm``, ``atomic_fadd.ugm``, ``fence.ugm``,
    ``barrier.signal``, ``eot``, or ``<sfid>: <description>`` for legacy dataport messages)."""

    total: int = 0
    dpas: int = 0
    dpas_shapes: Dict[str, int] = field(default_factory=dict)   # "dpas.8x8" -> count
    load_block2d: int = 0
    store_block2d: int = 0
    prefetch_block2d: int = 0      # load_block2d with no destination (rd:0 / null)
    sends: Dict[str, int] = field(default_factory=dict)
    barriers: int = 0              # sync.bar (the wait); its signal is sends["barrier.signal"]
    scratch_reads: int = 0         # spill fills
    scratch_writes: int = 0        # spills
    calls: int = 0                 # call / calla: a kernel that should have none has an unresolved builtin
    control: int = 0               # jmpi, goto, join, while, ...
    sync: int = 0                  # sync.nop / sync.allrd / ... and nop: scoreboard waits, no work
    other: int = 0                 # ALU: mov, add, mad, math, cmp, bfn, ...
    other_ops: Dict[str, int] = field(default_factory=dict)     # ALU mnemonic -> count

    @property
    def scratch(self) -> int:
        return self.scratch_reads + self.scratch_writes

    @property
    def atomics(self) -> int:
        return sum(n for k, n in self.sends.items() if k.startswith("atomic"))

    @property
    def dpas_share(self) -> float:
        """dpas instructions / all instructions (0.0 for no instructions)."""
        return self.dpas / self.total if self.total else 0.0

    def rows(self) -> List[Tuple[str, int, str]]:
        """(kind, count, detail) for every non-zero kind, in a fixed order."""
        shapes = ", ".join(f"{k} x{v}" for k, v in sorted(self.dpas_shapes.items()))
        out = [("dpas", self.dpas, shapes), ("load_block2d", self.load_block2d, ""),
               ("store_block2d", self.store_block2d, ""), ("prefetch_block2d", self.prefetch_block2d, "")]
        out += [(f"send {k}", v, "") for k, v in sorted(self.sends.items())]
        out += [("barrier (sync.bar)", self.barriers, ""),
                ("scratch (spill/fill)", self.scratch, f"{self.scratch_writes} writes, {self.scratch_reads} reads"),
                ("call", self.calls, ""), ("control", self.control, ""), ("sync/nop", self.sync, ""),
                ("other (ALU)", self.other, ", ".join(f"{k} {v}" for k, v in
                                                      Counter(self.other_ops).most_common(6)))]
        return [r for r in out if r[1]]


def _send_kind(ins: Instr) -> Tuple[str, str]:
    """(counter field, key) of a send: what message it carries, from IGA's comment."""
    info, _, desc = ins.comment.partition(";")
    desc = desc.strip() if desc else ("" if ":" in info else info.strip())
    m = re.search(r"\brd:(\d+)", info)
    no_result = (m is not None and m.group(1) == "0") or ins.operands.split()[1:2] == ["null"]
    d = desc.lower()
    if not d:
        return "sends", ins.op
    if "scratch" in d:
        return ("scratch_reads", "") if ("read" in d or d.startswith("load")) else ("scratch_writes", "")
    if d.startswith("load_block2d"):
        return ("prefetch_block2d", "") if no_result else ("load_block2d", "")
    if d.startswith("store_block2d"):
        return "store_block2d", ""
    first = d.split()[0]
    if "." in first and " " not in d:  # an LSC message: op.sfid.type...
        kind, sfid = first.split(".")[:2]
        if kind == "load" and no_result:
            kind = "prefetch"
        return "sends", f"{kind}.{sfid}"
    if d == "signal barrier":
        return "sends", "barrier.signal"
    if d == "end of thread":
        return "sends", "eot"
    sfid = ins.op.split(".", 1)[1] if "." in ins.op else ins.op
    return "sends", sfid + ": " + re.sub(r" x\d+$", "", desc)


def count_instrs(instrs: Sequence[Instr]) -> InstrCounts:
    """Counts by kind of ``instrs`` (a whole kernel or a slice of it)."""
    c = InstrCounts()
    dicts: Dict[str, Counter] = {"dpas_shapes": Counter(), "sends": Counter(), "other_ops": Counter()}
    for ins in instrs:
        c.total += 1
        base = ins.base
        if base in ("dpas", "dpasw"):
            c.dpas += 1
            dicts["dpas_shapes"][ins.op] += 1
        elif base in _SENDS:
            kind, key = _send_kind(ins)
            if kind == "sends":
                dicts["sends"][key] += 1
            else:
                setattr(c, kind, getattr(c, kind) + 1)
        elif ins.op == "sync.bar":
            c.barriers += 1
        elif base in ("sync", "nop"):
            c.sync += 1
        elif base in _CALLS:
            c.calls += 1
        elif base in _CONTROL:
            c.control += 1
        else:
            c.other += 1
            dicts["other_ops"][base] += 1
    for name, counter in dicts.items():
        setattr(c, name, dict(counter))
    return c


def count_isa(text: str) -> InstrCounts:
    """Counts by kind of a whole IGA disassembly."""
    return count_instrs(parse_isa(text)[0])


@dataclass(frozen=True)
class Loop:
    """A backward branch: instructions ``start..end`` (inclusive) from its target label to itself."""

    label: str
    start: int
    end: int
    counts: InstrCounts

    @property
    def size(self) -> int:
        return self.end - self.start + 1


def find_loops(text: str) -> List[Loop]:
    """Every loop of an IGA disassembly (a ``jmpi``/``brc``/``brd``/``goto``/``while`` whose target
    label is at or before it), smallest first."""
    instrs, labels = parse_isa(text)
    spans = set()
    for ins in instrs:
        if ins.base not in _BRANCHES:
            continue
        for tok in re.findall(r"[A-Za-z_][\w$.]*", ins.operands):
            if tok in labels and labels[tok] <= ins.index:
                spans.add((labels[tok], ins.index, tok))
    loops = [Loop(lbl, s, e, count_instrs(instrs[s:e + 1])) for s, e, lbl in spans]
    return sorted(loops, key=lambda lp: (lp.size, lp.start))


def loop_counts(report: Union["IsaReport", str]) -> Optional[InstrCounts]:
    """The counts of the innermost loop body (the smallest backward-branch range), or None if the
    kernel has no loop. ``loop_counts(r).dpas_share`` is the dpas share of a GEMM's K loop."""
    loops = find_loops(report if isinstance(report, str) else report.text)
    return loops[0].counts if loops else None


# ---- reading ocloc's messages and patch tokens -----------------------------------------------------

_SPILL = re.compile(r"kernel\s+'?(?P<k>[^'\s:]+)'?:?\s+compiled SIMD(?P<simd>\d+)\s+allocated (?P<regs>\d+) regs"
                    r"\s+and spilled around (?P<n>\d+)")


@dataclass(frozen=True)
class SpillWarning:
    """IGC's ``warning: kernel K compiled SIMD16 allocated 128 regs and spilled around N``. IGC does
    not state the unit of N; ``PerThreadScratchSpace`` (IsaReport.scratch_bytes) is the byte figure."""

    kernel: str
    simd: int
    regs: int
    spilled_around: int


def parse_spills(output: str) -> List[SpillWarning]:
    """Every spill warning in ocloc's output (both IGC spellings: ``kernel K compiled`` and
    ``in kernel 'K': compiled``)."""
    return [SpillWarning(m.group("k"), int(m.group("simd")), int(m.group("regs")), int(m.group("n")))
            for m in _SPILL.finditer(output)]


def ptm_kernels(ptm: str) -> List[str]:
    """The kernel names in ocloc's PTM.txt."""
    return re.findall(r"^\s*KernelName\s+(\S+)\s*$", ptm, re.M)


def parse_ptm(ptm: str, kernel: str) -> Dict[str, int]:
    """The named numbers of ``kernel``'s section of PTM.txt: header fields (``KernelHeapSize``),
    decoded tokens, and the tokens of ``_PATCH_TOKENS`` decoded from their hex dump."""
    sections = re.split(r"^Kernel #\d+\s*$", ptm, flags=re.M)[1:]
    section = next((s for s in sections if re.search(rf"^\s*KernelName\s+{re.escape(kernel)}\s*$", s, re.M)),
                   None)
    if section is None:
        raise IsaError(f"kernel '{kernel}' is not in PTM.txt; kernels there: {', '.join(ptm_kernels(ptm)) or 'none'}")
    out: Dict[str, int] = {}
    for m in re.finditer(r"^\s*\d+\s+([A-Za-z]\w*)\s+(-?\d+)\s*$", section, re.M):  # "4 KernelHeapSize 768"
        out[m.group(1)] = int(m.group(2))
    for m in re.finditer(r"\b([A-Za-z]\w*);\s*//\s*=\s*(-?\d+)", section):        # ocloc -patch: "NumGRF;// = 128"
        out[m.group(1)] = int(m.group(2))
    for m in re.finditer(r"Token (\d+)\s*\n\s*4 Size \d+\s*\n\s*Hex ([0-9a-fA-F ]*)", section):
        names = _PATCH_TOKENS.get(int(m.group(1)))
        if names is None:
            continue
        data = bytes(int(x, 16) for x in m.group(2).split())
        for i, name in enumerate(names):
            if name is not None and 4 * i + 4 <= len(data):
                out[name] = int.from_bytes(data[4 * i:4 * i + 4], "little")
    return out


# ---- the report ------------------------------------------------------------------------------------

@dataclass
class IsaReport:
    """What IGC made of one kernel: ISA text, counts, registers and spills."""

    kernel: str
    target: str                  # xekern target name
    device: str                  # ocloc -device
    options: str                 # ocloc -options
    grf_mode: Optional[int]      # NumGRFRequired: registers per thread
    simd: Optional[int]          # LargestCompiledSIMDSize
    spills: List[SpillWarning]   # ocloc's spill warnings for this kernel
    scratch_bytes: int           # PerThreadScratchSpace (spill/private scratch per thread, bytes)
    ptm: Dict[str, int]          # every decoded patch-token field (NumGRFRequired, HasDPAS, HasBarriers, ...)
    counts: InstrCounts
    text: str                    # the ISA (iga64 -d)
    ocloc_output: str            # ocloc compile's stdout and stderr
    warnings: List[str] = field(default_factory=list)

    @property
    def spilled_around(self) -> int:
        """IGC's spill figure (0: no spill warning)."""
        return max((s.spilled_around for s in self.spills), default=0)

    @property
    def has_dpas(self) -> bool:
        return bool(self.ptm.get("HasDPAS"))

    @property
    def has_barriers(self) -> bool:
        return bool(self.ptm.get("HasBarriers"))

    @property
    def uses_stateless_spill_fill(self) -> bool:
        return bool(self.ptm.get("UsesStatelessSpillFill"))

    def summary(self) -> str:
        """A short table: GRF mode, spills, counts by kind (whole kernel and innermost loop)."""
        head = (f"{self.kernel} on {self.target} (ocloc -device {self.device}"
                + (f' -options "{self.options}"' if self.options else "") + ")")
        spill = (f"spilled around {self.spilled_around}" if self.spills else "no spill")
        lines = [head,
                 f"  SIMD{self.simd or '?'}, {self.grf_mode or '?'} GRF, {spill}, scratch {self.scratch_bytes} B/thread"
                 + (" (stateless spill/fill)" if self.uses_stateless_spill_fill else "")]
        loops = find_loops(self.text)
        inner = loops[0].counts if loops else None
        lines.append(f"  {'kind':30s} {'kernel':>7s} {'loop':>6s}  detail")
        lines.append(f"  {'total':30s} {self.counts.total:7d} {inner.total if inner else '-':>6}")
        loop_rows = {k: n for k, n, _ in inner.rows()} if inner else {}
        for kind, n, detail in self.counts.rows():
            lines.append(f"  {kind:30s} {n:7d} {loop_rows.get(kind, 0) if inner else '-':>6}  {detail}".rstrip())
        if inner is not None:
            lines.append(f"  innermost loop at {loops[0].label}: {inner.total} instructions, "
                         f"dpas share {inner.dpas_share:.1%}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _target(target: Union[Target, str]) -> Target:
    try:
        return target if isinstance(target, Target) else get_target(target)
    except ValueError as e:
        raise IsaError(str(e)) from None


def _ocloc_failed(ocloc: str, t: Target, out: str) -> IsaError:
    if "Cannot get HW Info" in out or "Unknown acronym" in out or "Invalid device" in out:
        known = ", ".join(_ocloc_devices(ocloc)) or "unknown"
        return IsaError(f"ocloc {_ocloc_version(ocloc)} does not know device '{t.ocloc_device}' (target {t.name}): "
                        f"{out.strip()}\nDevices this ocloc accepts: {known}.\n{t.name} needs a newer Intel "
                        f"compute-runtime/IGC than the one installed.")
    return IsaError(f"ocloc could not compile the module for {t.ocloc_device} (target {t.name}):\n{out.strip()}")


def compile_isa(spirv: bytes, kernel_name: str, target: Union[Target, str], grf_mode: Optional[int] = None,
                options: str = "", work_dir: Optional[str] = None) -> IsaReport:
    """Compile SPIR-V with ocloc for ``target``, disassemble ``kernel_name`` and summarize it.

    ``grf_mode`` (128 or 256, one of ``target.grf_modes``) forces the register file size; None leaves
    it to IGC. ``options`` are extra ``-options`` for IGC. ``work_dir`` keeps the intermediate files
    there (the default is a temporary directory).

    >>> r = compile_isa(c.spirv, c.name, "pvc", grf_mode=256)
    >>> r.grf_mode, r.counts.dpas, r.spilled_around
    (256, 16, 0)
    """
    t = _target(target)
    if not t.ocloc_device or not t.iga_platform:
        raise IsaError(f"target {t.name} is not an Intel GPU with an ocloc device ({t.arch})")
    if grf_mode is not None and grf_mode not in t.grf_modes:
        raise IsaError(f"target {t.name} has GRF modes {t.grf_modes}, not {grf_mode}")
    ocloc, iga = _tool("ocloc"), _tool("iga64")
    opts = " ".join(o for o in (options.strip(), GRF_OPTIONS.get(grf_mode, "")) if o)
    if work_dir is not None:
        os.makedirs(work_dir, exist_ok=True)
        return _compile_in(work_dir, spirv, kernel_name, t, grf_mode, opts, ocloc, iga)
    with tempfile.TemporaryDirectory(prefix="xekern-isa-") as d:
        return _compile_in(d, spirv, kernel_name, t, grf_mode, opts, ocloc, iga)


def _compile_in(d: str, spirv: bytes, kernel: str, t: Target, grf_mode: Optional[int], opts: str, ocloc: str,
                iga: str) -> IsaReport:
    with open(os.path.join(d, "k.spv"), "wb") as f:
        f.write(spirv)
    out_dir, dump = os.path.join(d, "bin"), os.path.join(d, "dump")
    cmd = [ocloc, "compile", "-file", "k.spv", "-spirv_input", "-device", t.ocloc_device, "-output", "k",
           "-out_dir", out_dir]
    if opts:
        cmd += ["-options", opts]
    r = _run(cmd, d, "ocloc compile")
    compile_out = _output(r)
    bins = sorted(glob.glob(os.path.join(out_dir, "k*.bin")))
    if r.returncode != 0 or not bins:
        raise _ocloc_failed(ocloc, t, compile_out or f"exit status {r.returncode}, no binary written")

    r = _run([ocloc, "disasm", "-file", bins[0], "-dump", dump, "-device", t.ocloc_device, "-ignore_isa_padding"],
             d, "ocloc disasm")
    heap = os.path.join(dump, f"{kernel}_KernelHeap.dat")
    ptm_path = os.path.join(dump, "PTM.txt")
    if r.returncode != 0 or not os.path.exists(heap) or not os.path.exists(ptm_path):
        present = sorted(os.listdir(dump)) if os.path.isdir(dump) else []
        kernels = [f[:-len("_KernelHeap.dat")] for f in present if f.endswith("_KernelHeap.dat")]
        raise IsaError(f"ocloc disasm gave no kernel heap for '{kernel}' (kernels in the binary: "
                       f"{', '.join(kernels) or 'none'}; files: {', '.join(present) or 'none'}). "
                       f"A newer ocloc may write zebin, which this module does not read yet.\n{_output(r)}")
    with open(ptm_path, errors="replace") as f:
        ptm_text = f.read()
    ptm = parse_ptm(ptm_text, kernel)

    r = _run([iga, "-d", f"-p={t.iga_platform}", heap], d, "iga64")
    if r.returncode != 0 or not r.stdout.strip():
        raise IsaError(f"iga64 -p={t.iga_platform} could not disassemble {kernel}:\n{_output(r)}")
    text = r.stdout

    counts = count_isa(text)
    warnings = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
    if _SYMBOL_TABLE_KERNEL in ptm_kernels(ptm_text) or counts.calls:
        warnings.append(f"{counts.calls} call/calla instruction(s) and IGC's {_SYMBOL_TABLE_KERNEL}: the module "
                        f"calls a function IGC could not resolve (often a mis-mangled builtin: Itanium "
                        f"substitutions such as Dv8_iS_ are required)")
    got = ptm.get("NumGRFRequired")
    if grf_mode is not None and got is not None and got != grf_mode:
        raise IsaError(f"asked for {grf_mode} GRF with -options \"{opts}\" but IGC compiled {kernel} with {got} "
                       f"(ocloc ignores options it does not know)")
    return IsaReport(kernel=kernel, target=t.name, device=t.ocloc_device, options=opts, grf_mode=got,
                     simd=ptm.get("LargestCompiledSIMDSize"),
                     spills=[s for s in parse_spills(compile_out) if s.kernel == kernel],
                     scratch_bytes=ptm.get("PerThreadScratchSpace", 0), ptm=ptm, counts=counts, text=text,
                     ocloc_output=compile_out, warnings=warnings)
