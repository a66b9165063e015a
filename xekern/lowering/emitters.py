"""How xekern emits code for a target and the compiler behind its driver: one decision per kernel.

A target record says what a GPU *is* (DPAS shapes, 2D block limits, GRF, SLM). How xekern reaches
that hardware depends on the compiler in the user's driver, so it is a separate choice, an
*emitter*, made once per kernel and carried in ``Options.emitter``:

============== ===================================================================================
``cpu``        the OpenCL CPU device: exact lane-level emulation of DPAS and 2D block IO
``igc-builtins`` any Intel GPU driver: OpenCL builtins, IGC's ``GenISA`` intrinsics, inline vISA
               for the 2D block stores and prefetches that have no builtin
``spirv-ext``  drivers with ``SPV_INTEL_2d_block_io`` and ``SPV_INTEL_subgroup_matrix_multiply_
               accumulate`` (IGC 2.x): the standard ops, lowered by IGC itself
``visa``       workgroup-level kernels' DPAS operands and 2D block reads written as inline vISA
               (``raw_sends`` from payloads built outside loops, DPAS named in place), SLM reads
               and loop barriers too; everything else as ``igc-builtins``
============== ===================================================================================

Each emitter is a rule table in codegen (``codegen/core.TABLES``, filled by the ``rules_*``
modules) layered over the tables it extends, and a policy record below that the passes before
codegen read (blocking merges messages only as far as the emitter can use them). ``choose``
picks the first emitter of ``PREFERENCE`` that the target and the driver allow; ``Driver``
records what a driver accepts, from a probe of the device (``runtime/driver_probe.py``) or, for
offline compilation, from the name of an offline compiler (``OFFLINE``).

    >>> from xekern.targets import get_target
    >>> choose(get_target("pvc"), OFFLINE["current"]).name
    'visa'
    >>> choose(get_target("dg2"), OFFLINE["current"]).name
    'igc-builtins'
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, List, Optional, Tuple

from ..errors import XekernError
from ..targets import Target

# the SPIR-V ops of the spirv-ext emitter (Khronos-registered Intel extensions)
SPIRV_OPS_EXTENSIONS = ("SPV_INTEL_2d_block_io", "SPV_INTEL_subgroup_matrix_multiply_accumulate")


class EmitterError(XekernError):
    """An emitter was asked for that the target or the driver cannot take."""


@dataclass(frozen=True)
class Driver:
    """What a device's driver compiler accepts, as far as the emitters care."""

    name: str                 # "igc2", "igc1", "cpu"
    kind: str                 # "gpu" or "cpu"
    spirv_block_io: bool      # SPV_INTEL_2d_block_io + SPV_INTEL_subgroup_matrix_multiply_accumulate
    inline_visa: bool         # SPV_INTEL_inline_assembly with vISA text (every IGC)
    # tf32 DPAS builtin: IGC 2.x's intel_sub_group_tf32_tf32_matrix_mad_k8 takes float operands;
    # IGC 12504's ..._k8_f32 takes their bits (A as short pairs, B as ints). IGC 2.x no longer has
    # the latter (its BiF's IBiF_dpas.cl), and a call to a builtin a driver lacks is no build error:
    # it becomes an unresolved call
    tf32_float_builtin: bool
    # applies Xe-HPC's send write-after-read workaround (Target.send_war_erratum): IGC 2.x does,
    # IGC 12504 does not
    send_war_workaround: bool
    about: str = ""


DRIVERS: Dict[str, Driver] = {d.name: d for d in (
    Driver("igc2", "gpu", True, True, True, True, "IGC 2.x, compute-runtime 24.x and later"),
    Driver("igc1", "gpu", False, True, False, False, "IGC 1.0, compute-runtime 22.x (Debian 12's 12504)"),
    Driver("cpu", "cpu", False, False, False, False, "Intel's OpenCL CPU runtime"),
)}
# the offline compilers of ``python -m xekern toolchain`` and the drivers they stand for
OFFLINE: Dict[str, Driver] = {"current": DRIVERS["igc2"], "12504": DRIVERS["igc1"]}


