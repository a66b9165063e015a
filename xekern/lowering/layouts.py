"""Layout constructors the passes use: defaults for a tile shape, DPAS operand layouts from the
target's tables, canonical slices, permutations, and completion of user-given layouts."""
from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Optional, Sequence, Tuple

from ..ir.layout import Layout, LayoutError, SliceLayout, verify_layout
from ..ir.types import DType
from ..targets import Target


def _data_one(root: Layout, dims) -> Layout:
    def fix(field):
        if field is None:
            return None
        return tuple(1 if i in dims else v for i, v in enumerate(field))
    return root.replace(sg_data=fix(root.sg_data), inst_data=fix(root.inst_data), lane_data=fix(root.lane_data))


def unit_dims(layout, shape: Sequence[int]):
    """``layout`` for a tile where the size-1 dimensions of ``shape`` hold one (replicated) element."""
    ones = [i for i, s in enumerate(shape) if s == 1]
    if not ones:
        return layout
    if isinstance(layout, SliceLayout):
        kept = layout.kept_dims
        return SliceLayout(_data_one(layout.root, [kept[i] for i in ones]), _removed(layout))
    return _data_one(layout, ones)


def _removed(layout: SliceLayout) -> tuple:
    """The root dimensions a (possibly nested) slice removes."""
    kept = layout.kept_dims
    return tuple(d for d in range(layout.root.rank) if d not in kept)


def make_slice(layout, dims: Sequence[int]) -> SliceLayout:
    """The canonical layout of a tile with ``layout`` after dimensions ``dims`` are removed.

    Slices of slices flatten onto the root layout, and the removed dimensions' data sizes are
    normalized to 1, so equal distributions compare equal.
    """
    if isinstance(layout, SliceLayout):
        kept = layout.kept_dims
        root_dims = sorted(set(_removed(layout)) | {kept[d] for d in dims})
        root = layout.root
    else:
        root_dims, root = sorted(dims), layout
    plain = _plain_if_unreplicated(root, root_dims)
    return plain if plain is not None else SliceLayout(_data_one(root, root_dims), tuple(root_dims))


def _plain_if_unreplicated(root: Layout, removed) -> "Layout | None":
    """A slice whose removed dimensions have one subgroup and one lane is just the layout of the
    kept dimensions (nothing is replicated along them): return that plain layout."""
    for d in removed:
        if (root.sg_layout or [1] * root.rank)[d] != 1 or (root.lane_layout or [1] * root.rank)[d] != 1:
            return None
    keep = [d for d in range(root.rank) if d not in removed]
    if not keep:
        return None
    renum = {d: i for i, d in enumerate(keep)}

    def cut(field):
        return None if field is None else tuple(field[d] for d in keep)
    return Layout(cut(root.sg_layout), cut(root.sg_data), cut(root.inst_data), cut(root.lane_layout),
                  cut(root.lane_data), tuple(renum[d] for d in root.dim_order if d in renum))


def unslice(layout, dim: int, size: int = 1):
    """The layout of ``x[..., None, ...]`` (a unit dimension inserted at ``dim``) where ``x`` has the
    slice ``layout`` whose root has that dimension. Returns None when it is not a slice there."""
    if not isinstance(layout, SliceLayout):
        return None
    kept = list(layout.kept_dims)
    removed = _removed(layout)
    # the root dim that becomes visible again: the sliced root dim positioned at ``dim``
    for rd in removed:
        new_kept = sorted(kept + [rd])
        if new_kept.index(rd) == dim:
            rest = tuple(d for d in removed if d != rd)
            root = layout.root
            return SliceLayout(root, rest) if rest else root
    return None


def permute_layout(layout: Layout, perm: Sequence[int]) -> Layout:
    """``layout`` of a tile whose dimensions are permuted by ``perm`` (result dim i = source perm[i])."""
    if isinstance(layout, SliceLayout):
        raise LayoutError("transposing a sliced tile is not supported")

    def p(field):
        return None if field is None else tuple(field[i] for i in perm)
    inv = {old: new for new, old in enumerate(perm)}
    order = tuple(inv[d] for d in layout.dim_order)
    return Layout(p(layout.sg_layout), p(layout.sg_data), p(layout.inst_data), p(layout.lane_layout),
                  p(layout.lane_data), order)


