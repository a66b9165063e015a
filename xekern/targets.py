"""Targets as data: one record per Intel GPU family, plus the CPU device that models one.

Every hardware number a pass or codegen needs lives here, with where it comes from. Passes
receive a ``Target``; only the runtime asks a device what it is (``target_for``). A new Intel
GPU is one more record (and, at most, new rows in codegen's intrinsic tables). How xekern emits
code for a GPU through a given driver compiler is not a fact of the GPU: ``lowering/emitters.py``.

Which record a GPU gets is decided here from what its driver reports (``identify``): its PCI
device id or graphics IP version, looked up in ``ARCHITECTURES``; its name only when the driver
says neither. A GPU of an IP release no row knows gets the nearest older family's record and a
``TargetWarning``; ``XEKERN_TARGET`` overrides all of it.

Example::

    >>> import xekern as xk
    >>> xk.targets["pvc"].dpas_shape(xk.language.bfloat16)
    DpasShape(m=8, n=16, k=16)
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Tuple

from .ir import types as T
from .ir.types import DType


class TargetError(ValueError):
    """A target record breaks a hardware rule (its message names the record and the rule)."""


# scratch space per hardware thread on Xe-HP and later (IGC Platform::maxPerThreadScratchSpace, 0x40000)
SCRATCH_BYTES_PER_THREAD = 256 * 1024

# bits per DPAS operand element, by the dtype names of ``Target.dpas``
_DPAS_BITS = {"bf16": 16, "f16": 16, "tf32": 32, "i8": 8, "ui8": 8}


@dataclass(frozen=True)
class DpasShape:
    """One DPAS instruction: ``[m x k] @ [k x n]``; ``m`` is the repeat count (1..8)."""

    m: int
    n: int
    k: int


@dataclass(frozen=True)
class Block2D:
    """Limits of the 2D block load/store for one element width (bytes-per-element ``ebytes``).

    Source: upstream MLIR XeGPU/XeVM verifiers and uArch tables (see HARDWARE.md).
    """

    ebytes: int
    max_width: int          # elements per row, one block
    max_height: int         # rows
    max_array: int          # blocks side by side (array_length)
    max_width_x_array: int  # width * array_length, in elements
    transpose: bool         # 32/64-bit transposed loads (d32t)
    vnni: bool              # VNNI-packed loads (d16v / d8v)


@dataclass(frozen=True)
class Block2DSurface:
    """What a 2D block message's surface must be (bytes): its base address aligned to
    ``base_align``, its width at least ``min_width`` and a multiple of ``width_align``, its pitch
    at least ``min_pitch`` and a multiple of ``pitch_align``. Outside them the result is undefined
    (HARDWARE.md): ``lowering/surface_rules.py`` keeps every message inside them."""

    base_align: int
    min_width: int
    width_align: int
    min_pitch: int
    pitch_align: int


# Xe-HPC, Xe2 and Xe3 (HARDWARE.md; the MLIR XeGPU uArch's kXe2BlockIORestrictions, "as implemented by
# the Intel Graphics Compiler", has the same alignments with 32-byte minimums: xekern keeps the 64 of
# the hardware notes)
XE2_SURFACE = Block2DSurface(base_align=64, min_width=64, width_align=4, min_pitch=64, pitch_align=16)

_PVC_BLOCK2D = (
    Block2D(1, 64, 32, 4, 64, False, True),
    Block2D(2, 32, 32, 2, 32, False, True),
    Block2D(4, 16, 32, 2, 16, True, False),
    Block2D(8, 8, 32, 1, 8, True, False),
)


@dataclass(frozen=True)
class Target:
    """An Intel GPU family (or the CPU device standing in for one)."""

    name: str
    arch: str                       # marketing / architecture name
    sg_size: int                    # sub-group size kernels are compiled for
    sub_group_sizes: Tuple[int, ...]
    dpas: Dict[str, DpasShape]      # operand dtype name -> instruction shape; empty: no DPAS
    block2d: Tuple[Block2D, ...]    # empty: no 2D block IO
    grf_bytes: int                  # bytes per general register
    grf_modes: Tuple[int, ...]      # registers per thread in each mode
    slm_bytes: int                  # shared local memory per workgroup
    max_workgroup_size: int
    named_barriers: int             # hardware named barriers per workgroup (0: emulated)
    xe_cores: int
    kind: str                       # "gpu" or "cpu"
    model: Optional[str] = None     # for the CPU: the GPU whose lane-level code it runs
    ocloc_device: Optional[str] = None
    iga_platform: Optional[str] = None
    # private memory per work item (``xl.alloc_private``, seed 003's ``private(...)`` attribution).
    # IGC's limit, not a measured one: Platform::maxPerThreadScratchSpace is 256 KiB of scratch per
    # hardware thread on Xe-HP and later ("XeHP_SDV and above are for each physical thread: 256k"),
    # and PrivateMemoryResolution divides it by the SIMD width for the per-work-item limit; spills
    # share that scratch, so a kernel near the limit may still fail in the GPU compiler. CPU records
    # take the limit of the GPU they model, so what runs there also compiles for that GPU.
    private_bytes: int = 0
    # the surfaces 2D block messages take (where ``block2d`` is not empty)
    block2d_surface: Block2DSurface = XE2_SURFACE
    # Xe-HPC's send write-after-read erratum: a register a send reads must not be overwritten until a
    # workaround has re-read it. IGC 2.x applies one (visa/HWCaps.inc PVCSendWARWA: Xe_PVC, Xe_PVCXT;
    # LocalScheduler/SWSB_G4IR.cpp insertPVCWA: dummy movs of the send's last two GRFs and a sync
    # wherever the read is not resolved by a wait for the send's answer or right before another send)
    send_war_erratum: bool = False
    # 64-bit floating point (dg2 has none: compute-runtime hw_info_dg2.cpp ftrSupportsFP64 = false;
    # IGC 2.40: "Double type is not supported on this platform"; refused by lowering/capabilities.py)
    fp64: bool = True

    peak_tflops_bf16: Optional[float] = None
    # lower-case substrings of the driver's device name that identify this family (``target_for``)
    device_names: Tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self):
        for problem in self.problems():
            raise TargetError(f"target {self.name!r}: {problem}")

    def problems(self):
        """The record's self-checks: the hardware rules every figure must obey (each names its source)."""
        pow2 = lambda n: n > 0 and n & (n - 1) == 0  # noqa: E731
        if self.kind not in ("gpu", "cpu"):
            yield f"kind is {self.kind!r}, not 'gpu' or 'cpu'"
        if not all(pow2(s) for s in self.sub_group_sizes) or self.sg_size not in self.sub_group_sizes:
            yield f"sg_size {self.sg_size} is not among the power-of-2 sub_group_sizes {self.sub_group_sizes}"
        for d, sh in self.dpas.items():
            if d not in _DPAS_BITS:
                yield f"DPAS operand type {d!r} is not one of {', '.join(_DPAS_BITS)}"
                continue
            if sh.n != self.sg_size and self.kind != "cpu":
                yield f"DPAS N ({sh.n}) must equal the sub-group size {self.sg_size} (one column per lane)"
            if not 1 <= sh.m <= 8:
                yield f"DPAS repeat count M is 1..8, got {sh.m} for {d}"
            if sh.k * _DPAS_BITS[d] != 256:  # systolic depth 8 x 32-bit (MLIR XeGPU uArch, HARDWARE.md)
                yield f"DPAS K for {d} must be 256 bits of operand ({256 // _DPAS_BITS[d]}), got {sh.k}"
            # tf32 DPAS came with Xe-HPC's 16-wide DPAS: compute-runtime exposes
            # cl_intel_subgroup_matrix_multiply_accumulate_tf32 from Xe-HPC on only
            # (compiler_product_helper_before_xe_hpc.inl); for arl-h IGC 2.40 leaves its builtin unresolved
            if d == "tf32" and sh.n != 16:
                yield f"tf32 DPAS exists only 16 wide (Xe-HPC and later), not with N = {sh.n}"
        if self.block2d and self.sg_size != 16:
            # the 2D block messages came with Xe-HPC too (cl_intel_subgroup_2d_block_io from Xe-HPC on,
            # compiler_product_helper_xe_hpc_and_later.inl; IGC 2.40 rejects SPV_INTEL_2d_block_io for
            # arl-h and mtl-h: SPIRVExtensions.td), and xekern's block tables are for 16-wide sub-groups
            yield f"2D block IO is for 16-wide sub-groups of Xe-HPC and later, not sub-group {self.sg_size}"
        for b in self.block2d:
            if b.max_width * b.ebytes > 64 or b.max_width_x_array * b.ebytes > 64:
                yield f"2D block rows are at most 64 bytes (HARDWARE.md), {b.ebytes}-byte row is wider"
            if not 1 <= b.max_height <= 32 or b.max_array not in (1, 2, 4):
                yield f"2D block height is 1..32 and array length 1, 2 or 4; got {b}"
        if self.grf_bytes not in (32, 64) or not set(self.grf_modes) <= {128, 256} or not self.grf_modes:
            yield f"GRF is 32 or 64 bytes per register and 128 or 256 registers, got {self.grf_bytes} x {self.grf_modes}"
        if self.slm_bytes <= 0 or self.slm_bytes % 1024:
            yield f"SLM size {self.slm_bytes} must be a positive number of KiB"
        if self.private_bytes <= 0 or self.private_bytes % 4:
            yield f"private memory per work item ({self.private_bytes} bytes) must be a positive multiple of 4"
        elif self.kind == "gpu" and self.private_bytes * self.sg_size > SCRATCH_BYTES_PER_THREAD:
            yield (f"private memory per work item ({self.private_bytes} bytes) x {self.sg_size} lanes exceeds "
                   f"IGC's {SCRATCH_BYTES_PER_THREAD // 1024} KiB of scratch per hardware thread")
        if not pow2(self.max_workgroup_size) or self.max_workgroup_size < self.sg_size:
            yield f"max_workgroup_size {self.max_workgroup_size} must be a power of 2 of at least one sub-group"
        if not 0 <= self.named_barriers <= 32:
            yield f"named barriers per workgroup are 0..32 (Xe-HPC has 32), got {self.named_barriers}"
        if self.kind == "gpu" and (self.xe_cores <= 0 or not self.ocloc_device or not self.iga_platform):
            yield "a GPU record needs xe_cores, ocloc_device and iga_platform (for the offline ISA checks)"
        if self.kind == "cpu" and self.model is None:
            yield "a CPU record names the GPU whose lane-level code it runs (model=)"

    @property
    def has_dpas(self) -> bool:
        return bool(self.dpas)

    @property
    def has_block2d(self) -> bool:
        return bool(self.block2d)

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    @property
    def max_subgroups(self) -> int:
        return self.max_workgroup_size // self.sg_size

    def dpas_shape(self, dtype: DType) -> Optional[DpasShape]:
        return self.dpas.get(dtype.name if dtype != T.float32 else "tf32")

    def block2d_for(self, dtype: DType) -> Optional[Block2D]:
        for b in self.block2d:
            if b.ebytes == dtype.itemsize:
                return b
        return None

    def describe(self) -> str:
        dp = ", ".join(f"{k}:{v.m}x{v.n}x{v.k}" for k, v in self.dpas.items()) or "none"
        return (f"{self.name:8s} {self.arch:46s} sg={self.sg_size:<3d} dpas[{dp}] "
                f"block2d={'yes' if self.block2d else 'no'} slm={self.slm_bytes // 1024}KiB "
                f"wg<={self.max_workgroup_size} nbarriers={self.named_barriers}")


