"""Splitting tiles into pieces: the machinery shared by ``wg-to-sg`` and ``blocking``.

Both passes cut every tile into a grid of pieces: a subgroup's round-robin pieces of a
workgroup tile, or the instruction blocks of a subgroup tile. A ``Split`` says where each
piece starts (a static origin, plus a dynamic base such as the subgroup's offset). The rules
here rebuild each op piece by piece; the passes differ only in how they split a type and in
what crosses pieces (reductions and layout changes across subgroups go through SLM).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod
from typing import List, Optional, Sequence, Tuple

from .. import ir
from ..ir import types as T
from ..ir.core import Op, Value
from ..ir.types import DType, MemDescType, TensorDescType, VectorType
from .rewrite import IntLike, PassError, Rewriter, STRUCTURED_RULES


@dataclass
class Split:
    """How a value of some type is cut: ``grid`` pieces per dimension, each of ``piece_type``."""

    piece_type: object
    grid: Tuple[int, ...]
    origins: List[Tuple[int, ...]]        # static origin of each piece (row-major over grid)
    base: Optional[Tuple[IntLike, ...]]   # dynamic origin shared by all pieces (or None)

    @property
    def count(self) -> int:
        return len(self.origins)

    def index(self, idx: Sequence[int]) -> int:
        flat = 0
        for i, g in zip(idx, self.grid):
            flat = flat * g + i
        return flat

    def indices(self):
        return list(itertools.product(*[range(g) for g in self.grid]))


COMBINE = {  # reduction kind -> elementwise op kind, per element class (float, signed, unsigned)
    "add": ("addf", "addi", "addi"), "mul": ("mulf", "muli", "muli"),
    "maxnumf": ("maxnumf",) * 3, "minnumf": ("minnumf",) * 3, "maximumf": ("maximumf",) * 3,
    "minimumf": ("minimumf",) * 3, "maxsi": ("maxsi",) * 3, "minsi": ("minsi",) * 3, "maxui": ("maxui",) * 3,
    "minui": ("minui",) * 3, "and": ("andi",) * 3, "or": ("ori",) * 3, "xor": ("xori",) * 3,
}


def combine_kind(kind: str, elem: DType) -> str:
    f, s, u = COMBINE[kind]
    return f if elem.is_floating else (s if elem.is_signed else u)


def shuffle_pieces(mode: str, j: int, length: int, distance: int) -> Tuple[Tuple[int, int], int]:
    """Where piece ``j`` (of pieces ``length`` long along the axis, in order) of a ``tile_shuffle``
    takes its elements from: ((lo, hi), rest). ``xor``: from piece ``lo``, shuffled by ``rest`` (the
    distance's bits below the piece length, a power of two); ``window``: from pieces ``lo`` and
    ``hi = lo + 1`` of ``concat(a, b)``'s pieces, by ``rest``. ``rest == 0``: piece ``lo`` itself."""
    if mode == "xor":
        return (j ^ (distance // length), 0), distance % length
    q, rest = divmod(distance, length)
    return (j + q, j + q + 1), rest


def _shape(t) -> Tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, (VectorType, TensorDescType)) else ()


class Splitter(Rewriter):
    """A pass that cuts tiles into pieces (see the module docstring). Subclasses implement
    ``split`` and the hooks ``cross_reduce``, ``convert_layout`` and ``owner_mask``."""

    RULES = dict(STRUCTURED_RULES)
    RULES.update({
        ir.StepOp: "rule_step", ir.BroadcastOp: "rule_broadcast", ir.ShapeCastOp: "rule_shape_cast",
        ir.TransposeOp: "rule_transpose", ir.ReduceOp: "rule_reduce", ir.ConvertLayoutOp: "rule_convert_layout",
        ir.DpasOp: "rule_dpas", ir.LoadNdOp: "rule_load_nd", ir.StoreNdOp: "rule_store_nd",
        ir.PrefetchNdOp: "rule_prefetch_nd", ir.CreateNdTDescOp: "rule_create_nd_tdesc",
        ir.LoadMatrixOp: "rule_load_matrix", ir.StoreMatrixOp: "rule_store_matrix",
        ir.StoreScatterOp: "rule_masked", ir.AtomicRMWOp: "rule_masked", ir.IdTileOp: "rule_id_tile",
        ir.TileShuffleOp: "rule_tile_shuffle", ir.TileGatherOp: "rule_tile_gather",
    })

    # ---- to implement ------------------------------------------------------------------------
    def split(self, t) -> Optional[Split]:
        raise NotImplementedError

    def cross_reduce(self, op: ir.ReduceOp, partials: List[Value], split: Split) -> List[Value]:
        return partials

    def owner_mask(self, layout, shape) -> Optional[Value]:
        """A scalar i1 that is False on replicas of replicated data (None: no replication)."""
        return None

    def holds_axis(self, t, axis: int) -> bool:
        """Whether each holder of ``t``'s pieces holds all of them along ``axis`` (piece ``j`` of the
        axis then starts at ``j`` times the piece's length): a ``tile_shuffle`` along it only takes
        other pieces. Otherwise ``shuffle_across`` moves the data."""
        return True

    def shuffle_across(self, op: ir.TileShuffleOp, s: Split) -> List[Value]:
        raise PassError(f"{self.NAME}: tile_shuffle across holders", op)

    def gather_across(self, op: ir.TileGatherOp, s: Split, ss: Split) -> List[List[Value]]:
        """For each result piece (``s``), every piece of the sources (``ss``) along the axis at its place
        (in order)."""
        raise PassError(f"{self.NAME}: tile_gather across holders", op)

    def nd_tdesc_type(self, t: TensorDescType) -> TensorDescType:
        raise NotImplementedError

    # ---- types --------------------------------------------------------------------------------
    def expand(self, t):
        if isinstance(t, TensorDescType) and not t.scattered:
            return [self.nd_tdesc_type(t)]
        s = self.split(t)
        return [s.piece_type] * s.count if s is not None else [t]

    def _split_of(self, v: Value, op: Op) -> Split:
        s = self.split(v.type)
        if s is None:
            raise PassError(f"{self.NAME}: '{op.op_name}' has a tile without a layout: {v.type}", op)
        return s

    def origin(self, s: Split, i: int) -> Tuple[IntLike, ...]:
        o = s.origins[i]
        if s.base is None:
            return o
        return tuple(self.iadd(b, x) for b, x in zip(s.base, o))

    # ---- rules ----------------------------------------------------------------------------------
    def rule_step(self, op: ir.StepOp):
        s = self._split_of(op.result, op)
        out = []
        for i in range(s.count):
            local = self.b(ir.StepOp, s.piece_type)
            off = self.origin(s, i)[0]
            if not (isinstance(off, int) and off == 0):
                local = self.b(ir.BinaryOp, "addi", local, self.b(ir.BroadcastOp, self.i32(off), s.piece_type))
            out.append(local)
        return [out]

    def rule_id_tile(self, op: ir.IdTileOp):
        """Every piece of an id tile is an id tile of the piece's type (wg-to-sg fills subgroup ids)."""
        s = self._split_of(op.result, op)
        return [[self.b.insert(op.clone_with([], [s.piece_type])).result for _ in range(s.count)]]

    def rule_broadcast(self, op: ir.BroadcastOp):
        src = op.operands[0]
        if not isinstance(src.type, VectorType):
            return self.piecewise(op)
        rs, ss = self._split_of(op.result, op), self._split_of(src, op)
        pieces = self.all(src)
        out = []
        for idx in rs.indices():
            sidx = tuple(0 if src.type.shape[d] == 1 else i for d, i in enumerate(idx))
            out.append(self.b(ir.BroadcastOp, pieces[ss.index(sidx)], rs.piece_type))
        return [out]

    def rule_shape_cast(self, op: ir.ShapeCastOp):
        pieces = self.all(op.operands[0])
        if not isinstance(op.result.type, VectorType):
            if len(pieces) != 1:
                raise PassError(f"{self.NAME}: a tile split in {len(pieces)} pieces cannot become a scalar", op)
            return [[self.b(ir.ShapeCastOp, pieces[0], op.result.type)]]
        rs = self._split_of(op.result, op)
        if rs.count != len(pieces):
            raise PassError(f"{self.NAME}: shape_cast changes the number of pieces", op)
        return [[self.b(ir.ShapeCastOp, p, rs.piece_type) for p in pieces]]

    def rule_transpose(self, op: ir.TransposeOp):
        rs, ss = self._split_of(op.result, op), self._split_of(op.operands[0], op)
        pieces = self.all(op.operands[0])
        perm = op.perm
        out = []
        for idx in rs.indices():
            sidx = [0] * len(idx)
            for d, i in enumerate(idx):
                sidx[perm[d]] = i
            out.append(self.b(ir.TransposeOp, pieces[ss.index(sidx)], perm, rs.piece_type))
        return [out]

    def rule_reduce(self, op: ir.ReduceOp):
        src = op.operands[0]
        ss = self._split_of(src, op)
        pieces = self.all(src)
        a = op.axis
        rtype = op.result.type
        rs = self.split(rtype) if isinstance(rtype, VectorType) else None
        piece_rtype = rs.piece_type if rs is not None else rtype
        kind = combine_kind(op.kind, src.type.elem)
        partials = []
        out_idx = [i for i in ss.indices() if i[a] == 0]
        for idx in out_idx:
            acc = None
            for r in range(ss.grid[a]):
                j = list(idx)
                j[a] = r
                p = pieces[ss.index(j)]
                acc = p if acc is None else self.b(ir.BinaryOp, kind, acc, p)
            partials.append(self.b(ir.ReduceOp, op.kind, acc, a, piece_rtype))
        return [self.cross_reduce(op, partials, ss)]

    def rule_tile_shuffle(self, op: ir.TileShuffleOp):
        """Each result piece is a piece of the operands (``shuffle_pieces``), or a shuffle of one or two of
        them by what remains of the distance within a piece; when the pieces along the axis have several
        holders, through ``shuffle_across`` unless every piece takes only from itself (xor below the
        piece's length)."""
        s = self._split_of(op.result, op)
        within = op.mode == "xor" and op.distance < s.piece_type.shape[op.axis]   # (each piece to itself)
        if not (within or self.holds_axis(op.result.type, op.axis)):
            return [self.shuffle_across(op, s)]
        pools = [self.all(v) for v in op.operands]
        a = op.axis

        def piece(idx, j):      # piece j along the axis of concat(a, b), at idx's place elsewhere
            at = list(idx)
            pool, at[a] = pools[j // s.grid[a] if len(pools) > 1 else 0], j % s.grid[a]
            return pool[s.index(at)]
        out = []
        for idx in s.indices():
            (lo, hi), rest = shuffle_pieces(op.mode, idx[a], s.piece_type.shape[a], op.distance)
            if rest == 0:
                out.append(piece(idx, lo))
                continue
            srcs = [piece(idx, lo)] if op.mode == "xor" else [piece(idx, lo), piece(idx, hi)]
            out.append(self.b(ir.TileShuffleOp, op.mode, a, rest, srcs))
        return [out]

    def rule_tile_gather(self, op: ir.TileGatherOp):
        """Each result piece gathers from every source piece along the axis at its place, in order (the
        index counts along the whole axis; the sources' pieces may be longer or shorter along it, not
        elsewhere); through ``gather_across`` when other holders have some."""
        s, a = self._split_of(op.result, op), op.axis
        ss = self._split_of(op.operands[1], op)
        if any(g != h for d, (g, h) in enumerate(zip(s.grid, ss.grid)) if d != a):
            raise PassError(f"{self.NAME}: gather's index and source pieces do not line up: {s.grid}, {ss.grid}", op)
        index = self.all(op.operands[0])
        if not self.holds_axis(op.operands[1].type, a):
            srcs = self.gather_across(op, s, ss)
        else:
            pools = [self.all(v) for v in op.operands[1:]]
            srcs = []
            for idx in s.indices():
                at = list(idx)
                srcs.append([])
                for pool in pools:
                    for j in range(ss.grid[a]):
                        at[a] = j
                        srcs[-1].append(pool[ss.index(at)])
        return [[self.b(ir.TileGatherOp, a, index[i], srcs[i]) for i in range(s.count)]]

    def rule_convert_layout(self, op: ir.ConvertLayoutOp):
        raise PassError(f"{self.NAME}: no rule for convert_layout on {self.target.name}", op)

    def rule_dpas(self, op: ir.DpasOp):
        a, b = op.operands[0], op.operands[1]
        sa, sb = self._split_of(a, op), self._split_of(b, op)
        sc = self._split_of(op.result, op)
        ap, bp = self.all(a), self.all(b)
        cp = self.all(op.acc) if op.acc is not None else None
        *ga, gm, gk = sa.grid
        *gb, gk2, gn = sb.grid
        if gk != gk2 or ga != gb or sc.grid != tuple(ga) + (gm, gn):
            raise PassError(f"{self.NAME}: dpas operand pieces do not line up: A {sa.grid}, B {sb.grid}, "
                            f"C {sc.grid}", op)
        lead = len(ga)
        pa, pb, pc = sa.piece_type, sb.piece_type, sc.piece_type
        if lead and all(s == 1 for s in pa.shape[:lead]):
            # multi_mma: each piece is one matrix of the batch, multiplied as the 2-D tile it is
            return [[self._batched_piece(op, cp, lambda k: ap[sa.index(idx[:lead] + (idx[lead], k))],
                                         lambda k: bp[sb.index(idx[:lead] + (k, idx[lead + 1]))],
                                         sc.index(idx), gk, pa, pb, pc) for idx in sc.indices()]]
        if lead:
            raise PassError(f"{self.NAME}: batched dpas pieces must hold one matrix of the batch, got {pa}", op)
        # C's blocks row by row, or column by column when B has more blocks than A: then each column
        # of B's blocks is used by every row of A's and dies, and A's fewer blocks stay live (a
        # subgroup that holds all of B, as attention's whole-row grids give, keeps one column of it)
        order = sorted(sc.indices(), key=lambda ij: (ij[1], ij[0])) if gn > gm else list(sc.indices())
        # each block's chain over K in turn; on a GPU without 2D block IO, K outermost: the operand
        # blocks of one K step are loaded one by one next to their DPAS (pass sink-loads), so a
        # step's blocks die before the next step's are read (dg2's flagship K loop: 1,400 spilled
        # without it). (The CPU device's DPAS groups, fused_dots, take the chains one by one.)
        out = {ij: cp[sc.index(ij)] if cp is not None else None for ij in order}
        k_outer = self.target.kind == "gpu" and not self.target.has_block2d
        steps = [(k, ij) for k in range(gk) for ij in order] if k_outer else [(k, ij) for ij in order for k in range(gk)]
        for k, (i, j) in steps:
            new = self.b.create(ir.DpasOp, ap[sa.index((i, k))], bp[sb.index((k, j))], out[i, j], sc.piece_type)
            new.attrs.update(op.attrs)
            out[i, j] = new.result
        return [[out[ij] for ij in sc.indices()]]

    def _batched_piece(self, op, cp, a_at, b_at, ci, gk, pa, pb, pc) -> Value:
        """One batch matrix: shape_cast the unit batch dimension away, chain 2-D DPAS over K, cast back."""
        from .layouts import drop_lead
        lead = pa.rank - 2

        def flat(v, t):
            return self.b(ir.ShapeCastOp, v, t.with_shape(t.shape[lead:]).with_layout(drop_lead(t.layout, lead)))
        c2 = pc.with_shape(pc.shape[lead:]).with_layout(drop_lead(pc.layout, lead))
        acc = flat(cp[ci], pc) if cp is not None else None
        for k in range(gk):
            new = self.b.create(ir.DpasOp, flat(a_at(k), pa), flat(b_at(k), pb), acc, c2)
            new.attrs.update(op.attrs)
            acc = new.result
        return self.b(ir.ShapeCastOp, acc, pc)

    def rule_create_nd_tdesc(self, op: ir.CreateNdTDescOp):
        new = self.b.insert(op.clone_with([self.get(v) for v in op.operands], [self.nd_tdesc_type(op.result.type)]))
        return [[new.result]]

    def _nd_offsets(self, op, s: Split, i: int, transposed: bool):
        origin = self.origin(s, i)
        if transposed:
            origin = tuple(reversed(origin))
        return [self.i32(self.iadd(self.get(o), x)) for o, x in zip(op.offsets, origin)]

    def rule_load_nd(self, op: ir.LoadNdOp):
        s = self._split_of(op.result, op)
        td = self.get(op.tdesc)
        tr = bool(op.attrs.get("transpose"))
        out = []
        for i in range(s.count):
            new = self.b.insert(op.clone_with([td] + self._nd_offsets(op, s, i, tr), [s.piece_type]))
            out.append(new.result)
        return [out]

    def rule_store_nd(self, op: ir.StoreNdOp):
        v = op.operands[0]
        s = self._split_of(v, op)
        td = self.get(op.tdesc)
        for i, p in enumerate(self.all(v)):
            self.b.insert(op.clone_with([p, td] + self._nd_offsets(op, s, i, False), []))
        return []

    def rule_prefetch_nd(self, op: ir.PrefetchNdOp):
        """Prefetches follow their own (cooperative) layout, not the descriptor's; once a level
        has cut them, ``block`` is their shape (a subgroup's piece may be smaller than the
        subgroup's descriptor)."""
        t = op.tdesc.type
        layout = op.attrs.get("layout") or t.layout
        s = self.split(VectorType(tuple(op.attrs.get("block") or t.value_shape), t.elem, layout))
        td = self.get(op.tdesc)
        for i in range(s.count):
            attrs = dict(op.attrs, layout=s.piece_type.layout, block=tuple(s.piece_type.shape))
            self.b.insert(op.clone_with([td] + self._nd_offsets(op, s, i, False), [], attrs))
        return []

    def _matrix_offsets(self, offsets, s: Split, i: int, value_rank: int):
        origin = self.origin(s, i) if s is not None else ()
        lead = len(offsets) - value_rank
        outs = [self.get(o) for o in offsets[:lead]]
        outs += [self.i32(self.iadd(self.get(o), x)) for o, x in zip(offsets[lead:], origin)]
        return outs

    def rule_load_matrix(self, op: ir.LoadMatrixOp):
        t = op.result.type
        if not isinstance(t, VectorType):
            return self.piecewise(op)
        s = self._split_of(op.result, op)
        m = self.get(op.operands[0])
        out = []
        for i in range(s.count):
            offs = self._matrix_offsets(op.operands[1:], s, i, t.rank)
            out.append(self.b.insert(op.clone_with([m] + offs, [s.piece_type])).result)
        return [out]

    def rule_store_matrix(self, op: ir.StoreMatrixOp):
        v = op.operands[0]
        if not isinstance(v.type, VectorType):
            return self.piecewise(op)
        s = self._split_of(v, op)
        m = self.get(op.operands[1])
        for i, p in enumerate(self.all(v)):
            offs = self._matrix_offsets(op.operands[2:], s, i, v.type.rank)
            self.b.insert(op.clone_with([p, m] + offs, []))
        return []

    def rule_masked(self, op: Op):
        """Stores and atomics: replicas of replicated data must not write (atomics would repeat)."""
        td = op.operands[1] if isinstance(op, ir.StoreScatterOp) else op.operands[0]
        mask_index = 2
        owner = self.owner_mask(td.type.layout, td.type.shape)
        if owner is None:
            return self.piecewise(op)
        masks = [self.b(ir.BinaryOp, "andi", m, self.b(ir.BroadcastOp, owner, m.type))
                 for m in self.all(op.operands[mask_index])]
        saved = self.vmap[op.operands[mask_index]]
        self.vmap[op.operands[mask_index]] = masks
        try:
            return self.piecewise(op)
        finally:
            self.vmap[op.operands[mask_index]] = saved
