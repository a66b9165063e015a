"""The ``igc-builtins`` emitter's rules, which every GPU emitter layers its own over: 2D block reads
through IGC's ``LSC2DBlockRead``, stores and prefetches as inline vISA (``genisa``), DPAS through
the OpenCL builtins (``dpas_builtin``), hardware named barriers, and ``compile_hint`` as vISA's
``fence_sw``. A tile no block message fits, and every descriptor on a GPU without 2D block IO
(dg2), is accessed element by element; a GPU without DPAS gets the emulation."""
from __future__ import annotations

from llvmlite import ir as ll

from ... import ir
from .block2d import block2d_enabled, block_fits, load_nd
from .core import CodeGen, NdDesc, rule
from .dpas_builtin import dpas_builtin
from .dpas_cpu import dpas_emulated
from .genisa import genisa_read, prefetch_block2d, store_block2d
from .nd_elementwise import store_elementwise

TABLE = "igc-builtins"


@rule(ir.LoadNdOp, table=TABLE)
def _load_nd(cg: CodeGen, op: ir.LoadNdOp):
    return load_nd(cg, op, genisa_read)


@rule(ir.StoreNdOp, table=TABLE)
def _store_nd(cg: CodeGen, op: ir.StoreNdOp):
    d: NdDesc = cg.get(op.tdesc)
    if block2d_enabled(cg, d) and block_fits(cg, op, store=True):
        store_block2d(cg, op, d)
    else:
        store_elementwise(cg, op, d)
    return []


@rule(ir.PrefetchNdOp, table=TABLE)
def _prefetch_nd(cg: CodeGen, op: ir.PrefetchNdOp):
    d: NdDesc = cg.get(op.tdesc)
    if block2d_enabled(cg, d):
        prefetch_block2d(cg, op, d)
    return []  # gathers need no prefetch


@rule(ir.DpasOp, table=TABLE)
def _dpas(cg: CodeGen, op: ir.DpasOp):
    return dpas_builtin(cg, op) if cg.target.has_dpas else dpas_emulated(cg, op)


@rule(ir.InitNBarrierOp, table=TABLE)
def _init_nbarrier(cg: CodeGen, op):
    if not cg.target.named_barriers:  # (dg2 emulates them in the driver: the workgroup barrier is stronger)
        return [("wg", None)]
    count = cg.get(op.operands[1])
    ptr = cg.call("_Z18named_barrier_initi", ll.PointerType(addrspace=3), [count], convergent=True)
    return [("hw", ptr)]


@rule(ir.CompileHintOp, table=TABLE)
def _compile_hint(cg: CodeGen, op):
    """vISA's software fence ``fence_sw`` as inline vISA: IGC's scheduler moves no instruction across
    it and it emits no instruction itself. Measured with IGC 12504 on pvc (tests/test_gpu_isa.py):
    ``a = load; a = a*a+1; hint; b = load`` keeps the multiply before the second load's messages,
    which IGC otherwise issues together with the first ones. It has no operands, so IGC's
    dropping of statements with unprovably-uniform operands (``genisa.inline_asm``) cannot hit it."""
    cg.asm(ll.VoidType(), "fence_sw", "", [])
    return []
