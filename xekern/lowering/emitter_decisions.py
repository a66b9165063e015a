"""Pass ``emitter-decisions``: what the kernel's emitter will do differently, as op attributes.

Codegen's rules follow these marks; this pass decides them from the lane IR and the emitter
(``lowering/emitters.py``), so that every decision that changes the code shows in a printed stage:

* ``fused = true`` on a 2-D ``load_nd`` whose every use is a DPAS that reads its operands from
  memory itself (emitters with ``fused_dpas_loads``, the CPU device's micro-kernel): the load's
  register copy is never built;
* ``accumulators = [i, ...]`` on an ``scf.for``: the carried values (by index) that are inline-vISA
  DPAS accumulators only (the visa emitter): the iteration's value goes through a chain of DPAS in
  the body itself (each one's result used by the next one alone) and the chain's end is yielded
  and used nowhere else in the loop; they live in named vISA registers for the whole loop;
* ``flavour = "visa"`` on an SLM-only barrier (``memory = "local"``) inside a counted loop of a
  workgroup-level kernel (the visa emitter): 4 inline-vISA instructions, 2 without a fence
  (``codegen/visa_barrier.py``), where IGC's own barrier is 6.

Example: ``scf.for %k = ... iter_args(%acc = %0) ... {accumulators = [0]}``.
"""
from __future__ import annotations

from typing import List

from .. import ir
from ..ir.core import Op
from .emitters import inline_dpas
from .rewrite import copy_func


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    e = ctx.emitter
    if not (e.fused_dpas_loads or e.named_reads):
        return func   # (nothing to decide: no copy)
    out = copy_func(func, ctx)
    uses = ir.users(out)
    loops: List[Op] = []
    for op in out.walk():
        if isinstance(op, ir.LoadNdOp) and e.fused_dpas_loads and fused(op, uses):
            op.attrs["fused"] = True
        elif isinstance(op, ir.ForOp):
            loops.append(op)
    if e.named_reads and ctx.level == "wg":
        for loop in loops:
            acc = accumulators(loop, uses, ctx)
            if acc:
                loop.attrs["accumulators"] = acc
            for op in loop.walk():
                if isinstance(op, ir.BarrierOp) and op.attrs.get("memory") == "local":
                    op.attrs["flavour"] = "visa"
    return out


def loaded_as_is(dpas: ir.DpasOp, i: int) -> bool:
    """Whether DPAS operand ``i`` is the result of a 2-D load in the very tile the DPAS reads. A
    transpose between them (``xl.dot(a, b.T)``) is free at lane level and leaves no op behind,
    only the load's own tile (``lane_layout = [16, 1]`` where DPAS reads ``[1, 16]``): reading
    such an operand from memory at the DPAS's coordinates would read it untransposed."""
    v = dpas.operands[i]
    load = v.op
    if not isinstance(load, ir.LoadNdOp):
        return False
    tiles = load.attrs.get("tiles", ())
    k = list(load.results).index(v)
    return k < len(tiles) and tiles[k] == dpas.attrs["tiles"][i]


def fused(op: ir.LoadNdOp, uses) -> bool:
    """Whether every use of the 2-D load ``op`` is a DPAS that can read it from memory itself."""
    if len(op.tdesc.type.shape) != 2:
        return False
    readers = [u for r in op.results for u, _ in uses.get(r, [])]
    return bool(readers) and all(
        isinstance(u, ir.DpasOp) and loaded_as_is(u, 0) and loaded_as_is(u, 1)
        and u.attrs["tiles"][-1].layout.lane_data == (1, 1) for u in readers) and \
        all(r in u.operands[:2] for r in op.results for u, _ in uses.get(r, []))


def accumulators(loop: ir.ForOp, uses, ctx) -> tuple:
    """The indices of ``loop``'s carried values that are inline-vISA DPAS accumulators only."""
    readers = {v: [o for o, _ in us] for v, us in uses.items()}
    top = set(loop.body.ops)
    yield_op = loop.body.ops[-1]
    out = []
    for i, (arg, end) in enumerate(zip(loop.iter_args, yield_op.operands)):
        v, chain = arg, False
        while v is not end:
            us = readers.get(v, [])
            d = us[0] if len(us) == 1 else None
            if not (isinstance(d, ir.DpasOp) and d in top and len(d.operands) > 2 and d.operands[2] is v
                    and v not in d.operands[:2] and inline_dpas(ctx.emitter, ctx.level, d.attrs["tiles"][0].elem.name)):
                break
            chain = True
            v = d.results[0]
        if v is end and chain and readers.get(end) == [yield_op] and list(yield_op.operands).count(end) == 1:
            out.append(i)
    return tuple(out)