@dataclass(frozen=True)
class Emitter:
    """One way of emitting a kernel, and the policy the passes before codegen follow for it."""

    name: str
    tables: Tuple[str, ...]          # codegen rule tables, later ones overriding earlier ones
    kind: str                        # "cpu" or "gpu"
    driver: Driver
    # loops and branches carry a lane's slots as one vector (IGC keeps it in place) rather than as
    # scalars (the CPU runtime's vectorizer widens each scalar into one SIMD register)
    carry_vectors: bool = True
    # the sub-group id goes through a broadcast: the CPU vectorizer then knows it is uniform
    broadcast_ids: bool = False
    # DPAS reads its operands from memory itself where they were just loaded (the CPU's micro-kernel)
    fused_dpas_loads: bool = False
    # tiles inside the tensor are accessed with lane-linear vector addresses (the CPU device)
    vector_tile_access: bool = False
    # a pointer tile's block runs (pass coalesce), a slot alone too, go slot by slot as masked accesses
    # at lane 0's address plus the lane id: the CPU device's vectorizer makes each one vector load or
    # store, with no block builtin, no test per run and no second path for the runs' edges
    lane_linear_runs: bool = False
    # a gather of 8- or 16-bit elements reads each lane's element out of the aligned dword that holds
    # it: the CPU runtime's vectorizer has no narrow gather and makes one scalar load and branch per
    # lane of each, where a 32-bit gather is one instruction (tutorial 03's loop as written, B's
    # columns taken modulo N: the driver's build 1.5 -> 1.1 s). The dword never leaves the 4-byte
    # granule of an element in bounds; the bytes around the element are dropped.
    dword_gathers: bool = False
    # operand dtypes whose dot is plain FMAs over the subgroup tile (the CPU has no tf32 engine)
    fma_dot: Tuple[str, ...] = ()
    # at most this many accumulator slots per lane in one FMA K loop (AVX-512: 32 zmm registers, of
    # which B's rows and the vectorizer's pointers take 6-8): bigger tiles loop per group of rows
    fma_dot_slots: int = 24
    # a float multiply feeding one add is one fma unless the launch says otherwise (pass fp-fusion,
    # Triton's enable_fp_fusion): one `mad` on Intel GPUs. Off by default on the CPU device, where the
    # runtime's code got no faster and attention's forward 25% slower (13.5 -> 16.8 ms, f32, N 1024)
    fp_fusion: bool = True
    # DPAS emulated from operands in registers as loops over K (private arrays and tables of the
    # owning lanes) rather than one shuffle and FMA per element: the CPU runtime's build time grows
    # with the code, and private arrays cost it nothing (on a GPU they would be scratch)
    dpas_k_loops: bool = False
    # descriptor loads/stores/prefetches as 2D block messages where the target has them
    block2d: bool = False
    # adjacent instruction blocks merged into one 2D block message (blocking's block_grid)
    merge_block2d: bool = False
    # DPAS operands read by one 2D block message of up to 32 registers into a named vISA register
    # (workgroup-level kernels; LLVM vectors stop at 16 dwords per lane)
    named_reads: bool = False
    # DPAS operands that lie one after another in SLM read by one transposed LSC message
    slm_block_reads: bool = False
    # 32-bit blocks narrower than the subgroup (tf32's A: several rows per register) as 2D block reads
    narrow_block_reads: bool = True
    # a K loop's prefetches send their payload from a copy in the destination of a later read, which
    # resolves their payload reads where the send write-after-read workaround costs nothing
    # (codegen/lsc.raw_block2d): where the target has the erratum and the driver works around it
    stage_prefetches: bool = False
    # SLM-only barriers in counted loops of workgroup-level kernels as inline vISA, their message built
    # once per kernel (codegen/visa_barrier.py: 4 instructions, 2 without a fence, where IGC's are 6)
    visa_barriers: bool = False
    # f32 -> bf16 by the GPU's own conversion (SPV_INTEL_bfloat16_conversion: one mov per register
    # on pvc) instead of integer round-to-nearest-even (5 integer instructions and a select per element)
    bf16_conversion: bool = False

    @property
    def key(self) -> tuple:
        """What distinguishes two emitters in a compilation's cache key: the name, the driver and
        every policy setting (an emitter changed with ``dataclasses.replace`` compiles apart)."""
        return (self.name, self.driver.name) + tuple(getattr(self, f.name) for f in fields(self)
                                                     if f.name not in ("name", "driver"))

    def describe(self) -> str:
        """``visa, for igc2: IGC 2.x, compute-runtime 24.x and later`` (``kernel.asm["emitter"]``)."""
        return f"{self.name}, for {self.driver.name}" + (f": {self.driver.about}" if self.driver.about else "")


