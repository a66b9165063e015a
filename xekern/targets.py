"""Targets as data: one record per Intel GPU family, plus the CPU device that models one.

Every hardware number a pass or codegen needs lives here, with where it comes from. Passes
receive a ``Target``; only the runtime asks a device what it is (``target_for``). A new Intel
GPU is one more record (and, at most, new rows in codegen's intrinsic tables).

Example::

    >>> import xekern as xk
    >>> xk.targets["pvc"].dpas_shape(xk.language.bfloat16)
    DpasShape(m=8, n=16, k=16)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from .ir import types as T
from .ir.types import DType


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
    spirv_block_io: bool = False    # current drivers: SPV_INTEL_2d_block_io and subgroup MMA ops
    # operand dtypes whose dot is plain FMAs over the whole subgroup tile instead of DPAS blocks
    # (the CPU device: it has no tf32 engine, and an unblocked K loop is its natural GEMM kernel)
    fma_dot: Tuple[str, ...] = ()
    # merge adjacent instruction blocks into one 2D block message (blocking's array_length / stacked
    # blocks). Off for pvc: IGC 12504 copies every sub-block out of a merged read, which cost more
    # than the message it saves (flagship bf16 GEMM K-loop: 227 instructions merged, 153 not)
    merge_block2d: bool = False

    peak_tflops_bf16: Optional[float] = None
    notes: str = ""

    def __post_init__(self):
        assert self.sg_size in self.sub_group_sizes, f"{self.name}: sg_size not supported"
        for d, s in self.dpas.items():
            assert s.n == self.sg_size or self.kind == "cpu", f"{self.name}: DPAS N must equal the sub-group size"
            assert 1 <= s.m <= 8, f"{self.name}: DPAS repeat count is 1..8"
        assert self.slm_bytes > 0 and self.max_workgroup_size >= self.sg_size

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
    max_workgroup_size=1024, named_barriers=32, xe_cores=128, kind="gpu", ocloc_device="pvc",
    iga_platform="12p72", peak_tflops_bf16=839.0,
    notes="2 stacks x 64 Xe cores, 1.6 GHz, 512 KiB L1/SLM per Xe core (HARDWARE.md)")

BMG = Target(
    name="bmg", arch="Xe2-HPG (Arc B580)", sg_size=16, sub_group_sizes=(16, 32),
    dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64, grf_modes=(128, 256), slm_bytes=128 * 1024,
    max_workgroup_size=1024, named_barriers=32, xe_cores=20, kind="gpu", ocloc_device="bmg",
    iga_platform="xe2", peak_tflops_bf16=116.7, spirv_block_io=True, merge_block2d=True,
    notes="20 Xe2 cores, 456 GB/s; needs a driver newer than this workplace's IGC 12504")

DG2 = Target(
    name="dg2", arch="Xe-HPG (Arc A770 / Flex)", sg_size=8, sub_group_sizes=(8, 16, 32),
    dpas=_dpas8(), block2d=(), grf_bytes=32, grf_modes=(128,), slm_bytes=64 * 1024,
    max_workgroup_size=1024, named_barriers=0, xe_cores=32, kind="gpu", ocloc_device="dg2-g10",
    iga_platform="12p71",
    notes="8-wide DPAS, no 2D block IO (1D block reads / gathers instead), named barriers emulated")

CPU = Target(
    name="cpu", arch="Intel OpenCL CPU device, 16-wide GPU model", sg_size=16,
    sub_group_sizes=(4, 8, 16, 32, 64), dpas=_dpas16(), block2d=_PVC_BLOCK2D, grf_bytes=64,
    grf_modes=(128,), slm_bytes=256 * 1024, max_workgroup_size=8192, named_barriers=32, xe_cores=0,
    kind="cpu", model="pvc", fma_dot=("f32",),
    notes="runs PVC's lane-level code; DPAS and 2D block IO are emulated exactly with shuffles and loads")

CPU8 = Target(
    name="cpu8", arch="Intel OpenCL CPU device, 8-wide GPU model", sg_size=8,
    sub_group_sizes=(4, 8, 16, 32, 64), dpas=_dpas8(), block2d=(), grf_bytes=32, grf_modes=(128,),
    slm_bytes=256 * 1024, max_workgroup_size=8192, named_barriers=32, xe_cores=0, kind="cpu", model="dg2",
    notes="runs DG2's lane-level code (8-wide DPAS emulated; no 2D block IO, like DG2)")

TARGETS: Dict[str, Target] = {t.name: t for t in (PVC, BMG, DG2, CPU, CPU8)}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(TARGETS)}") from None
