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
from ..targets import Target, get_target
from . import toolchain
from .grf_options import build_options
from .toolchain import Installed, ToolchainError

# The -options spelling of each GRF mode. Verified with ocloc 22.43 / IGC 12504 (NumGRFRequired in
# PTM.txt): "-ze-opt-large-register-file" and "-cl-intel-256-GRF-per-thread" both give 256 on pvc;
# "-cl-intel-128-GRF-per-thread" gives 128. ocloc accepts unknown options silently, which is why
# compile_isa checks NumGRFRequired afterwards.
GRF_OPTIONS: Dict[int, str] = {m: build_options(m, "ocloc") for m in (128, 256)}  # tools/grf_options.py

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

def _compiler(name: Optional[str]) -> Installed:
    """The installed compiler ``name`` (None: the default, ``current`` when it is installed)."""
    try:
        return toolchain.get(name)
    except ToolchainError as e:
        raise IsaError(str(e)) from None


def _run(cmd: Sequence[str], cwd: str, what: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT, env=None if env is None else dict(os.environ, **env))
    except subprocess.TimeoutExpired:
        raise IsaError(f"{what} did not finish in {TIMEOUT:.0f} s: {' '.join(cmd)}") from None
    except OSError as e:
        raise IsaError(f"{what} could not be started ({e}): {' '.join(cmd)}") from None


def _output(r: subprocess.CompletedProcess) -> str:
    return "\n".join(s.strip() for s in (r.stdout, r.stderr) if s and s.strip())


@functools.lru_cache(maxsize=None)
def _ocloc_devices(root: str, name: str) -> Tuple[str, ...]:
    inst = _compiler(name)
    with tempfile.TemporaryDirectory(prefix="xekern-ocloc-") as d:
        text = _output(_run(inst.command("ocloc", ["compile", "--help"]), d, "ocloc compile --help"))
    m = re.search(r"<device_type> can be:\s*(.*?)(?:\s+or hexadecimal|,?\s+ip version|\n)", text)
    names = (x.strip() for x in m.group(1).split(",")) if m else ()
    return tuple(n for n in names if n and n != "version")  # "version": a <major>.<minor>.<revision> value


def ocloc_version(compiler: Optional[str] = None) -> str:
    """The compute-runtime version of a compiler's ocloc (``26.27.39122``; ``22.43.24595`` for 12504)."""
    return _compiler(compiler).ocloc_version


def ocloc_devices(compiler: Optional[str] = None) -> Tuple[str, ...]:
    """The device names a compiler's ocloc accepts for ``-device`` (from ``ocloc compile --help``)."""
    inst = _compiler(compiler)
    return _ocloc_devices(inst.root, inst.name)


def spirv_validate(spirv: bytes) -> Tuple[bool, str]:
    """``(ok, message)`` from ``spirv-val`` (the toolchain's, which knows the Intel 2D block IO and
    matrix ops; else one on PATH); ``ok`` is False with an explanation if there is none.

    >>> spirv_validate(compiled.spirv)
    (True, '')
    """
    cmd = toolchain.spirv_tool("spirv-val")
    if cmd is None:
        return False, f"spirv-val is not installed; install the toolchain with: {toolchain.INSTALL_COMMAND}"
    with tempfile.TemporaryDirectory(prefix="xekern-spv-") as d:
        path = os.path.join(d, "k.spv")
        with open(path, "wb") as f:
            f.write(spirv)
        try:
            r = _run(cmd + [path], d, "spirv-val")
        except IsaError as e:
            return False, str(e)
    return r.returncode == 0, _output(r)


# ---- reading the ISA -------------------------------------------------------------------------------