def _dpas16() -> Dict[str, DpasShape]:
    # PVC / Xe2: N = 16 (SIMD16), K = 256 bits of operand per lane-row; HARDWARE.md, MLIR uArch tables
    return {"bf16": DpasShape(8, 16, 16), "f16": DpasShape(8, 16, 16), "tf32": DpasShape(8, 16, 8),
            "i8": DpasShape(8, 16, 32), "ui8": DpasShape(8, 16, 32)}


def _dpas8() -> Dict[str, DpasShape]:
    # DG2 (Xe-HPG): N = 8 (SIMD8); tf32 builds but emits no dpas on DG2 (HARDWARE.md), so it is absent
    return {"bf16": DpasShape(8, 8, 16), "f16": DpasShape(8, 8, 16), "i8": DpasShape(8, 8, 32),
            "ui8": DpasShape(8, 8, 32)}


PVC = Target(
    name="pvc", arch="Xe-HPC (Data Center GPU Max 1550)", sg_size=16, sub_group_sizes=(16, 32),
    dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64, grf_modes=(128, 256), slm_bytes=128 * 1024,
    max_workgroup_size=1024, named_barriers=32, xe_cores=128, kind="gpu", ocloc_device="pvc", send_war_erratum=True,
    iga_platform="12p72", peak_tflops_bf16=839.0, private_bytes=SCRATCH_BYTES_PER_THREAD // 16,
    device_names=("max 1", "data center gpu max", "ponte vecchio", "pvc"),
    # sub-groups 16/32, 128 KiB SLM per workgroup, 1024 work items: Intel oneAPI GPU optimization guide
    # (Xe-HPC); 128/256 GRF modes, 32 named barriers, 2 x 64 Xe cores (Max 1550): HARDWARE.md
    notes="2 stacks x 64 Xe cores, 1.6 GHz, 512 KiB L1/SLM per Xe core (HARDWARE.md)")

