"""Pictures of layouts: which subgroup and which lane own each element of a tile.

These are the drawings people otherwise make by hand from the XeGPU layout RFC (seed 001)::

    >>> import xekern as xk
    >>> L = xk.Layout(sg_layout=[2, 2], sg_data=[4, 8], lane_layout=[2, 4], lane_data=[1, 2], order=[1, 0])
    >>> print(xk.layouts.draw(L, (8, 16)))            # doctest: +SKIP
    #xegpu.layout<sg_layout = [2, 2], sg_data = [4, 8], lane_layout = [2, 4], lane_data = [1, 2], order = [1, 0]>
    8x16 tile, cell = s<subgroup>:l<lane>
          0     1     2     3 ...
    0 s0:l0 s0:l0 s0:l1 s0:l1 ...
    1 s0:l4 s0:l4 s0:l5 s0:l5 ...

``ownership`` is the model behind the picture: it walks subgroups, their round-robin pieces, the
``inst_data`` blocks of each piece, lanes and lane slots with the distribution functions of
``xekern.ir.layout``, element by element, so it can be compared with what the passes emit.
"""
from __future__ import annotations

import itertools
import os
from math import prod
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from .ir.layout import (Layout, block_offsets, inst_shape, lane_base, lane_slot_offsets, sg_coords,
                        sg_piece_offsets, sg_piece_shape, sg_splits, verify_layout)  # noqa: F401 (Layout: doctests)

__all__ = ["Owner", "ownership", "draw"]

Coords = Tuple[int, ...]


class Owner(NamedTuple):
    """One copy of a tile element: in subgroup ``sg``, lane ``lane``, register slot ``slot``.

    ``sg`` is None for a layout without ``sg_layout`` (a subgroup-level tile) and ``lane`` is
    None without ``lane_layout``. ``slot`` counts the lane's values over the whole subgroup tile:
    round-robin pieces row-major, then the ``inst_data`` blocks of a piece row-major, then the
    slots of a block in ``lane_slot_offsets`` order (rounds row-major, then ``lane_data``).
    """

    sg: Optional[int]
    lane: Optional[int]
    slot: int


def ownership(layout, shape: Sequence[int], sg_size: Optional[int] = None,
              num_subgroups: Optional[int] = None) -> Dict[Coords, List[Owner]]:
    """Every element of a ``shape`` tile with ``layout``, mapped to the sorted list of its owners.

    A replicated element (a dimension smaller than layout x data, or a dimension sliced away by a
    ``SliceLayout``) has one owner per copy. The layout is verified first (``sg_size`` and
    ``num_subgroups``, when given, must match the lane and subgroup grids), so a broken rule
    raises ``LayoutError``. Every coordinate of the tile is a key, even one nobody owns.

    Example::

        >>> L = Layout(sg_layout=[2], sg_data=[4], lane_layout=[4], lane_data=[1], order=[0])
        >>> ownership(L, (8,))[(5,)]
        [Owner(sg=1, lane=1, slot=0)]
    """
    shape = tuple(int(s) for s in shape)
    verify_layout(layout, shape, sg_size=sg_size, num_subgroups=num_subgroups)
    out: Dict[Coords, List[Owner]] = {c: [] for c in itertools.product(*[range(s) for s in shape])}
    for coords, owner in _walk(layout, shape):
        out.setdefault(coords, []).append(owner)  # an out-of-tile key would be a distribution bug
    for owners in out.values():
        owners.sort(key=lambda o: (o.sg or 0, o.lane or 0, o.slot))
    return out