_LABEL = re.compile(r"^\s*([A-Za-z_][\w$.]*):\s*(?://.*)?$")
# (a bfn's function may nest parentheses and hold spaces: "bfn.((s0|s1) &s2)")
_INSTR = re.compile(r"^\s*(?:\((?P<pred>[^)]*)\)\s*)?(?P<op>[a-z][a-z0-9_]*(?:\.(?:\((?:[^()]|\([^()]*\))*\)|[\w]+))*)"
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
    dpas_dummy: int = 0            # IGC's no-op dpas (null accumulator, one register as every operand)
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


def _dummy_dpas(ins: Instr) -> bool:
    """A dpas IGC adds on its own before a chain of them on some parts (dg2): a null accumulator and
    one register as destination and both sources (``dpas.8x8 r20:f null:f r20:bf r20.0:bf``); it
    computes nothing the kernel uses, so it is not counted as a dpas (it is an instruction)."""
    ops = [o.split(":")[0].split(".")[0] for o in ins.operands.split()[1:5]]
    return len(ops) == 4 and ops[1] == "null" and ops[0] == ops[2] == ops[3]


def count_instrs(instrs: Sequence[Instr]) -> InstrCounts:
    """Counts by kind of ``instrs`` (a whole kernel or a slice of it)."""
    c = InstrCounts()
    dicts: Dict[str, Counter] = {"dpas_shapes": Counter(), "sends": Counter(), "other_ops": Counter()}
    for ins in instrs:
        c.total += 1
        base = ins.base
        if base in ("dpas", "dpasw") and _dummy_dpas(ins):
            c.dpas_dummy += 1
        elif base in ("dpas", "dpasw"):
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
    """The counts of the innermost loop body (the smallest backward-branch range) that holds a
    dpas, else of the innermost loop; None if the kernel has no loop. ``loop_counts(r).dpas_share``
    is the dpas share of a GEMM's K loop (on targets without 2D block IO, the loop of the K steps
    whose tiles lie inside the tensors, pass ``split-edges``: the loop of the last steps after it
    holds their bounds tests, and per-element loops of its own)."""
    loop = k_loop(report)
    return loop.counts if loop is not None else None


def k_loop(report: Union["IsaReport", str]) -> Optional[Loop]:
    """The loop ``loop_counts`` counts, or None."""
    loops = find_loops(report if isinstance(report, str) else report.text)
    if not loops:
        return None
    return next((lp for lp in loops if lp.counts.dpas), loops[0])


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
    compiler: str = ""           # the toolchain's compiler: "current" or "12504"
    compiler_version: str = ""   # "ocloc 26.27.39122 / IGC 2.40.14-1"

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
                + (f' -options "{self.options}"' if self.options else "") + ")"
                + (f", {self.compiler} compiler: {self.compiler_version}" if self.compiler else ""))
        spill = (f"spilled around {self.spilled_around}" if self.spills else
                 "no spill" if not self.scratch_bytes else "no spill but scratch or private memory")
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


def _ocloc_failed(inst: Installed, t: Target, device: str, out: str) -> IsaError:
    if re.search(r"Cannot get HW Info|Unknown acronym|Invalid device|Could not determine device target", out):
        known = ", ".join(_ocloc_devices(inst.root, inst.name)) or "unknown"
        return IsaError(f"ocloc {inst.ocloc_version} ({inst.name} compiler) does not know device '{device}' "
                        f"(target {t.name}): {out.strip()}\nDevices this ocloc accepts: {known}.\n{t.name} needs a "
                        f"newer Intel compute-runtime/IGC than this one (the current compiler: "
                        f"{toolchain.INSTALL_COMMAND} current).")
    return IsaError(f"ocloc could not compile the module for {device} (target {t.name}; {inst.label}):\n{out.strip()}")