BMG = Target(
    name="bmg", arch="Xe2-HPG (Arc B580)", sg_size=16, sub_group_sizes=(16, 32),
    dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64, grf_modes=(128, 256), slm_bytes=128 * 1024,
    max_workgroup_size=1024, named_barriers=32, xe_cores=20, kind="gpu", ocloc_device="bmg",
    iga_platform="xe2", peak_tflops_bf16=116.7, private_bytes=SCRATCH_BYTES_PER_THREAD // 16,
    device_names=("b580", "b570", "battlemage", "arc(tm) b", "arc b", "bmg"),
    # Xe2 keeps Xe-HPC's DPAS (N=16) and 2D block tables (MLIR XeGPU uArch Xe2 table); 20 Xe2 cores and
    # 116.7 TFLOP/s bf16: Intel Arc B580 specification (HARDWARE.md)
    notes="20 Xe2 cores, 456 GB/s; needs a driver newer than Debian 12's IGC 12504")

DG2 = Target(
    name="dg2", arch="Xe-HPG (Arc A770 / Flex)", sg_size=8, sub_group_sizes=(8, 16, 32),
    dpas=_dpas8(), block2d=(), grf_bytes=32, grf_modes=(128,), slm_bytes=64 * 1024,
    max_workgroup_size=1024, named_barriers=0, xe_cores=32, kind="gpu", ocloc_device="dg2-g10",
    iga_platform="12p71", private_bytes=SCRATCH_BYTES_PER_THREAD // 8, fp64=False,
    device_names=("arc(tm) a", "arc a", "dg2", "flex", "alchemist"),
    # SIMD8 DPAS and no tf32 (measured with IGC 12504, HARDWARE.md); 64 KiB SLM and 32 Xe cores (A770):
    # Intel Arc A-series specification; named barriers are emulated by the driver (HARDWARE.md)
    notes="8-wide DPAS, no 2D block IO (1D block reads / gathers instead), named barriers emulated")

