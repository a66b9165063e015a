"""The ``visa`` emitter's rules, over ``igc-builtins``: in workgroup-level kernels, 2D block reads
and prefetches as ``raw_sends`` from payloads built once (``lsc``), DPAS as inline vISA naming its
operands inside the reads (``visa_dpas``) and a K loop's DPAS accumulators in named registers
(its SLM barriers in loops: the common table's, ``visa_barrier``). What inline vISA cannot say
(tf32 DPAS, subgroup-level kernels' reads) stays ``igc-builtins``'."""
from __future__ import annotations

from ... import ir
from .block2d import block2d_enabled, load_nd
from .control import for_loop
from .core import CodeGen, NdDesc, rule
from .dpas_builtin import dpas_builtin
from .lsc import load_named, raw_prefetch, raw_read
from .visa_dpas import dpas_visa, inline_dpas, loop_accumulators

TABLE = "visa"


@rule(ir.LoadNdOp, table=TABLE)
def _load_nd(cg: CodeGen, op: ir.LoadNdOp):
    return load_nd(cg, op, raw_read, named=load_named)


@rule(ir.PrefetchNdOp, table=TABLE)
def _prefetch_nd(cg: CodeGen, op: ir.PrefetchNdOp):
    d: NdDesc = cg.get(op.tdesc)
    if block2d_enabled(cg, d):
        raw_prefetch(cg, op, d)
    return []


@rule(ir.DpasOp, table=TABLE)
def _dpas(cg: CodeGen, op: ir.DpasOp):
    return dpas_visa(cg, op) if inline_dpas(cg, op) else dpas_builtin(cg, op)


@rule(ir.ForOp, table=TABLE)
def _for(cg: CodeGen, op: ir.ForOp):
    return for_loop(cg, op, loop_accumulators(cg, op))