# the GPU's register file bounds a message: a 2D block read answers with at most 32 registers
# (LSC: response length 5 bits, 31 meaning 32; HARDWARE.md)
MAX_RESPONSE_GRFS = 32
# an LSC transposed (SIMT1) SLM read moves at most 64 qwords (vector size 64, data size d64)
SLM_READ_BYTES = 512


# vISA's DPAS operand precisions (IGC 12504's own DPAS, read back from its vISA dumps). tf32 is not
# here: IGC splits A's registers into 16-bit halves before its ``dpas.tf32``, so tf32 DPAS stays IGC's
# builtin
VISA_DPAS_PRECISION = {"bf16": "bf", "f16": "hf", "i8": "s8", "ui8": "u8"}


def inline_dpas(e: Emitter, level: str, elem_name: str) -> bool:
    """Whether ``e`` writes a DPAS on ``elem_name`` operands as inline vISA: the visa emitter's named
    reads, in workgroup-level kernels (their control flow is uniform, so every lane runs the reads
    whose payloads are built per lane), with a precision vISA names."""
    return e.named_reads and level == "wg" and elem_name in VISA_DPAS_PRECISION


def named_read_bits(e: Emitter, t: Target) -> int:
    """Bits per lane a ``named_reads`` message may bring (pvc, bmg: 1024); 0 when the emitter has none."""
    return MAX_RESPONSE_GRFS * t.grf_bytes * 8 // t.sg_size if e.named_reads else 0


def slm_read_bytes(e: Emitter, t: Target) -> int:
    """Bytes one ``slm_block_reads`` message reads; 0 when the emitter has none."""
    return SLM_READ_BYTES if e.slm_block_reads else 0


def _cpu(d: Driver, t: Target) -> Emitter:
    # f32 dots as FMAs where the modeled GPU has tf32 DPAS (cpu: pvc); where it has none (cpu8: dg2)
    # they stay an error, as on that GPU
    return Emitter("cpu", ("common", "cpu"), "cpu", d, carry_vectors=False, broadcast_ids=True,
                   fused_dpas_loads=True, vector_tile_access=True, lane_linear_runs=True, dword_gathers=True,
                   fma_dot=("f32",) if "tf32" in t.dpas else (),
                   dpas_k_loops=True, fp_fusion=False)


def _igc(d: Driver, t: Target) -> Emitter:
    # where the visa emitter cannot serve (no 2D block IO: dg2) this one takes its barriers (dg2's
    # GEMM K loop, IGC 2.40: 129 -> 126 instructions for 32 dpas)
    return Emitter("igc-builtins", ("common", "igc-builtins"), "gpu", d, block2d=True, merge_block2d=True,
                   bf16_conversion=True, visa_barriers=d.inline_visa and not t.has_block2d)


def _spirv_ext(d: Driver, t: Target) -> Emitter:
    # (narrow reads: SPV_INTEL_2d_block_io's data layout for blocks narrower than the subgroup is unchecked)
    return Emitter("spirv-ext", ("common", "igc-builtins", "spirv-ext"), "gpu", d, block2d=True,
                   merge_block2d=True, narrow_block_reads=False, bf16_conversion=True)