# The records below were checked against the current offline compiler (ocloc 26.27 / IGC 2.40, see
# tests/test_targets_isa.py): vector add, tensor-descriptor copy and, where there is DPAS, a dot.
# Sources named "compute-runtime" are intel/compute-runtime (e37c60b, 2026-08): device_ids_configs_<x>.h,
# release_helpers/caps/caps_<release>.h (dotProductAccumulateSystolicSupported),
# compiler_product_helper_{before_xe_hpc,xe_hpc_and_later}.inl (which cl_intel_* extensions a part
# has), hw_info_<x>.cpp (maxProgrammableSlmSize, KiB per workgroup), gfx_core_helper_<core>.cpp
# (sub-group sizes), release_helper_<x>.cpp (GRF counts) and device_caps.cpp (largest workgroup:
# threads per Xe core x the smallest SIMD, rounded down to a power of 2, at most 1024). "IGC" is
# intel/intel-graphics-compiler (98fff71, 2026-08): NamedBarriersResolution.cpp (hardware named
# barriers: Xe-HPC, Xe2, Xe3), Platform.hpp (supportDpasInstruction, hasExecSize16DPAS,
# supportLargeGRF, supportsVRT), AdaptorOCL/.../SPIRVExtensions.td (SPIR-V extensions per platform).

MAX1100 = Target(
    name="max1100", arch="Xe-HPC, one stack (Data Center GPU Max 1100)", sg_size=16,
    sub_group_sizes=(16, 32), dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64, grf_modes=(128, 256),
    slm_bytes=128 * 1024, max_workgroup_size=1024, named_barriers=32, kind="gpu", send_war_erratum=True,
    # 56 Xe cores, 48 GB HBM2e: Intel's Max 1100 specifications (intel.com sku 232876); the same IP
    # as pvc (12.60), so only its PCI device id tells it apart (ARCHITECTURES); all else is pvc's
    xe_cores=56, ocloc_device="pvc", iga_platform="12p72",
    private_bytes=SCRATCH_BYTES_PER_THREAD // 16,
    device_names=("data center gpu max 1100",),
    notes="one stack of 56 Xe cores; peak bf16 not set (Intel's figure was not at hand)")

LNL = Target(
    name="lnl", arch="Xe2-LPG (Lunar Lake, Arc 140V / 130V)", sg_size=16,
    sub_group_sizes=(16, 32),               # compute-runtime gfx_core_helper_xe2_hpg_core.cpp
    dpas=_dpas16(),                         # Xe2 DPAS as bmg (caps_xe2_hpg.h CapsLnl; tf32: xe_hpc_and_later)
    block2d=_PVC_BLOCK2D,                   # Xe2 2D block tables (MLIR XeGPU uArch IntelGpuXe2.h)
    grf_bytes=64, grf_modes=(128, 256),     # xe2_hpg_core GRF is 16 dwords; release helper {128, 256}
    slm_bytes=128 * 1024,                   # compute-runtime hw_info_lnl.cpp maxProgrammableSlmSize 128
    max_workgroup_size=1024,                # device_caps.cpp: 8 XVE x 8 threads x SIMD16
    named_barriers=32,                      # IGC NamedBarrierHWSupport: IGFX_XE2_HPG_CORE
    xe_cores=8,                             # Arc 140V: 8 Xe2 cores (Arc 130V: 7), Intel Core Ultra 200V
    kind="gpu", ocloc_device="lnl-m",       # ocloc 26.27 `ocloc ids lnl-m`: 20.4.4
    iga_platform="xe2",                     # iga64 -h=p: "2 for xe2/lnl"
    private_bytes=SCRATCH_BYTES_PER_THREAD // 16,
    device_names=("arc(tm) 140v", "arc(tm) 130v", "arc 140v", "arc 130v", "lunar lake"),
    notes="integrated; Intel quotes 67 GPU TOPS (int8) for Arc 140V; no bf16 figure published")

