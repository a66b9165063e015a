"""What an integer IR value is known to be, without running the kernel: a multiple of what
(``known_multiple``), and whether it is a constant or a kernel argument the launch knows (``term``).

Passes ask these to prove a property at compile time (a 16-byte-aligned block origin, a 2D block
surface's width), and the runtime evaluates terms at launch where the property depends on
arguments (``lowering/launch_facts.py`` records them, ``runtime/extents.py`` and ``runtime/surfaces.py``
evaluate them).

    >>> term(v, {id(a): "K" for a in func.args})     # doctest: +SKIP
    ['arg', 'K', None]                                  # the argument K itself (no truncation)
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import numpy as np

from .core import Value
from .ops_arith import BinaryOp, CastOp, ConstantOp
from .ops_xegpu import AddPtrOp


def known_multiple(v: Value, depth: int = 8, args: Optional[Dict[int, int]] = None) -> int:
    """A number every runtime value of integer ``v`` is a multiple of (1 when nothing is known):
    constants, kernel arguments the specialization knows (``args``: ``id`` of the argument -> its
    multiple, from the function's ``multiple_of``), and sums / products / shifts of them (the
    offsets the distribution passes build from subgroup ids times piece sizes)."""
    if args and id(v) in args:
        return args[id(v)]
    op = v.op
    if op is None or depth == 0:
        return 1
    if isinstance(op, ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
        return abs(op.value) or (1 << 30)
    if isinstance(op, CastOp) and op.kind in ("extsi", "extui"):
        return known_multiple(op.operands[0], depth - 1, args)
    if isinstance(op, BinaryOp):
        a, b = (known_multiple(x, depth - 1, args) for x in op.operands)
        if op.kind in ("addi", "subi"):
            return math.gcd(a, b)
        if op.kind == "muli":
            return min(a * b, 1 << 30)
        if op.kind == "remui" and isinstance(op.operands[1].op, ConstantOp):
            return math.gcd(a, b)
        if op.kind == "shli" and isinstance(op.operands[1].op, ConstantOp):
            return min(a << int(op.operands[1].op.value), 1 << 30)
    return 1


def pointer_base(v: Value, args: Dict[int, str], multiples: Dict[int, int]) -> Tuple[Optional[str], int]:
    """(the pointer argument the pointer ``v`` is computed from, or None; a number of bytes the
    offsets added to it are all multiples of, 0 when none is added). ``args``: ``id`` of each kernel
    argument -> its name; ``multiples``: ``argument_multiples``."""
    mult = 0
    while True:
        if id(v) in args:
            return args[id(v)], mult
        op = v.op
        if not isinstance(op, AddPtrOp):
            return None, mult
        elem = op.result.type.elem
        mult = math.gcd(mult, known_multiple(op.operands[1], args=multiples) * max(1, elem.itemsize))
        v = op.operands[0]


def argument_multiples(func) -> Dict[int, int]:
    """``id`` of each argument of ``func`` -> the number its ``multiple_of`` attribute says it is a
    multiple of (for ``known_multiple``); for a pointer argument, a number of bytes its address is a
    multiple of (``pointer_base``'s users)."""
    known = func.attrs.get("multiple_of") or {}
    return {id(a): known[a.hint] for a in func.args if a.hint in known}


def term(v: Value, args: Dict[int, str]) -> Optional[list]:
    """A JSON-able description of an index value the launch can evaluate: ``["const", v]`` or
    ``["arg", name, wrap_bits]`` (an integer argument, possibly truncated to ``wrap_bits`` as the
    kernel truncates it); None when it is computed from anything else. ``args`` maps ``id`` of
    each kernel argument to its name."""
    bits = None
    while True:
        if id(v) in args:
            return ["arg", args[id(v)], bits]
        op = v.op
        if isinstance(op, ConstantOp) and isinstance(op.value, (int, np.integer)):
            return ["const", int(op.value)]
        name = getattr(op, "NAME", "")
        if name == "arith.trunci":
            w = v.type.bits
            bits = w if bits is None else min(bits, w)
        elif name != "arith.extsi":
            return None
        v = op.operands[0]


def wrap(v: int, bits: Optional[int]) -> int:
    """``v`` truncated to ``bits`` (signed), as a kernel truncating an argument sees it."""
    if bits is None:
        return v
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def evaluate(t: list, values: Dict[str, object]) -> Optional[int]:
    """A ``term``'s value for the launch's arguments (None when an argument is not an integer)."""
    if t[0] == "const":
        return t[1]
    x = values.get(t[1])
    return None if x is None or isinstance(x, (float, bool)) else wrap(int(x), t[2])
