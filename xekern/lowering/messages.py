"""What one memory message can cover: facts that both the passes which group blocks into messages
(``merge-block-messages``) and codegen, which writes the messages, need.

* ``lane_offsets``: per lane and slot, where in memory the element it holds lies;
* ``origin_multiple``: how aligned an SLM matrix origin is, in elements;
* ``slm_contiguous``: whether several DPAS-sized pieces of an SLM matrix are one run of memory in
  sub-group block order, which one transposed SLM message reads (``codegen/slm_read.py``);
* ``lane_row_runs``: the runs of a memory row each lane of a descriptor tile holds, one per-lane
  vector message each on targets without 2D block IO (``codegen/nd_elementwise.py``,
  ``split-edges``).
"""
from __future__ import annotations

import functools
import math
from math import prod
from typing import List, Optional, Sequence, Tuple

from ..ir.layout import lane_base, lane_slot_offsets
from ..ir.terms import known_multiple
from ..ir.types import MemDescType, VectorType

# LSC vector sizes (elements per lane or per transposed message) -> their descriptor code
LSC_VECTOR_SIZES = {1: 0, 2: 1, 3: 2, 4: 3, 8: 4, 16: 5, 32: 6, 64: 7}
SLM_READ_ALIGN = 8  # a d64 message's address


def lane_offsets(tile, sg: int, linear) -> Optional[List[List[int]]]:
    """Per lane (0..sg-1), per slot: ``linear(coords)`` of the element it holds in ``tile``
    (coordinates relative to the tile's origin). None when the tile has fewer lanes than ``sg``."""
    lay = tile.layout
    root = lay.root
    if root.lane_layout is None or math.prod(root.lane_layout) != sg:
        return None
    offs = lane_slot_offsets(lay, tile.shape)
    out = []
    for lane in range(sg):
        base = lane_base(lay, tile.shape, lane)
        out.append([linear(tuple(b + o for b, o in zip(base, so))) for so in offs])
    return out


def origin_multiple_of(m: MemDescType, offsets) -> int:
    """A number the element offset of the origin ``offsets`` (IR values) is a multiple of, or 0
    when the blocked layout's offset is not linear there (an origin inside a block)."""
    return origin_multiple(m, [known_multiple(v) for v in offsets])


def origin_multiple(m: MemDescType, mult: Sequence[int]) -> int:
    """``origin_multiple_of`` an origin whose coordinates are multiples of ``mult``."""
    if m.block is None:
        strides = m.strides if m.strides is not None else m.row_major_strides
        return functools.reduce(math.gcd, (k * s for k, s in zip(mult, strides)))
    if any(k % b for k, b in zip(mult, m.block)):
        return 0
    bsize = math.prod(m.block)
    return functools.reduce(math.gcd, (k // b * r * bsize for k, b, r in zip(mult, m.block, m.block_strides)))


def slm_contiguous(m: MemDescType, piece: VectorType, count: int, origin_multiple: int, sg: int) -> bool:
    """Whether ``count`` tiles ``piece`` side by side along the last axis, the first at an origin
    whose element offset is a multiple of ``origin_multiple`` (0: not linear there), are one run
    of memory in sub-group block order that one message reads. A transposed (SIMT1) read puts
    memory into registers byte for byte, so a piece fits when each lane's slots lie where a
    sub-group block read would put them in registers (slot ``s`` of lane ``l``, ``g`` slots per
    lane and row: ``(s // g) * sg * g + l * g + s % g``)."""
    nbytes = count * prod(piece.shape) * m.elem.itemsize
    if origin_multiple == 0 or origin_multiple * m.elem.itemsize % SLM_READ_ALIGN or nbytes % 8 or \
            nbytes // 8 not in LSC_VECTOR_SIZES or piece.layout is None or piece.layout.lane_data is None:
        return False
    g = piece.layout.lane_data[-1]
    lead = len(m.shape) - piece.rank
    size, w = prod(piece.shape), piece.shape[-1]
    for j in range(count):
        rel = lane_offsets(piece, sg, lambda c: m.offset((0,) * lead + c[:-1] + (c[-1] + j * w,)))
        if rel is None:
            return False
        for lane, offs in enumerate(rel):
            if offs != [j * size + s // g * sg * g + lane * g + s % g for s in range(len(offs))]:
                return False
    return True


def lane_row_runs(tile, sg: int, bits: int, transposed: bool) -> List[Tuple[int, int, int, int]]:
    """For a 2-D descriptor tile of ``bits``-bit elements (in a tensor with unit column stride)
    whose lanes hold runs of consecutive columns of memory rows (a transposed DPAS B operand: lane
    ``l`` row ``l``'s K values; the row pairs of ``pair_rows_layout``): the runs as (first slot,
    row, column, length) relative to the lane's first element, in slot order, each a whole number
    of dwords (at most 8), starting at a dword in every lane when the tile's origin column does;
    else [] (also when every run would be one element)."""
    if bits not in (8, 16, 32) or tile.rank != 2 or tile.layout is None:
        return []
    offs = [tuple(reversed(o)) if transposed else tuple(o) for o in lane_slot_offsets(tile.layout, tile.shape)]
    cols = lane_first_columns(tile, sg, transposed)
    per, most = 32 // bits, 8 * 32 // bits
    runs, s = [], 0
    while s < len(offs):
        r, c = offs[s]
        n = 1
        while s + n < len(offs) and n < most and offs[s + n] == (r, c + n):
            n += 1
        if n % per or any((x + c) % per for x in cols):
            return []
        runs.append((s, r, c, n))
        s += n
    return runs if len(runs) < len(offs) else []


def lane_first_columns(tile, sg: int, transposed: bool) -> set:
    """The memory columns of every lane's first element of a 2-D ``tile``, relative to its origin."""
    return {lane_base(tile.layout, tile.shape, lane)[0 if transposed else 1] for lane in range(sg)}