ARL = Target(
    name="arl", arch="Xe-LPG+ (Arrow Lake H, Arc 140T / 130T)", sg_size=8,
    sub_group_sizes=(8, 16, 32),            # compute-runtime gfx_core_helper_base.inl (Xe-HPG core)
    # XMX: caps_xe_lpg.h CapsArlH dotProductAccumulateSystolicSupported; 8 wide (IGC hasExecSize16DPAS is
    # Xe-HPC on; IGC 2.40 writes dpas (8|M0) for arl-h); no tf32 (before_xe_hpc: no _tf32 extension)
    dpas=_dpas8(),
    block2d=(),                             # no cl_intel_subgroup_2d_block_io before Xe-HPC (nor SPIR-V op)
    grf_bytes=32, grf_modes=(128, 256),     # xe_hpg_core GRF is 8 dwords; release helper {128, 256};
                                            # IGC supportLargeGRF; ocloc -ze-opt-large-register-file gives 256
    slm_bytes=64 * 1024,                    # compute-runtime hw_info_arl.cpp maxProgrammableSlmSize 64
    max_workgroup_size=1024,                # device_caps.cpp: 16 XVE x 8 threads x SIMD8
    named_barriers=0,                       # IGC NamedBarrierHWSupport: not Xe-HPG (emulated, 8)
    xe_cores=8,                             # Arc 140T: 8 Xe cores with XMX (130T: 7), Core Ultra 200H
    kind="gpu", ocloc_device="arl-h",       # `ocloc ids arl-h`: 12.74.4
    iga_platform="12p71",                   # iga64 -h=p: "12p71 for xehpg" (Xe-LPG is that ISA)
    private_bytes=SCRATCH_BYTES_PER_THREAD // 8,
    device_names=("arc(tm) 140t", "arc(tm) 130t", "arc 140t", "arc 130t"),
    notes="integrated; Intel quotes 77 GPU TOPS (int8) for Core Ultra 200H; ARL-S/U/HX graphics is mtl")

MTL = Target(
    name="mtl", arch="Xe-LPG (Meteor Lake, Arrow Lake S/U), no XMX", sg_size=8,
    sub_group_sizes=(8, 16, 32),            # compute-runtime gfx_core_helper_base.inl (Xe-HPG core)
    # no XMX: caps_xe_lpg.h CapsMtlU / CapsMtlH leave dotProductAccumulateSystolicSupported off and
    # compiler_release_helper_mtl_{u,h}.cpp turn cl_intel_subgroup_matrix_multiply_accumulate off;
    # IGC supportDpasInstruction excludes METEORLAKE and ARL-S. (IGC 2.40 still writes dpas for
    # mtl-h / arl-s if asked: the ISA cannot be the judge here, the record is.)
    dpas={},
    block2d=(),                             # no cl_intel_subgroup_2d_block_io before Xe-HPC
    grf_bytes=32, grf_modes=(128, 256),     # as arl (release helper {128, 256}, IGC supportLargeGRF)
    slm_bytes=64 * 1024,                    # compute-runtime hw_info_mtl.cpp maxProgrammableSlmSize 64
    max_workgroup_size=1024,                # device_caps.cpp: 16 XVE x 8 threads x SIMD8
    named_barriers=0,                       # IGC NamedBarrierHWSupport: not Xe-HPG
    xe_cores=8,                             # Meteor Lake H: up to 8 Xe cores; Arrow Lake S/HX and U: 4
    kind="gpu", ocloc_device="mtl-h",       # `ocloc ids`: mtl-h 12.71.4; mtl-u, arl-s, arl-u 12.70.4
    iga_platform="12p71",
    private_bytes=SCRATCH_BYTES_PER_THREAD // 8,
    device_names=("meteor lake",),
    notes="integrated; no DPAS (xl.dot is a compile error), no 2D block IO, named barriers emulated")

