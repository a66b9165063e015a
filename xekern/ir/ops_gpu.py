"""gpu dialect ops (seed 003): ids and sizes, barriers, subgroup reductions and shuffles."""
from __future__ import annotations

from .core import IRError, Op, Value
from .attrs import Attr, USER_LAYOUT
from .ops_vector import REDUCE_KINDS
from .types import DType, VectorType, int32


class _IdOp(Op):
    ATTRS = (Attr("dim", int),)
    def __init__(self, dim: int = 0, loc=None):
        super().__init__([], [int32], {"dim": dim}, loc=loc)

    @property
    def dim(self) -> int:
        return self.attrs["dim"]

    def verify(self):
        if self.dim not in (0, 1, 2):
            raise IRError(f"dimension {self.dim} is not 0, 1 or 2", self)


class BlockIdOp(_IdOp):
    """``gpu.block_id``: the workgroup's index in the grid (``xl.program_id``)."""

    NAME = "gpu.block_id"


class GridDimOp(_IdOp):
    """``gpu.grid_dim``: the number of workgroups along a dimension (``xl.num_programs``)."""

    NAME = "gpu.grid_dim"


class SubgroupIdOp(Op):
    """``gpu.subgroup_id``: this subgroup's index in the workgroup."""

    NAME = "gpu.subgroup_id"

    def __init__(self, loc=None):
        super().__init__([], [int32], loc=loc)


class LaneIdOp(Op):
    """``gpu.lane_id``: this work item's index in its subgroup."""

    NAME = "gpu.lane_id"

    def __init__(self, loc=None):
        super().__init__([], [int32], loc=loc)


class NumSubgroupsOp(Op):
    """``gpu.num_subgroups``: subgroups per workgroup."""

    NAME = "gpu.num_subgroups"

    def __init__(self, loc=None):
        super().__init__([], [int32], loc=loc)


class IdTileOp(Op):
    """``gpu.id_tile``: an i32 tile whose every element is the id of the subgroup (``which =
    "subgroup"``) or of the lane (``"lane"``) that holds it under the tile's layout. The workgroup-level
    form of ``gpu.subgroup_id`` / ``gpu.lane_id``: wg-to-sg and sg-to-lane turn it into those scalars.
    The frontend only builds it for layouts where every copy of an element agrees on the id."""

    NAME = "gpu.id_tile"
    ATTRS = (Attr("which", str), USER_LAYOUT)

    def __init__(self, which: str, type: VectorType, loc=None):
        super().__init__([], [type], {"which": which}, loc=loc)

    @property
    def which(self) -> str:
        return self.attrs["which"]

    def verify(self):
        if self.which not in ("subgroup", "lane"):
            raise IRError(f"id_tile of {self.which!r}: expected 'subgroup' or 'lane'", self)
        t = self.result.type
        if not isinstance(t, VectorType) or t.elem != int32:
            raise IRError(f"id_tile yields an i32 tile, not {t}", self)


class BarrierOp(Op):
    """``gpu.barrier``: every work item of the workgroup waits here; SLM and global writes before
    it are visible after it (only SLM writes with ``memory = "local"``, as the passes' SLM
    exchanges use)."""

    NAME = "gpu.barrier"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("memory", str, ("sg", "slm-barriers"), "local: it orders SLM only (no global fence)"),
             Attr("exchange", str, ("sg",), "open / close: the barriers of an exchange through SLM that only it writes"),
             Attr("no_fence", bool, ("slm-barriers",), "the subgroup has nothing of its own to make visible"),
             Attr("flavour", str, ("emitter-decisions",), "visa: written as inline vISA (codegen/visa_barrier)"))

    def __init__(self, loc=None):
        super().__init__([], [], loc=loc)


class SubgroupReduceOp(Op):
    """``gpu.subgroup_reduce``: reduce each slot across lanes, in clusters of ``cluster_size`` lanes
    ``cluster_stride`` apart; every lane of a cluster gets the result."""

    NAME = "gpu.subgroup_reduce"
    ATTRS = (Attr("kind", str), Attr("cluster_size", int), Attr("cluster_stride", int))

    def __init__(self, kind: str, value: Value, cluster_size: int, cluster_stride: int = 1, loc=None):
        super().__init__([value], [value.type], {"kind": kind, "cluster_size": cluster_size,
                                                 "cluster_stride": cluster_stride}, loc=loc)

    @property
    def kind(self):
        return self.attrs["kind"]

    def verify(self):
        if self.kind not in REDUCE_KINDS:
            raise IRError(f"unknown reduction {self.kind}", self)
        c = self.attrs["cluster_size"]
        if c < 1 or c & (c - 1):
            raise IRError(f"cluster size {c} must be a power of two", self)


