"""``xekern.layouts``: ASCII and PNG pictures of layouts, and the ownership model behind them.

Every expected picture below was worked out by hand from seed 001's formula, not pasted from
the function's output; the derivation is in the comment above each one.
"""
import io
import sys

import pytest

from xekern.ir.layout import Layout, LayoutError
from xekern.layouts import Owner, draw, ownership
from xekern.lowering.layouts import make_slice

# The RFC-style example: 4 subgroups in a 2x2 grid, each a 4x8 piece; 8 lanes in a 2x4 grid,
# each owning 1x2 elements per round.
L = Layout(sg_layout=[2, 2], sg_data=[4, 8], lane_layout=[2, 4], lane_data=[1, 2], order=[1, 0])
L_TEXT = ("#xegpu.layout<sg_layout = [2, 2], sg_data = [4, 8], lane_layout = [2, 4], lane_data = [1, 2], "
          "order = [1, 0]>")

# order = [1, 0]: sg = 2 * c0 + c1, so s0 rows 0-3 cols 0-7, s1 rows 0-3 cols 8-15, s2 rows 4-7
# cols 0-7, s3 rows 4-7 cols 8-15 (sg unit = 8x16 = the tile: one piece, no replication).
# Lanes on a 4x8 piece: lane = 4 * c0 + c1, base = (c0 * 1, c1 * 2); lane unit = 2x8, so two rounds
# along rows (rows c0 and c0 + 2), one along columns (columns 2 * c1 and 2 * c1 + 1).
# Row r, column j: lane 4 * (r % 2) + (j % 8) // 2.
EXPECTED_BOTH = L_TEXT + """
8x16 tile, cell = s<subgroup>:l<lane>
      0     1     2     3     4     5     6     7     8     9    10    11    12    13    14    15
0 s0:l0 s0:l0 s0:l1 s0:l1 s0:l2 s0:l2 s0:l3 s0:l3 s1:l0 s1:l0 s1:l1 s1:l1 s1:l2 s1:l2 s1:l3 s1:l3
1 s0:l4 s0:l4 s0:l5 s0:l5 s0:l6 s0:l6 s0:l7 s0:l7 s1:l4 s1:l4 s1:l5 s1:l5 s1:l6 s1:l6 s1:l7 s1:l7
2 s0:l0 s0:l0 s0:l1 s0:l1 s0:l2 s0:l2 s0:l3 s0:l3 s1:l0 s1:l0 s1:l1 s1:l1 s1:l2 s1:l2 s1:l3 s1:l3
3 s0:l4 s0:l4 s0:l5 s0:l5 s0:l6 s0:l6 s0:l7 s0:l7 s1:l4 s1:l4 s1:l5 s1:l5 s1:l6 s1:l6 s1:l7 s1:l7
4 s2:l0 s2:l0 s2:l1 s2:l1 s2:l2 s2:l2 s2:l3 s2:l3 s3:l0 s3:l0 s3:l1 s3:l1 s3:l2 s3:l2 s3:l3 s3:l3
5 s2:l4 s2:l4 s2:l5 s2:l5 s2:l6 s2:l6 s2:l7 s2:l7 s3:l4 s3:l4 s3:l5 s3:l5 s3:l6 s3:l6 s3:l7 s3:l7
6 s2:l0 s2:l0 s2:l1 s2:l1 s2:l2 s2:l2 s2:l3 s2:l3 s3:l0 s3:l0 s3:l1 s3:l1 s3:l2 s3:l2 s3:l3 s3:l3
7 s2:l4 s2:l4 s2:l5 s2:l5 s2:l6 s2:l6 s2:l7 s2:l7 s3:l4 s3:l4 s3:l5 s3:l5 s3:l6 s3:l6 s3:l7 s3:l7"""

