"""The compilation pipeline: one ordered list of named stages, the IR verified after each.

The compile driver (``xekern/compiler.py``'s ``compile_kernel``) runs them between the frontend and
codegen, and returns every stage's text (``kernel.asm``) and the SPIR-V.

    xegpu ─surface-rules─▶ surface-rules ─slm-transpose─▶ slm-transpose ─propagate-layout─▶ layout
          ─wg-to-sg─▶ sg ─blocking─▶ inst
          ─sg-to-lane─▶ lane ─codegen─▶ llir ─LLVM O2 + SPIR-V backend─▶ spirv

A subgroup-level kernel's frontend IR ("xegpu") is already at "sg" (it runs blocking and sg-to-lane), a
lane-level kernel's at "lane" (it goes straight to codegen).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from .. import ir
from ..errors import CompilationError, stage_error
from ..ir.core import IRError
from ..targets import Target
from . import blocking, propagate_layout, sg_to_lane, slm_transpose, surface_rules, wg_to_sg
from . import emitters
from .emitters import Emitter
from .rewrite import PassError


@dataclass(frozen=True)
class Options:
    """What a compilation depends on besides the source and the signature."""

    target: Target
    num_subgroups: int = 4
    grf_mode: Optional[int] = None     # 128 or 256 registers per thread (GPU targets); None: automatic
    debug: bool = False                # keep device_print / device_assert
    opt_level: Optional[int] = None    # LLVM's optimization level; None: automatic (llvm_opt_level)
    level: str = "wg"                  # the kernel's programming level (@xk.jit(level=...)): wg, sg or lane
    # how codegen reaches the hardware through the driver's compiler (lowering/emitters.py); None: the
    # best emitter for the target and the current compiler (emitters.default_driver)
    emitter: Optional[Emitter] = None
    # the launch's answers to the kernel's surface checks (lowering/surface_rules.py, one bool per
    # checked descriptor); None: all yes (a launch verifies them before it uses the kernel)
    surfaces: Optional[Tuple[bool, ...]] = None

    def __post_init__(self):
        if self.emitter is None:
            object.__setattr__(self, "emitter", emitters.choose(self.target, emitters.default_driver(self.target)))

    @property
    def key(self) -> tuple:
        """What distinguishes two compilations besides source and signature."""
        return (self.target.name, self.num_subgroups, self.grf_mode, self.debug, self.opt_level, self.emitter.key,
                self.level, self.surfaces)

    @property
    def sg_size(self) -> int:
        return self.target.sg_size

    @property
    def workgroup_size(self) -> int:
        return self.num_subgroups * self.target.sg_size


# The IR levels, from the top; a kernel's frontend builds IR at "wg", "sg" or "lane" (@xk.jit(level=...)).
LEVELS = ("wg", "sg", "inst", "lane")

# The IR passes, in order: (stage name printed by kernel.asm, the level it consumes, pass entry point).
# A function enters at its level and runs every pass from the first one that consumes that level.
PASSES: List[Tuple[str, str, Callable]] = [
    ("surface-rules", "lane", surface_rules.run),   # (every level: it marks descriptors, keeping the level)
    ("slm-transpose", "wg", slm_transpose.run),
    ("layout", "wg", propagate_layout.run),
    ("sg", "wg", wg_to_sg.run),
    ("inst", "sg", blocking.run),
    ("lane", "inst", sg_to_lane.run),
]


def llvm_opt_level(lane: ir.FuncOp, options: Options) -> int:
    """The LLVM pipeline run before the SPIR-V backend, unless the user chose one (``opt_level=``).

    The driver (IGC, the OpenCL CPU compiler) optimizes the SPIR-V again, so LLVM's passes are
    only worth their time where they help the driver:
    * GPU targets: O0. IGC does its own; LLVM's passes before it only raise register pressure
      (the flagship GEMM spills at O1 on pvc, not at O0).
    * CPU, kernels with a DPAS (emulated with loops over K): O0. Measured on the OpenCL CPU device
      (512^3 GEMM, examples/gemm's first CPU config): bf16 kernel 36 ms at O0 vs 119-178 ms at O1,
      the driver's build 2.7-4.0 s vs 7.5-10.1 s; f32 13 ms vs 15-32 ms; xekern's own compile
      halves (LLVM O1 was most of it).
    * CPU, other kernels: O1 (O2 costs twice the time and gives the same SPIR-V size).
    """
    if options.opt_level is not None:
        return options.opt_level
    if options.target.kind == "gpu":
        return 0
    return 0 if any(isinstance(o, ir.DpasOp) for o in lane.walk()) else 1


def passes_from(level: str) -> List[Tuple[str, str, Callable]]:
    """The passes a function at ``level`` runs: those consuming that level or one below it."""
    return [p for p in PASSES if LEVELS.index(p[1]) >= LEVELS.index(level)]


@dataclass
class Compiled:
    """A compiled kernel: its SPIR-V, the text of every stage, and facts the launcher needs."""

    name: str
    spirv: bytes
    asm: "Asm"
    workgroup_size: int
    sg_size: int
    slm_bytes: int
    timings: Dict[str, float] = field(default_factory=dict)
    extents: list = field(default_factory=list)  # descriptor extents checked at launch (lowering/launch_facts.py)
    grf_mode: Optional[int] = None  # registers per thread the GPU driver is asked for (lowering/grf.py); None: CPU
    writes: dict = field(default_factory=dict)  # pointer parameters the kernel stores to (lowering/launch_facts.py)
    emitter: Optional[Emitter] = None  # how its code was emitted (lowering/emitters.py)
    surfaces: list = field(default_factory=list)  # surface checks a launch answers (lowering/surface_rules.py)


def _fail(func: ir.FuncOp, stage: str, e: Exception) -> CompilationError:
    return stage_error(stage, e)


def run_passes(func: ir.FuncOp, options: Options, asm: "Asm", timings: Dict[str, float],
               dump=None) -> ir.FuncOp:
    """Run ``PASSES`` from the function's level (``func.attrs["level"]``, "wg" unless the frontend
    built subgroup or lane IR); record each stage's text in ``asm`` (lazily printable)."""
    level = func.attrs.setdefault("level", "wg")
    try:
        ir.verify_func(func)
    except IRError as e:
        raise _fail(func, "xegpu", e) from e
    asm["xegpu"] = func
    if level != "wg":  # the frontend built this level's IR: it is also that stage's text
        asm[level] = func
    for name, _consumes, fn in passes_from(level):
        t0 = time.perf_counter()
        try:
            func = fn(func, options)
            ir.verify_func(func)
        except (PassError, IRError, ir.LayoutError) as e:
            raise _fail(func, name, e) from e
        timings[name] = time.perf_counter() - t0
        asm[name] = func
        if dump is not None:
            dump(name, asm[name])
    return func


