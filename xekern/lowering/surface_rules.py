"""Pass ``surface-rules``: which tensor descriptors may be read and written with 2D block messages.

A 2D block message names a surface (base address, width, height, pitch) and the hardware takes
only some: a base aligned to 64 bytes, a width of at least 64 bytes and a multiple of 4, a pitch
of at least 64 bytes and a multiple of 16 (``Target.block2d_surface``, HARDWARE.md). Outside them
a GPU computes garbage, silently; the CPU device, which emulates the messages, would not notice.

Codegen aligns a descriptor's base down itself (``base & ~63``, with the block's x and the width
moved by the difference: ``codegen/block2d.surface``), so what remains to hold is:

- the base is 4-byte aligned, for 8- and 16-bit elements (the difference must be whole dwords for
  32-bit transposed messages and keep the width a multiple of 4);
- the width in bytes (``shape[-1]`` elements) is at least 64 and a multiple of 4;
- for a 2-D descriptor, the pitch (``strides[0]`` elements) is at least 64 bytes and a multiple
  of 16 (a 1-D descriptor is one row, whose pitch codegen chooses).

Each condition is decided at compile time when its value is a constant (or a known multiple), and
otherwise checked at launch when it is an integer argument, or the descriptor's base a pointer
argument (``runtime/surfaces.py`` evaluates ``surface_checks`` on the arguments: the launch's
answers, one per checked descriptor, are ``Options.surfaces``; a kernel is compiled again when an
answer is no). A condition neither can decide makes the descriptor element-wise. The pass marks
each ``create_nd_tdesc``: ``block_io = true`` (2D block messages may be used) or ``false`` (its
loads and stores go element by element, which is correct for any surface), and ``surface`` = the
index of its launch check.

    %d = xegpu.create_nd_tdesc %a, %M, %K, %K, %c1, ... {block_io = true, surface = 0, ...}
"""
from __future__ import annotations

from math import gcd
from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.terms import argument_multiples, known_multiple, pointer_base, term
from ..targets import Target
from .rewrite import STRUCTURED_RULES, Rewriter


def surface_checks(func: ir.FuncOp, target: Target) -> Tuple[List[list], Dict[int, Tuple[bool, Optional[int]]]]:
    """The launch checks of ``func``'s descriptors, and per descriptor (by ``id`` of the op) what
    compile time decided: (possible, index of its launch check or None).

    A launch check is ``[where, [condition, ...]]``; a condition is ``["ge", term, n]`` (the term's
    value is at least n), ``["mod", term, m]`` (a multiple of m) or ``["align", param, n]`` (the
    pointer argument's address is a multiple of n bytes)."""
    rules = target.block2d_surface
    checks: List[list] = []
    decided: Dict[int, Tuple[bool, Optional[int]]] = {}
    if not target.has_block2d:
        return checks, decided
    args = {id(a): a.hint for a in func.args}
    multiples = argument_multiples(func)
    for op in func.walk():
        if not isinstance(op, ir.CreateNdTDescOp):
            continue
        eb = op.result.type.elem.itemsize
        conds: List[list] = []
        ok = True

        def need(value: ir.Value, least_bytes: int, multiple_bytes: int) -> bool:
            """``value`` elements are at least ``least_bytes`` and a multiple of ``multiple_bytes``:
            decided now for a constant, else a launch condition on an argument; False if neither."""
            t = term(value, args)
            least = -(-least_bytes // eb)
            mult = multiple_bytes // gcd(multiple_bytes, eb)
            if t is not None and t[0] == "const":
                return t[1] >= least and t[1] % mult == 0
            if t is None:
                return False
            conds.append(["ge", t, least])
            if known_multiple(value, args=multiples) % mult:
                conds.append(["mod", t, mult])
            return True
        if eb < rules.width_align:  # the base shift must be whole dwords (module docstring)
            param, offset = pointer_base(op.base, args, multiples)
            if param is None or offset % rules.width_align:
                ok = False
            else:
                conds.append(["align", param, rules.width_align])
        ok = ok and need(op.shape[-1], rules.min_width, rules.width_align)
        if op.rank == 2:
            ok = ok and need(op.strides[0], rules.min_pitch, rules.pitch_align)
        if not ok:
            decided[id(op)] = (False, None)
            continue
        if conds:
            loc = getattr(op, "loc", None)
            checks.append([f"{loc.file}:{loc.line}" if loc is not None else "?", conds])
            decided[id(op)] = (True, len(checks) - 1)
        else:
            decided[id(op)] = (True, None)
    return checks, decided


class SurfaceRules(Rewriter):
    """Rebuild the function with every ``create_nd_tdesc`` marked (see the module docstring)."""

    NAME = "surface-rules"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.CreateNdTDescOp] = "rule_create_nd_tdesc"

    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.LEVEL = func.attrs.get("level", "wg")  # (the pass runs at every level and keeps it)
        _, self.decided = surface_checks(func, self.target)
        self.answers = getattr(self.ctx, "surfaces", None)   # (a bool: the one answer to every check)
        return super().run(func)

    def rule_create_nd_tdesc(self, op: ir.CreateNdTDescOp):
        possible, index = self.decided[id(op)]
        attrs = dict(op.attrs)
        if index is not None:
            attrs["surface"] = index
            answer = self.answers if self.answers is None or isinstance(self.answers, bool) else self.answers[index]
            possible = possible and answer is not False
        attrs["block_io"] = possible
        new = self.b.insert(op.clone_with([self.get(v) for v in op.operands], [op.result.type], attrs))
        return [[new.result]]


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    """Mark every ``create_nd_tdesc`` with ``block_io`` (and ``surface``, its launch check's index),
    on targets with 2D block IO; ``ctx.surfaces`` holds the launch's answers (None: all yes)."""
    return SurfaceRules(ctx).run(func) if ctx.target.has_block2d else func