def _visa(d: Driver, t: Target) -> Emitter:
    return Emitter("visa", ("common", "igc-builtins", "visa"), "gpu", d, block2d=True, merge_block2d=True,
                   named_reads=True, slm_block_reads=True, bf16_conversion=True, visa_barriers=True,
                   stage_prefetches=t.send_war_erratum and d.send_war_workaround)


_MAKERS = {"cpu": _cpu, "igc-builtins": _igc, "spirv-ext": _spirv_ext, "visa": _visa}
NAMES = tuple(_MAKERS)
# the order ``choose`` tries, best first (the flagship GEMM's K loop with IGC 2.40: visa 70 % dpas on
# bmg where spirv-ext is 15 %; igc-builtins is what every IGC takes)
PREFERENCE = ("visa", "spirv-ext", "igc-builtins")


def unavailable(name: str, t: Target, d: Driver) -> Optional[str]:
    """Why emitter ``name`` cannot serve target ``t`` through driver ``d`` (None: it can)."""
    if name not in _MAKERS:
        return f"there is no emitter {name!r}; emitters: {', '.join(NAMES)}"
    if (name == "cpu") != t.is_cpu:
        return f"the {name} emitter is for {'the CPU device' if name == 'cpu' else 'GPUs'}, target {t.name} is not"
    if d.kind != t.kind:
        return f"the {d.name} driver compiles for a {d.kind}, target {t.name} is a {t.kind}"
    if name == "spirv-ext" and not d.spirv_block_io:
        return (f"the spirv-ext emitter needs a driver that takes {' and '.join(SPIRV_OPS_EXTENSIONS)}; "
                f"{d.about or d.name} does not")
    if name == "spirv-ext" and not t.has_block2d:
        # IGC 2.40 takes SPV_INTEL_2d_block_io from Xe-HPC on only and refuses the matrix op on Xe-LPG
        # (its SPIRVExtensions.td); where there is no 2D block IO the builtins serve as well
        return f"the spirv-ext emitter is for GPUs with 2D block IO (Xe-HPC and later); target {t.name} has none"
    if name == "visa" and not (d.inline_visa and t.has_block2d and t.has_dpas):
        why = "its driver takes no inline vISA" if not d.inline_visa else "it has no 2D block IO and DPAS"
        return f"the visa emitter writes 2D block messages and DPAS for target {t.name}, but {why}"
    return None


def get(name: str, t: Target, d: Driver) -> Emitter:
    """Emitter ``name`` for target ``t`` and driver ``d``; ``EmitterError`` says why not."""
    why = unavailable(name, t, d)
    if why is not None:
        raise EmitterError(why)
    return _MAKERS[name](d, t)


def candidates(t: Target, d: Driver) -> List[Emitter]:
    """Every emitter that can serve ``t`` through ``d``, best first."""
    order = ("cpu",) if t.is_cpu else PREFERENCE
    return [_MAKERS[n](d, t) for n in order if unavailable(n, t, d) is None]


def choose(t: Target, d: Driver, name: Optional[str] = None) -> Emitter:
    """The emitter of a kernel: ``name`` if given (checked), else the best of ``candidates``."""
    if name is not None:
        return get(name, t, d)
    found = candidates(t, d)
    if not found:
        raise EmitterError(f"no emitter serves target {t.name} through the {d.name} driver")
    return found[0]


def fallback(e: Emitter, t: Target) -> Optional[Emitter]:
    """The next emitter to try when the driver rejects a module of ``e``'s (None: there is none)."""
    found = candidates(t, e.driver)
    names = [x.name for x in found]
    return found[names.index(e.name) + 1] if e.name in names and names.index(e.name) + 1 < len(found) else None


def default_driver(t: Target) -> Driver:
    """The driver a compilation without a device assumes: the CPU runtime for CPU targets, else the
    current compiler (what users' drivers run)."""
    return DRIVERS["cpu"] if t.is_cpu else OFFLINE["current"]