def _walk(layout, shape: Tuple[int, ...], shown: Optional[Sequence[Set[int]]] = None):
    """Yield ``(coords, Owner)`` for every copy of every element. ``shown`` (a set of indices per
    dimension) skips the instruction blocks that hold none of the shown elements."""
    root = layout.root
    rank = len(shape)
    zero = (0,) * rank
    has_sg, has_lane = root.sg_layout is not None, root.lane_layout is not None
    if has_sg:
        splits = sg_splits(layout, shape)
        piece = sg_piece_shape(layout, shape)
        pieces = sg_piece_offsets(layout, shape)
    else:
        piece, pieces = shape, [zero]
    block = inst_shape(layout, piece)
    blocks = block_offsets(piece, block)
    if has_lane:
        slots = lane_slot_offsets(layout, block)
        lane_bases = [lane_base(layout, block, lane) for lane in range(prod(root.lane_layout))]
    else:
        slots = list(itertools.product(*[range(b) for b in block]))
        lane_bases = [zero]
    for sg in range(prod(root.sg_layout) if has_sg else 1):
        base = tuple(s.base(c) for s, c in zip(splits, sg_coords(layout, sg))) if has_sg else zero
        for p, po in enumerate(pieces):
            for b, bo in enumerate(blocks):
                origin = tuple(x + y + z for x, y, z in zip(base, po, bo))
                if shown is not None and not all(
                        any(o <= i < o + n for i in s) for o, n, s in zip(origin, block, shown)):
                    continue
                first = (p * len(blocks) + b) * len(slots)
                for lane, lb in enumerate(lane_bases):
                    for k, so in enumerate(slots):
                        coords = tuple(o + x + y for o, x, y in zip(origin, lb, so))
                        yield coords, Owner(sg if has_sg else None, lane if has_lane else None, first + k)


# ---- ASCII ---------------------------------------------------------------------------------------

def _ids(ids: Set[int]) -> str:
    """``{0, 1}`` -> ``0,1``; runs of three or more -> ``0-3``; ``{4, 12}`` -> ``4,12``."""
    xs = sorted(ids)
    parts, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{xs[i]}-{xs[j]}")
        else:
            parts.extend(str(x) for x in xs[i:j + 1])
        i = j + 1
    return ",".join(parts)


def _label(owners: List[Owner], show_sg: bool, show_lane: bool) -> str:
    if not owners:
        return "?"
    sgs = {o.sg for o in owners}
    lanes = {o.lane for o in owners}
    if show_sg and show_lane:
        pairs = {(o.sg, o.lane) for o in owners}
        if len(pairs) == len(sgs) * len(lanes):  # every replica subgroup uses the same lanes
            return f"s{_ids(sgs)}:l{_ids(lanes)}"
        return "|".join(f"s{s}:l{l}" for s, l in sorted(pairs))
    return f"s{_ids(sgs)}" if show_sg else f"l{_ids(lanes)}"


def _shown(n: int, limit: int) -> Tuple[List[int], bool]:
    """Indices to show of a dimension of size ``n``: all, or head and tail around an elision."""
    if n <= limit:
        return list(range(n)), False
    head = (limit + 1) // 2
    return list(range(head)) + list(range(n - (limit - head), n)), True


def _levels(layout, what: str) -> Tuple[bool, bool]:
    root = layout.root
    if what not in ("both", "sg", "lane"):
        raise ValueError(f"draw: what must be 'both', 'sg' or 'lane', got {what!r}")
    has_sg, has_lane = root.sg_layout is not None, root.lane_layout is not None
    if what == "sg" and not has_sg:
        raise ValueError(f"draw: what='sg' needs a layout with sg_layout, got {layout}")
    if what == "lane" and not has_lane:
        raise ValueError(f"draw: what='lane' needs a layout with lane_layout, got {layout}")
    return has_sg and what != "lane", has_lane and what != "sg"


