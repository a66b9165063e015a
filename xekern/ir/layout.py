"""Workgroup layouts (seed 001) and the distribution math behind them.

A ``Layout`` says how a workgroup tile is split: ``sg_layout`` subgroups, each owning
``sg_data`` elements per round (round-robin when the tile is larger); each subgroup tile is cut
into ``inst_data`` blocks (one instruction each); a block is spread over ``lane_layout`` lanes,
each owning ``lane_data`` contiguous elements per round. ``order`` lists dimensions fastest
first and linearizes subgroup and lane ids (``order = [1, 0]``: dimension 1 varies fastest).

The lane offset formula of seed 001, for each dimension ``i`` of a block of size ``B``::

    unit[i]   = lane_layout[i] * lane_data[i]
    rounds[i] = max(1, B[i] // unit[i])
    offset[i] = (lane_id[i] * lane_data[i] + round * unit[i]) % B[i] + d,  d < lane_data[i]

The ``% B`` wraps lanes onto a dimension smaller than the lane grid: those elements are
replicated (the reduction case). The same formula with ``sg_layout``/``sg_data`` over the tile
distributes subgroups. A ``SliceLayout`` is the layout of a tile whose dimensions ``dims`` were
reduced away from a tile with layout ``parent``: ids still delinearize over the parent, and
the sliced dimensions become replication.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from math import prod
from typing import List, Optional, Sequence, Tuple

FIELDS = ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data", "order")


class LayoutError(ValueError):
    """A layout that breaks a rule of the XeGPU layout RFC (seed 001)."""


def _t(x):
    return None if x is None else tuple(int(v) for v in x)


def _fmt(x):
    return "[" + ", ".join(str(v) for v in x) + "]"


@dataclass(frozen=True)
class Layout:
    """``#xegpu.layout``. Any field may be None: absent at this level, or still to be derived."""

    sg_layout: Optional[Tuple[int, ...]] = None
    sg_data: Optional[Tuple[int, ...]] = None
    inst_data: Optional[Tuple[int, ...]] = None
    lane_layout: Optional[Tuple[int, ...]] = None
    lane_data: Optional[Tuple[int, ...]] = None
    order: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        for f in FIELDS:
            object.__setattr__(self, f, _t(getattr(self, f)))

    # ---- shape of the layout -------------------------------------------------------------
    @property
    def rank(self) -> int:
        for f in FIELDS:
            v = getattr(self, f)
            if v is not None:
                return len(v)
        return 0

    @property
    def parent_rank(self) -> int:
        return self.rank

    @property
    def is_wg(self) -> bool:
        return self.sg_layout is not None

    @property
    def root(self) -> "Layout":
        return self

    @property
    def kept_dims(self) -> Tuple[int, ...]:
        return tuple(range(self.rank))

    @property
    def dim_order(self) -> Tuple[int, ...]:
        return self.order if self.order is not None else tuple(reversed(range(self.rank)))

    def drop_sg(self) -> "Layout":
        return replace(self, sg_layout=None, sg_data=None)

    def drop_inst(self) -> "Layout":
        return replace(self, inst_data=None)

    def drop_lane(self) -> "Layout":
        return replace(self, lane_layout=None, lane_data=None)

    def replace(self, **kw) -> "Layout":
        return replace(self, **kw)

    def __str__(self) -> str:
        parts = [f"{f} = {_fmt(getattr(self, f))}" for f in FIELDS if getattr(self, f) is not None]
        return "#xegpu.layout<" + ", ".join(parts) + ">"

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={list(getattr(self, f))}" for f in FIELDS if getattr(self, f) is not None)
        return f"Layout({args})"


