"""DPAS as inline vISA (the visa emitter, workgroup-level kernels).

IGC 12504's DPAS builtin wants each operand as a vector of its own. Two things then cost moves:

* a piece of a merged 2D block read (one message for several DPAS operands) is copied out into a
  register range of its own, 8 moves per 16x16 operand;
* IGC's scalarizer splits the K loop's accumulator phis into one register per row, and copies a
  DPAS result into them, 8 moves per DPAS chain and K step.

So DPAS is written as inline vISA (``dpas.bf.bf.8.8 ...``): A and B are named inside the block read
they came from (``VecSlots.message``), and a K loop's accumulators that are only carried from one
DPAS chain to the next live in named vISA registers for the whole loop (``loop_accumulators``):
set before the loop, read once after it, never a phi.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ...ir.types import VectorType
from .. import emitters
from ..emitters import VISA_DPAS_PRECISION
from .control import as_vector
from .core import CodeGen, NamedRegister, lazy_slots
from .dpas_builtin import pack
from .memory import zero

def inline_dpas(cg: CodeGen, op: ir.DpasOp) -> bool:
    """Whether the visa emitter writes this DPAS as inline vISA (``emitters.inline_dpas``), unless
    emitter-decisions gave it IGC's own (``flavour = "builtin"``)."""
    return op.attrs.get("flavour") != "builtin" and \
        emitters.inline_dpas(cg.emitter, cg.options.level, op.attrs["tiles"][0].elem.name)


@dataclass
class Accumulator:
    """A DPAS accumulator tile held in the named vISA register ``name`` through a K loop."""

    name: str
    type: ll.VectorType          # one lane's share: rows of the tile x f32 or i32

    @property
    def visa_type(self) -> str:
        return "f" if isinstance(self.type.element, ll.FloatType) else "d"

    def _movs(self, cg: CodeGen, dst: str, src: str) -> List[str]:
        """One ``mov`` per register of the tile to ``dst``, from ``src``: an immediate (``0x0:f``)
        or a variable read row by row."""
        lanes = cg.target.sg_size
        per_grf = cg.target.grf_bytes // 4 // lanes  # rows of the tile per register
        row = (lambda r: src) if src.startswith("0x") else (lambda r: f"{src}({r},0)<1;1,0>")  # noqa: E731
        return [f"mov (M1, {lanes * per_grf}) {dst}({r},0)<1> {row(r)}" for r in range(self.type.count // per_grf)]

    def define(self, cg: CodeGen, init: List) -> None:
        """Declare the register and set it to ``init`` (the loop's initial slots)."""
        decl = (f".decl {self.name} v_type=G type={self.visa_type} num_elts={self.type.count * cg.target.sg_size} "
                f"align=wordx32")
        if all(isinstance(x, ll.Constant) and not x.constant for x in init):
            cg.asm(ll.VoidType(), "\n".join([decl] + self._movs(cg, self.name, f"0x0:{self.visa_type}")), "", [])
            return
        cg.asm(ll.VoidType(), "\n".join([decl] + self._movs(cg, self.name, "$0")), "rw", [as_vector(cg, init)])

    def read(self, cg: CodeGen):
        """The register's value after the loop, as the tile's slots."""
        r = cg.asm(self.type, "\n".join(self._movs(cg, "$0", self.name)), "=rw", [])
        return lazy_slots(cg, r, self.type.count, 1, lambda i: cg.b.extract_element(r, cg.i32(i)))


def loop_accumulators(cg: CodeGen, op: ir.ForOp) -> Dict[int, Accumulator]:
    """The loop's carried values (by index) that pass ``emitter-decisions`` found to be inline-vISA
    DPAS accumulators only (``accumulators``), each a named register of one lane's slots."""
    out = {}
    for i in op.attrs.get("accumulators", ()):
        t = op.iter_args[i].type
        n = t.shape[0] if isinstance(t, VectorType) else 1
        elem = ll.FloatType() if t.elem.is_floating else ll.IntType(32)
        cg.visa_registers += 1
        out[i] = Accumulator(f"XKACC{cg.visa_registers}", ll.VectorType(elem, n))
    return out


def _in_place(cg: CodeGen, slots, pack, region: bool) -> Tuple[object, str]:
    """A DPAS source as an inline-vISA operand: the block read it is a piece of, named at the
    piece's offset (``.bytes`` for a raw operand, ``(grf, dword)`` for a region), or its own
    vector ``pack()`` at offset 0."""
    whole, offset = getattr(slots, "message", None) or (pack(), 0)
    if not region:
        return whole, f".{offset}"
    grf = cg.target.grf_bytes
    return whole, f"({offset // grf},{offset % grf // 4})"


def dpas_visa(cg: CodeGen, op: ir.DpasOp):
    """One DPAS as inline vISA. Its accumulator is either a value (the result is a new one) or an
    ``Accumulator`` register (updated in place; the result is the same register)."""
    tiles = op.attrs["tiles"]
    ta, tc = tiles[0], tiles[-1]
    ea = ta.elem
    lanes = cg.target.sg_size
    a, bslots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    M = ta.shape[0]
    bvec, bref = _in_place(cg, bslots, lambda: pack(cg, bslots, max(1, 32 // ea.bits), ea.bits), region=False)
    avec, aref = _in_place(cg, a, lambda: pack(cg, a, len(a) // M, ea.bits), region=True)
    p = VISA_DPAS_PRECISION[ea.name]
    acc = cg.get(op.operands[2]) if len(op.operands) > 2 else None
    args: List = []
    first = 0 if isinstance(acc, Accumulator) else 1  # $0 is the result when it is a value

    def name(v) -> str:  # an LLVM value is an asm operand, a named register is named
        if isinstance(v, NamedRegister):
            return v.name
        args.append(v)
        return f"${first + len(args) - 1}"
    if isinstance(acc, Accumulator):
        dst = src0 = acc.name
    elif acc is None:   # no accumulator: src0 is vISA's null register, read as zeros
        cvec = pack(cg, [zero(tc.elem)] * len(lane_slot_offsets(tc.layout, tc.shape)), 1, 32, as_float=True)
        dst, src0 = "$0", "%null"
    else:
        cvec = pack(cg, cg.slots(op.operands[2]), 1, 32, as_float=True)
        dst, src0 = "$0", name(cvec)
    b_name, a_name = name(bvec), name(avec)
    # vISA wants A (src2) typed unsigned: an alias of it, scoped to this statement
    n = (avec.dwords if isinstance(avec, NamedRegister) else avec.type.count * avec.type.element.width // 32) * lanes
    alias = f".decl XKA v_type=G type=ud num_elts={n} align=wordx32 alias=<{a_name}, 0>"
    text = "{\n" + alias + f"\ndpas.{p}.{p}.8.{M} (M1, {lanes}) {dst}.0 {src0}.0 {b_name}{bref} XKA{aref}\n}}"
    if isinstance(acc, Accumulator):
        cg.asm(ll.VoidType(), text, ",".join(["rw"] * len(args)), args)
        return [acc]
    r = cg.asm(cvec.type, text, ",".join(["=rw"] + ["rw"] * len(args)), args)
    return [lazy_slots(cg, r, cvec.type.count, 1, lambda i: cg.b.extract_element(r, cg.i32(i)))]