class ShuffleOp(Op):
    """``gpu.shuffle``: read ``value`` from another lane: ``idx`` (that lane), ``xor`` (lane ^ n),
    ``down`` (lane + n), ``up`` (lane - n). ``lane`` is a scalar i32. ``down`` may take a third operand,
    ``next``: lanes whose ``lane + n`` passes the subgroup's end read it from lane ``lane + n - size``
    (``value`` itself without it)."""

    NAME = "gpu.shuffle"
    ATTRS = (Attr("mode", str),)

    def __init__(self, mode: str, value: Value, lane: Value, nxt: Value = None, loc=None):
        super().__init__([value, lane] + ([nxt] if nxt is not None else []), [value.type], {"mode": mode}, loc=loc)

    @property
    def mode(self):
        return self.attrs["mode"]

    def verify(self):
        if self.mode not in ("idx", "xor", "down", "up"):
            raise IRError(f"unknown shuffle mode {self.mode}", self)
        if self.operands[1].type != int32:
            raise IRError("the lane operand must be i32", self)
        if len(self.operands) > 2 and (self.mode != "down" or self.operands[2].type != self.operands[0].type):
            raise IRError("only a down shuffle takes a next value, of the value's type", self)


class TileShuffleOp(Op):
    """``gpu.tile_shuffle``: every element of a tile takes the value of another along ``axis``; the
    moves of the tile algorithms (scans, flip, sort):

    * ``mode = "xor"``: element ``i`` takes element ``i ^ distance`` (one operand; the axis a power
      of two);
    * ``mode = "window"``: element ``i`` takes element ``i + distance`` of ``concat(a, b)`` along the
      axis, ``b`` the second operand (``a`` again when there is none: a rotation by ``distance``).

    The layout passes lower it where the data lies: other subgroups' pieces through SLM (``wg-to-sg``),
    other pieces or blocks of the same subgroup by taking those values (no instruction), other slots of
    a lane by renaming, other lanes with ``gpu.shuffle`` (``sg-to-lane``)."""

    NAME = "gpu.tile_shuffle"
    ATTRS = (Attr("mode", str), Attr("axis", int), Attr("distance", int))

    def __init__(self, mode: str, axis: int, distance: int, srcs, loc=None):
        super().__init__(list(srcs), [srcs[0].type], {"mode": mode, "axis": axis, "distance": distance}, loc=loc)

    @property
    def mode(self) -> str:
        return self.attrs["mode"]

    @property
    def axis(self) -> int:
        return self.attrs["axis"]

    @property
    def distance(self) -> int:
        return self.attrs["distance"]

    def verify(self):
        t = self.result.type
        if not isinstance(t, VectorType) or not 0 <= self.axis < t.rank:
            raise IRError(f"tile_shuffle along axis {self.axis} of {t}", self)
        if any(v.type != t for v in self.operands):
            raise IRError("tile_shuffle operands and result share one type", self)
        n, d = t.shape[self.axis], self.distance
        if self.mode == "xor":
            if len(self.operands) != 1 or n & (n - 1) or not 0 < d < n:
                raise IRError(f"tile_shuffle xor {d} needs one operand and an axis of a power of two above {d}, "
                              f"got {len(self.operands)} and {n}", self)
        elif self.mode == "window":
            if len(self.operands) not in (1, 2) or not 0 < d < n:
                raise IRError(f"tile_shuffle window {d} takes one or two operands and 0 < distance < {n}", self)
        else:
            raise IRError(f"unknown tile_shuffle mode {self.mode!r}", self)


class TileGatherOp(Op):
    """``gpu.tile_gather``: ``result[p] = concat(srcs)[p with its ``axis`` coordinate replaced by
    index[p]]`` (the sources one after the other along ``axis``); an index outside the sources gives 0
    (-0.0 for floats). ``xl.gather``: the index (and the result) may be longer or shorter than a
    source along ``axis``, not elsewhere. Lowered as ``tile_shuffle``: the pieces of the sources another
    subgroup holds through SLM, other lanes' elements with ``gpu.shuffle`` by lane index, other slots
    by selects on the index."""

    NAME = "gpu.tile_gather"
    ATTRS = (Attr("axis", int),)

    def __init__(self, axis: int, index: Value, srcs, loc=None):
        it = index.type
        rt = VectorType(it.shape, srcs[0].type.elem, it.layout)
        super().__init__([index] + list(srcs), [rt], {"axis": axis}, loc=loc)

    @property
    def axis(self) -> int:
        return self.attrs["axis"]

    def verify(self):
        index, srcs, t = self.operands[0].type, self.operands[1:], self.result.type
        if not srcs or not isinstance(t, VectorType) or not 0 <= self.axis < t.rank:
            raise IRError(f"tile_gather along axis {self.axis} of {t}", self)
        s = srcs[0].type
        if any(v.type != s for v in srcs) or s.elem != t.elem or s.rank != t.rank or \
                any(x != y for d, (x, y) in enumerate(zip(s.shape, t.shape)) if d != self.axis):
            raise IRError(f"tile_gather sources {s} and result {t} differ beyond axis {self.axis}", self)
        if not isinstance(index, VectorType) or index.elem != int32 or index.shape != t.shape:
            raise IRError(f"tile_gather's index is an i32 tile of the result's shape, got {index}", self)