@dataclass(frozen=True)
class SliceLayout:
    """``#xegpu.slice<parent, dims>``: the layout of ``parent``'s tile with ``dims`` removed."""

    parent: object  # Layout or SliceLayout
    dims: Tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "dims", tuple(sorted(int(d) for d in self.dims)))

    @property
    def root(self) -> Layout:
        return self.parent.root

    @property
    def parent_rank(self) -> int:
        return self.root.rank

    @property
    def kept_dims(self) -> Tuple[int, ...]:
        """Dimensions of the root layout that this slice keeps, in order."""
        kept = self.parent.kept_dims
        return tuple(d for i, d in enumerate(kept) if i not in self.dims)

    @property
    def rank(self) -> int:
        return len(self.kept_dims)

    @property
    def is_wg(self) -> bool:
        return self.root.is_wg

    @property
    def sg_layout(self):
        return self._kept("sg_layout")

    @property
    def sg_data(self):
        return self._kept("sg_data")

    @property
    def inst_data(self):
        return self._kept("inst_data")

    @property
    def lane_layout(self):
        return self._kept("lane_layout")

    @property
    def lane_data(self):
        return self._kept("lane_data")

    @property
    def order(self):
        return None

    def _kept(self, name):
        v = getattr(self.root, name)
        return None if v is None else tuple(v[d] for d in self.kept_dims)

    def _map_root(self, fn) -> "SliceLayout":
        if isinstance(self.parent, SliceLayout):
            return SliceLayout(self.parent._map_root(fn), self.dims)
        return SliceLayout(fn(self.parent), self.dims)

    def drop_sg(self) -> "SliceLayout":
        return self._map_root(Layout.drop_sg)

    def drop_inst(self) -> "SliceLayout":
        return self._map_root(Layout.drop_inst)

    def drop_lane(self) -> "SliceLayout":
        return self._map_root(Layout.drop_lane)

    def __str__(self) -> str:
        return f"#xegpu.slice<{self.parent}, dims = {_fmt(self.dims)}>"


AnyLayout = object  # Layout | SliceLayout


def slice_layout(layout, dims: Sequence[int]):
    return SliceLayout(layout, tuple(dims))


def same_distribution(a, b) -> bool:
    """Two layouts that put every element in the same (subgroup, lane, slot)."""
    return a == b


# ---- id delinearization ------------------------------------------------------------------

def delinearize(linear: int, grid: Sequence[int], order: Sequence[int]) -> Tuple[int, ...]:
    """Coordinates of ``linear`` in ``grid``; ``order[0]`` is the fastest-varying dimension."""
    coords = [0] * len(grid)
    for d in order:
        coords[d] = linear % grid[d]
        linear //= grid[d]
    return tuple(coords)


def root_order(layout) -> Tuple[int, ...]:
    return layout.root.dim_order


# ---- per-dimension distribution ----------------------------------------------------------