EXPECTED_LANE = L_TEXT + """
8x16 tile, cell = l<lane>
   0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
0 l0 l0 l1 l1 l2 l2 l3 l3 l0 l0 l1 l1 l2 l2 l3 l3
1 l4 l4 l5 l5 l6 l6 l7 l7 l4 l4 l5 l5 l6 l6 l7 l7
2 l0 l0 l1 l1 l2 l2 l3 l3 l0 l0 l1 l1 l2 l2 l3 l3
3 l4 l4 l5 l5 l6 l6 l7 l7 l4 l4 l5 l5 l6 l6 l7 l7
4 l0 l0 l1 l1 l2 l2 l3 l3 l0 l0 l1 l1 l2 l2 l3 l3
5 l4 l4 l5 l5 l6 l6 l7 l7 l4 l4 l5 l5 l6 l6 l7 l7
6 l0 l0 l1 l1 l2 l2 l3 l3 l0 l0 l1 l1 l2 l2 l3 l3
7 l4 l4 l5 l5 l6 l6 l7 l7 l4 l4 l5 l5 l6 l6 l7 l7"""

# Rows 0, 1, 6, 7 and columns 0, 1, 14, 15 of EXPECTED_BOTH.
EXPECTED_ELIDED = L_TEXT + """
8x16 tile, cell = s<subgroup>:l<lane>
        0     1   ...    14    15
  0 s0:l0 s0:l0   ... s1:l3 s1:l3
  1 s0:l4 s0:l4   ... s1:l7 s1:l7
...
  6 s2:l0 s2:l0   ... s3:l3 s3:l3
  7 s2:l4 s2:l4   ... s3:l7 s3:l7
(rows 2-5 of 8 and columns 2-13 of 16 not shown; pass max_rows= / max_cols= to see more)"""

# Replication at both levels. Subgroups: sg_layout [4, 1], so sg = c0; rows: size 4 < unit 4 x 2,
# base (2 * c0) % 4 = 0, 2, 0, 2: rows 0-1 in s0 and s2, rows 2-3 in s1 and s3.
# Lanes on a 2x8 piece: lane = c1 (lane_layout [1, 8]); columns: size 8 < unit 8 x 2, base
# (2 * lane) % 8 = 0, 2, 4, 6, 0, 2, 4, 6: columns 2k and 2k+1 in lanes k and k + 4; rows: unit 1,
# two rounds, so each lane holds both rows of its piece.
R = Layout(sg_layout=[4, 1], sg_data=[2, 8], lane_layout=[1, 8], lane_data=[1, 2], order=[1, 0])
EXPECTED_REPLICATED = """\
#xegpu.layout<sg_layout = [4, 1], sg_data = [2, 8], lane_layout = [1, 8], lane_data = [1, 2], order = [1, 0]>
4x8 tile, cell = s<subgroup>:l<lane>; replicated cells list every owner (s0,1 = subgroups 0 and 1, l0-3 = lanes 0 to 3)
          0         1         2         3         4         5         6         7
0 s0,2:l0,4 s0,2:l0,4 s0,2:l1,5 s0,2:l1,5 s0,2:l2,6 s0,2:l2,6 s0,2:l3,7 s0,2:l3,7
1 s0,2:l0,4 s0,2:l0,4 s0,2:l1,5 s0,2:l1,5 s0,2:l2,6 s0,2:l2,6 s0,2:l3,7 s0,2:l3,7
2 s1,3:l0,4 s1,3:l0,4 s1,3:l1,5 s1,3:l1,5 s1,3:l2,6 s1,3:l2,6 s1,3:l3,7 s1,3:l3,7
3 s1,3:l0,4 s1,3:l0,4 s1,3:l1,5 s1,3:l1,5 s1,3:l2,6 s1,3:l2,6 s1,3:l3,7 s1,3:l3,7"""

# make_slice(L, [1]): the rows of L's tile after a reduction along the columns. Only root dim 0 is
# kept: sg_layout 2, sg_data 4; lane_layout 2, lane_data 1. Ids still delinearize over the root
# (order [1, 0]): subgroup c0 = sg // 2, so s0 and s1 own 0-3, s2 and s3 own 4-7; lane c0 = lane // 4,
# lane unit 2 on a 4-element piece: two rounds, lanes 0-3 own 0 and 2, lanes 4-7 own 1 and 3.
EXPECTED_SLICE = """\
#xegpu.slice<#xegpu.layout<sg_layout = [2, 2], sg_data = [4, 1], lane_layout = [2, 4], lane_data = [1, 1], \
order = [1, 0]>, dims = [1]>
8-element tile, cell = s<subgroup>:l<lane>; replicated cells list every owner (s0,1 = subgroups 0 and 1, l0-3 = lanes 0 to 3)
        0         1         2         3         4         5         6         7
s0,1:l0-3 s0,1:l4-7 s0,1:l0-3 s0,1:l4-7 s2,3:l0-3 s2,3:l4-7 s2,3:l0-3 s2,3:l4-7"""

