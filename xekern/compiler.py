"""The compile driver: a kernel's source to SPIR-V for one specialization.

``compile_kernel`` runs every stage in order and records its text in ``kernel.asm``:

    source ─frontend─▶ xegpu ─(lowering.pipeline.PASSES)─▶ lane ─codegen─▶ llir ─LLVM─▶ spirv

It sits above the frontend and the lowering (it calls both) and below the runtime, which calls it
for each specialization a launch needs (``runtime/jit.py``) and for ``compile_offline``. Besides
the SPIR-V it reads off the workgroup IR what a launch must check (``lowering/launch_facts.py``,
``lowering/surface_rules.py``).

    c = compile_kernel(add_kernel, {"x_ptr": xk.pointer(xl.float32), ..., "BLOCK": ConstArg(1024)},
                       Options(xk.get_target("pvc")))           # doctest: +SKIP
    c.asm["layout"], c.spirv
"""
from __future__ import annotations

import time
from typing import Dict

from .errors import CompilationError, stage_error
from .frontend import compile_to_ir
from .lowering import capabilities, llvm as llvm_stage
from .lowering.codegen import (rules_arith, rules_block, rules_cpu, rules_debug, rules_igc,  # noqa: F401
                               rules_memory, rules_private, rules_spirv_ext, rules_visa)  # (they fill the rule tables)
from .lowering.codegen.core import generate
from .lowering.grf import choose_grf_mode
from .lowering.launch_facts import descriptor_extents, written_params
from .lowering.pipeline import Asm, Compiled, Options, llvm_opt_level, run_passes, spirv_text
from .lowering.rewrite import PassError
from .lowering.spirv_asm import lower_asm_calls
from .lowering.surface_rules import surface_checks


def compile_kernel(jit, signature, options: Options, dump=None) -> Compiled:
    """Source -> SPIR-V for one specialization. Raises CompilationError on any user mistake."""
    llvm_stage.prestart()   # LLVM loads in its worker while the frontend and the passes run
    timings: Dict[str, float] = {}
    asm = Asm()
    t0 = time.perf_counter()
    try:
        func = compile_to_ir(jit, signature, options)
        capabilities.check(func, options.target)
    except PassError as e:  # the subgroup-level layouts or lane-level checks of the frontend; capabilities
        raise stage_error("xegpu", e) from e
    timings["frontend"] = time.perf_counter() - t0
    extents = descriptor_extents(func)  # before the passes rewrite the function
    writes = written_params(func)
    if dump is not None:
        dump("xegpu", func)
    before = {"surface-rules": None}   # (its checks: of descriptors the frontend and block-pointers made)
    lane = run_passes(func, options, asm, timings, dump, before)
    checks, _ = surface_checks(before["surface-rules"] or func, options.target)
    grf_mode = choose_grf_mode(lane, options)
    asm["emitter"] = options.emitter.describe()
    t0 = time.perf_counter()
    try:
        cg = generate(lane, options)
    except PassError as e:
        raise stage_error("codegen", e) from e
    t1 = time.perf_counter()
    timings["codegen"] = t1 - t0
    llir = cg.text()
    timings["llir_text"] = time.perf_counter() - t1
    asm["llir"] = llir
    opt_level = llvm_opt_level(lane, options)
    t0 = time.perf_counter()
    try:
        spirv, _ = llvm_stage.to_spirv(llir, opt_level, want_llir=False)
    except llvm_stage.LLVMError as e:
        raise CompilationError(f"LLVM could not compile kernel '{func.name}' for {options.target.name}: {e}\n"
                               f"(this is a bug in xekern's codegen; please report it with the kernel)") from None
    spirv = lower_asm_calls(spirv)
    timings["llvm"] = time.perf_counter() - t0
    asm["llir"] = lambda: llvm_stage.optimized_llir(llir, opt_level)  # printed when asked for (another LLVM run)
    asm["llir_unoptimized"] = llir
    asm["spirv"] = lambda: spirv_text(spirv)
    if dump is not None:
        dump("llir", asm["llir"])
    return Compiled(func.name, spirv, asm, options.workgroup_size, options.sg_size, cg.slm_bytes, timings,
                    extents, grf_mode, writes, options.emitter, checks)
