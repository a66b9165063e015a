"""Pass ``sg-to-lane``: distribute each instruction block to the lanes of its subgroup.

Lane ``l`` of a block ``B`` with ``lane_layout``/``lane_data`` owns, along each dimension, the
elements ``(coord_i(l) * lane_data[i] + round * lane_layout[i] * lane_data[i]) % B[i] + d``
(seed 001's formula). After this pass every tile is a lane's ``vector<n>`` of slots, in the
order ``layout.lane_slot_offsets`` gives: rounds row-major, then ``lane_data`` row-major — the
register order of 2D block loads and of DPAS operand fragments. Reductions combine slots
within a lane, then lanes with ``gpu.subgroup_reduce`` (clustered when only some lanes share a
row). Block ops keep their subgroup-level tile type in ``tile`` so codegen knows the slots.

Example: ``vector<8x16xf32, lane_layout = [1, 16]>`` becomes ``vector<8xf32>``; slot ``r`` of
lane ``l`` is element ``(r, l)``.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir import types as T
from ..ir.core import Op, Value
from ..ir.layout import Layout, SliceLayout, lane_slot_offsets, lane_splits
from ..ir.types import DType, TensorDescType, VectorType
from .distribute import combine_kind
from .layouts import make_slice
from .rewrite import PassError, Rewriter, STRUCTURED_RULES


def slot_count(t: VectorType) -> int:
    if t.layout is None:
        raise PassError(f"sg-to-lane: {t} has no lane layout")
    return len(lane_slot_offsets(t.layout, t.shape))


def lane_type(t):
    """The per-lane type of a subgroup-level tile."""
    if isinstance(t, VectorType):
        return VectorType((slot_count(t),), t.elem)
    if isinstance(t, TensorDescType) and t.scattered:
        n = slot_count(VectorType(t.shape, t.elem, t.layout))
        return TensorDescType((n,), t.elem, scattered=True, chunk_size=t.chunk_size,
                              memory_scope=t.memory_scope)
    return t


def dim_stride(root: Layout, dim: int) -> int:
    """Lane-id stride between neighbours along ``dim`` (``order[0]`` is fastest)."""
    stride = 1
    for d in root.dim_order:
        if d == dim:
            return stride
        stride *= root.lane_layout[d]
    raise ValueError(dim)


class SgToLane(Rewriter):
    NAME = "sg-to-lane"
    LEVEL = "lane"
    RULES = dict(STRUCTURED_RULES)
    RULES.update({
        ir.StepOp: "rule_step", ir.BroadcastOp: "rule_broadcast", ir.ShapeCastOp: "rule_shape_cast",
        ir.TransposeOp: "rule_transpose", ir.ReduceOp: "rule_reduce", ir.ConvertLayoutOp: "rule_convert",
        ir.LoadNdOp: "rule_keep_tile", ir.StoreNdOp: "rule_keep_tile", ir.PrefetchNdOp: "rule_keep_tile",
        ir.LoadMatrixOp: "rule_keep_tile", ir.StoreMatrixOp: "rule_keep_tile", ir.DpasOp: "rule_keep_tile",
        ir.StoreScatterOp: "rule_masked", ir.AtomicRMWOp: "rule_masked", ir.IdTileOp: "rule_id_tile",
        ir.TileShuffleOp: "rule_tile_shuffle", ir.TileGatherOp: "rule_tile_gather",
    })

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lane: Optional[Value] = None
        self._coords: Dict[tuple, List[Value]] = {}
        self._bases: Dict[tuple, Value] = {}

    def expand(self, t):
        return [lane_type(t)]

    # ---- lane coordinates ----------------------------------------------------------------------
    def lane_id(self) -> Value:
        if self._lane is None:
            with self.at_prologue():
                self._lane = self.b(ir.LaneIdOp)
        return self._lane

    def coords(self, root: Layout) -> List[Value]:
        key = (root.lane_layout, root.dim_order)
        if key not in self._coords:
            lid = self.lane_id()
            out = [None] * root.rank
            stride = 1
            with self.at_prologue():
                for d in root.dim_order:
                    out[d] = self.irem(self.idiv(lid, stride), root.lane_layout[d])
                    stride *= root.lane_layout[d]
            self._coords[key] = out
        return self._coords[key]

    def lane_base(self, layout, block) -> List:
        coords = self.coords(layout.root)
        kept = layout.kept_dims
        out = []
        for i, s in enumerate(lane_splits(layout, block)):
            c = coords[kept[i]]
            key = (id(c), s.data, s.size)
            if key not in self._bases:
                with self.at_prologue():
                    self._bases[key] = self.irem(self.imul(c, s.data), s.size)
            out.append(self._bases[key])
        return out

    def owner_mask(self, layout, block) -> Optional[Value]:
        root = layout.root
        coords = self.coords(root)
        kept = layout.kept_dims
        bits = []
        with self.at_prologue():
            for d in range(root.rank):
                if d not in kept and root.lane_layout[d] > 1:
                    bits.append(self.b(ir.CmpOp, "eq", self.i32(coords[d]), self.i32(0)))
            for i, s in enumerate(lane_splits(layout, block)):
                if s.unit > s.size:
                    bits.append(self.b(ir.CmpOp, "ult", self.i32(self.imul(coords[kept[i]], s.data)),
                                       self.i32(s.size)))
            owner = None
            for bit in bits:
                owner = bit if owner is None else self.b(ir.BinaryOp, "andi", owner, bit)
        return owner

    # ---- rules ------------------------------------------------------------------------------------
    def rule_step(self, op: ir.StepOp):
        t = op.result.type
        offs = [o[0] for o in lane_slot_offsets(t.layout, t.shape)]
        lt = lane_type(t)
        base = self.lane_base(t.layout, t.shape)[0]
        consts = self.b(ir.ConstantOp, tuple(offs), lt)
        if isinstance(base, int) and base == 0:
            return [[consts]]
        return [[self.b(ir.BinaryOp, "addi", self.b(ir.BroadcastOp, self.i32(base), lt), consts)]]

    def _slot_index(self, t: VectorType) -> Dict[Tuple[int, ...], int]:
        return {o: i for i, o in enumerate(lane_slot_offsets(t.layout, t.shape))}

    def rule_broadcast(self, op: ir.BroadcastOp):
        src = op.operands[0]
        if not isinstance(src.type, VectorType):
            return self.piecewise(op)
        st, rt = src.type, op.result.type
        sidx = self._slot_index(st)
        idx = []
        for o in lane_slot_offsets(rt.layout, rt.shape):
            so = tuple(0 if st.shape[d] == 1 else x for d, x in enumerate(o))
            if so not in sidx:
                raise PassError(f"sg-to-lane: broadcast source {st} does not hold element {so} in the lane "
                                f"that needs it (layouts disagree)", op)
            idx.append(sidx[so])
        return [[self.shuffle([self.get(src)], idx, lane_type(rt))]]

    def shuffle(self, srcs, idx, t) -> Value:
        if len(srcs) == 1 and list(idx) == list(range(srcs[0].type.numel)) and srcs[0].type == t:
            return srcs[0]
        return self.b(ir.SlotShuffleOp, srcs, idx, t)

    def rule_shape_cast(self, op: ir.ShapeCastOp):
        src = self.get(op.operands[0])
        if not isinstance(op.result.type, VectorType):
            return [[self.b(ir.ExtractOp, src, 0)]]
        st, rt = op.operands[0].type, op.result.type
        ins = [o for o in lane_slot_offsets(st.layout, st.shape)]
        outs = [o for o in lane_slot_offsets(rt.layout, rt.shape)]
        strip = lambda o, shape: tuple(x for x, s in zip(o, shape) if s != 1)
        sidx = {strip(o, st.shape): i for i, o in enumerate(ins)}
        idx = [sidx[strip(o, rt.shape)] for o in outs]
        return [[self.shuffle([src], idx, lane_type(rt))]]

    def rule_transpose(self, op: ir.TransposeOp):
        st, rt = op.operands[0].type, op.result.type
        sidx = self._slot_index(st)
        perm = op.perm
        idx = []
        for o in lane_slot_offsets(rt.layout, rt.shape):
            so = [0] * len(o)
            for d, x in enumerate(o):
                so[perm[d]] = x
            idx.append(sidx[tuple(so)])
        return [[self.shuffle([self.get(op.operands[0])], idx, lane_type(rt))]]

    def rule_reduce(self, op: ir.ReduceOp):
        st = op.operands[0].type
        a = op.axis
        src = self.get(op.operands[0])
        offs = lane_slot_offsets(st.layout, st.shape)
        groups: Dict[tuple, List[int]] = {}
        for i, o in enumerate(offs):
            groups.setdefault(o[:a] + o[a + 1:], []).append(i)
        rt = op.result.type
        if isinstance(rt, VectorType):
            order = [o for o in lane_slot_offsets(rt.layout, rt.shape)]
        else:
            order = [()]
        k = len(groups[order[0]])
        n = len(order)
        vt = VectorType((n,), st.elem)
        kind = combine_kind(op.kind, st.elem)
        acc = None
        for t in range(k):
            part = self.shuffle([src], [groups[o][t] for o in order], vt)
            acc = part if acc is None else self.b(ir.BinaryOp, kind, acc, part)
        split_a = lane_splits(st.layout, st.shape)[a]
        distinct = min(split_a.count, max(1, split_a.size // split_a.data))
        if distinct > 1:
            root = st.layout.root
            stride = dim_stride(root, st.layout.kept_dims[a])
            acc = self.b(ir.SubgroupReduceOp, op.kind, acc, distinct, stride)
        if not isinstance(rt, VectorType):
            return [[self.b(ir.ExtractOp, acc, 0)]]
        return [[acc]]

    def rule_tile_shuffle(self, op: ir.TileShuffleOp):
        """A ``tile_shuffle`` within a block. Along the axis a lane holds ``ld`` (lane_data) elements from
        ``(c * ld) % size``, ``c`` its coordinate among ``lanes`` distinct ones, again every ``unit``
        elements (rounds): element ``c * ld + k + r * unit``. ``xor d`` flips bits of ``k`` (another
        slot), of ``c`` (``gpu.shuffle`` xor) and of ``r`` (another slot). ``window d``: the element
        ``d`` further, ``k + d = m * ld + k'``, is in lane ``c + m`` (modulo ``lanes``), slot ``k'`` of
        round ``r + m // lanes``, or of the next round for the lanes whose ``c + m % lanes`` wraps: the
        lane it is read from picks between the two by its own coordinate, then ``gpu.shuffle`` idx (when the
        axis's lanes are the whole subgroup in order, one ``gpu.shuffle`` down of the two rounds)."""
        t, a, d = op.result.type, op.axis, op.distance
        layout = t.layout
        sp = lane_splits(layout, t.shape)[a]
        ld, rounds, unit = sp.data, sp.rounds, sp.unit
        lanes = sp.count if unit <= sp.size else sp.size // ld
        offs = lane_slot_offsets(layout, t.shape)
        index = {o: i for i, o in enumerate(offs)}
        srcs = [self.get(v) for v in op.operands]
        if len(srcs) == 2 and srcs[0] is srcs[1]:
            srcs = srcs[:1]

        def slot(o, k, r):   # the slot holding element k + r * unit along the axis (r >= rounds: of b)
            at = list(o)
            at[a] = k + (r % rounds) * unit
            return index[tuple(at)] + (r // rounds % len(srcs)) * len(offs)
        dim = layout.kept_dims[a]
        stride = dim_stride(layout.root, dim)
        if op.mode == "xor":
            if ld & (ld - 1) or lanes & (lanes - 1) or stride & (stride - 1):
                raise PassError(f"sg-to-lane: tile_shuffle xor needs power-of-two lane counts, got {layout}", op)
            rk, rc, rr = d % ld, d // ld % lanes, d // (ld * lanes)
            v = self.shuffle(srcs, [slot(o, o[a] % ld ^ rk, o[a] // unit ^ rr) for o in offs], lane_type(t))
            return [[self.b(ir.ShuffleOp, "xor", v, self.i32(rc * stride)) if rc else v]]
        groups: Dict[int, list] = {}     # lane distance -> [(slot, its source slots)]
        for i, o in enumerate(offs):
            k, r = o[a] % ld, o[a] // unit
            m, k2 = divmod(k + d, ld)
            m0, mm = divmod(m, lanes)
            groups.setdefault(mm, []).append((i, slot(o, k2, r + m0), slot(o, k2, r + m0 + 1) if mm else None))
        parts, at = [], {}
        for mm, items in sorted(groups.items()):
            vt = VectorType((len(items),), t.elem)
            v = self.shuffle(srcs, [x[1] for x in items], vt)
            if mm and lanes == self.target.sg_size and stride == 1:    # the lanes are the subgroup's, in order
                v = self.b(ir.ShuffleOp, "down", v, self.i32(mm), self.shuffle(srcs, [x[2] for x in items], vt))
            elif mm:
                c, src_lane = self._window_lanes(layout, dim, lanes, mm)
                keep = self.b(ir.CmpOp, "uge", c, self.i32(mm))
                v = self.b(ir.SelectOp, keep, v, self.shuffle(srcs, [x[2] for x in items], vt))
                v = self.b(ir.ShuffleOp, "idx", v, src_lane)
            for j, x in enumerate(items):
                at[x[0]] = sum(p.type.numel for p in parts) + j
            parts.append(v)
        return [[self.shuffle(parts, [at[i] for i in range(len(offs))], lane_type(t))]]

    def _window_lanes(self, layout, dim: int, lanes: int, mm: int) -> Tuple[Value, Value]:
        """(this lane's coordinate ``c`` along ``dim`` among ``lanes``, the lane ``mm`` further along
        it, modulo ``lanes``): computed once, in the entry."""
        root = layout.root
        key = ("window", root.lane_layout, root.dim_order, dim, lanes, mm)
        if key not in self._bases:
            c, stride = self._axis_coord(layout, dim, lanes), dim_stride(root, dim)
            with self.at_prologue():
                to = self.i32(self.irem(self.iadd(c, mm), lanes))
                lane = self.b(ir.BinaryOp, "subi", self.i32(self.iadd(self.lane_id(), self.imul(to, stride))),
                              self.i32(self.imul(c, stride)))
            self._bases[key] = (c, lane)
        return self._bases[key]

    def _axis_coord(self, layout, dim: int, lanes: int) -> Value:
        """This lane's coordinate along ``dim`` among the ``lanes`` that hold distinct elements there."""
        root = layout.root
        key = ("coord", root.lane_layout, root.dim_order, dim, lanes)
        if key not in self._bases:
            with self.at_prologue():
                c = self.coords(root)[dim]
                self._bases[key] = self.i32(self.irem(c, lanes) if lanes < root.lane_layout[dim] else c)
        return self._bases[key]

    def rule_tile_gather(self, op: ir.TileGatherOp):
        """A ``tile_gather`` within a block, slot by slot: the index ``v`` names a source (``v / size``)
        and, within it, element ``w = c' * ld + k + r * unit``: lane ``c'`` holds it in slot (``k``, ``r``).
        Each candidate slot (every source, round and ``k``) is read from lane ``c'`` (``gpu.shuffle`` idx)
        and the one the index names is selected; an index outside the sources gives 0."""
        t, ts, a = op.result.type, op.operands[1].type, op.axis
        layout = ts.layout       # (the index's and the result's but along the axis, whose length may differ)
        sp = lane_splits(layout, ts.shape)[a]
        ld, rounds, unit, size = sp.data, sp.rounds, sp.unit, sp.size
        lanes = sp.count if unit <= size else size // ld
        dim = layout.kept_dims[a]
        stride = dim_stride(layout.root, dim)
        offs = lane_slot_offsets(t.layout, t.shape)
        index = {o: i for i, o in enumerate(lane_slot_offsets(layout, ts.shape))}
        srcs = [self.get(v) for v in op.operands[1:]]
        where = self.get(op.operands[0])
        zero = self.b(ir.ConstantOp, -0.0 if t.elem.is_floating else 0, t.elem)
        c = self._axis_coord(layout, dim, lanes) if lanes > 1 else None
        outs = []
        for i, o in enumerate(offs):
            v = self.b(ir.ExtractOp, where, i)
            w = self.irem(v, size) if len(srcs) > 1 else v
            which = self.idiv(v, size) if len(srcs) > 1 else 0
            key = self.i32(self.iadd(self.imul(self.iadd(self.imul(which, rounds), self.idiv(w, unit)), ld),
                                     self.irem(w, ld)))
            lane = None
            if c is not None:
                lane = self.b(ir.BinaryOp, "subi", self.i32(self.iadd(self.lane_id(),
                                                                       self.imul(self.irem(self.idiv(w, ld), lanes), stride))),
                              self.i32(self.imul(c, stride)))
            got = zero
            for n, src in enumerate(srcs):
                for r in range(rounds):
                    for k in range(ld):
                        at = list(o)
                        at[a] = k + r * unit
                        cand = self.b(ir.ExtractOp, src, index[tuple(at)])
                        if lane is not None:
                            cand = self.b(ir.ShuffleOp, "idx", cand, lane)
                        hit = self.b(ir.CmpOp, "eq", key, self.i32((n * rounds + r) * ld + k))
                        got = self.b(ir.SelectOp, hit, cand, got)
            inside = self.b(ir.CmpOp, "ult", self.i32(v), self.i32(len(srcs) * size))
            outs.append(self.b(ir.SelectOp, inside, got, zero))
        return [[self.b(ir.FromElementsOp, outs, lane_type(t))]]

    def rule_id_tile(self, op: ir.IdTileOp):
        """Lane ids are the lane's ``gpu.lane_id`` in every slot it holds."""
        if op.which != "lane":
            raise PassError("sg-to-lane: subgroup id tiles should have been lowered by wg-to-sg", op)
        return [[self.b(ir.BroadcastOp, self.i32(self.lane_id()), lane_type(op.result.type))]]

    def rule_convert(self, op: ir.ConvertLayoutOp):
        raise PassError("sg-to-lane: convert_layout should have been lowered by wg-to-sg", op)

    def rule_keep_tile(self, op: Op):
        """Block ops keep their subgroup-level tile types so codegen can place each slot."""
        attrs = dict(op.attrs)
        attrs["tiles"] = tuple(v.type for v in list(op.operands) + list(op.results)
                               if isinstance(v.type, VectorType))
        operands = [self.get(v) for v in op.operands]
        new = self.b.insert(op.clone_with(operands, [lane_type(r.type) for r in op.results], attrs))
        return [[r] for r in new.results]

    def rule_masked(self, op: Op):
        td = op.operands[1] if isinstance(op, ir.StoreScatterOp) else op.operands[0]
        t = td.type
        owner = self.owner_mask(t.layout, t.shape) if t.layout is not None else None
        if owner is None:
            return self.piecewise(op)
        m = self.get(op.operands[2])
        masked = self.b(ir.BinaryOp, "andi", m, self.b(ir.BroadcastOp, owner, m.type))
        operands = [self.get(v) for v in op.operands]
        operands[2] = masked
        new = self.b.insert(op.clone_with(operands, [lane_type(r.type) for r in op.results]))
        return [[r] for r in new.results]


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    return SgToLane(ctx).run(func)
