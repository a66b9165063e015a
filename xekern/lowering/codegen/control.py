"""How loops and branches carry lane-level values, and the counted loop itself (shared by every
emitter; ``rules_arith`` and ``rules_visa`` call ``for_loop``)."""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, Dict, List, Sequence, Union

from llvmlite import ir as ll

from ... import ir
from .core import CodeGen, VecSlots
from .recurrence import Loop


def carried(cg: CodeGen, v):
    """How a loop or branch carries a value: on GPUs a slot list as one vector (so IGC keeps it in
    place across iterations instead of copying every element; SPIR-V vectors hold at most 16), on
    the CPU device as separate scalars (its vectorizer widens each lane scalar into one SIMD
    register; a lane's vector would become a 16 x 16 transpose in every iteration), a descriptor
    as its fields."""
    if cg.emitter.carry_vectors and isinstance(v, list) and 1 < len(v) <= 16 and len({x.type for x in v}) == 1 and \
            isinstance(v[0].type, (ll.IntType, ll.FloatType, ll.HalfType, ll.DoubleType)):
        return "vec"
    if isinstance(v, list):
        return "list"
    if hasattr(v, "parts"):
        return "record"
    return "scalar"


def as_vector(cg: CodeGen, v):
    if isinstance(v, VecSlots) and v.per == 1:
        return v.vec
    vec = ll.Constant(ll.VectorType(v[0].type, len(v)), None)
    for i, x in enumerate(v):
        vec = cg.b.insert_element(vec, x, cg.i32(i))
    return vec


def flat_like(cg: CodeGen, templates: List, values: List) -> List:
    """The LLVM values that carry ``values``, in the form ``templates`` (the loop's inits) chose."""
    out = []
    for t, v in zip(templates, values):
        kind = carried(cg, t)
        if kind == "vec":
            out.append(as_vector(cg, v))
        elif kind == "list":
            out.extend(v)
        elif kind == "record":
            out.extend(v.parts())
        else:
            out.append(v)
    return out


def shape_like(cg: CodeGen, templates: List, flat: List) -> List:
    """Values shaped like ``templates`` made of the LLVM values ``flat`` (inverse of ``flat_like``)."""
    out, i = [], 0
    for t in templates:
        kind = carried(cg, t)
        if kind == "vec":
            vec = flat[i]
            i += 1
            out.append(VecSlots([cg.b.extract_element(vec, cg.i32(j)) for j in range(len(t))], vec))
        elif kind in ("list", "record"):
            n = len(t) if kind == "list" else len(t.parts())
            chunk = flat[i:i + n]
            i += n
            out.append(chunk if kind == "list" else t.with_parts(chunk))
        else:
            out.append(flat[i])
            i += 1
    return out


def phis(cg: CodeGen, flat: List, incoming_block) -> List:
    phis = [cg.b.phi(v.type) for v in flat]
    for p, v in zip(phis, flat):
        p.add_incoming(v, incoming_block)
    return phis


def for_loop(cg: CodeGen, op: ir.ForOp, regs: Dict[int, object]) -> List:
    """A header-tested loop (IGC rotates it; a loop LLVM-rotated here spills on dg2). The carried
    values ``regs`` names by index (registers with ``define(cg, init)`` and ``read(cg)``: the visa
    emitter's DPAS accumulators) are set before the loop and read after it instead of being
    carried by phis. Split-edges' ``edge`` loop computes its lane-derived values in its body
    (``CodeGen.lane_scope``)."""
    b = cg.b
    lb, ub, step = (cg.get(v) for v in op.operands[:3])
    everything = [cg.get(v) for v in op.inits]
    for i, reg in regs.items():
        reg.define(cg, everything[i])
    phied = [i for i in range(len(everything)) if i not in regs]
    inits = [everything[i] for i in phied]
    init_flat = flat_like(cg, inits, inits)
    pre = b.block
    header = cg.fn.append_basic_block("for.header")
    body = cg.fn.append_basic_block("for.body")
    exit_ = cg.fn.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    loop_phis = phis(cg, init_flat, pre)
    signed = op.operands[0].type.is_signed
    cond = b.icmp_signed("<", iv, ub) if signed else b.icmp_unsigned("<", iv, ub)
    b.cbranch(cond, body, exit_)
    b.position_at_end(body)
    cg.values[op.iv] = iv
    loop = Loop(iv, lb, step, pre, header, body, cg.fn.blocks.index(header))
    cg.loops.append(loop)
    for i, v in zip(phied, shape_like(cg, inits, loop_phis)):
        cg.values[op.iter_args[i]] = v
    for i, reg in regs.items():
        cg.values[op.iter_args[i]] = reg
    with cg.lane_scope(body) if op.attrs.get("edge") else nullcontext():
        cg.block(op.body)  # ends with scf.yield, which records the yielded values
    ys = flat_like(cg, inits, [cg.yielded[i] for i in phied])
    nxt = b.add(iv, step)
    latch = b.block
    b.branch(header)
    iv.add_incoming(nxt, latch)
    for p, y in zip(loop_phis, ys):
        p.add_incoming(y, latch)
    cg.loops.pop().close(cg, latch)
    b.position_at_end(exit_)
    results = dict(zip(phied, shape_like(cg, inits, loop_phis)))
    results.update({i: reg.read(cg) for i, reg in regs.items()})
    return [results[i] for i in range(len(everything))]


def counted_loop(cg: CodeGen, n: Union[int, ll.Value], start: Sequence, body: Callable,
                 names=("loop", "loop_done")) -> List:
    """``for i in range(n)`` (``n`` at least 1: an int or an i32 value) carrying the LLVM values
    ``start``; ``body(i, carried)`` builds one step and returns the next values. Returns the values
    after the loop."""
    b = cg.b
    pre = b.block
    head, done = (cg.fn.append_basic_block(x) for x in names)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(ll.IntType(32))
    i.add_incoming(cg.i32(0), pre)
    carried = [b.phi(v.type) for v in start]
    for p, v in zip(carried, start):
        p.add_incoming(v, pre)
    new = list(body(i, carried))
    nxt = b.add(i, cg.i32(1))
    end = b.block
    for p, v in zip(carried, new):
        p.add_incoming(v, end)
    i.add_incoming(nxt, end)
    b.cbranch(b.icmp_unsigned("<", nxt, cg.i32(n) if isinstance(n, int) else n), head, done)
    b.position_at_end(done)
    return new