# Round-robin and inst_data: rows unit 2 x 2 = 4 < 8, so s0 owns rows 0-1 and 4-5, s1 rows 2-3
# and 6-7; each 2x8 piece is two 2x4 blocks; in a block lane = column (lane_layout [1, 4]).
RR = Layout(sg_layout=[2, 1], sg_data=[2, 8], inst_data=[2, 4], lane_layout=[1, 4], lane_data=[1, 1],
            order=[1, 0])
RR_TEXT = ("#xegpu.layout<sg_layout = [2, 1], sg_data = [2, 8], inst_data = [2, 4], lane_layout = [1, 4], "
           "lane_data = [1, 1], order = [1, 0]>")
EXPECTED_RR = RR_TEXT + """
8x8 tile, cell = s<subgroup>:l<lane>
      0     1     2     3     4     5     6     7
0 s0:l0 s0:l1 s0:l2 s0:l3 s0:l0 s0:l1 s0:l2 s0:l3
1 s0:l0 s0:l1 s0:l2 s0:l3 s0:l0 s0:l1 s0:l2 s0:l3
2 s1:l0 s1:l1 s1:l2 s1:l3 s1:l0 s1:l1 s1:l2 s1:l3
3 s1:l0 s1:l1 s1:l2 s1:l3 s1:l0 s1:l1 s1:l2 s1:l3
4 s0:l0 s0:l1 s0:l2 s0:l3 s0:l0 s0:l1 s0:l2 s0:l3
5 s0:l0 s0:l1 s0:l2 s0:l3 s0:l0 s0:l1 s0:l2 s0:l3
6 s1:l0 s1:l1 s1:l2 s1:l3 s1:l0 s1:l1 s1:l2 s1:l3
7 s1:l0 s1:l1 s1:l2 s1:l3 s1:l0 s1:l1 s1:l2 s1:l3"""

EXPECTED_RR_SG = RR_TEXT + """
8x8 tile, cell = s<subgroup>
   0  1  2  3  4  5  6  7
0 s0 s0 s0 s0 s0 s0 s0 s0
1 s0 s0 s0 s0 s0 s0 s0 s0
2 s1 s1 s1 s1 s1 s1 s1 s1
3 s1 s1 s1 s1 s1 s1 s1 s1
4 s0 s0 s0 s0 s0 s0 s0 s0
5 s0 s0 s0 s0 s0 s0 s0 s0
6 s1 s1 s1 s1 s1 s1 s1 s1
7 s1 s1 s1 s1 s1 s1 s1 s1"""

# 64 elements, 4 subgroups of 16, lane = element % 16; columns 4-59 elided.
WIDE = Layout(sg_layout=[4], sg_data=[16], lane_layout=[16], lane_data=[1], order=[0])
EXPECTED_WIDE = """\
#xegpu.layout<sg_layout = [4], sg_data = [16], lane_layout = [16], lane_data = [1], order = [0]>
64-element tile, cell = s<subgroup>:l<lane>
     0      1      2      3    ...     60     61     62     63
 s0:l0  s0:l1  s0:l2  s0:l3    ... s3:l12 s3:l13 s3:l14 s3:l15
(columns 4-59 of 64 not shown; pass max_rows= / max_cols= to see more)"""

# A subgroup-level layout: no subgroups to show; lanes unit 1x4 on 2x8, lane = column % 4.
SG_LEVEL = Layout(lane_layout=[1, 4], lane_data=[1, 1], order=[1, 0])
EXPECTED_SG_LEVEL = """\
#xegpu.layout<lane_layout = [1, 4], lane_data = [1, 1], order = [1, 0]>
2x8 tile, cell = l<lane>
   0  1  2  3  4  5  6  7
0 l0 l1 l2 l3 l0 l1 l2 l3
1 l0 l1 l2 l3 l0 l1 l2 l3"""