PTL = Target(
    name="ptl", arch="Xe3-LPG (Panther Lake, Arc B390 / B370)", sg_size=16,
    sub_group_sizes=(16, 32),               # compute-runtime gfx_core_helper_xe3_core.cpp
    # caps_xe3.h dotProductAccumulateSystolicSupported; tf32 (xe_hpc_and_later); no fp8 DPAS before
    # Xe3P (IGC hasFP8Dpas); shapes as Xe2
    dpas=_dpas16(),
    block2d=_PVC_BLOCK2D,                   # as Xe2: IGC's wider 2D block forms start at Xe3P (Platform.hpp)
    # GRF 16 dwords (xe3_core); Xe3 has variable register counts 32..256 in steps of 32 (release_helper_
    # ptl_h.cpp {32, 64, 96, 128, 160, 192, 256}; IGC supportsVRT), which IGC picks itself without a
    # GRF option (it chose 32..96 for small kernels); xekern asks for 128 or 256, which ocloc honours
    grf_bytes=64, grf_modes=(128, 256),
    slm_bytes=128 * 1024,                   # compute-runtime hw_info_ptl.cpp maxProgrammableSlmSize 128
    max_workgroup_size=1024,                # device_caps.cpp: 8 XVE x 10 threads x SIMD16 = 1280 -> 1024
    named_barriers=32,                      # IGC NamedBarrierHWSupport: IGFX_XE3_CORE
    xe_cores=12,                            # Arc B390: 12 Xe3 cores (Intel, Core Ultra series 3); 4-Xe parts
    kind="gpu", ocloc_device="ptl-h",       # `ocloc ids ptl-h`: 30.0.4
    iga_platform="xe3",                     # iga64 -h=p: "3 for xe3/ptl"
    private_bytes=SCRATCH_BYTES_PER_THREAD // 16,
    device_names=("arc(tm) b390", "arc(tm) b370", "arc b390", "arc b370", "panther lake"),
    notes="integrated; Intel quotes 120 GPU TOPS (int8) for the 12-Xe part; variable GRF (VRT)")

CPU = Target(
    name="cpu", arch="Intel OpenCL CPU device, 16-wide GPU model", sg_size=16,
    sub_group_sizes=(4, 8, 16, 32, 64), dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64,
    grf_modes=(128,), slm_bytes=256 * 1024, max_workgroup_size=8192, named_barriers=32, xe_cores=0,
    private_bytes=PVC.private_bytes, kind="cpu", model="pvc",
    notes="runs PVC's lane-level code; DPAS and 2D block IO are emulated exactly with shuffles and loads")

CPU8 = Target(
    name="cpu8", arch="Intel OpenCL CPU device, 8-wide GPU model", sg_size=8,
    sub_group_sizes=(4, 8, 16, 32, 64), dpas=_dpas8(), block2d=(), grf_bytes=32, grf_modes=(128,),
    slm_bytes=256 * 1024, max_workgroup_size=8192, named_barriers=32, xe_cores=0, kind="cpu", model="dg2",
    private_bytes=DG2.private_bytes,
    notes="runs DG2's lane-level code (8-wide DPAS emulated; no 2D block IO, like DG2)")

TARGETS: Dict[str, Target] = {t.name: t for t in (PVC, MAX1100, BMG, LNL, PTL, DG2, ARL, MTL, CPU, CPU8)}


# ---- which record a device is ---------------------------------------------------------------------

class TargetWarning(UserWarning):
    """A GPU xekern has no record for was given the record of the nearest older family it knows."""


class IpVersion(NamedTuple):
    """A GPU's graphics IP version (GMD id) as Level Zero's ``ze_device_ip_version_ext_t`` and OpenCL's
    ``CL_DEVICE_IP_VERSION_INTEL`` report it: one uint32 of architecture (bits 31..22), release
    (21..14) and revision (5..0) (compute-runtime's ``HardwareIpVersion``; ``ocloc ids`` prints them
    as ``20.4.4``; DG1's ``12.10.0`` is 50495488, ocloc's own example).

        >>> IpVersion.decode(0x05010004), str(IpVersion.decode(0x05010004))
        (IpVersion(arch=20, release=4, revision=4), '20.4.4')
    """

    arch: int
    release: int
    revision: int

    @classmethod
    def decode(cls, raw: int) -> "IpVersion":
        return cls((raw >> 22) & 0x3FF, (raw >> 14) & 0xFF, raw & 0x3F)

    @classmethod
    def of(cls, value) -> Optional["IpVersion"]:
        """An ``IpVersion`` from the raw uint32, a ``(arch, release, revision)`` tuple or ``"20.4.4"``;
        None for None or 0 (a driver that does not report one)."""
        if value is None or value == 0:
            return None
        if isinstance(value, str):
            value = tuple(int(x) for x in value.split("."))
        if isinstance(value, int):
            return cls.decode(value)
        return cls(*(tuple(value) + (0, 0))[:3])

    def __str__(self) -> str:
        return f"{self.arch}.{self.release}.{self.revision}"


@dataclass(frozen=True)
class Architecture:
    """One row of the architecture table: which record serves the GPUs of some IP releases (every
    revision of each ``(arch, release)``) and of some PCI device ids."""

    target: str
    parts: str
    releases: Tuple[Tuple[int, int], ...]
    device_ids: Tuple[int, ...] = ()
    source: str = ""


