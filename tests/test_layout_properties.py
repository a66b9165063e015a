"""Properties of the layout math (``xekern.ir.layout``) on random layouts, checked with hypothesis.

Valid layouts are built constructively (powers of two, rank 1 and 2, ``prod(sg_layout)`` =
subgroups in {1, 2, 4, 8}, ``prod(lane_layout)`` = sub-group size in {8, 16}, data sizes that
divide, round-robin and replication both drawn, random ``order``). For each one:

* ``verify_layout`` accepts it;
* ``xekern.layouts.ownership`` (which walks subgroups, pieces, blocks, lanes and slots with the
  functions of ``ir/layout.py``) puts each element in exactly the (subgroup, lane, slot) places
  that seed 001's formula, re-implemented here from the raw parameters, gives;
* every element has exactly the number of copies the layout implies: the product over
  dimensions of ``max(1, unit / size)`` at the subgroup and lane levels (times the subgroup and
  lane grids of the dimensions a slice removed);
* ``sg_is_owner`` / ``lane_is_owner`` select exactly one copy of each element;
* a lane has ``prod(rounds * lane_data)`` slots per block, numbered densely;
* the same on ``make_slice`` slices (also of rank-3 parents, also nested), and ``make_slice``
  only normalizes: it distributes like the raw ``SliceLayout``; ``make_slice``, ``unit_dims`` and
  ``unslice`` also take a raw nested ``SliceLayout``;
* ``default_layout``, ``dpas_layouts``, ``unit_dims`` and ``permute_layout`` produce layouts with
  the same properties (a transposed tile keeps every element in its subgroup and lane);
* layouts of arbitrary small integers (not powers of two) built to be valid distribute exactly,
  and whatever ``verify_layout`` accepts among random ones does too (the verifier misses no rule).

Invalid layouts (sizes that do not divide, wrong lane or subgroup product, wrong rank, bad
``order``, non-positive sizes) must raise ``LayoutError`` naming the broken rule.

The default run is a few seconds: ``XEKERN_LAYOUT_EXAMPLES`` (default 100) examples per property,
a quarter of that for the rejection tests, tiles of at most ``XEKERN_LAYOUT_MAX_ELEMS`` (default
1024) elements. A longer run, and replaying a failure::

    XEKERN_LAYOUT_EXAMPLES=20000 XEKERN_LAYOUT_MAX_ELEMS=8192 python -m pytest tests/test_layout_properties.py -q
    python -m pytest tests/test_layout_properties.py -q --hypothesis-seed=1234 --hypothesis-show-statistics
"""
import os
from dataclasses import dataclass
from itertools import product
from math import prod
from typing import Tuple

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from xekern.ir.layout import (Layout, LayoutError, SliceLayout, block_offsets, inst_shape, lane_is_owner,
                              lane_slot_offsets, sg_is_owner, sg_piece_shape, verify_layout)
from xekern.ir.types import DType
from xekern.layouts import ownership
from xekern.lowering.layouts import default_layout, dpas_layouts, make_slice, permute_layout, unit_dims, unslice
from xekern.targets import TARGETS

