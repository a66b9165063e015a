"""1D sub-group block IO (``cl_intel_subgroups``, ``_short``, ``_char``; ``__local`` pointers:
``cl_intel_subgroup_local_block_io``): one message moves ``n`` rows of ``sg`` consecutive elements,
lane ``l`` getting element ``l`` of each row. Used where a tile's slots are exactly such rows.

    intel_sub_group_block_read_us4(const __local ushort *p)   ->  slot s of lane l = p[s * sg + l]

A plan is found in Python from the layout (every lane's slot offsets), so legality is decided at
compile time; the origin's alignment is proven from the IR (``ir.terms.known_multiple``) or the access
stays element-wise. HARDWARE.md lists the spellings IGC 12504 maps to ``load.slm`` / ``store.slm``
/ ``load.ugm`` block messages.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from llvmlite import ir as ll

from .ocl import I8, I16, I32

# element bits -> (name suffix, Itanium mangling of the unsigned element); 64-bit data needs
# cl_intel_subgroups_long, which the OpenCL CPU runtime does not list: not used
_SUFFIX = {32: ("", "j"), 16: ("_us", "t"), 8: ("_uc", "h")}
_INT = {32: I32, 16: I16, 8: I8}
WIDTHS = (8, 4, 2, 1)        # rows per message: the builtins' vector widths (16 exists only for 8/16-bit)
ALIGN_BYTES = 16             # cl_intel_subgroups: block writes need 16-byte aligned pointers; reads too here
LOCAL, GLOBAL = 3, 1


def plan(rel: Sequence[Sequence[int]], sg: int, bits: int) -> Optional[List[Tuple[Tuple[int, ...], int]]]:
    """Messages ``(slots, element offset)`` covering every slot once, or None when some slot is
    not ``sg`` consecutive elements in lane order or a message's start is not ``ALIGN_BYTES``
    aligned. A message's rows are slots whose offsets follow each other by ``sg`` (any slot
    order: a row-major tile in a @block matrix reads a whole block per message).
    ``rel[lane][slot]`` is the element offset of the slot (see ``messages.lane_offsets``)."""
    if bits not in _SUFFIX or rel is None:
        return None
    first = rel[0]
    for lane in range(sg):
        if any(r != f + lane for r, f in zip(rel[lane], first)):
            return None
    at = {}
    for s, f in enumerate(first):
        if f in at:
            return None  # two slots on one element (replicated data)
        at[f] = s
    step = ALIGN_BYTES * 8 // bits
    runs, used = [], set()
    for s, f in enumerate(first):
        if s in used:
            continue
        if f % step:
            return None
        chain = [s]
        while len(chain) < WIDTHS[0] and at.get(f + len(chain) * sg) not in (None, *used):
            chain.append(at[f + len(chain) * sg])
        chain = chain[:next(w for w in WIDTHS if w <= len(chain))]
        used.update(chain)
        runs.append((tuple(chain), f))
    return runs


def pack(rel: Sequence[Sequence[int]], g: int) -> Optional[List[List[int]]]:
    """``rel`` with every ``g`` adjacent slots of a lane that hold ``g`` consecutive elements, the first
    a multiple of ``g``, merged into one slot of ``g`` times the width (offsets in those wide units),
    or None. A DPAS A fragment of int8 (two consecutive K per lane and row) packs into 16-bit slots,
    which ``plan`` can then read as rows of ``sg`` consecutive shorts."""
    if rel is None or len(rel[0]) % g:
        return None
    out = []
    for lane in rel:
        row = []
        for s in range(0, len(lane), g):
            f = lane[s]
            if f % g or any(lane[s + j] != f + j for j in range(g)):
                return None
            row.append(f // g)
        out.append(row)
    return out


def _name(kind: str, bits: int, n: int, space: int) -> Tuple[str, ll.Type]:
    suffix, m = _SUFFIX[bits]
    base = f"intel_sub_group_block_{kind}{suffix}{n if n > 1 else ''}"
    elem = _INT[bits]
    vt = elem if n == 1 else ll.VectorType(elem, n)
    if kind == "read":
        return f"_Z{len(base)}{base}PU3AS{space}K{m}", vt
    return f"_Z{len(base)}{base}PU3AS{space}{m}{m if n == 1 else f'Dv{n}_{m}'}", vt


def read_vector(cg, ptr, bits: int, n: int, space: int):
    """``n`` rows from ``ptr`` (an element pointer in ``space``): this lane's ``n`` integers, as the
    builtin returns them (one integer, or a vector of ``n``)."""
    name, vt = _name("read", bits, n, space)
    return cg.call(name, vt, [ptr], convergent=True)


def read(cg, ptr, bits: int, n: int, space: int) -> List:
    """``n`` rows from ``ptr`` (an element pointer in ``space``): this lane's ``n`` integers."""
    v = read_vector(cg, ptr, bits, n, space)
    return [v] if n == 1 else [cg.b.extract_element(v, cg.i32(i)) for i in range(n)]


def write(cg, ptr, ints: List, bits: int, space: int) -> None:
    n = len(ints)
    name, vt = _name("write", bits, n, space)
    if n == 1:
        data = ints[0]
    else:
        data = ll.Constant(vt, None)
        for i, x in enumerate(ints):
            data = cg.b.insert_element(data, x, cg.i32(i))
    cg.call(name, ll.VoidType(), [ptr, data], convergent=True)