def compile_isa(spirv: Union[bytes, OpenCLSource], kernel_name: str, target: Union[Target, str],
                grf_mode: Optional[int] = None,
                options: str = "", work_dir: Optional[str] = None, compiler: Optional[str] = None,
                iga_options: Sequence[str] = ()) -> IsaReport:
    """Compile SPIR-V (or ``OpenCLSource``) with ocloc for ``target``, disassemble ``kernel_name`` and
    summarize it.

    ``compiler`` is ``current`` (IGC 2.x, the default when installed) or ``12504`` (Debian 12's),
    from ``python -m xekern toolchain install``. ``grf_mode`` (128 or 256, one of
    ``target.grf_modes``) forces the register file size; None leaves it to IGC. ``options`` are
    extra ``-options`` for IGC. ``work_dir`` keeps the intermediate files there (the default is a
    temporary directory). ``iga_options`` go to ``iga64 -d`` (``-Xprint-hex-floats``: float
    immediates as their bits; by default iga prints them in decimal, which need not round-trip).

    >>> r = compile_isa(c.spirv, c.name, "pvc", grf_mode=256)
    >>> r.grf_mode, r.counts.dpas, r.spilled_around
    (256, 16, 0)
    """
    t = _target(target)
    if not t.ocloc_device or not t.iga_platform:
        raise IsaError(f"target {t.name} is not an Intel GPU with an ocloc device ({t.arch})")
    if grf_mode is not None and grf_mode not in t.grf_modes:
        raise IsaError(f"target {t.name} has GRF modes {t.grf_modes}, not {grf_mode}")
    inst = _compiler(compiler)
    opts = " ".join(o for o in (options.strip(), GRF_OPTIONS.get(grf_mode, "")) if o)
    compile_in = _compile_dumped if inst.isa_from_dump else _compile_disassembled
    if work_dir is not None:
        os.makedirs(work_dir, exist_ok=True)
        r = compile_in(work_dir, spirv, kernel_name, t, opts, inst, tuple(iga_options))
    else:
        with tempfile.TemporaryDirectory(prefix="xekern-isa-") as d:
            r = compile_in(d, spirv, kernel_name, t, opts, inst, tuple(iga_options))
    if grf_mode is not None and r.grf_mode is not None and r.grf_mode != grf_mode:
        raise IsaError(f"asked for {grf_mode} GRF with -options \"{opts}\" but IGC compiled {kernel_name} with "
                       f"{r.grf_mode} (ocloc ignores options it does not know)")
    if r.counts.calls:
        r.warnings.append(f"{r.counts.calls} call/calla instruction(s): the module calls a function IGC could not "
                          f"resolve (often a mis-mangled builtin: Itanium substitutions such as Dv8_iS_ are required)")
    return r


class OpenCLSource(str):
    """OpenCL C source text, which ``compile_isa`` compiles instead of SPIR-V (``ocloc`` takes both):
    for reference kernels written by hand (``benchmarks/memory_bound.py``)."""


def _ocloc_compile(d: str, spirv: Union[bytes, OpenCLSource], t: Target, opts: str, inst: Installed,
                   env: Optional[Dict[str, str]] = None) -> Tuple[str, List[str]]:
    """Run ``ocloc compile`` in ``d`` on SPIR-V (or OpenCL C source); (its output, the binaries written)."""
    source = isinstance(spirv, OpenCLSource)
    name = "k.cl" if source else "k.spv"
    with open(os.path.join(d, name), "w" if source else "wb") as f:
        f.write(spirv)
    out_dir = os.path.join(d, "bin")
    args = ["compile", "-file", name] + ([] if source else ["-spirv_input"]) + \
        ["-device", t.ocloc_device, "-output", "k", "-out_dir", out_dir]
    if opts:
        args += ["-options", opts]
    r = _run(inst.command("ocloc", args), d, "ocloc compile", env)
    out = _output(r)
    bins = sorted(glob.glob(os.path.join(out_dir, "k*.bin")))
    if r.returncode != 0 or not bins:
        raise _ocloc_failed(inst, t, t.ocloc_device, out or f"exit status {r.returncode}, no binary written")
    return out, bins