def _split_lanes(shape, sg: int) -> Tuple[int, ...]:
    """Lanes along the last dimension first (coalesced rows), the rest on earlier dimensions."""
    lanes = [1] * len(shape)
    left = sg
    for d in reversed(range(len(shape))):
        take = min(left, shape[d]) if d > 0 else left
        take = max(1, take)
        lanes[d] = take
        left //= take
        if left == 1:
            break
    if left > 1:
        lanes[-1] *= left
    return tuple(lanes)


def _split_subgroups(shape, lanes, G: int) -> Tuple[int, ...]:
    """Subgroups over the outer dimensions first, as far as they divide the lane blocks."""
    sgs = [1] * len(shape)
    left = G
    for d in range(len(shape)):
        room = max(1, shape[d] // lanes[d])
        take = 1
        while take * 2 <= min(room, left) and left % (take * 2) == 0:
            take *= 2
        sgs[d] = take
        left //= take
    if left > 1:
        sgs[0] *= left  # replicate across the extra subgroups
    return tuple(sgs)


def default_layout(shape: Sequence[int], num_subgroups: int, sg_size: int) -> Layout:
    """The layout of a tile no anchor constrains: lanes along rows, subgroups down the columns."""
    shape = tuple(shape)
    lanes = _split_lanes(shape, sg_size)
    sgs = _split_subgroups(shape, lanes, num_subgroups)
    sg_data = tuple(max(s // g, min(s, l)) for s, g, l in zip(shape, sgs, lanes))
    r = len(shape)
    return Layout(sg_layout=sgs, sg_data=sg_data, lane_layout=lanes, lane_data=(1,) * r,
                  order=tuple(reversed(range(r))))


def axis_layout(shape: Sequence[int], axis: int, num_subgroups: int, sg_size: int) -> Optional[Layout]:
    """The layout of a tile whose elements move along ``axis`` (``tile_shuffle``: scans, sorts,
    flips): each subgroup holds the whole axis, so the moves stay in its registers and lanes instead
    of crossing subgroups through SLM. Subgroups split the other dimensions (outer first); those left
    over hold copies. None when the copies would give a subgroup more than 32 elements per lane
    (then the default layout's split, and SLM between subgroups, is cheaper)."""
    shape = tuple(shape)
    sgs, left = [1] * len(shape), num_subgroups
    for d in range(len(shape)):
        if d == axis:
            continue
        take = 1
        while take * 2 <= min(shape[d], left) and left % (take * 2) == 0:
            take *= 2
        sgs[d] = take
        left //= take
    piece = tuple(s // g for s, g in zip(shape, sgs))
    if left > 1 and prod(piece) > 32 * sg_size:
        return None
    lanes = _split_lanes(piece, sg_size)
    sgs[axis] *= left     # (the copies: each holds the whole axis)
    sg_data = tuple(max(p, min(s, l)) for p, s, l in zip(piece, shape, lanes))
    return Layout(sg_layout=tuple(sgs), sg_data=sg_data, lane_layout=lanes, lane_data=(1,) * len(shape),
                  order=tuple(reversed(range(len(shape)))))


def resize_axis(layout, shape: Sequence[int], axis: int, size: int) -> Optional[Layout]:
    """``layout``, of a tile of ``shape``, for a tile that is ``size`` long along ``axis`` instead (a
    gather's source and index): the same distribution elsewhere; along ``axis`` each subgroup holds
    all of it if it held all, else the same share, and instruction blocks no longer than that. None
    when no such layout is valid (pass layout then reports the gather)."""
    shape = tuple(shape)
    if shape[axis] == size:
        return layout
    if not isinstance(layout, Layout):
        return None
    sd, inst = list(layout.sg_data or ()), list(layout.inst_data or ())
    unit = (layout.lane_layout[axis] if layout.lane_layout else 1) * (layout.lane_data[axis] if layout.lane_data
                                                                      else 1)
    if sd:
        whole = sd[axis] >= shape[axis]
        sd[axis] = size if whole else max(size // layout.sg_layout[axis], min(size, unit))
    if inst:
        inst[axis] = min(inst[axis], sd[axis] if sd else size)
    new = replace(layout, sg_data=tuple(sd) or layout.sg_data, inst_data=tuple(inst) or layout.inst_data)
    out = list(shape)
    out[axis] = size
    try:
        verify_layout(new, out)
    except LayoutError:
        return None
    return new


def _grid_for(M: int, N: int, m: int, n: int, G: int, narrow_n: bool = False,
              whole_rows: bool = False) -> Tuple[int, int]:
    """``sg_layout`` for a DPAS result tile: divides the tile into DPAS-sized pieces, squarest first;
    of two as square, the one with fewer rows per subgroup, or fewer columns with ``narrow_n``.
    ``whole_rows``: every subgroup owns whole rows (``[G, 1]``) when the rows divide that way."""
    if whole_rows and M % (G * m) == 0 and N % n == 0:
        return G, 1
    best = None
    for sm in [1 << i for i in range(G.bit_length())]:
        if G % sm:
            continue
        sn = G // sm
        fits = M % (sm * m) == 0 and N % (sn * n) == 0
        score = (not fits, abs((M // sm) - (N // sn)), sm if narrow_n else -sm)
        if best is None or score < best[0]:
            best = (score, (sm, sn))
    return best[1]


def dpas_layouts(target: Target, elem: DType, M: int, N: int, K: int, G: int, b_transposed: bool = False,
                 fma_dot: Sequence[str] = (), whole_rows: bool = False):
    """Workgroup layouts of A [M, K], B [K, N] and C [M, N] for a DPAS product on ``target``.

    ``b_transposed``: B comes from a transposed load, whose messages carry fewer columns than A's
    carry rows (a transposed 32-bit block is at most 8 wide), so each subgroup takes fewer of B's
    columns when two grids are as square.

    The three share ``sg_layout`` (A is replicated along the subgroup columns, B along the rows),
    ``inst_data`` is the target's DPAS shape, and lane data follow the DPAS operand fragments:
    A packs ``32 / bits`` elements per lane when the sub-group is narrower than K, B is VNNI
    (``lane_data = [32 / bits, 1]``).

    ``fma_dot``: operand dtypes the emitter computes as plain FMAs instead (``Emitter.fma_dot``).

    ``whole_rows``: the subgroups split only M (``sg_layout = [G, 1]``, when M allows), so a row of C
    lies in one subgroup: row statistics stay in its registers and C can be the A operand of a next
    product without leaving them (attention's ``dot(softmax(dot(q, k)), v)``).
    """
    if elem.name in fma_dot:
        return _fma_dot_layouts(target, M, N, K, G)
    shape = target.dpas_shape(elem)
    if shape is None:
        raise LayoutError(f"{target.name} has no DPAS for {elem.user_name}")
    sg = target.sg_size
    sm, sn = _grid_for(M, N, shape.m, shape.n, G, narrow_n=b_transposed, whole_rows=whole_rows)
    dm, dn = max(M // sm, shape.m), max(N // sn, shape.n)
    a_lane_data = max(1, shape.k // sg)             # K elements spread over sg lanes
    pack = max(1, 32 // elem.bits)                  # VNNI rows packed into 32 bits
    order = (1, 0)
    a_rows = max(1, sg // (shape.k // a_lane_data))  # tf32: 8 K-columns over 16 lanes -> 2 rows
    lc = Layout(sg_layout=(sm, sn), sg_data=(dm, dn), inst_data=(shape.m, shape.n), lane_layout=(1, sg),
                lane_data=(1, 1), order=order)
    la = Layout(sg_layout=(sm, sn), sg_data=(dm, K), inst_data=(shape.m, shape.k),
                lane_layout=(a_rows, sg // a_rows), lane_data=(1, a_lane_data), order=order)
    lb = Layout(sg_layout=(sm, sn), sg_data=(K, dn), inst_data=(shape.k, shape.n), lane_layout=(1, sg),
                lane_data=(pack if elem.bits < 32 else 1, 1), order=order)
    return la, lb, lc


def rows_per_register(elem: DType, layout, width: int, sg: int) -> bool:
    """Whether a block ``width`` 32-bit elements wide, narrower than the subgroup, lies in registers
    as ``layout`` says when a 2D block read (or a 32-bit transposed one, ``width`` memory rows
    long) fills them: a register takes ``sg // width`` rows one after another, so lane ``l`` holds
    column ``l % width`` of rows ``l // width``, ``l // width + sg // width``, ...: that is
    ``lane_layout = [sg // width, width]`` with ``lane_data = [1, 1]``, tf32's DPAS A fragment (8
    rows of 8)."""
    return elem.bits == 32 and width < sg and sg % width == 0 and layout.lane_layout == (sg // width, width) \
        and layout.lane_data == (1, 1) and tuple(layout.order or (1, 0)) == (1, 0)


def batched_dpas_layouts(target: Target, elem: DType, B: int, M: int, N: int, K: int, G: int,
                         fma_dot: Sequence[str] = ()):
    """Layouts of a batched product (``multi_mma``, seed 002) A [B, M, K] x B [B, K, N] -> C [B, M, N]:
    ``min(B, G)`` subgroup groups along the batch, each owning one matrix at a time (``sg_data = 1``,
    round-robin over the batch), and the 2-D DPAS layouts of the remaining subgroups inside."""
    gb = min(B, G)
    la, lb, lc = dpas_layouts(target, elem, M, N, K, G // gb, fma_dot=fma_dot)

    def lead(l: Layout) -> Layout:
        return Layout(sg_layout=(gb,) + l.sg_layout, sg_data=(1,) + l.sg_data,
                      inst_data=(1,) + l.inst_data if l.inst_data is not None else None,
                      lane_layout=(1,) + l.lane_layout, lane_data=(1,) + l.lane_data,
                      order=tuple(d + 1 for d in l.dim_order) + (0,))
    return lead(la), lead(lb), lead(lc)


def drop_lead(layout: Layout, n: int = 1) -> Layout:
    """``layout`` without its ``n`` leading dimensions (of size 1 in a piece): the layout of a batched
    DPAS piece as the 2-D tile it is."""
    def cut(field):
        return field[n:] if field is not None else None
    return Layout(sg_layout=cut(layout.sg_layout), sg_data=cut(layout.sg_data), inst_data=cut(layout.inst_data),
                  lane_layout=cut(layout.lane_layout), lane_data=cut(layout.lane_data),
                  order=tuple(d - n for d in layout.dim_order if d >= n))


def _fma_dot_layouts(target: Target, M: int, N: int, K: int, G: int):
    """Layouts of a dot done with FMAs over whole subgroup tiles (no instruction blocks): lanes
    along C's columns, A and B laid out the same way (the CPU reads them from memory)."""
    sg = target.sg_size
    sm, sn = _grid_for(M, N, 1, sg, G)
    dm, dn = max(M // sm, 1), max(N // sn, sg)
    lanes, data, order = (1, sg), (1, 1), (1, 0)
    lc = Layout(sg_layout=(sm, sn), sg_data=(dm, dn), lane_layout=lanes, lane_data=data, order=order)
    la = Layout(sg_layout=(sm, sn), sg_data=(dm, K), lane_layout=lanes, lane_data=data, order=order)
    lb = Layout(sg_layout=(sm, sn), sg_data=(K, dn), lane_layout=lanes, lane_data=data, order=order)
    return la, lb, lc


def nd_layout(shape: Sequence[int], elem: DType, target: Target, G: int) -> Layout:
    """A layout for a descriptor tile no DPAS anchors, shaped for 2D block messages: each block
    row across the sub-group's lanes, blocks of up to 8 rows, subgroups down the rows first."""
    sg = target.sg_size
    if len(shape) != 2 or shape[1] < sg:
        return default_layout(shape, G, sg)
    rows, cols = shape
    sgs = [1, 1]
    left = G
    while left > 1 and rows // (sgs[0] * 2) >= 1:
        sgs[0] *= 2
        left //= 2
    while left > 1 and cols // (sgs[1] * 2) >= sg:
        sgs[1] *= 2
        left //= 2
    sgs[0] *= left  # replicate what is left over
    sgd = (max(1, rows // sgs[0]), cols // sgs[1])
    return Layout(sg_layout=tuple(sgs), sg_data=sgd, inst_data=(min(sgd[0], 8), sg), lane_layout=(1, sg),
                  lane_data=(1, 1), order=(1, 0))


def vnni_rows_layout(shape: Sequence[int], elem: DType, target: Target, G: int) -> Optional[Layout]:
    """A cooperative layout of a [rows, cols] tile of sub-32-bit ``elem`` loaded with VNNI 2D block
    loads: blocks of up to ``max_height`` rows x ``sg_size`` columns, lane ``l`` column ``l`` with
    ``32 / bits`` consecutive rows in each dword; subgroups over the column blocks first, then the
    rows (replicated only when the tile has fewer pieces than subgroups). None when the tile is not
    made of whole blocks or the target has no VNNI load for ``elem``."""
    info = target.block2d_for(elem)
    sg = target.sg_size
    if info is None or not info.vnni or elem.bits >= 32 or len(shape) != 2:
        return None
    pack = 32 // elem.bits
    rows, cols = shape
    if cols % sg or rows % pack:
        return None
    sn = 1
    while sn * 2 <= G and cols % (sn * 2 * sg) == 0:
        sn *= 2
    sm = 1
    while sn * sm * 2 <= G and rows % (sm * 2 * pack) == 0:
        sm *= 2
    dr, dc = rows // sm, cols // sn
    h = max(x for x in range(pack, min(dr, info.max_height) + 1, pack) if dr % x == 0)
    return Layout(sg_layout=(sm * (G // (sn * sm)), sn), sg_data=(dr, dc), inst_data=(h, sg), lane_layout=(1, sg),
                  lane_data=(pack, 1), order=(1, 0))


def _dword_share(shape: Sequence[int], elem: DType, target: Target, G: int, packed: int):
    """(sg, pack, rows, cols, dwords per lane) of a [rows, cols] tile of sub-32-bit ``elem`` whose
    dimension ``packed`` holds ``pack = 32 / bits`` elements per dword, shared by the workgroup's
    ``G`` subgroups without replication; None when it is not such a tile or does not split so."""
    sg = target.sg_size
    if elem.bits >= 32 or len(shape) != 2:
        return None
    pack = 32 // elem.bits
    rows, cols = shape
    if shape[packed] % pack or rows * cols % (G * sg * pack):
        return None
    return sg, pack, rows, cols, rows * cols // (G * sg * pack)


def pair_rows_layout(shape: Sequence[int], elem: DType, target: Target, G: int) -> Optional[Layout]:
    """A cooperative layout of a [rows, cols] tile of sub-32-bit ``elem`` on a target without 2D
    block IO (dg2): lane ``l`` holds ``32 / bits`` consecutive rows of a run of columns, each row
    of the run one per-lane vector load of 4 to 16 bytes, so the lane packs the VNNI dwords of its
    columns itself; the workgroup's lanes share the tile without replication. None when the tile
    is too small for every lane to hold a dword of each row, or its shape does not split so."""
    share = _dword_share(shape, elem, target, G, 0)
    if share is None:
        return None
    sg, pack, rows, cols, per_lane = share               # per_lane: columns of each lane's rows, in all
    for c in (8, 4, 2, 1):                               # columns per row piece, widest first
        if c > per_lane or c * elem.itemsize > 16 or c * elem.bits < 32 or cols % (sg * c):
            continue
        sn = cols // (sg * c)
        if sn > G or G % sn or rows % (G // sn * pack):
            continue
        data = (rows // (G // sn), sg * c)
        return Layout(sg_layout=(G // sn, sn), sg_data=data, inst_data=data, lane_layout=(1, sg),
                      lane_data=(pack, c), order=(1, 0))
    return None


def pair_cols_layout(shape: Sequence[int], elem: DType, target: Target, G: int) -> Optional[Layout]:
    """A cooperative layout of a [rows, cols] tile of sub-32-bit ``elem`` on a target without 2D
    block IO, loaded as the DPAS A operand it is (no transpose): lane ``l`` holds ``c`` consecutive
    rows of one dword each (``32 / bits`` consecutive columns: a VNNI dword as it lies in memory),
    and the dwords its rows repeat along them; its ``c`` dwords of a column lie side by side in SLM's
    VNNI rows. ``c`` is the smallest the tile allows: with one row per lane, the lane's dwords are
    one per-lane vector load from one address, stored into SLM one by one, which costs fewer
    registers than a load per row (dg2's nt GEMM, IGC 2.40: 512 x 32 with K 64, 124 instructions
    and 128 bytes spilled at c = 4, 122 and none at c = 1; 128 x 64 with K 32, 288 bytes spilled ->
    none). The workgroup's lanes share the tile without replication. None when it does not split
    so."""
    share = _dword_share(shape, elem, target, G, 1)
    if share is None:
        return None
    sg, pack, rows, cols, per_lane = share               # per_lane: dwords of each lane
    for c in (1, 2, 4, 8):
        if c > per_lane or rows % (sg * c) or G % (rows // (sg * c)):
            continue
        sm = rows // (sg * c)
        sn = G // sm
        if cols % (sn * pack):
            continue
        data = (sg * c, cols // sn)
        return Layout(sg_layout=(sm, sn), sg_data=data, inst_data=data, lane_layout=(sg, 1),
                      lane_data=(c, pack), order=(1, 0))
    return None


def prefetch_layout(shape: Sequence[int], elem: DType, target: Target, G: int) -> Layout:
    """Cooperative prefetch: the workgroup's block split among all subgroups without replication
    where it can be, each piece at most one 2D block message wide."""
    sg = target.sg_size
    if len(shape) != 2:
        return default_layout(shape, G, sg)
    rows, cols = shape
    info = target.block2d_for(elem)
    width = info.max_width if info is not None else cols
    sn = 1
    while sn * 2 <= G and cols // (sn * 2) >= max(width, sg):
        sn *= 2
    while cols // sn > width and sn * 2 <= G:
        sn *= 2
    sm = G // sn
    sgd = (max(1, rows // sm), cols // sn)
    return Layout(sg_layout=(sm, sn), sg_data=sgd, lane_layout=(1, sg), lane_data=(1, 1), order=(1, 0))


def complete_layout(layout, shape: Sequence[int], num_subgroups: int, sg_size: int):
    """Fill what a user may leave out (``sg_data``, ``lane_data``, ``order``) and verify."""
    if isinstance(layout, SliceLayout):
        verify_layout(layout, shape, sg_size=sg_size, num_subgroups=num_subgroups)
        return layout
    r = len(shape)
    kw = {}
    if layout.order is None:
        kw["order"] = tuple(reversed(range(r)))
    if layout.lane_layout is not None and layout.lane_data is None:
        kw["lane_data"] = (1,) * r
    if layout.sg_layout is None:
        d = default_layout(shape, num_subgroups, sg_size)
        kw["sg_layout"], kw["sg_data"] = d.sg_layout, None
        if layout.lane_layout is None:
            kw["lane_layout"], kw["lane_data"] = d.lane_layout, d.lane_data
    elif layout.sg_data is None:
        kw["sg_data"] = tuple(max(1, s // g) for s, g in zip(shape, layout.sg_layout))
    if layout.lane_layout is None and "lane_layout" not in kw:
        d = default_layout(shape, num_subgroups, sg_size)
        kw["lane_layout"], kw["lane_data"] = d.lane_layout, d.lane_data
    out = layout.replace(**kw) if kw else layout
    if out.sg_data is None:
        out = out.replace(sg_data=tuple(max(1, s // g) for s, g in zip(shape, out.sg_layout)))
    verify_layout(out, shape, sg_size=sg_size, num_subgroups=num_subgroups)
    return out


def chunk_layout(layout, chunk: int):
    """The layout of what a chunked gather loads: ``layout`` of the offsets plus a trailing dimension
    of ``chunk`` consecutive elements, all held by the lane that owns the offset."""
    if isinstance(layout, SliceLayout):
        raise LayoutError("chunked gathers need offsets with a plain (not sliced) layout")
    r = layout.rank

    def ext(field, v):
        return None if field is None else tuple(field) + (v,)
    return Layout(ext(layout.sg_layout, 1), ext(layout.sg_data, chunk), ext(layout.inst_data, chunk),
                  ext(layout.lane_layout, 1), ext(layout.lane_data or (1,) * r, chunk), (r,) + layout.dim_order)


def unchunk_layout(layout):
    """The offsets' layout of a chunked gather whose value has ``layout``."""
    if isinstance(layout, SliceLayout):
        raise LayoutError("chunked gathers need a plain (not sliced) layout")
    r = layout.rank - 1
    if (layout.lane_layout or (1,))[-1] != 1 or (layout.sg_layout or (1,))[-1] != 1:
        return None  # not the layout of a chunked gather: nothing to infer

    def cut(field):
        return None if field is None else tuple(field[:r])
    return Layout(cut(layout.sg_layout), cut(layout.sg_data), cut(layout.inst_data), cut(layout.lane_layout),
                  cut(layout.lane_data), tuple(d for d in layout.dim_order if d != r))