# IP releases: ocloc 26.27's `ocloc ids <device>` (compute-runtime's AOT table) and intel/llvm's
# sycl/source/detail/device_impl.cpp (get_architecture: IP version -> intel_gpu_*); device ids:
# compute-runtime device_ids_configs_<x>.h and dll/devices/devices_base.inl (2026-08). GPUs of a
# release in no row (PVC-VG 12.61, Wildcat Lake 30.3, Nova Lake 30.4/30.5/35.10, Crescent Island
# 35.11) get the nearest older row's record with a TargetWarning; Xe-LP (12.0-12.10) and older
# match no row: xekern has no record for them.
ARCHITECTURES: List[Architecture] = [
    Architecture("dg2", "Arc A-series, Data Center GPU Flex (DG2 G10/G11/G12)", ((12, 55), (12, 56), (12, 57)),
                 (0x4F80, 0x4F81, 0x4F82, 0x4F83, 0x4F84, 0x4F85, 0x4F86, 0x4F87, 0x4F88, 0x5690, 0x5691,
                  0x5692, 0x5693, 0x5694, 0x5695, 0x5696, 0x5697, 0x56A0, 0x56A1, 0x56A2, 0x56A3, 0x56A4,
                  0x56A5, 0x56A6, 0x56AF, 0x56B0, 0x56B1, 0x56B2, 0x56B3, 0x56BA, 0x56BB, 0x56BC, 0x56BD,
                  0x56BE, 0x56BF, 0x56C0, 0x56C1, 0x56C2),
                 "compute-runtime xe_hpg_core/dg2/device_ids_configs_dg2.h; ocloc ids dg2-g10/g11/g12"),
    Architecture("pvc", "Data Center GPU Max 1550 / 1450 / 1350 (Ponte Vecchio)", ((12, 60),),
                 (0x0BD0, 0x0BD5, 0x0BD6, 0x0BD7, 0x0BD8, 0x0B69),
                 # (0x0B6E, "Max 1100C" in devices_base.inl, is left to the IP release: its Xe-core
                 # count was not found, so it is neither claimed for pvc nor for max1100)
                 "compute-runtime xe_hpc_core/pvc/device_ids_configs_pvc.h; ocloc ids pvc: 12.60.x"),
    Architecture("max1100", "Data Center GPU Max 1100 (one stack)", (),
                 (0x0BD9, 0x0BDA, 0x0BDB),
                 "compute-runtime dll/devices/devices_base.inl names these three 'Max 1100'"),
    Architecture("mtl", "Meteor Lake U/H, Arrow Lake S/HX and U graphics (Xe-LPG, no XMX)", ((12, 70), (12, 71)),
                 (0x7D40, 0x7D45, 0x7D55, 0x7DD5, 0x7D67, 0x7D41),
                 "compute-runtime xe_hpg_core/xe_lpg/device_ids_configs_xe_lpg.h (mtlm, mtlp); ocloc ids "
                 "mtl-u, arl-s, arl-u: 12.70.4, mtl-h: 12.71.4"),
    Architecture("arl", "Arrow Lake H graphics (Xe-LPG+, with XMX)", ((12, 74),), (0x7D51, 0x7DD1),
                 "compute-runtime xe_lpg/device_ids_configs_xe_lpg_additional.inl (arl); ocloc ids arl-h: 12.74.4"),
    Architecture("bmg", "Arc B-series, Arc Pro B-series (Battlemage G21/G31)", ((20, 1), (20, 2)),
                 (0xE202, 0xE209, 0xE20B, 0xE20C, 0xE20D, 0xE210, 0xE211, 0xE212, 0xE215, 0xE216, 0xE220,
                  0xE221, 0xE222, 0xE223),
                 "compute-runtime xe2_hpg_core/bmg/definitions/device_ids_configs_bmg.h; ocloc ids bmg-g21, bmg-g31"),
    Architecture("lnl", "Lunar Lake graphics (Core Ultra 200V)", ((20, 4),), (0x6420, 0x64A0, 0x64B0),
                 "compute-runtime xe2_hpg_core/lnl/device_ids_configs_lnl.h; ocloc ids lnl-m: 20.4.4"),
    Architecture("ptl", "Panther Lake H/U graphics (Core Ultra series 3)", ((30, 0), (30, 1)),
                 (0xB080, 0xB081, 0xB082, 0xB083, 0xB084, 0xB085, 0xB086, 0xB087, 0xB08F, 0xB0A0, 0xB0B0,
                  0xB090),
                 "compute-runtime xe3_core/ptl/definitions/device_ids_configs_ptl.h; ocloc ids ptl-h: 30.0.4, "
                 "ptl-u: 30.1.0"),
]

# unnamed devices are "Intel(R) Graphics [0x7d55]" (compute-runtime device_get_device_name.cpp)
_NAME_DEVICE_ID = re.compile(r"\[0x([0-9a-fA-F]{4})\]")