EXAMPLES = int(os.environ.get("XEKERN_LAYOUT_EXAMPLES", "100"))
_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much]
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_HEALTH)
# the rejection tests each break one rule of a valid layout: fewer examples cover them
FEW = settings(max_examples=max(1, EXAMPLES // 4), deadline=None, suppress_health_check=_HEALTH)
MAX_ELEMS = int(os.environ.get("XEKERN_LAYOUT_MAX_ELEMS", "1024"))  # tile size bound of the generated cases


# ---- an independent model of seed 001 --------------------------------------------------------------

@dataclass(frozen=True)
class Params:
    """The raw numbers of a root layout, every field filled in (what the model below reads)."""

    shape: Tuple[int, ...]
    sg_layout: Tuple[int, ...]
    sg_data: Tuple[int, ...]
    block: Tuple[int, ...]        # inst_data, or sg_data when there is none
    lane_layout: Tuple[int, ...]
    lane_data: Tuple[int, ...]
    order: Tuple[int, ...]        # fastest dimension first


def coords_of(linear, grid, order):
    out = [0] * len(grid)
    for d in order:
        linear, out[d] = divmod(linear, grid[d])
    return out


def seed_dim(coord, count, data, size):
    """Seed 001: ``(id * data + round * count * data) % size + d``, per round then per d."""
    unit = count * data
    return [[(coord * data + r * unit) % size + d for d in range(data)] for r in range(max(1, size // unit))]


def model(p: Params, kept):
    """``{(sg, lane): [coords in slot order]}`` for the tile of the ``kept`` dims of ``p.shape``."""
    out = {}
    for sg in range(prod(p.sg_layout)):
        sc = coords_of(sg, p.sg_layout, p.order)
        # pieces: the rounds of each dimension, row-major; a piece starts at its round's first element
        starts = [[r[0] for r in seed_dim(sc[i], p.sg_layout[i], p.sg_data[i], p.shape[i])] for i in kept]
        for lane in range(prod(p.lane_layout)):
            lc = coords_of(lane, p.lane_layout, p.order)
            per_dim = [seed_dim(lc[i], p.lane_layout[i], p.lane_data[i], p.block[i]) for i in kept]
            in_block = []
            for rounds in product(*per_dim):
                in_block.extend(product(*rounds))
            cells = []
            for piece in product(*starts):
                grid = [range(0, p.sg_data[i], p.block[i]) for i in kept]
                for blk in product(*grid):
                    cells.extend(tuple(a + b + c for a, b, c in zip(piece, blk, e)) for e in in_block)
            out[sg, lane] = cells
    return out


def expected_copies(p: Params, kept):
    copies = 1
    for i in range(len(p.shape)):
        if i in kept:
            copies *= max(1, p.sg_layout[i] * p.sg_data[i] // p.shape[i])
            copies *= max(1, p.lane_layout[i] * p.lane_data[i] // p.block[i])
        else:  # a sliced dimension: every subgroup and lane along it holds a copy
            copies *= p.sg_layout[i] * p.lane_layout[i]
    return copies


def params_of(root: Layout, shape) -> Params:
    sd = root.sg_data or tuple(max(1, s // c) for s, c in zip(shape, root.sg_layout))
    return Params(tuple(shape), root.sg_layout, sd, root.inst_data or sd, root.lane_layout,
                  root.lane_data or (1,) * root.rank, root.dim_order)


# ---- the properties ----------------------------------------------------------------------------------

def check_distribution(layout, shape, p: Params, sg_size, num_subgroups, kept=None):
    """Every property of the module docstring for ``layout`` on ``shape``. ``p`` has the numbers of
    the layout the tile was sliced from (or of ``layout`` itself), ``kept`` the dimensions of ``p``
    that ``shape`` keeps (default: all of them)."""
    verify_layout(layout, shape, sg_size=sg_size, num_subgroups=num_subgroups)
    kept = tuple(range(len(p.shape))) if kept is None else kept
    own = ownership(layout, shape, sg_size=sg_size, num_subgroups=num_subgroups)
    cells = set(product(*[range(s) for s in shape]))
    assert set(own) == cells, f"owned cells outside the tile: {sorted(set(own) - cells)[:5]}"

    # each (sg, lane) holds exactly the seed formula's elements, in slot order
    by_owner = {}
    for c, owners in own.items():
        for o in owners:
            by_owner.setdefault((o.sg, o.lane), {})[o.slot] = c
    want = model(p, kept)
    got = {k: [v[s] for s in sorted(v)] for k, v in by_owner.items()}
    for k in want:
        assert got.get(k, []) == want[k], f"(sg, lane) = {k}: elements {got.get(k)} != seed formula {want[k]}"
        assert sorted(by_owner.get(k, {})) == list(range(len(want[k]))), f"{k}: slots are not dense"

    # copies
    copies = expected_copies(p, kept)
    bad = {c: len(o) for c, o in own.items() if len(o) != copies}
    assert not bad, f"expected {copies} copies of every element, got {dict(list(bad.items())[:5])}"

    # slots per lane and block: prod(rounds * lane_data)
    piece = sg_piece_shape(layout, shape)
    block = inst_shape(layout, piece)
    per_block = prod(max(1, b // (c * d)) * d for b, c, d in
                     zip([p.block[i] for i in kept], [p.lane_layout[i] for i in kept], [p.lane_data[i] for i in kept]))
    assert len(lane_slot_offsets(layout, block)) == per_block
    n_pieces = prod(max(1, p.shape[i] // (p.sg_layout[i] * p.sg_data[i])) for i in kept)
    assert len(block_offsets(piece, block)) * n_pieces * per_block == len(want[0, 0])

    # the owner predicates pick one copy of each element
    sg_own = {s for s in range(num_subgroups) if sg_is_owner(layout, shape, s)}
    lane_own = {lane for lane in range(sg_size) if lane_is_owner(layout, block, lane)}
    firsts = {c: [o for o in owners if o.sg in sg_own and o.lane in lane_own] for c, owners in own.items()}
    bad = {c: f for c, f in firsts.items() if len(f) != 1}
    assert not bad, f"sg_is_owner/lane_is_owner select {dict(list(bad.items())[:3])}"


# ---- valid layouts, built constructively -----------------------------------------------------------

@st.composite
def pow2_split(draw, total, rank):
    """``total`` (a power of two) as a product of ``rank`` powers of two."""
    exps = [0] * rank
    for _ in range(total.bit_length() - 1):
        exps[draw(st.integers(0, rank - 1))] += 1
    return tuple(1 << e for e in exps)


def log2(x):
    return x.bit_length() - 1


@dataclass(frozen=True)
class Case:
    layout: Layout
    shape: Tuple[int, ...]
    sg_size: int
    num_subgroups: int
    p: Params


@st.composite
def valid_cases(draw, ranks=(1, 2), max_elems=MAX_ELEMS):
    rank = draw(st.sampled_from(ranks))
    num_subgroups = draw(st.sampled_from([1, 2, 4, 8]))
    sg_size = draw(st.sampled_from([8, 16]))
    sl = draw(pow2_split(num_subgroups, rank))
    ll = draw(pow2_split(sg_size, rank))
    ld = tuple(1 << draw(st.integers(0, 2)) for _ in range(rank))
    # a block is lane_data times 2^j: j < log2(lane_layout) replicates lanes, j > it gives lane rounds
    block = tuple(d << draw(st.integers(0, log2(c) + 2)) for c, d in zip(ll, ld))
    has_inst = draw(st.booleans())
    sd = tuple(b << draw(st.integers(0, 2)) for b in block) if has_inst else block
    # the tile is sg_data times 2^j: j < log2(sg_layout) replicates subgroups, j > it gives round-robin
    shape = tuple(d << draw(st.integers(0, log2(c) + 2)) for c, d in zip(sl, sd))
    assume(prod(shape) <= max_elems)
    order = draw(st.one_of(st.none(), st.permutations(range(rank)).map(tuple)))
    ld_field = None if all(d == 1 for d in ld) and draw(st.booleans()) else ld
    layout = Layout(sg_layout=sl, sg_data=sd, inst_data=block if has_inst else None, lane_layout=ll,
                    lane_data=ld_field, order=order)
    return Case(layout, shape, sg_size, num_subgroups, params_of(layout, shape))


@SETTINGS
@given(valid_cases())
def test_valid_layouts_distribute_every_element(case):
    check_distribution(case.layout, case.shape, case.p, case.sg_size, case.num_subgroups)


@st.composite
def slice_cases(draw):
    case = draw(valid_cases(ranks=(2, 3)))
    rank = len(case.shape)
    dims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1)))
    hows = ["make_slice", "raw"] + (["nested", "raw-nested"] if len(dims) == 2 else [])
    how = draw(st.sampled_from(hows))
    if how == "make_slice":
        layout = make_slice(case.layout, dims)
    elif how == "raw":
        layout = SliceLayout(case.layout, tuple(dims))
    else:  # slice one dim, then the other (its index in the already-reduced tile)
        first, second = dims if draw(st.booleans()) else dims[::-1]
        second -= second > first
        if how == "nested":
            layout = make_slice(make_slice(case.layout, [first]), [second])
        else:
            layout = SliceLayout(SliceLayout(case.layout, (first,)), (second,))
    shape = tuple(s for i, s in enumerate(case.shape) if i not in dims)
    return case, layout, shape, dims


@SETTINGS
@given(slice_cases())
def test_slices_distribute_every_element(c):
    case, layout, shape, dims = c
    kept = tuple(i for i in range(len(case.shape)) if i not in dims)
    # make_slice may return a plain Layout when nothing is replicated along the removed dims
    check_distribution(layout, shape, case.p, case.sg_size, case.num_subgroups, kept)
    # make_slice only normalizes the removed dims' data sizes: the distribution is the raw slice's
    assert ownership(layout, shape) == ownership(SliceLayout(case.layout, tuple(dims)), shape)


@settings(SETTINGS)
@given(valid_cases(ranks=(4,)), st.data())
def test_make_slice_unit_dims_unslice_take_raw_nested_slices(case, data):
    """A user may write a nested ``SliceLayout`` (the frontend keeps it as given); the passes'
    ``make_slice``, ``unit_dims`` and ``unslice`` must treat it like the flat slice it stands for."""
    first = data.draw(st.integers(0, 3), label="first")
    second = data.draw(st.integers(0, 2), label="second")
    nested = SliceLayout(SliceLayout(case.layout, (first,)), (second,))
    kept = nested.kept_dims
    flat = SliceLayout(case.layout, tuple(i for i in range(4) if i not in kept))
    d = data.draw(st.integers(0, 1), label="d")
    # make_slice: one more dimension removed
    sliced = make_slice(nested, [d])
    rest = (kept[1 - d],)
    assert sliced.rank == 1, f"make_slice({nested}, [{d}]) = {sliced} has rank {sliced.rank}"
    check_distribution(sliced, tuple(case.shape[i] for i in rest), case.p, case.sg_size, case.num_subgroups, rest)
    # unit_dims: dimension d of the nested slice's tile has size 1
    shape = tuple(1 if i == d else case.shape[k] for i, k in enumerate(kept))
    got, want = unit_dims(nested, shape), unit_dims(flat, shape)
    assert got.rank == 2, f"unit_dims({nested}, {shape}) = {got} has rank {got.rank}"
    assert ownership(got, shape) == ownership(want, shape)
    # unslice: a unit dimension inserted back at position pos
    pos = data.draw(st.integers(0, 2), label="pos")
    got, want = unslice(nested, pos), unslice(flat, pos)
    assert (got is None) == (want is None), f"unslice({nested}, {pos}) = {got}, flat: {want}"
    if want is not None:
        shape3 = shape[:pos] + (1,) + shape[pos:]
        assert got.rank == want.rank == 3, f"unslice({nested}, {pos}) = {got} has rank {got.rank}"
        assert ownership(unit_dims(got, shape3), shape3) == ownership(unit_dims(want, shape3), shape3)


@SETTINGS
@given(shape=st.lists(st.integers(0, 9).map(lambda e: 1 << e), min_size=1, max_size=2).map(tuple),
       num_subgroups=st.sampled_from([1, 2, 4, 8, 16, 32]), sg_size=st.sampled_from([8, 16]))
def test_default_layout_distributes_every_element(shape, num_subgroups, sg_size):
    assume(prod(shape) <= MAX_ELEMS)
    layout = default_layout(shape, num_subgroups, sg_size)
    check_distribution(layout, shape, params_of(layout, shape), sg_size, num_subgroups)


DPAS_CASES = [(t, e) for t in TARGETS.values() for e in t.dpas]


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 4))
@given(target_elem=st.sampled_from(DPAS_CASES), num_subgroups=st.sampled_from([1, 2, 4, 8]),
       mult=st.tuples(*[st.integers(0, 3).map(lambda e: 1 << e)] * 3))
def test_dpas_layouts_distribute_every_element(target_elem, num_subgroups, mult):
    target, elem_name = target_elem
    elem = _dtype(elem_name)
    s = target.dpas[elem_name]
    M, N, K = s.m * mult[0], s.n * mult[1], s.k * mult[2]
    la, lb, lc = dpas_layouts(target, elem, M, N, K, num_subgroups)
    for layout, shape in [(la, (M, K)), (lb, (K, N)), (lc, (M, N))]:
        if prod(shape) * num_subgroups <= MAX_ELEMS:  # A and B are replicated over subgroups
            check_distribution(layout, shape, params_of(layout, shape), target.sg_size, num_subgroups)
        else:
            verify_layout(layout, shape, sg_size=target.sg_size, num_subgroups=num_subgroups)


def _dtype(name: str) -> DType:
    from xekern.ir import types as T
    return {"bf16": T.bfloat16, "f16": T.float16, "tf32": T.float32, "i8": T.int8, "ui8": T.uint8}[name]


@SETTINGS
@given(valid_cases(), st.data())
def test_unit_dims_distribute_every_element(case, data):
    """``unit_dims``: the layout of the same tile with some dimensions of size 1 (after a reduction
    with keepdims, or a broadcast source): each such dimension is held by every subgroup and lane."""
    ones = data.draw(st.sets(st.integers(0, len(case.shape) - 1), min_size=1))
    shape = tuple(1 if i in ones else s for i, s in enumerate(case.shape))
    layout = unit_dims(case.layout, shape)
    check_distribution(layout, shape, params_of(layout, shape), case.sg_size, case.num_subgroups)


@FEW
@given(valid_cases(ranks=(2,)))
def test_permute_layout_keeps_every_element_in_its_subgroup_and_lane(case):
    """A transposed tile with ``permute_layout`` is held by the same subgroup and lane as before
    (slot numbers may change: slots run row-major over the new dimensions)."""
    layout = permute_layout(case.layout, (1, 0))
    shape = case.shape[::-1]
    check_distribution(layout, shape, params_of(layout, shape), case.sg_size, case.num_subgroups)
    before = ownership(case.layout, case.shape)
    after = ownership(layout, shape)
    for (r, c), owners in before.items():
        assert {(o.sg, o.lane) for o in owners} == {(o.sg, o.lane) for o in after[c, r]}, (r, c)


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def non_pow2_layouts(draw):
    """Valid layouts built from any small integers: per dimension, a block that is lane_data times a
    multiple or a divisor of lane_layout, sg_data a multiple of it, a tile that is sg_data times a
    multiple or a divisor of sg_layout."""
    rank = draw(st.sampled_from([1, 2]))
    ints = st.integers(1, 6)
    sl, ll, ld = (tuple(draw(ints) for _ in range(rank)) for _ in range(3))
    block = tuple(d * draw(st.one_of(st.sampled_from(_divisors(c)), st.integers(1, 3).map(lambda m, c=c: c * m)))
                  for c, d in zip(ll, ld))
    has_inst = draw(st.booleans())
    sd = tuple(b * draw(st.integers(1, 3)) for b in block) if has_inst else block
    shape = tuple(d * draw(st.one_of(st.sampled_from(_divisors(c)), st.integers(1, 3).map(lambda m, c=c: c * m)))
                  for c, d in zip(sl, sd))
    assume(prod(shape) <= MAX_ELEMS)
    order = draw(st.permutations(range(rank)).map(tuple))
    return Layout(sg_layout=sl, sg_data=sd, inst_data=block if has_inst else None, lane_layout=ll, lane_data=ld,
                  order=order), shape


@SETTINGS
@given(non_pow2_layouts())
def test_non_power_of_two_layouts_distribute_every_element(c):
    layout, shape = c
    check_distribution(layout, shape, params_of(layout, shape), prod(layout.lane_layout), prod(layout.sg_layout))


@st.composite
def any_small_layouts(draw):
    """Arbitrary small integers: whatever verify_layout accepts must distribute exactly, so the
    verifier misses no rule the distribution relies on."""
    rank = draw(st.sampled_from([1, 2]))
    ints = st.integers(1, 6)
    sl, sd, ll, ld = (tuple(draw(ints) for _ in range(rank)) for _ in range(4))
    inst = draw(st.one_of(st.none(), st.tuples(*[ints] * rank)))
    shape = tuple(d * draw(st.sampled_from([1, 1, 2, 3, 4])) // draw(st.sampled_from([1, 1, 2, 3]))
                  for d in sd)
    assume(all(s > 0 for s in shape) and prod(shape) <= MAX_ELEMS)
    order = draw(st.permutations(range(rank)).map(tuple))
    layout = Layout(sg_layout=sl, sg_data=sd, inst_data=inst, lane_layout=ll, lane_data=ld, order=order)
    try:
        verify_layout(layout, shape)
    except LayoutError:
        assume(False)
    return layout, shape


@FEW
@given(any_small_layouts())
def test_whatever_verify_accepts_distributes_every_element(c):
    layout, shape = c
    check_distribution(layout, shape, params_of(layout, shape), prod(layout.lane_layout), prod(layout.sg_layout))


# ---- invalid layouts ---------------------------------------------------------------------------------

def rejects(layout, shape, match, **kw):
    with pytest.raises(LayoutError, match=match):
        verify_layout(layout, shape, **kw)


def with_field(layout: Layout, name: str, i: int, value: int) -> Layout:
    v = list(getattr(layout, name))
    v[i] = value
    return layout.replace(**{name: tuple(v)})


@st.composite
def valid_full(draw):
    """A valid case whose layout has every field (so each can be broken)."""
    case = draw(valid_cases())
    p = case.p
    layout = Layout(sg_layout=p.sg_layout, sg_data=p.sg_data, inst_data=p.block, lane_layout=p.lane_layout,
                    lane_data=p.lane_data, order=p.order)
    return Case(layout, case.shape, case.sg_size, case.num_subgroups, p)


@FEW
@given(valid_full(), st.data())
def test_tile_not_a_multiple_of_sg_data_is_rejected(case, data):
    dims = [i for i, d in enumerate(case.p.sg_data) if d > 1]
    assume(dims)
    i = data.draw(st.sampled_from(dims))
    shape = list(case.shape)
    shape[i] = case.p.sg_data[i] * data.draw(st.integers(1, 4)) + data.draw(st.integers(1, case.p.sg_data[i] - 1))
    rejects(case.layout, tuple(shape), rf"sg_layout/sg_data: the tile size {shape[i]} in dimension {i} is not a "
            r"multiple of the data per owner .*RFC: each dimension must be divisible by the data size")


@FEW
@given(valid_full(), st.data())
def test_tile_neither_multiple_nor_divisor_of_sg_unit_is_rejected(case, data):
    dims = [i for i, c in enumerate(case.p.sg_layout) if c > 1]
    assume(dims)
    i = data.draw(st.sampled_from(dims))
    shape = list(case.shape)
    shape[i] = 3 * case.p.sg_data[i]  # a multiple of sg_data; neither divides nor is divided by 2^k * sg_data
    rejects(case.layout, tuple(shape), r"sg_layout/sg_data: .* must be a multiple of layout x data .*"
            r"RFC: size divisible by layout x data")


@FEW
@given(valid_full(), st.data())
def test_inst_data_not_dividing_the_subgroup_tile_is_rejected(case, data):
    i = data.draw(st.integers(0, len(case.shape) - 1))
    bigger = case.p.sg_data[i] * 2
    rejects(with_field(case.layout, "inst_data", i, bigger), case.shape,
            r"inst_data .* does not divide the subgroup tile .*RFC: the subgroup tile is a whole number of "
            r"instruction blocks")


@FEW
@given(valid_full(), st.data())
def test_block_not_a_multiple_of_lane_data_is_rejected(case, data):
    i = data.draw(st.integers(0, len(case.shape) - 1))
    rejects(with_field(case.layout, "lane_data", i, case.p.block[i] * 2), case.shape,
            rf"lane_layout/lane_data: the tile size {case.p.block[i]} in dimension {i} is not a multiple of the "
            r"data per owner")


@FEW
@given(lanes=st.sampled_from([2, 4, 8, 16]), data=st.sampled_from([1, 2]), rnd=st.data())
def test_block_neither_multiple_nor_divisor_of_lane_unit_is_rejected(lanes, data, rnd):
    k = rnd.draw(st.integers(0, log2(lanes) - 1))
    block = 3 * data << k  # 3 * 2^k lane_data with 2^k < lanes: neither a multiple nor a divisor of lanes * data
    layout = Layout(lane_layout=(lanes,), lane_data=(data,))
    rejects(layout, (block,), r"lane_layout/lane_data: .* must be a multiple of layout x data .*RFC")


@FEW
@given(valid_full(), st.data())
def test_wrong_lane_product_is_rejected(case, data):
    i = data.draw(st.integers(0, len(case.shape) - 1))
    factor = data.draw(st.sampled_from([2, 4]))
    rejects(with_field(case.layout, "lane_layout", i, case.p.lane_layout[i] * factor), case.shape,
            r"lane_layout = .* has \d+ lanes, but the subgroup has \d+ \(RFC: the lane layout's product equals "
            r"the subgroup size\)", sg_size=case.sg_size, num_subgroups=case.num_subgroups)


@FEW
@given(valid_full(), st.data())
def test_wrong_sg_product_is_rejected(case, data):
    i = data.draw(st.integers(0, len(case.shape) - 1))
    rejects(with_field(case.layout, "sg_layout", i, case.p.sg_layout[i] * 2), case.shape,
            r"sg_layout = .* has \d+ subgroups, but the workgroup has \d+ \(RFC: the sg layout's product equals "
            r"the number of subgroups\)", sg_size=case.sg_size, num_subgroups=case.num_subgroups)


@FEW
@given(valid_full(), st.data())
def test_wrong_rank_is_rejected(case, data):
    rank = len(case.shape)
    how = data.draw(st.sampled_from(["shape", "field"]))
    if how == "shape":
        shape = case.shape + (4,) if rank == 1 or data.draw(st.booleans()) else case.shape[:1]
        rejects(case.layout, shape, r"layout of rank \d does not fit a tile of rank \d \(RFC: every layout field "
                r"has one entry per tile dimension\)")
    else:
        name = data.draw(st.sampled_from(["sg_data", "inst_data", "lane_layout", "lane_data", "order"]))
        v = getattr(case.layout, name)
        bad = v + (1,) if rank == 1 or data.draw(st.booleans()) else v[:1]
        rejects(case.layout.replace(**{name: bad}), case.shape, rf"{name} has {len(bad)} entries but the layout "
                rf"has rank {rank}")


@FEW
@given(valid_full(), st.data())
def test_bad_order_is_rejected(case, data):
    rank = len(case.shape)
    order = tuple(data.draw(st.lists(st.integers(-1, rank), min_size=rank, max_size=rank)))
    assume(sorted(order) != list(range(rank)))
    rejects(case.layout.replace(order=order), case.shape, r"order = .* is not a permutation of the dimensions")


@FEW
@given(valid_full(), st.data())
def test_non_positive_sizes_are_rejected(case, data):
    name = data.draw(st.sampled_from(["sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data"]))
    i = data.draw(st.integers(0, len(case.shape) - 1))
    rejects(with_field(case.layout, name, i, data.draw(st.integers(-2, 0))), case.shape,
            rf"{name} = .* must be positive")


@FEW
@given(valid_cases(ranks=(2,)), st.data())
def test_slice_dims_out_of_range_are_rejected(case, data):
    d = data.draw(st.sampled_from([-1, 2, 3]))
    rejects(SliceLayout(case.layout, (d,)), case.shape, r"slice dims .* out of range for the parent layout")
