"""The compilation pipeline: one ordered list of named passes, the IR verified after each.

The compile driver (``xekern/compiler.py``'s ``compile_kernel``) runs them between the frontend and
codegen, and returns every stage's text (``kernel.asm``) and the SPIR-V.

    xegpu ─drop-breakpoints─▶ ─fp-fusion─▶ ─block-pointers─▶ ─surface-rules─▶ ─transpose-loads─▶
          ─slm-transpose─▶ ─layout─▶ ─narrow-conversions─▶ ─hoist-conversions─▶ ─global-order─▶
          ─split-edges─▶ ─sg─▶ ─slm-barriers─▶ ─inst─▶ ─merge-block-messages─▶ ─lane─▶
          ─defer-reductions─▶ ─strip-mine─▶ ─coalesce─▶ ─sink-loads─▶ ─emitter-decisions─▶ ─codegen─▶ llir
          ─LLVM + SPIR-V backend─▶ spirv

Each pass runs at the levels it lists; a function meets a pass at the level it has then (``wg``
from the frontend, ``sg`` after ``sg``, ...). A subgroup-level kernel's frontend IR is at ``sg``
without layouts: it enters at ``layout`` (which gives a subgroup's layouts, no ``sg_layout``); a
lane-level kernel's is at ``lane``. Every stage's text is ``kernel.asm[stage]`` under the pass's name.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from .. import ir
from ..errors import CompilationError, stage_error
from ..ir.core import IRError
from ..targets import Target
from . import (block_pointers, blocking, coalesce, defer_reductions, drop_breakpoints, emitter_decisions, fp_fusion,
               global_order, hoist_conversions, merge_block_messages, narrow_conversions, propagate_layout,
               sg_to_lane, sink_loads, slm_barriers, slm_transpose, split_edges, strip_mine, surface_rules, transpose_loads,
               wg_to_sg)
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
    # checked descriptor, or one bool for all); None: all yes (a launch verifies them before it uses
    # the kernel)
    surfaces: Union[None, bool, Tuple[bool, ...]] = None
    # a float multiply feeding one add as one fma (pass fp-fusion; Triton's enable_fp_fusion)
    fp_fusion: bool = True

    def __post_init__(self):
        if self.emitter is None:
            object.__setattr__(self, "emitter", emitters.choose(self.target, emitters.default_driver(self.target)))

    @property
    def key(self) -> tuple:
        """What distinguishes two compilations besides source and signature."""
        return (self.target.name, self.num_subgroups, self.grf_mode, self.debug, self.opt_level, self.emitter.key,
                self.level, self.surfaces, self.fp_fusion)

    @property
    def sg_size(self) -> int:
        return self.target.sg_size

    @property
    def workgroup_size(self) -> int:
        return self.num_subgroups * self.target.sg_size


# The IR levels, from the top; a kernel's frontend builds IR at "wg", "sg" or "lane" (@xk.jit(level=...)).
LEVELS = ("wg", "sg", "inst", "lane")

class Pass(NamedTuple):
    """A named pass: the stage name ``kernel.asm`` prints it under, the levels it runs at, the level
    it leaves the function at (None: the one it found), and its entry point ``fn(func, options)``."""

    name: str
    runs_at: Tuple[str, ...]
    makes: Optional[str]
    fn: Callable


# The IR passes, in order. A pass runs when the function is at one of its levels.
PASSES: List[Pass] = [
    Pass("drop-breakpoints", LEVELS, None, drop_breakpoints.run),
    Pass("fp-fusion", LEVELS, None, fp_fusion.run),
    Pass("block-pointers", ("wg",), None, block_pointers.run),
    Pass("surface-rules", LEVELS, None, surface_rules.run),            # marks descriptors
    Pass("transpose-loads", ("wg",), None, transpose_loads.run),
    Pass("slm-transpose", ("wg",), None, slm_transpose.run),
    Pass("layout", ("wg", "sg"), None, propagate_layout.run),          # sg: a subgroup-level kernel's
    Pass("narrow-conversions", ("wg",), None, narrow_conversions.run),
    Pass("hoist-conversions", ("wg",), None, hoist_conversions.run),
    Pass("global-order", ("wg",), None, global_order.run),
    Pass("split-edges", ("wg",), None, split_edges.run),
    Pass("sg", ("wg",), "sg", wg_to_sg.run),
    Pass("slm-barriers", ("sg",), None, slm_barriers.run),
    Pass("inst", ("sg",), "inst", blocking.run),
    Pass("merge-block-messages", ("inst",), None, merge_block_messages.run),
    Pass("lane", ("inst",), "lane", sg_to_lane.run),
    Pass("defer-reductions", ("lane",), None, defer_reductions.run),
    Pass("strip-mine", ("lane",), None, strip_mine.run),
    Pass("coalesce", ("lane",), None, coalesce.run),
    Pass("sink-loads", ("lane",), None, sink_loads.run),
    Pass("emitter-decisions", ("lane",), None, emitter_decisions.run),
]
PASS_NAMES = tuple(p.name for p in PASSES)


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


def passes_for(level: str) -> List[Pass]:
    """The passes a function that starts at ``level`` runs, in order."""
    out = []
    for p in PASSES:
        if level in p.runs_at:
            out.append(p)
            level = p.makes or level
    return out


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
               dump=None, before: Optional[Dict[str, Optional[ir.FuncOp]]] = None) -> ir.FuncOp:
    """Run ``PASSES`` from the function's level (``func.attrs["level"]``, "wg" unless the frontend
    built subgroup or lane IR); record each stage's text in ``asm`` (lazily printable). ``before``
    ({pass name: None}) receives the IR each of those passes was given."""
    level = func.attrs.setdefault("level", "wg")
    ran = ["frontend"]   # the stages so far: an attribute only they add may appear (ir/attrs.py)
    try:
        ir.verify_func(func, ran)
    except IRError as e:
        raise _fail(func, "xegpu", e) from e
    asm["xegpu"] = func
    if level == "lane":
        asm["lane"] = func   # a lane-level kernel's lane stage is its frontend's IR
    for name, _, makes, fn in passes_for(level):
        t0 = time.perf_counter()
        ran.append(name)
        if before is not None and name in before:
            before[name] = func
        try:
            func = fn(func, options)
            if makes is not None and func.attrs.get("level") != makes:
                raise IRError(f"pass {name} left the function at level {func.attrs.get('level')}, not {makes}")
            ir.verify_func(func, ran)
        except (PassError, IRError, ir.LayoutError) as e:
            raise _fail(func, name, e) from e
        timings[name] = time.perf_counter() - t0
        asm[name] = func
        if level == "sg" and name == "layout":
            asm["sg"] = func   # a subgroup-level kernel's sg stage: its IR with a subgroup's layouts
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
