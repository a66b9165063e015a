"""Pass ``wg-to-sg``: distribute workgroup tiles to subgroups by ``sg_layout``/``sg_data``/``order``.

Subgroup ``s`` owns, along each dimension ``i``, the ``sg_data[i]`` elements starting at
``(coord_i(s) * sg_data[i]) % size[i]``, and again every ``sg_layout[i] * sg_data[i]`` elements
when the tile is larger (round-robin: several pieces per subgroup). Reductions across
subgroups and layout conversions exchange data through shared local memory (seed 001's
cooperative ``store_matrix`` / ``load_matrix``), between two barriers.

Example: ``vector<128xf32, sg_layout = [4], sg_data = [32]>`` becomes, in subgroup ``s``,
``vector<32xf32>`` starting at element ``32 * s``.
"""
from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Op, Value
from ..ir.layout import Layout, sg_splits
from ..ir.types import MemDescType, TensorDescType, VectorType
from .distribute import Split, Splitter, combine_kind
from .rewrite import PassError


class WgToSg(Splitter):
    NAME = "wg-to-sg"
    LEVEL = "sg"
    RULES = dict(Splitter.RULES)
    RULES[ir.ShuffleTensorOp] = "rule_shuffle_tensor"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._sg_id: Optional[Value] = None
        self._coords: Dict[tuple, List[Value]] = {}
        self._bases: Dict[tuple, Value] = {}
        self._owners: Dict[tuple, Optional[Value]] = {}
        self._turns: Dict[tuple, list] = {}

    # ---- subgroup coordinates (computed once, in the function's entry) ---------------------------
    def sg_id(self) -> Value:
        if self._sg_id is None:
            with self.at_prologue():
                self._sg_id = self.b(ir.SubgroupIdOp)
        return self._sg_id

    def coords(self, root: Layout) -> List[Value]:
        key = (root.sg_layout, root.dim_order)
        if key not in self._coords:
            sid = self.sg_id()
            out = [None] * root.rank
            stride = 1
            with self.at_prologue():
                for d in root.dim_order:
                    out[d] = self.irem(self.idiv(sid, stride), root.sg_layout[d])
                    stride *= root.sg_layout[d]
            self._coords[key] = out
        return self._coords[key]

    def base(self, layout, shape) -> Tuple:
        root = layout.root
        coords = self.coords(root)
        kept = layout.kept_dims
        out = []
        for i, s in enumerate(sg_splits(layout, shape)):
            c = coords[kept[i]]
            key = (id(c), s.data, s.size)
            if key not in self._bases:
                with self.at_prologue():
                    self._bases[key] = self.irem(self.imul(c, s.data), s.size) if s.size > 0 else 0
            out.append(self._bases[key])
        return tuple(out)

    # ---- splitting --------------------------------------------------------------------------------
    def split(self, t) -> Optional[Split]:
        if not isinstance(t, (VectorType, TensorDescType)) or t.layout is None:
            return None
        layout, shape = t.layout, tuple(t.shape)
        if not layout.is_wg:
            raise PassError(f"wg-to-sg: {t} has no sg_layout")
        splits = sg_splits(layout, shape)
        piece_shape = tuple(s.data for s in splits)
        grid = tuple(s.rounds for s in splits)
        origins = [tuple(r * s.unit for r, s in zip(idx, splits))
                   for idx in itertools.product(*[range(g) for g in grid])]
        piece = t.with_shape(piece_shape).with_layout(layout.drop_sg())
        return Split(piece, grid, origins, self.base(layout, shape))

    def nd_tdesc_type(self, t: TensorDescType) -> TensorDescType:
        s = self.split(VectorType(t.shape, t.elem, t.layout))
        return t.with_shape(s.piece_type.shape).with_layout(t.layout.drop_sg())

    # ---- what crosses subgroups ---------------------------------------------------------------------
    def owner_mask(self, layout, shape) -> Optional[Value]:
        if layout is None:
            return None
        key = (layout, tuple(shape))
        if key in self._owners:
            return self._owners[key]
        root = layout.root
        coords = self.coords(root)
        kept = layout.kept_dims
        owner = None
        with self.at_prologue():
            bits = []
            for d in range(root.rank):
                if d not in kept and root.sg_layout[d] > 1:
                    bits.append(self.b(ir.CmpOp, "eq", self.i32(coords[d]), self.i32(0)))
            for i, s in enumerate(sg_splits(layout, shape)):
                if s.unit > s.size:
                    first = self.imul(coords[kept[i]], s.data)
                    bits.append(self.b(ir.CmpOp, "ult", self.i32(first), self.i32(s.size)))
            for bit in bits:
                owner = bit if owner is None else self.b(ir.BinaryOp, "andi", owner, bit)
        self._owners[key] = owner
        return owner

    def slm(self, shape, elem, block=None, strides=None) -> Value:
        with self.at_prologue():
            return self.b(ir.CreateMemDescOp, MemDescType(tuple(shape), elem, strides=strides, block=block))

    def turn_matrix(self, shape, elem) -> Value:
        """An SLM matrix for a tile move through SLM: two per shape and type, taken in turn, so a
        scan's or a sort's many moves reuse them (each is written again only after the other move's
        first barrier, which every subgroup passes after its reads of it: pass slm-barriers then
        drops the moves' second barriers)."""
        key = (tuple(shape), elem)
        pair = self._turns.get(key)
        if pair is None:
            pair = self._turns[key] = [self.slm(shape, elem), self.slm(shape, elem), 0]
        pair[2] ^= 1
        return pair[pair[2]]

    def cross_reduce(self, op: ir.ReduceOp, partials: List[Value], ss: Split) -> List[Value]:
        src_t = op.operands[0].type
        layout, shape = src_t.layout, src_t.shape
        a = op.axis
        split_a = sg_splits(layout, shape)[a]
        n = min(split_a.count, max(1, split_a.size // split_a.data))
        if n == 1:
            return partials
        rtype = op.result.type
        rshape = tuple(rtype.shape) if isinstance(rtype, VectorType) else ()
        mem = self.slm((n,) + rshape, src_t.elem)
        ca = self.coords(layout.root)[layout.kept_dims[a]]
        row = self.irem(ca, n)
        rs = self.split(rtype) if isinstance(rtype, VectorType) else None
        for i, p in enumerate(partials):
            origin = self.origin(rs, i) if rs is not None else ()
            self.b.create(ir.StoreMatrixOp, p, mem, [self.i32(row)] + [self.i32(o) for o in origin])
        self.local_barrier()
        kind = combine_kind(op.kind, src_t.elem)
        out = []
        for i, p in enumerate(partials):
            origin = self.origin(rs, i) if rs is not None else ()
            acc = None
            for k in range(n):
                v = self.b(ir.LoadMatrixOp, mem, [self.i32(k)] + [self.i32(o) for o in origin], p.type)
                acc = v if acc is None else self.b(ir.BinaryOp, kind, acc, v)
            out.append(acc)
        self.local_barrier()
        return out

    def local_barrier(self) -> Op:
        """A barrier that orders SLM only (``memory = "local"``): what crosses subgroups here goes
        through SLM, so no global memory fence (a device-scope fence invalidates L1 on pvc)."""
        bar = self.b.create(ir.BarrierOp)
        bar.attrs["memory"] = "local"
        return bar

    def holds_axis(self, t, axis: int) -> bool:
        sp = sg_splits(t.layout, tuple(t.shape))[axis]
        return sp.data * sp.rounds == sp.size

    def publish_along(self, sources: List[Value], s: Split, axis: int) -> Tuple[Value, Op]:
        """Every subgroup stores its pieces of ``sources`` one after the other along ``axis`` into a
        matrix of them all (``turn_matrix``), then a barrier: (the matrix, the barrier)."""
        t = sources[0].type
        n = t.shape[axis]
        wide = list(t.shape)
        wide[axis] *= len(sources)
        mem = self.turn_matrix(wide, t.elem)
        for k, v in enumerate(sources):
            for i, p in enumerate(self.all(v)):
                at = list(self.origin(s, i))
                at[axis] = self.iadd(at[axis], k * n)
                self.b.create(ir.StoreMatrixOp, p, mem, [self.i32(o) for o in at])
        return mem, self.local_barrier()

    def read_back(self, first: Op, loads: List) -> List:
        """``loads`` (built after the publishing barrier ``first``), then the closing barrier; the two
        marked as one private exchange's."""
        bar = self.local_barrier()
        first.attrs["exchange"], bar.attrs["exchange"] = "open", "close"
        return loads

    def shuffle_across(self, op: ir.TileShuffleOp, s: Split) -> List[Value]:
        """A ``tile_shuffle`` whose axis is split between subgroups, through SLM: every subgroup stores its
        pieces, a barrier, and each loads the piece its result takes from. A window: ``a`` then ``b``
        (``a`` again for a rotation) one after the other along the axis, the piece read at its own
        origin plus the distance (SLM does the shift). A xor: the piece at its origin xor'ed with the
        distance's bits from the piece length up, shuffled within by the bits below."""
        a, window = op.axis, op.mode == "window"
        mem, first = self.publish_along((list(op.operands) * 2)[:2] if window else [op.operands[0]], s, a)
        rest = 0 if window else op.distance % s.piece_type.shape[a]
        out = []
        for i in range(s.count):
            at = list(self.origin(s, i))
            if window:
                at[a] = self.iadd(at[a], op.distance)
            else:
                at[a] = self._arith("xori", at[a], op.distance - rest, lambda x, y: x ^ y)
            out.append(self.b(ir.LoadMatrixOp, mem, [self.i32(o) for o in at], s.piece_type))
        out = self.read_back(first, out)
        return [v if rest == 0 else self.b(ir.TileShuffleOp, "xor", a, rest, [v]) for v in out]

    def gather_across(self, op: ir.TileGatherOp, s: Split, ss: Split) -> List[List[Value]]:
        """A ``tile_gather`` whose sources' axis is split between subgroups: every subgroup stores its
        pieces of the sources (``ss``), a barrier, and loads, for each of its result pieces (``s``), the
        whole axis at the piece's place (as source pieces), which a subgroup-level gather then reads."""
        a = op.axis
        mem, first = self.publish_along(list(op.operands[1:]), ss, a)
        end, length = op.operands[1].type.shape[a] * (len(op.operands) - 1), ss.piece_type.shape[a]
        out = []
        for i in range(s.count):
            at = [self.i32(o) for o in self.origin(s, i)]
            out.append([self.b(ir.LoadMatrixOp, mem, at[:a] + [self.i32(j)] + at[a + 1:], ss.piece_type)
                        for j in range(0, end, length)])
        return self.read_back(first, out)

    def rule_id_tile(self, op: ir.IdTileOp):
        """Subgroup ids are the subgroup's ``gpu.subgroup_id`` in every element it holds."""
        if op.which != "subgroup":
            return super().rule_id_tile(op)
        s = self._split_of(op.result, op)
        sid = self.i32(self.sg_id())
        return [[self.b(ir.BroadcastOp, sid, s.piece_type) for _ in range(s.count)]]

    def rule_convert_layout(self, op: ir.ConvertLayoutOp):
        """Through SLM: every subgroup stores its pieces, barrier, loads the pieces of the new layout,
        barrier. ``slm_block`` (set by ``slm-transpose``) stores the matrix as contiguous blocks of
        that shape, so the loads can be sub-group block reads; ``slm_strides`` orders the blocks
        (the VNNI rows a lane reads whole on targets without 2D block IO)."""
        src, res = op.operands[0], op.result
        if src.type.layout == res.type.layout:
            return [self.all(src)]
        block, strides = op.attrs.get("slm_block"), op.attrs.get("slm_strides")
        mem = self.slm(res.type.shape, res.type.elem, tuple(block) if block else None,
                       tuple(strides) if strides else None)
        return self.through_slm(op, src, res, mem, private=True)

    def rule_shuffle_tensor(self, op: ir.ShuffleTensorOp):
        """Always through the caller's SLM matrix, even between equal layouts (seed 002's lowering)."""
        return self.through_slm(op, op.source, op.result, self.get(op.mem))

    def through_slm(self, op: Op, src: Value, res: Value, mem: Value, private: bool = False):
        """Every subgroup stores its pieces of ``src`` into ``mem``, a barrier, loads its pieces of
        ``res``, a barrier (the matrix may then be written again). When only this exchange writes
        ``mem`` (``private``), its barriers say so (``exchange = "open"`` / ``"close"``): pass
        ``slm-barriers`` may then drop the second one or share the first with the next exchange in a
        loop."""
        ss, rs = self._split_of(src, op), self._split_of(res, op)
        for i, p in enumerate(self.all(src)):
            self.b.create(ir.StoreMatrixOp, p, mem, [self.i32(o) for o in self.origin(ss, i)])
        first = self.local_barrier()
        out = [self.b(ir.LoadMatrixOp, mem, [self.i32(o) for o in self.origin(rs, i)], rs.piece_type)
               for i in range(rs.count)]
        bar = self.local_barrier()
        if private:
            first.attrs["exchange"], bar.attrs["exchange"] = "open", "close"
        return [out]


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    return WgToSg(ctx).run(func)
