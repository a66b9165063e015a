"""Codegen rules (table ``common``) for tensor descriptors and named barriers. How a descriptor's
loads, stores and prefetches and a DPAS become instructions is each emitter's own table
(``rules_cpu``, ``rules_igc``, ``rules_spirv_ext``, ``rules_visa``)."""
from __future__ import annotations

from llvmlite import ir as ll

from ... import ir
from .block2d import new_descriptor
from .core import CodeGen, NdDesc, rule


# ---- descriptors ---------------------------------------------------------------------------------

@rule(ir.CreateNdTDescOp)
def _create_nd(cg: CodeGen, op: ir.CreateNdTDescOp):
    return [new_descriptor(cg, op)]


@rule(ir.UpdateNdOffsetOp)
def _update_nd(cg: CodeGen, op: ir.UpdateNdOffsetOp):
    d: NdDesc = cg.get(op.operands[0])
    deltas = [cg.to_i32(cg.get(v)) for v in op.operands[1:]]
    return [NdDesc(d.base, d.shape, d.strides, [cg.b.add(o, x) for o, x in zip(d.offsets, deltas)], d.type,
                   d.block_io)]


# ---- named barriers ---------------------------------------------------------------------------------

@rule(ir.AllocNBarrierOp)
def _alloc_nbarrier(cg: CodeGen, op):
    cg.nbarriers = op.attrs["count"]
    return []


@rule(ir.InitNBarrierOp)
def _init_nbarrier(cg: CodeGen, op):
    return [("wg", None)]  # no hardware named barriers (the CPU device): the workgroup barrier is stronger


@rule(ir.NBarrierArriveOp)
def _nbarrier_arrive(cg: CodeGen, op):
    # arriving publishes this subgroup's writes; the wait below is where subgroups meet
    cg.call("_Z21__spirv_MemoryBarrierii", ll.VoidType(), [cg.i32(2), cg.i32(0x100 | 0x200 | 0x8)])
    return []


@rule(ir.NBarrierWaitOp)
def _nbarrier_wait(cg: CodeGen, op):
    kind, ptr = cg.get(op.operands[0])
    if kind == "hw":  # (rules_igc: GPUs with hardware named barriers)
        cg.call("_Z24work_group_named_barrierPU3AS314__namedBarrierj", ll.VoidType(), [ptr, cg.i32(3)],
                convergent=True)
    else:
        cg.call("_Z7barrierj", ll.VoidType(), [cg.i32(3)], convergent=True)
    return []