def draw(layout, shape: Sequence[int], *, what: str = "both", file=None, png: Optional[str] = None,
         max_rows: int = 64, max_cols: int = 32, sg_size: Optional[int] = None,
         num_subgroups: Optional[int] = None) -> str:
    """An ASCII grid of a rank-1 or rank-2 tile: each cell names the subgroup and lane owning it.

    ``what`` picks the label: ``"both"`` (``s3:l12``), ``"sg"`` (``s3``) or ``"lane"`` (``l12``).
    A replicated element lists all its owners compactly: ``s0,1:l4`` is held by lane 4 of
    subgroups 0 and 1, ``l0-15`` by lanes 0 to 15. A rank-1 tile is drawn as one row. Tiles
    larger than ``max_rows`` x ``max_cols`` show their first and last rows and columns around a
    ``...``, with a note saying what was left out. The text is returned, and also written to
    ``file`` (an open text file, or a path). ``png="tile.png"`` also saves a colored picture
    (one color per subgroup, lane ids as text); it needs matplotlib (``pip install matplotlib``).

    Example::

        >>> L = Layout(sg_layout=[2], sg_data=[4], lane_layout=[4], lane_data=[1], order=[0])
        >>> print(draw(L, (8,)))
        #xegpu.layout<sg_layout = [2], sg_data = [4], lane_layout = [4], lane_data = [1], order = [0]>
        8-element tile, cell = s<subgroup>:l<lane>
            0     1     2     3     4     5     6     7
        s0:l0 s0:l1 s0:l2 s0:l3 s1:l0 s1:l1 s1:l2 s1:l3
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"draw: pictures are of rank-1 and rank-2 tiles, got shape {list(shape)}; "
                         f"use ownership() for other ranks")
    show_sg, show_lane = _levels(layout, what)
    if max_rows < 2 or max_cols < 2:
        raise ValueError(f"draw: max_rows and max_cols must be at least 2, got {max_rows} and {max_cols}")
    verify_layout(layout, shape, sg_size=sg_size, num_subgroups=num_subgroups)
    rows_n, cols_n = (1, shape[0]) if len(shape) == 1 else shape
    rows, rows_cut = _shown(rows_n, max_rows)
    cols, cols_cut = _shown(cols_n, max_cols)
    owners: Dict[Coords, List[Owner]] = {}
    shown = [set(cols)] if len(shape) == 1 else [set(rows), set(cols)]
    for coords, owner in _walk(layout, shape, shown):
        owners.setdefault(coords, []).append(owner)

    def at(r, c):
        return (c,) if len(shape) == 1 else (r, c)

    labels = {(r, c): _label(owners.get(at(r, c), []), show_sg, show_lane) for r in rows for c in cols}
    replicated = any(len(owners.get(at(r, c), [])) > 1 for r in rows for c in cols)
    text = _grid(labels, rows, cols, rows_cut, cols_cut, rank=len(shape))
    kinds = [k for k, on in (("s<subgroup>", show_sg), ("l<lane>", show_lane)) if on]
    size = f"{shape[0]}-element" if len(shape) == 1 else f"{shape[0]}x{shape[1]}"
    legend = f"{size} tile, cell = {':'.join(kinds)}"
    if replicated:
        legend += "; replicated cells list every owner (s0,1 = subgroups 0 and 1, l0-3 = lanes 0 to 3)"
    lines = [str(layout), legend, text]
    if rows_cut or cols_cut:
        cut = []
        if rows_cut:
            cut.append(f"rows {_ids(set(range(rows_n)) - set(rows))} of {rows_n}")
        if cols_cut:
            cut.append(f"columns {_ids(set(range(cols_n)) - set(cols))} of {cols_n}")
        lines.append(f"({' and '.join(cut)} not shown; pass max_rows= / max_cols= to see more)")
    out = "\n".join(lines)
    if file is not None:
        _write(out, file)
    if png is not None:
        _png(layout, shape, png, show_sg, show_lane)
    return out


def _grid(labels, rows, cols, rows_cut, cols_cut, rank) -> str:
    width = max([len(v) for v in labels.values()] + [len(str(c)) for c in cols] + [3 if cols_cut else 0])
    hw = 0 if rank == 1 else max(len(str(rows[-1])), 3 if rows_cut else 0)
    cut_col = next((i for i in range(1, len(cols)) if cols[i] != cols[i - 1] + 1), None)
    cut_row = next((i for i in range(1, len(rows)) if rows[i] != rows[i - 1] + 1), None)

    def line(head, cells):
        cells = [x.rjust(width) for x in cells]
        if cut_col is not None:
            cells.insert(cut_col, "...".rjust(width))
        return " ".join(([head.rjust(hw)] if hw else []) + cells).rstrip()

    out = [line("", [str(c) for c in cols])]
    for i, r in enumerate(rows):
        if i == cut_row:
            out.append("...".rjust(hw))
        out.append(line(str(r), [labels[r, c] for c in cols]))
    return "\n".join(out)


def _write(text: str, file) -> None:
    if hasattr(file, "write"):
        print(text, file=file)
    else:
        with open(os.fspath(file), "w") as f:
            print(text, file=f)


# ---- PNG -------------------------------------------------------------------------------------------

def _png(layout, shape: Tuple[int, ...], path: str, show_sg: bool, show_lane: bool) -> None:
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError("draw(png=...) needs matplotlib: pip install matplotlib "
                          "(or pip install 'xekern[plot]')") from e

    own = ownership(layout, shape)
    rows_n, cols_n = (1, shape[0]) if len(shape) == 1 else shape
    root = layout.root
    n_sg = prod(root.sg_layout) if root.sg_layout is not None else 1
    cmap = matplotlib.colormaps["tab20" if n_sg <= 20 else "turbo"].resampled(max(n_sg, 2))
    small = rows_n * cols_n <= 4096  # beyond that, colors only: text would be unreadable
    scale = 0.5 if small else 10.0 / max(rows_n, cols_n)
    fig = Figure(figsize=(1.5 + cols_n * scale, 1.5 + rows_n * scale))
    ax = fig.subplots()
    first_sg = [[0] * cols_n for _ in range(rows_n)]
    replicated = False
    for r in range(rows_n):
        for c in range(cols_n):
            owners = own[(c,) if len(shape) == 1 else (r, c)]
            sgs = sorted({o.sg or 0 for o in owners}) or [0]
            first_sg[r][c] = sgs[0]
            replicated |= len(sgs) > 1
            if small and owners:
                lanes = _label(owners, False, True)[1:] if show_lane else ""
                text = "\n".join(x for x in (f"s{_ids(set(sgs))}" if len(sgs) > 1 else "", lanes) if x)
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=5 if "\n" in text else 6)
    if show_sg:
        ax.imshow(first_sg, cmap=cmap, vmin=-0.5, vmax=cmap.N - 0.5, extent=(0, cols_n, rows_n, 0),
                  interpolation="nearest")
    ax.set_xlim(0, cols_n)
    ax.set_ylim(rows_n, 0)
    ax.set_aspect("equal")
    if small:
        ax.set_xticks(range(cols_n + 1), minor=True)
        ax.set_yticks(range(rows_n + 1), minor=True)
        ax.grid(which="minor", color="black", linewidth=0.3)
        ax.tick_params(which="minor", length=0)
        ax.set_xticks([c + 0.5 for c in range(cols_n)], labels=[str(c) for c in range(cols_n)], fontsize=6)
        ax.set_yticks([r + 0.5 for r in range(rows_n)], labels=[str(r) for r in range(rows_n)] if len(shape) == 2
                      else [""], fontsize=6)
    ax.set_xlabel("column")
    ax.set_ylabel("row" if len(shape) == 2 else "")
    what = ["color: subgroup"] if show_sg else []
    if show_lane and small:
        what.append("text: lane")
    if replicated:
        what.append("s<a,b>: replicated in subgroups a, b (color of the first)" if small
                    else "replicated cells take the color of their first subgroup")
    ax.set_title(f"{layout}\n{'; '.join(what)}", fontsize=7)
    if show_sg:
        handles = [Patch(facecolor=cmap(s % cmap.N), edgecolor="black", label=f"s{s}") for s in range(min(n_sg, 32))]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6, title="subgroup",
                  title_fontsize=6)
    fig.savefig(os.fspath(path), dpi=150, bbox_inches="tight")
