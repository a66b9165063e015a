"""The ``cpu`` emitter's rules (the OpenCL CPU device): descriptor loads and stores element by
element, with vector accesses for tiles inside the tensor; DPAS emulated exactly, reading its
operands from memory where they were just loaded (``dpas_cpu``); prefetches dropped.

The device runs the lane-level code of a GPU (``target.model``), and applies that GPU's 2D block
surface rules: a descriptor the GPU would read and write with 2D block messages (``block_io``:
lowering/surface_rules.py) on a surface the rules forbid, where the GPU would compute garbage,
becomes an empty tensor here (shape 0: loads give zeros, stores write nothing), so a test of it
fails on the CPU as it would on the GPU."""
from __future__ import annotations

from ... import ir
from .block2d import new_descriptor, surface_holds
from .core import CodeGen, NdDesc, rule
from .dpas_cpu import dpas_emulated
from .nd_elementwise import load_elementwise, store_elementwise

TABLE = "cpu"


@rule(ir.CreateNdTDescOp, table=TABLE)
def _create_nd(cg: CodeGen, op: ir.CreateNdTDescOp):
    d = new_descriptor(cg, op)
    if d.block_io:
        ok = surface_holds(cg, d)
        d.shape = [cg.b.select(ok, n, cg.i32(0)) for n in d.shape]
    return [d]


@rule(ir.LoadNdOp, table=TABLE)
def _load_nd(cg: CodeGen, op: ir.LoadNdOp):
    if op.attrs.get("fused"):  # (emitter-decisions)
        return [[] for _ in op.results]  # read again, element by element, by the DPAS that uses it
    return load_elementwise(cg, op, cg.get(op.tdesc))


@rule(ir.StoreNdOp, table=TABLE)
def _store_nd(cg: CodeGen, op: ir.StoreNdOp):
    d: NdDesc = cg.get(op.tdesc)
    store_elementwise(cg, op, d)
    return []


@rule(ir.PrefetchNdOp, table=TABLE)
def _prefetch_nd(cg: CodeGen, op: ir.PrefetchNdOp):
    return []  # the CPU device has no use for a prefetch


@rule(ir.DpasOp, table=TABLE)
def _dpas(cg: CodeGen, op: ir.DpasOp):
    return dpas_emulated(cg, op)
