"""Values that step with a loop: built once before the loop and carried as ``phi + delta``.

A 2D block message in a K loop needs a payload whose x or y moves by the loop's step each
iteration. Built from the loop counter, it costs a select and an add per message and iteration
(LLVM's IR optimizer has no loop strength reduction; that runs in LLVM's own backends only). Built
as a recurrence it costs one add. ``affine`` finds how an LLVM value moves with the innermost
loop's induction variable, ``at_entry`` rebuilds it before the loop, and ``Loop.recurrence`` makes
the phi.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, List, Optional

from llvmlite import ir as ll

# integer operations an affine value may be built from (any other ends the analysis)
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "shl": "shl", "udiv": "udiv", "lshr": "lshr", "urem": "urem"}
_CASTS = {"trunc", "zext", "sext"}


@dataclass
class Loop:
    """The counted loop whose body codegen is emitting."""

    iv: ll.PhiInstr
    lb: object
    step: object
    pre: ll.Block                # the block before the loop, ending with its guarded branch into it
    header: ll.Block             # the loop's first block, where its phis are
    body: ll.Block               # the block the header branches into while the loop runs
    blocks_before: int           # the function's blocks before the header: values there are invariant
    phis: List = field(default_factory=list)  # (phi, value) pairs to close at the latch
    registers: List["_PayloadPair"] = field(default_factory=list)  # see ``payload``

    def invariant(self, fn: ll.Function, v) -> bool:
        if not isinstance(v, ll.Instruction):
            return True
        return fn.blocks.index(v.parent) < self.blocks_before

    def recurrence(self, b: ll.IRBuilder, first: Callable[[], object], delta: Callable[[], object]):
        """A value that is ``first()`` in the first iteration and grows by ``delta()`` in each
        next one (both built before the loop).

        It is ``phi + delta`` at the top of the loop, with the phi entering at ``first - delta``:
        an increment at the latch, used only by the phi, is what IGC sinks into a block of its
        own on the back edge (a second branch per iteration)."""
        block, anchor, size = b.block, b._anchor, len(b.block.instructions)
        with b.goto_block(self.pre):  # (which would return to the end of the block)
            d = delta()
            v0 = b.sub(first(), d)
        b.position_at_start(self.header)
        phi = b.phi(v0.type)
        phi.add_incoming(v0, self.pre)
        phis = next((i for i, x in enumerate(self.header.instructions) if not isinstance(x, ll.PhiInstr)),
                    len(self.header.instructions))
        if phis < len(self.header.instructions):
            b.position_before(self.header.instructions[phis])
        else:
            b.position_at_end(self.header)
        value = b.add(phi, d)
        self.phis.append((phi, value))
        b.position_at_end(block)  # back where codegen was, behind what went in before it
        b._anchor = anchor + len(block.instructions) - size
        return value

    def payload(self, cg, first: Callable[[], object], delta: Callable[[], object], key,
                answerless: bool = False) -> str:
        """A one-GRF message payload that is ``first()`` in the first iteration and grows by
        ``delta()`` in each next one, kept in a named vISA register: the raw operand naming it
        (``XKPAY<n>.<byte offset>``). Two payloads with the same ``key`` (the same ``delta``)
        share a register of two GRFs, moved by one SIMD32 add per iteration where a pair of
        LLVM recurrences costs two SIMD16 adds (IGC does not merge them). Two ``answerless``
        messages (prefetches) never share one: nothing waits for their tokens, so the add would
        wait for one of them with a ``sync.nop`` each iteration; beside a load, whose token the
        load's users have waited for by then, it waits for none."""
        b, lanes = cg.b, cg.target.sg_size
        pair = next((p for p in self.registers if p.key == key and p.used == 1
                     and not (answerless and p.answerless)), None)
        with b.goto_block(self.pre):
            decl = ""
            if pair is None:
                cg.visa_registers += 1
                pair = _PayloadPair(f"XKPAY{cg.visa_registers}", key, delta(), answerless)
                self.registers.append(pair)
                decl = f".decl {pair.name} v_type=G type=d num_elts={2 * lanes} align=GRF\n"
            v0 = b.sub(first(), pair.delta)  # the add at the top of the loop comes first
            cg.asm(ll.VoidType(), decl + f"mov (M1_NM, {lanes}) {pair.name}({pair.used},0)<1> $0(0,0)<1;1,0>",
                   "rw", [v0])
        pair.used += 1
        return f"{pair.name}.{(pair.used - 1) * cg.target.grf_bytes}"

    def close(self, cg, latch: ll.Block) -> None:
        """The recurrences' back edges, from ``latch`` (the block that branches back), and the
        payload registers' adds at the top of the body. Not in the header: IGC rotates the loop,
        so the header's instructions end up behind the body's messages, and an add that overwrites
        the payload of a message sent earlier in the same block costs, on pvc, IGC's send
        write-after-read workaround (``-PVCSendWARWA``: three moves and a sync per message
        waited for). At the top of the body, the previous iteration's messages are in another
        block, which the workaround leaves alone, and the loads among them have been waited for
        by the DPAS that used them. NoMask (``M1_NM``): one add covers all the pair's registers,
        more channels than the subgroup has, and under the dispatch mask those beyond it would
        keep their value (the second payload would never advance)."""
        for phi, value in self.phis:
            phi.add_incoming(value, latch)
        if not self.registers:
            return
        b = cg.b
        block, anchor = b.block, b._anchor
        b.position_at_start(self.body)
        lanes = cg.target.sg_size
        for p in self.registers:
            n = lanes * p.used
            cg.asm(ll.VoidType(), f"add (M1_NM, {n}) {p.name}(0,0)<1> {p.name}(0,0)<1;1,0> $0(0,0)<0;{lanes},1>",
                   "rw", [p.delta])
        b.position_at_end(block)
        b._anchor = anchor