def _disassemble(inst: Installed, t: Target, path: str, d: str, kernel: str,
                 iga_options: Tuple[str, ...] = ()) -> Tuple[str, List[str]]:
    """``iga64 -d`` of a kernel binary: (ISA text, iga64's warnings)."""
    r = _run(inst.command("iga64", ["-d", f"-p={t.iga_platform}", *iga_options, path]), d, "iga64")
    if r.returncode != 0 or not r.stdout.strip():
        raise IsaError(f"iga64 -p={t.iga_platform} ({inst.label}) could not disassemble {kernel}:\n{_output(r)}")
    return r.stdout, [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]


def _report(inst: Installed, t: Target, kernel: str, opts: str, text: str, ptm: Dict[str, int],
            spills: List[SpillWarning], compile_out: str, warnings: List[str]) -> IsaReport:
    # private memory lives in scratch too (or a stateless surface of its own): counted as scratch
    scratch = sum(ptm.get(k, 0) for k in ("PerThreadScratchSpace", "PerThreadScratchSpaceSlot1",
                                          "PerThreadPrivateMemorySize"))
    return IsaReport(kernel=kernel, target=t.name, device=t.ocloc_device, options=opts,
                     grf_mode=ptm.get("NumGRFRequired"), simd=ptm.get("LargestCompiledSIMDSize"), spills=spills,
                     scratch_bytes=scratch, ptm=ptm, counts=count_isa(text), text=text, ocloc_output=compile_out,
                     warnings=warnings, compiler=inst.name, compiler_version=inst.label)


def _compile_disassembled(d: str, spirv: bytes, kernel: str, t: Target, opts: str, inst: Installed,
                          iga_options: Tuple[str, ...] = ()) -> IsaReport:
    """IGC 12504's way: ``ocloc disasm`` writes each kernel's heap and PTM.txt (patch tokens)."""
    compile_out, bins = _ocloc_compile(d, spirv, t, opts, inst)
    dump = os.path.join(d, "dump")
    r = _run(inst.command("ocloc", ["disasm", "-file", bins[0], "-dump", dump, "-device", t.ocloc_device,
                                    "-ignore_isa_padding"]), d, "ocloc disasm")
    heap = os.path.join(dump, f"{kernel}_KernelHeap.dat")
    ptm_path = os.path.join(dump, "PTM.txt")
    if r.returncode != 0 or not os.path.exists(heap) or not os.path.exists(ptm_path):
        present = sorted(os.listdir(dump)) if os.path.isdir(dump) else []
        kernels = [f[:-len("_KernelHeap.dat")] for f in present if f.endswith("_KernelHeap.dat")]
        raise IsaError(f"ocloc disasm gave no kernel heap for '{kernel}' (kernels in the binary: "
                       f"{', '.join(kernels) or 'none'}; files: {', '.join(present) or 'none'}).\n{_output(r)}")
    with open(ptm_path, errors="replace") as f:
        ptm_text = f.read()
    ptm = parse_ptm(ptm_text, kernel)
    text, warnings = _disassemble(inst, t, heap, d, kernel, iga_options)
    if _SYMBOL_TABLE_KERNEL in ptm_kernels(ptm_text):
        warnings.append(f"IGC's {_SYMBOL_TABLE_KERNEL} is in the binary: the module calls a function IGC could "
                        f"not resolve")
    spills = [s for s in parse_spills(compile_out) if s.kernel == kernel]
    return _report(inst, t, kernel, opts, text, ptm, spills, compile_out, warnings)


