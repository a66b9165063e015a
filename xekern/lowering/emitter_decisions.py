"""Pass ``emitter-decisions``: what the kernel's emitter will do differently, as op attributes.

Codegen's rules follow these marks; this pass decides them from the lane IR and the emitter
(``lowering/emitters.py``), so that every decision that changes the code shows in a printed stage:

* ``fused = true`` on a 2-D ``load_nd`` whose every use is a DPAS that reads its operands from
  memory itself (emitters with ``fused_dpas_loads``, the CPU device's micro-kernel): the load's
  register copy is never built;
* ``fused_dot = [group, row, column, k]`` on the DPAS ops of a block that tile one subgroup's
  product (operands all fused loads of the same two descriptors, all in registers, or A in
  registers and B fused loads of one descriptor): the CPU micro-kernel computes them together
  (``fused_dots.py``);
* ``accumulators = [i, ...]`` on an ``scf.for``: the carried values (by index) that are inline-vISA
  DPAS accumulators only (the visa emitter): the iteration's value goes through a chain of DPAS in
  the body itself (each one's result used by the next one alone) and the chain's end is yielded
  and used nowhere else in the loop; they live in named vISA registers for the whole loop;
* ``flavour = "builtin"`` on a DPAS the visa emitter would write as inline vISA, in a loop that
  computes on other tiles between its products (``holds_operands``: attention's softmax between
  ``q @ k.T`` and ``p @ v``) and whose operands are not in named registers: IGC's own DPAS, which it
  schedules and allocates itself. Inline vISA there makes IGC keep every operand and accumulator
  whole across the computation: attention's forward at 16 rows per subgroup spills 8-11 KiB on
  pvc and bmg (1,115-1,238 instructions per 64 DPAS), and with IGC's DPAS none (819 on pvc);
* ``flavour = "visa"`` on an SLM-only barrier (``memory = "local"``) inside a counted loop of a
  workgroup-level kernel (emitters with ``visa_barriers``: visa, and igc-builtins where there is no
  2D block IO): 4 inline-vISA instructions, 2 without a fence (``codegen/visa_barrier.py``), where
  IGC's own barrier is 6.

Example: ``scf.for %k = ... iter_args(%acc = %0) ... {accumulators = [0]}``.
"""
from __future__ import annotations

from typing import List

from .. import ir
from ..ir.core import Op
from ..ir.layout import lane_slot_offsets
from ..ir.types import VectorType
from . import fused_dots
from .emitters import inline_dpas
from .rewrite import copy_func


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    e = ctx.emitter
    if not (e.fused_dpas_loads or e.named_reads or e.visa_barriers):
        return func   # (nothing to decide: no copy)
    out = copy_func(func, ctx)
    uses = ir.users(out)
    loops: List[Op] = []
    for op in out.walk():
        if isinstance(op, ir.LoadNdOp) and e.fused_dpas_loads and fused(op, uses):
            op.attrs["fused"] = True
        elif isinstance(op, ir.ForOp):
            loops.append(op)
    if e.fused_dpas_loads:
        fused_dots.mark(out, uses)
    if e.named_reads and ctx.level == "wg":
        for loop in loops:
            if holds_operands(loop):
                for op in loop.walk():
                    if isinstance(op, ir.DpasOp) and not any(named_read(v.op) for v in op.operands[:2]):
                        op.attrs["flavour"] = "builtin"
        for loop in loops:
            acc = accumulators(loop, uses, ctx)
            if acc:
                loop.attrs["accumulators"] = acc
    if e.visa_barriers and ctx.level == "wg":
        for loop in loops:
            for op in loop.walk():
                if isinstance(op, ir.BarrierOp) and op.attrs.get("memory") == "local":
                    op.attrs["flavour"] = "visa"
    return out


# ops that load, move, view, fill or multiply tiles (a tn GEMM's A^T goes through a transpose to SLM;
# a K loop at a tensor's edge gathers and fills with ``other``); any other op with a float tile result
# computes on one
_OPERAND_OPS = (ir.LoadNdOp, ir.LoadMatrixOp, ir.LoadGatherOp, ir.DpasOp, ir.TransposeOp, ir.ShapeCastOp,
                ir.ConvertLayoutOp, ir.BroadcastOp, ir.ConstantOp, ir.SelectOp, ir.ForOp, ir.IfOp, ir.YieldOp)


def holds_operands(loop: ir.ForOp) -> bool:
    """Whether ``loop``'s body computes on float tiles besides loading them and running DPAS on them
    (a GEMM's K loop does not, even when it moves tiles of pointers or masks as tutorial 03's does;
    attention's, with the softmax between its two products, does)."""
    return any(isinstance(r.type, VectorType) and r.type.elem.is_floating and not isinstance(o, _OPERAND_OPS)
               for o in loop.walk() if o is not loop for r in o.results)


def innermost_loop(op: Op):
    """The innermost ``scf.for`` around ``op`` (None outside loops)."""
    block = op.parent
    while block is not None and block.parent is not None:
        if isinstance(block.parent, ir.ForOp):
            return block.parent
        block = block.parent.parent
    return None


def named_read(op) -> bool:
    """Whether ``op`` is a 2D block read of more than 16 dwords per lane (merge-block-messages
    merged it for a named register: only inline-vISA DPAS takes its pieces)."""
    if not isinstance(op, ir.LoadNdOp):
        return False
    bits = sum(len(lane_slot_offsets(t.layout, t.shape)) * t.elem.bits for t in op.attrs.get("tiles", ()))
    return bits > 16 * 32


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
    """Whether every use of the 2-D load ``op`` is a DPAS that can read it from memory itself: one
    whose operands are both loaded as they are, or whose B operand ``op`` is while its A is in
    registers (the micro-kernel then copies A to SLM and reads B from memory: attention's P @ V)."""
    if len(op.tdesc.type.shape) != 2:
        return False
    uses_of = [(u, i) for r in op.results for u, i in uses.get(r, [])]
    return bool(uses_of) and all(
        isinstance(u, ir.DpasOp) and i in (0, 1) and u.attrs["tiles"][-1].layout.lane_data == (1, 1)
        and loaded_as_is(u, i) and (i == 1 or loaded_as_is(u, 1)) for u, i in uses_of)


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
                    and v not in d.operands[:2] and d.attrs.get("flavour") != "builtin"
                    and inline_dpas(ctx.emitter, ctx.level, d.attrs["tiles"][0].elem.name)):
                break
            chain = True
            v = d.results[0]
        if v is end and chain and readers.get(end) == [yield_op] and list(yield_op.operands).count(end) == 1:
            out.append(i)
    return tuple(out)