class Asm(Mapping):
    """``kernel.asm``: stage name -> text. IR stages are printed on first access, since printing
    every stage of every compile would cost more than compiling."""

    def __init__(self):
        self._items: Dict[str, object] = {}

    def __setitem__(self, stage: str, value) -> None:
        self._items[stage] = value

    def __getitem__(self, stage: str) -> str:
        v = self._items[stage]
        if isinstance(v, ir.FuncOp):
            v = self._items[stage] = ir.print_func(v)
        elif callable(v):
            v = self._items[stage] = v()
        return v

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return f"Asm({', '.join(self._items)})"


def spirv_text(spirv: bytes) -> str:
    """SPIR-V disassembly with ``spirv-dis`` (the offline toolchain's, else one on PATH), else a note."""
    import subprocess
    from ..tools.toolchain import INSTALL_COMMAND, spirv_tool
    tool = spirv_tool("spirv-dis")
    if tool is None:
        return f"; {len(spirv)} bytes of SPIR-V (for a disassembly: {INSTALL_COMMAND})\n"
    r = subprocess.run(tool + ["-", "-o", "-"], input=spirv, capture_output=True)
    if r.returncode == 0:
        return r.stdout.decode()
    from ..tools import spirv as sp
    intel = sp.ops(spirv)
    if not intel:
        return f"; spirv-dis failed: {r.stderr.decode()}"
    # an older spirv-dis stops at the 2D block IO / MMA ops: show the rest, and those ops by name
    r = subprocess.run(tool + ["-", "-o", "-"], input=sp.without_intel_ops(spirv), capture_output=True)
    head = "".join(f"; {o.name} {' '.join(f'%{x}' for x in o.operands)}\n" for o in intel)
    return (f"; this spirv-dis does not know {', '.join(sorted(set(sp.extensions(spirv)) & set(sp.EXTENSIONS)))}; "
            f"their ops (ids as below):\n{head}" + r.stdout.decode())