def _compile_dumped(d: str, spirv: bytes, kernel: str, t: Target, opts: str, inst: Installed,
                    iga_options: Tuple[str, ...] = ()) -> IsaReport:
    """IGC 2.x's way: its own shader dump (``IGC_ShaderDumpEnable``) holds each kernel's binary
    (``*_<simd>_*.dat``, disassembled with the root's ``iga64``), its vISA assembly (whose
    ``//.kernel`` line names it and ``//.spill size`` gives the spill bytes) and the zebin's
    ``.zeinfo`` (GRF count, SIMD size, scratch and private buffers)."""
    dump = os.path.join(d, "dump")
    compile_out, _ = _ocloc_compile(d, spirv, t, opts, inst,
                                    env={"IGC_ShaderDumpEnable": "1", "IGC_DumpToCustomDir": dump})
    asms = {}
    for path in sorted(glob.glob(os.path.join(dump, "*_simd*.asm"))):
        with open(path, errors="replace") as f:
            head = f.read(4096)
        m = re.search(r"^//\.kernel (\S+)", head, re.M)
        if m:
            asms[m.group(1)] = path
    if kernel not in asms:
        raise IsaError(f"IGC's dump has no kernel '{kernel}' (kernels in the binary: {', '.join(asms) or 'none'})")
    asm = asms[kernel]
    with open(asm, errors="replace") as f:
        asm_text = f.read()
    zeinfos = glob.glob(os.path.join(dump, "*.zeinfo"))
    zeinfo = ""
    for path in zeinfos:
        with open(path, errors="replace") as f:
            zeinfo = f.read()
        if re.search(rf"^\s*- name:\s+{re.escape(kernel)}\s*$", zeinfo, re.M):
            break
    ptm = parse_zeinfo(zeinfo, kernel)
    m = re.search(r"^//\.spill size (\d+)", asm_text, re.M)
    spill = int(m.group(1)) if m else ptm.get("SpillSize", 0)
    spills = [SpillWarning(kernel, ptm.get("LargestCompiledSIMDSize", 0), ptm.get("NumGRFRequired", 0), spill)] \
        if spill else []
    text, warnings = _disassemble(inst, t, asm[:-len(".asm")] + ".dat", d, kernel, iga_options)
    return _report(inst, t, kernel, opts, text, ptm, spills, compile_out, warnings)


# zeinfo's execution_env keys, by the patch-token names IsaReport.ptm uses
_ZEINFO_ENV = {"grf_count": "NumGRFRequired", "simd_size": "LargestCompiledSIMDSize", "has_dpas": "HasDPAS",
               "barrier_count": "HasBarriers", "spill_size": "SpillSize", "has_stack_calls": "HasStackCalls",
               "eu_thread_count": "ThreadsPerEU"}


def parse_zeinfo(zeinfo: str, kernel: str) -> Dict[str, int]:
    """The numbers of ``kernel``'s entry in a zebin's ``.zeinfo`` (YAML), under the patch-token
    names of ``parse_ptm`` where one exists: GRF count, SIMD size, DPAS, barriers, spill size, and
    per-thread scratch (``PerThreadScratchSpace``) and private memory (``PerThreadPrivateMemorySize``)."""
    blocks = re.split(r"^  - name:\s+", zeinfo.split("kernels_misc_info:")[0], flags=re.M)[1:]
    block = next((b for b in blocks if b.split("\n", 1)[0].strip() == kernel), None)
    if block is None:
        names = [b.split("\n", 1)[0].strip() for b in blocks]
        raise IsaError(f"kernel '{kernel}' is not in the zeinfo; kernels there: {', '.join(names) or 'none'}")
    out: Dict[str, int] = {"NumGRFRequired": 128}  # zeinfo leaves out the default GRF count
    for key, value in re.findall(r"^\s+(\w+):\s+(\w+)\s*$", block.split("payload_arguments:")[0], re.M):
        name = _ZEINFO_ENV.get(key)
        if name is not None:
            out[name] = 1 if value == "true" else 0 if value == "false" else int(value) if value.isdigit() else 0
    for kind, usage, size in re.findall(r"- type:\s+(\w+)\s*\n\s+usage:\s+(\w+)\s*\n\s+size:\s+(\d+)", block):
        key = "PerThreadPrivateMemorySize" if usage == "private_space" else "PerThreadScratchSpace"
        out[key] = out.get(key, 0) + int(size)
    return out