@dataclass
class _PayloadPair:
    """A named vISA register of two GRFs holding the payloads of up to two messages with the same step."""

    name: str
    key: object
    delta: object  # the per-lane step, an LLVM i32 built before the loop
    answerless: bool = False  # its first message is a prefetch
    used: int = 0


def affine(fn: ll.Function, loop: Loop, v) -> Optional[Fraction]:
    """``c`` when ``v`` is ``invariant + c * iv`` in the loop, else None. A division by a constant
    ``d`` (``udiv``, ``lshr``) gives a fraction: ``floor((a + c * iv) / d)`` steps by exactly
    ``c * step / d`` when that is a whole number (``step_of``)."""
    if v is loop.iv:
        return Fraction(1)
    if loop.invariant(fn, v):
        return Fraction(0)
    if not isinstance(v, ll.Instruction) or v.opname not in _BINARY and v.opname not in _CASTS:
        return None
    coefs = [affine(fn, loop, x) for x in v.operands]
    if any(c is None for c in coefs):
        return None
    if v.opname in _CASTS:  # block coordinates are i32 and do not wrap: a cast keeps the coefficient
        return coefs[0]
    if not any(coefs):
        return Fraction(0)
    a, c = v.operands[1], coefs
    if v.opname == "add":
        return c[0] + c[1]
    if v.opname == "sub":
        return c[0] - c[1]
    if v.opname == "mul" and isinstance(a, ll.Constant):
        return c[0] * int(a.constant)
    if v.opname == "mul" and isinstance(v.operands[0], ll.Constant):
        return c[1] * int(v.operands[0].constant)
    if v.opname == "shl" and isinstance(a, ll.Constant):
        return c[0] * (1 << int(a.constant))
    if v.opname in ("udiv", "lshr") and isinstance(a, ll.Constant) and not c[1]:
        return Fraction(c[0]) / (int(a.constant) if v.opname == "udiv" else 1 << int(a.constant))
    return None


def whole_step(loop: Loop, coef: Fraction) -> bool:
    """Whether an ``affine`` value with coefficient ``coef`` moves by a whole number per iteration."""
    if isinstance(loop.step, ll.Constant):
        return (coef * int(loop.step.constant)).denominator == 1
    return coef.denominator == 1


def step_of(b: ll.IRBuilder, loop: Loop, coef: Fraction):
    """How much an ``affine`` value with coefficient ``coef`` moves per iteration (``whole_step``),
    as an LLVM value built where ``b`` stands."""
    if isinstance(loop.step, ll.Constant):
        return ll.Constant(loop.step.type, int(coef * int(loop.step.constant)))
    return b.mul(loop.step, ll.Constant(loop.step.type, int(coef)))


def at_entry(b: ll.IRBuilder, fn: ll.Function, loop: Loop, v, memo: Optional[dict] = None):
    """``v`` (an ``affine`` value) rebuilt where ``b`` stands, before the loop, with the induction
    variable at its first value."""
    memo = {} if memo is None else memo
    if v is loop.iv:
        return loop.lb
    if loop.invariant(fn, v):
        return v
    if id(v) not in memo:
        ops = [at_entry(b, fn, loop, x, memo) for x in v.operands]
        memo[id(v)] = (getattr(b, v.opname)(ops[0], v.type) if v.opname in _CASTS
                       else getattr(b, _BINARY[v.opname])(*ops))
    return memo[id(v)]