def register_target(t: Target, replace: bool = False, releases: Tuple[Tuple[int, int], ...] = (),
                    device_ids: Tuple[int, ...] = ()) -> Target:
    """Add a record to ``TARGETS`` (``xk.targets``): a new GPU is one record. It checked itself when
    it was built; ``target_for`` picks it for devices of the IP ``releases`` (``(arch, release)``
    pairs, every revision) and PCI ``device_ids`` given here (a row of ``ARCHITECTURES``), or whose
    name contains one of its ``device_names``.

        >>> import dataclasses, xekern as xk
        >>> t = xk.register_target(dataclasses.replace(xk.targets["bmg"], name="bmg-g31", xe_cores=32),
        ...                        releases=((20, 2),), device_ids=(0xE220,))   # doctest: +SKIP
    """
    if not isinstance(t, Target):
        raise TypeError(f"register_target takes a Target record, got {type(t).__name__}")
    if t.name in TARGETS and not replace:
        raise TargetError(f"target {t.name!r} already exists (pass replace=True to replace it)")
    TARGETS[t.name] = t
    if releases or device_ids:
        # first in the table: a registered row wins over a built-in one for the same release or id
        ARCHITECTURES.insert(0, Architecture(t.name, t.arch, tuple(releases), tuple(device_ids), "register_target"))
    return t


@dataclass(frozen=True)
class Match:
    """How a device was matched: its record (None: none), by what, and the warning it deserves."""

    target: Optional[Target]
    how: str          # "cpu", "device id", "ip version", "nearest older", "name", "sub-group sizes", "none"
    warning: str = ""


def _gpu_rows():
    return [r for r in ARCHITECTURES if r.target in TARGETS and TARGETS[r.target].kind == "gpu"]


def identify(name: str, is_cpu: bool, sub_group_sizes: Tuple[int, ...] = (), ip_version=None,
             device_id: Optional[int] = None) -> Match:
    """Which record serves a device, from what its driver says about it: the PCI ``device_id`` (also
    read from names like ``Intel(R) Graphics [0x7d55]``), else the IP version (``IpVersion.of``), else
    the name (``device_names``, the longest piece found wins), else 8-wide-only sub-groups (``dg2``).
    A GPU whose IP release is in no row gets the nearest older row's record, with a warning."""
    if is_cpu:
        return Match(TARGETS["cpu"], "cpu")
    ip = IpVersion.of(ip_version)
    if device_id is None:
        m = _NAME_DEVICE_ID.search(name or "")
        device_id = int(m.group(1), 16) if m else None
    rows = _gpu_rows()
    if device_id is not None:
        for r in rows:
            if device_id in r.device_ids:
                return Match(TARGETS[r.target], "device id")
    if ip is not None:
        release = (ip.arch, ip.release)
        for r in rows:
            if release in r.releases:
                return Match(TARGETS[r.target], "ip version")
        older = [(rel, r) for r in rows for rel in r.releases if rel < release]
        if older:
            t = TARGETS[max(older, key=lambda o: o[0])[1].target]
            ident = f"IP version {ip}" + (f", PCI device id 0x{device_id:04x}" if device_id is not None else "")
            gpus = ", ".join(n for n, x in TARGETS.items() if x.kind == "gpu")
            return Match(t, "nearest older", (
                f"xekern has no target record for the Intel GPU {name!r} ({ident}); it compiles for "
                f"{t.name!r} ({t.arch}), the nearest older family it knows, which may lack features this "
                f"GPU has or claim ones it lacks. Set XEKERN_TARGET to one of {gpus} to choose the record "
                f"(or pass target= to the launch)."))
    n = (name or "").lower()
    hits = [(len(k), t) for t in TARGETS.values() if t.kind == "gpu" for k in t.device_names if k in n]
    if hits:
        return Match(max(hits, key=lambda h: h[0])[1], "name")
    if 8 in sub_group_sizes and 16 not in sub_group_sizes:
        return Match(TARGETS["dg2"], "sub-group sizes")
    return Match(None, "none")


def match_device(name: str, is_cpu: bool, sub_group_sizes: Tuple[int, ...] = (), ip_version=None,
                 device_id: Optional[int] = None) -> Optional[Target]:
    """The record of a device (``identify``), or None; warns (``TargetWarning``) when a GPU gets the
    record of the nearest older family.

        >>> match_device("Intel(R) Arc(TM) Graphics", False, (16, 32), ip_version="20.4.4").name
        'lnl'
    """
    m = identify(name, is_cpu, sub_group_sizes, ip_version, device_id)
    if m.warning:
        warnings.warn(m.warning, TargetWarning, stacklevel=2)
    return m.target


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(TARGETS)}") from None
