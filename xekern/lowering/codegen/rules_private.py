"""Codegen of private memory (``gpu.alloc_private``, ``memref.load`` / ``memref.store``): an ``alloca``
in the kernel's entry block, in LLVM's private address space 0, which the SPIR-V backend emits as an
``OpVariable`` of ``Function`` storage. IGC keeps a small array in registers (dynamic indices become
indirect register access) or puts it in scratch memory; the ISA tells which."""
from __future__ import annotations

from llvmlite import ir as ll

from ... import ir
from .core import CodeGen, I1, I32, mem_type, rule


@rule(ir.AllocPrivateOp)
def _alloc_private(cg: CodeGen, op: ir.AllocPrivateOp):
    t = op.result.type
    ty = ll.ArrayType(mem_type(t.elem), t.numel)

    def make():
        slot = cg.b.alloca(ty, name="private")
        slot.align = max(4, t.elem.itemsize)
        return slot
    return [cg.cached(("alloc_private", id(op)), make)]   # at entry: once per work item, whole kernel


def _element(cg: CodeGen, arr: ir.Value, indices):
    """A pointer to the element at ``indices`` (row-major, i32 arithmetic)."""
    t = arr.type
    flat = None
    for v, n in zip(indices, t.shape):
        i = cg.to_i32(cg.get(v))
        flat = i if flat is None else cg.b.add(cg.b.mul(flat, ll.Constant(I32, n)), i)
    return cg.b.gep(cg.get(arr), [ll.Constant(I32, 0), flat], inbounds=True)


@rule(ir.PrivateLoadOp)
def _private_load(cg: CodeGen, op: ir.PrivateLoadOp):
    v = cg.b.load(_element(cg, op.operands[0], op.operands[1:]))
    return [cg.b.trunc(v, I1) if op.result.type.is_bool else v]


@rule(ir.PrivateStoreOp)
def _private_store(cg: CodeGen, op: ir.PrivateStoreOp):
    v = cg.get(op.operands[0])
    if op.operands[0].type.is_bool:
        v = cg.b.zext(v, mem_type(op.operands[0].type))
    cg.b.store(v, _element(cg, op.operands[1], op.operands[2:]))
    return []