@dataclass(frozen=True)
class DimSplit:
    """How one dimension of size ``size`` is split by ``count`` workers owning ``data`` each."""

    size: int
    count: int
    data: int

    @property
    def unit(self) -> int:
        return self.count * self.data

    @property
    def rounds(self) -> int:
        return max(1, self.size // self.unit)

    def base(self, coord: int) -> int:
        """First element owned by worker ``coord`` (before rounds): ``(coord * data) % size``."""
        return (coord * self.data) % self.size

    def offsets(self) -> List[int]:
        """Offsets (relative to ``base``) of every element a worker owns, in slot order."""
        return [r * self.unit + d for r in range(self.rounds) for d in range(self.data)]

    def owns_first_copy(self, coord: int) -> bool:
        return coord * self.data < self.size

    def check(self, what: str, dim: int) -> None:
        if self.data <= 0 or self.count <= 0:
            raise LayoutError(f"{what}: sizes must be positive in dimension {dim}")
        if self.size % self.data:
            raise LayoutError(
                f"{what}: the tile size {self.size} in dimension {dim} is not a multiple of the "
                f"data per owner {self.data} (RFC: each dimension must be divisible by the data size)")
        if self.size % self.unit and self.unit % self.size:
            raise LayoutError(
                f"{what}: the tile size {self.size} in dimension {dim} must be a multiple of "
                f"layout x data = {self.count} x {self.data} = {self.unit} (round-robin), or divide it "
                f"(replication) (RFC: size divisible by layout x data)")


def lane_splits(layout, block: Sequence[int]) -> List[DimSplit]:
    """The lane split of each kept dimension of ``block`` (a block at subgroup level)."""
    ll, ld = layout.lane_layout, layout.lane_data
    if ll is None:
        raise LayoutError("layout has no lane_layout")
    ld = ld if ld is not None else (1,) * len(ll)
    return [DimSplit(b, c, d) for b, c, d in zip(block, ll, ld)]


def sg_splits(layout, shape: Sequence[int]) -> List[DimSplit]:
    sl, sd = layout.sg_layout, layout.sg_data
    if sl is None:
        raise LayoutError("layout has no sg_layout")
    sd = sd if sd is not None else tuple(max(1, s // c) for s, c in zip(shape, sl))
    return [DimSplit(s, c, d) for s, c, d in zip(shape, sl, sd)]


def lane_slot_offsets(layout, block: Sequence[int]) -> List[Tuple[int, ...]]:
    """Offsets of each slot of a lane inside ``block``, relative to the lane's base, in slot order.

    Slot order: rounds in row-major order over dimensions, then ``lane_data`` elements in
    row-major order. This matches the register payload of 2D block loads and the DPAS operand
    fragments (row r of an 8x16 A block is slot r; VNNI pairs of B are adjacent slots).
    """
    key = (layout, tuple(block))
    hit = _SLOT_OFFSETS.get(key)
    if hit is None:
        splits = lane_splits(layout, block)
        rounds = [range(s.rounds) for s in splits]
        datas = [range(s.data) for s in splits]
        out = []
        for r in itertools.product(*rounds):
            for d in itertools.product(*datas):
                out.append(tuple(ri * s.unit + di for ri, di, s in zip(r, d, splits)))
        if len(_SLOT_OFFSETS) > 4096:
            _SLOT_OFFSETS.clear()
        hit = _SLOT_OFFSETS[key] = tuple(out)
    return list(hit)


# lane_slot_offsets is asked for the same (layout, block) by every pass and rule that touches a
# tile: computed once per process (layouts are frozen, so they are their own key)
_SLOT_OFFSETS: dict = {}


def lane_count(layout) -> int:
    root = layout.root
    return prod(root.lane_layout) if root.lane_layout is not None else 1


def lane_coords(layout, lane_id: int) -> Tuple[int, ...]:
    """Coordinates of ``lane_id`` in the kept dimensions of ``layout``."""
    root = layout.root
    full = delinearize(lane_id, root.lane_layout, root.dim_order)
    return tuple(full[d] for d in layout.kept_dims)


def sg_coords(layout, sg_id: int) -> Tuple[int, ...]:
    root = layout.root
    full = delinearize(sg_id, root.sg_layout, root.dim_order)
    return tuple(full[d] for d in layout.kept_dims)


def lane_base(layout, block: Sequence[int], lane_id: int) -> Tuple[int, ...]:
    return tuple(s.base(c) for s, c in zip(lane_splits(layout, block), lane_coords(layout, lane_id)))


def lane_is_owner(layout, block: Sequence[int], lane_id: int) -> bool:
    """True for the lane holding the first copy of its elements (replicas return False)."""
    root = layout.root
    full = delinearize(lane_id, root.lane_layout, root.dim_order)
    kept = layout.kept_dims
    for d in range(root.rank):
        if d not in kept and full[d] != 0:
            return False
    return all(s.owns_first_copy(c) for s, c in zip(lane_splits(layout, block), lane_coords(layout, lane_id)))


def sg_is_owner(layout, shape: Sequence[int], sg_id: int) -> bool:
    root = layout.root
    full = delinearize(sg_id, root.sg_layout, root.dim_order)
    kept = layout.kept_dims
    for d in range(root.rank):
        if d not in kept and full[d] != 0:
            return False
    return all(s.owns_first_copy(c) for s, c in zip(sg_splits(layout, shape), sg_coords(layout, sg_id)))


def sg_piece_shape(layout, shape: Sequence[int]) -> Tuple[int, ...]:
    return tuple(s.data for s in sg_splits(layout, shape))


def sg_piece_offsets(layout, shape: Sequence[int]) -> List[Tuple[int, ...]]:
    """Static offsets of the round-robin pieces a subgroup owns, relative to its base."""
    splits = sg_splits(layout, shape)
    return [tuple(r * s.unit for r, s in zip(rs, splits))
            for rs in itertools.product(*[range(s.rounds) for s in splits])]


def block_offsets(tile: Sequence[int], block: Sequence[int]) -> List[Tuple[int, ...]]:
    """Origins of the ``block``-shaped blocks of ``tile``, row-major."""
    return [tuple(i * b for i, b in zip(idx, block))
            for idx in itertools.product(*[range(t // b) for t, b in zip(tile, block)])]


def inst_shape(layout, sg_tile: Sequence[int]) -> Tuple[int, ...]:
    inst = layout.inst_data
    return tuple(inst) if inst is not None else tuple(sg_tile)


# ---- verification --------------------------------------------------------------------------

def verify_layout(layout, shape: Sequence[int], *, sg_size: Optional[int] = None,
                  num_subgroups: Optional[int] = None, level: str = "wg") -> None:
    """Check ``layout`` for a tile of ``shape``; raise LayoutError naming the broken rule."""
    shape = tuple(shape)
    if isinstance(layout, SliceLayout):
        if layout.rank != len(shape):
            raise LayoutError(f"slice layout of rank {layout.rank} does not fit a tile of rank {len(shape)}")
        for d in layout.dims:
            if not 0 <= d < layout.parent.rank:
                raise LayoutError(f"slice dims {list(layout.dims)} out of range for the parent layout")
        _verify_fields(layout.root, None, sg_size, num_subgroups)
        _verify_splits(layout, shape, level)
        return
    if layout.rank != len(shape):
        raise LayoutError(f"layout of rank {layout.rank} does not fit a tile of rank {len(shape)} "
                          f"(RFC: every layout field has one entry per tile dimension)")
    _verify_fields(layout, shape, sg_size, num_subgroups)
    _verify_splits(layout, shape, level)


def _verify_fields(layout: Layout, shape, sg_size, num_subgroups) -> None:
    r = layout.rank
    for f in FIELDS:
        v = getattr(layout, f)
        if v is not None and len(v) != r:
            raise LayoutError(f"{f} has {len(v)} entries but the layout has rank {r}")
        if v is not None and f != "order" and any(x <= 0 for x in v):
            raise LayoutError(f"{f} = {_fmt(v)} must be positive")
    if layout.order is not None and sorted(layout.order) != list(range(r)):
        raise LayoutError(f"order = {_fmt(layout.order)} is not a permutation of the dimensions")
    if (layout.lane_layout is None) != (layout.lane_data is None) and layout.lane_layout is None:
        raise LayoutError("lane_data needs a lane_layout")
    if layout.sg_data is not None and layout.sg_layout is None:
        raise LayoutError("sg_data needs an sg_layout")
    if sg_size is not None and layout.lane_layout is not None and prod(layout.lane_layout) != sg_size:
        raise LayoutError(
            f"lane_layout = {_fmt(layout.lane_layout)} has {prod(layout.lane_layout)} lanes, but the "
            f"subgroup has {sg_size} (RFC: the lane layout's product equals the subgroup size)")
    if num_subgroups is not None and layout.sg_layout is not None and prod(layout.sg_layout) != num_subgroups:
        raise LayoutError(
            f"sg_layout = {_fmt(layout.sg_layout)} has {prod(layout.sg_layout)} subgroups, but the "
            f"workgroup has {num_subgroups} (RFC: the sg layout's product equals the number of subgroups)")


def _verify_splits(layout, shape, level) -> None:
    sg_tile = tuple(shape)
    if level == "wg" and layout.sg_layout is not None:
        for i, s in enumerate(sg_splits(layout, shape)):
            s.check("sg_layout/sg_data", i)
        sg_tile = sg_piece_shape(layout, shape)
    inst = inst_shape(layout, sg_tile)
    for i, (t, b) in enumerate(zip(sg_tile, inst)):
        if t % b:
            raise LayoutError(
                f"inst_data {_fmt(inst)} does not divide the subgroup tile {_fmt(sg_tile)} in dimension {i} "
                f"(RFC: the subgroup tile is a whole number of instruction blocks)")
    if layout.lane_layout is not None:
        for i, s in enumerate(lane_splits(layout, inst)):
            s.check("lane_layout/lane_data", i)