@pytest.mark.parametrize("layout, shape, kw, expected", [
    (L, (8, 16), {}, EXPECTED_BOTH),
    (L, (8, 16), {"what": "lane"}, EXPECTED_LANE),
    (L, (8, 16), {"max_rows": 4, "max_cols": 4}, EXPECTED_ELIDED),
    (R, (4, 8), {}, EXPECTED_REPLICATED),
    (make_slice(L, [1]), (8,), {}, EXPECTED_SLICE),
    (RR, (8, 8), {}, EXPECTED_RR),
    (RR, (8, 8), {"what": "sg"}, EXPECTED_RR_SG),
    (WIDE, (64,), {"max_cols": 8}, EXPECTED_WIDE),
    (SG_LEVEL, (2, 8), {}, EXPECTED_SG_LEVEL),
], ids=["both", "lane", "elided", "replicated", "slice", "round-robin", "round-robin-sg", "wide-1d", "sg-level"])
def test_draw_ascii(layout, shape, kw, expected):
    assert draw(layout, shape, **kw) == expected


def test_ownership_slots_follow_pieces_then_blocks_then_lane_slots():
    # RR: subgroup 0's pieces start at rows 0 and 4, each piece has blocks at columns 0 and 4,
    # each block gives lane 1 two slots (rows 0 and 1 of the block, one round each), column 1.
    own = ownership(RR, (8, 8))
    lane1 = {c: o.slot for c, os in own.items() for o in os if (o.sg, o.lane) == (0, 1)}
    assert lane1 == {(0, 1): 0, (1, 1): 1, (0, 5): 2, (1, 5): 3, (4, 1): 4, (5, 1): 5, (4, 5): 6, (5, 5): 7}


def test_ownership_lists_every_copy():
    # (3, 5): rows 2-3 are s1 and s3; columns 4-5 are lanes 2 and 6; relative to the lane it is
    # row 1 (second round), column 1 (second lane_data element): slot 2 * 1 + 1 = 3.
    own = ownership(R, (4, 8), sg_size=8, num_subgroups=4)
    assert own[(3, 5)] == [Owner(1, 2, 3), Owner(1, 6, 3), Owner(3, 2, 3), Owner(3, 6, 3)]
    assert own[(3, 5)] == [(1, 2, 3), (1, 6, 3), (3, 2, 3), (3, 6, 3)]  # plain tuples compare too
    assert len(own) == 32


def test_draw_writes_to_a_file_or_a_path(tmp_path):
    buf = io.StringIO()
    text = draw(R, (4, 8), file=buf)
    assert buf.getvalue() == text + "\n"
    draw(R, (4, 8), file=tmp_path / "r.txt")
    assert (tmp_path / "r.txt").read_text() == text + "\n"


@pytest.mark.parametrize("layout, shape, kw, error, match", [
    (L, (2, 4, 8), {}, ValueError, "rank-1 and rank-2"),
    (L, (8, 16), {"what": "slots"}, ValueError, "what must be"),
    (L, (8, 16), {"max_cols": 1}, ValueError, "at least 2"),
    (SG_LEVEL, (2, 8), {"what": "sg"}, ValueError, "needs a layout with sg_layout"),
    (L, (8, 12), {}, LayoutError, "multiple of"),
    (L, (8, 16), {"sg_size": 16}, LayoutError, "lane layout's product equals the subgroup size"),
])
def test_draw_errors(layout, shape, kw, error, match):
    with pytest.raises(error, match=match):
        draw(layout, shape, **kw)


def test_draw_png(tmp_path):
    image = pytest.importorskip("matplotlib.image")  # the `test` extra installs matplotlib
    for name, layout, shape in [("l", L, (8, 16)), ("r", R, (4, 8)), ("s", make_slice(L, [1]), (8,))]:
        path = tmp_path / f"{name}.png"
        text = draw(layout, shape, png=str(path))
        assert text == draw(layout, shape)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = image.imread(str(path))
        assert pixels.shape[0] > 50 and pixels.shape[1] > 50


def test_draw_png_without_matplotlib_says_what_to_install(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(ImportError, match="pip install matplotlib"):
        draw(L, (8, 16), png=str(tmp_path / "x.png"))
    assert not (tmp_path / "x.png").exists()
