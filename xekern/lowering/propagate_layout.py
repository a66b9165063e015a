"""Pass ``propagate-layout``: give every tile (and tensor descriptor) a workgroup layout.

Anchors come first: layouts the user wrote (``layout=`` on a builtin, ``xl.convert_layout``) and
the operand/result layouts of every ``dpas`` (from the target's DPAS shape). They spread through
the relations ops impose (elementwise: equal; broadcast: unit dimensions; reduce: slice;
transpose: permuted; loops and branches: carried values equal). What no anchor reaches gets a
default layout for its shape and ``num_subgroups``. Finally the function is rebuilt with the
layouts in its types, inserting ``convert_layout`` where two demands on one value disagree.

Example (a 1024-element add on 4 subgroups of 16 lanes)::

    %3 = vector.step : vector<1024xi32, #xegpu.layout<sg_layout = [4], sg_data = [256],
                                          lane_layout = [16], lane_data = [1], order = [0]>>
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Op, Value
from ..ir.layout import Layout, LayoutError, SliceLayout
from ..ir.types import TensorDescType, VectorType
from .layouts import (axis_layout, batched_dpas_layouts, chunk_layout, complete_layout, default_layout, dpas_layouts,
                      make_slice, nd_layout, permute_layout, prefetch_layout, resize_axis, unchunk_layout, unit_dims,
                      unslice)
from .rewrite import PassError, Rewriter, STRUCTURED_RULES

ELEMENTWISE = (ir.BinaryOp, ir.UnaryOp, ir.FmaOp, ir.CmpOp, ir.SelectOp, ir.CastOp, ir.InlineAsmOp)
# ops whose operands and results share one layout (elements move along an axis, not between layouts)
SAME_LAYOUT = ELEMENTWISE + (ir.TileShuffleOp,)


def _laid(v: Value) -> bool:
    return isinstance(v.type, (VectorType, TensorDescType))


def with_layout(t, layout):
    if isinstance(t, (VectorType, TensorDescType)):
        return t.with_layout(layout)
    return t


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


class _Relations:
    """Pairs (a, b, f): knowing layout(a) gives layout(b) = f(layout(a))."""

    def __init__(self):
        self.edges: List[Tuple[Value, Value, object]] = []

    def same(self, *vals):
        vals = [v for v in vals if v is not None and _laid(v)]
        for a, b in zip(vals, vals[1:]):
            self.edges.append((a, b, None))
            self.edges.append((b, a, None))

    def fn(self, a, b, f):
        if _laid(a) and _laid(b):
            self.edges.append((a, b, f))


def _transposed_load(v: Value) -> bool:
    """Whether ``v`` is loaded from a descriptor with ``transpose``."""
    return isinstance(v.op, ir.LoadNdOp) and bool(v.op.attrs.get("transpose"))


def _shape(v: Value):
    t = v.type
    return tuple(t.shape) if isinstance(t, (VectorType, TensorDescType)) else ()


def collect(func: ir.FuncOp, rel: _Relations, ops: List[Op]) -> None:
    for op in func.walk():
        if op is func:
            continue
        ops.append(op)
        if isinstance(op, SAME_LAYOUT):
            rel.same(*op.operands, *op.results)
        elif isinstance(op, ir.TileGatherOp):    # index and result share a layout; sources resized along the axis
            index, srcs, a = op.operands[0], op.operands[1:], op.axis
            rel.same(index, op.result)
            rel.same(*srcs)
            rel.fn(srcs[0], index, lambda l, s=_shape(srcs[0]), a=a, n=_shape(index)[a]: resize_axis(l, s, a, n))
            rel.fn(index, srcs[0], lambda l, s=_shape(index), a=a, n=_shape(srcs[0])[a]: resize_axis(l, s, a, n))
        elif isinstance(op, ir.BroadcastOp):
            src, res = op.operands[0], op.result
            rel.fn(res, src, lambda l, s=_shape(src): unit_dims(l, s))
        elif isinstance(op, ir.ShapeCastOp):
            src, res = op.operands[0], op.result
            if _laid(src) and _laid(res):
                ss, rs = _shape(src), _shape(res)
                if len(rs) > len(ss):
                    d = _inserted_dim(ss, rs)
                    rel.fn(res, src, lambda l, d=d: make_slice(l, [d]))
                    rel.fn(src, res, lambda l, d=d, rs=rs: _unslice_or_none(l, d, rs))
                else:
                    d = _inserted_dim(rs, ss)
                    rel.fn(src, res, lambda l, d=d: make_slice(l, [d]))
        elif isinstance(op, ir.ReduceOp):
            rel.fn(op.operands[0], op.result, lambda l, a=op.axis: make_slice(l, [a]))
        elif isinstance(op, ir.TransposeOp):
            rel.fn(op.operands[0], op.result, lambda l, p=op.perm: permute_layout(l, p))
            rel.fn(op.result, op.operands[0], lambda l, p=op.perm: permute_layout(l, _inverse(p)))
        elif isinstance(op, (ir.CreateTDescOp, ir.UpdateOffsetOp)):
            rel.same(op.operands[1], op.result, op.operands[0] if isinstance(op, ir.UpdateOffsetOp) else None)
        elif isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp)) and _chunk(op) > 1:
            td = op.operands[0] if isinstance(op, ir.LoadGatherOp) else op.operands[1]
            val = op.result if isinstance(op, ir.LoadGatherOp) else op.operands[0]
            rel.same(td, op.operands[1] if isinstance(op, ir.LoadGatherOp) else op.operands[2])
            rel.fn(td, val, lambda l, c=_chunk(op): chunk_layout(l, c))
            rel.fn(val, td, unchunk_layout)
            if isinstance(op, ir.LoadGatherOp) and len(op.operands) > 2:
                rel.same(val, op.operands[2])
        elif isinstance(op, (ir.LoadGatherOp, ir.StoreScatterOp, ir.AtomicRMWOp, ir.PrefetchOp, ir.PrintOp,
                             ir.AssertOp)):
            rel.same(*op.operands, *op.results)
        elif isinstance(op, ir.LoadNdOp):
            tr = op.attrs.get("transpose")
            if tr:
                rel.fn(op.tdesc, op.result, lambda l: permute_layout(l, (1, 0)))
                rel.fn(op.result, op.tdesc, lambda l: permute_layout(l, (1, 0)))
            elif op.tdesc.type.array_length == 1:
                rel.same(op.tdesc, op.result)
        elif isinstance(op, ir.StoreNdOp):
            rel.same(op.operands[0], op.tdesc)
        elif isinstance(op, ir.UpdateNdOffsetOp):
            rel.same(op.operands[0], op.result)
        elif isinstance(op, ir.ValueBarrierOp):
            for v, r in zip(op.operands, op.results):
                rel.same(v, r)
        elif isinstance(op, ir.ForOp):
            for init, arg, res, y in zip(op.inits, op.iter_args, op.results, op.body.terminator.operands):
                rel.same(arg, init, res, y)
        elif isinstance(op, ir.IfOp):
            for res, a, b in zip(op.results, op.then_block.terminator.operands, op.else_block.terminator.operands):
                rel.same(res, a, b)
        elif isinstance(op, ir.WhileOp):
            cond = op.before.terminator.operands[1:]
            for vals in zip(op.operands, op.before.args, cond, op.after.args, op.after.terminator.operands,
                            op.results):
                rel.same(*vals)


_THROUGH = ELEMENTWISE + (ir.BroadcastOp, ir.ShapeCastOp, ir.ReduceOp)


def chained_dots(ops: List[Op]) -> set:
    """The 2-D ``dpas`` ops linked as producer and consumer: one's result reaches the other's A
    operand through elementwise ops, casts, broadcasts and reductions only (attention's
    ``dot(exp2(dot(q, k) - rowmax), v)``). Both get whole-row subgroup grids, so the row
    statistics between them and the hand-over of C as the next A stay inside each subgroup."""
    chained = set()
    for op in ops:
        if not isinstance(op, ir.DpasOp) or len(_shape(op.result)) != 2:
            continue
        seen, todo, found = set(), [op.operands[0]], set()
        while todo and len(seen) < 256:
            v = todo.pop()
            src = v.op
            if v in seen or src is None:
                continue
            seen.add(v)
            if isinstance(src, ir.DpasOp):
                found.add(src)
            elif isinstance(src, _THROUGH):
                todo.extend(src.operands)
        found = {d for d in found if len(_shape(d.result)) == 2}
        if found:
            chained |= found | {op}
    return chained


def _structural(op) -> int:
    """Default-layout priority (0 first): loaded tiles decide their descriptors' layouts."""
    if isinstance(op, ir.LoadNdOp) or isinstance(op, ir.LoadGatherOp) and _chunk(op) > 1:
        return 0
    return 1 if isinstance(op, ir.CreateNdTDescOp) else 2


def _chunk(op) -> int:
    td = op.operands[0] if isinstance(op, ir.LoadGatherOp) else op.operands[1]
    return td.type.chunk_size


def _numel(v: Value) -> int:
    n = 1
    for s in _shape(v):
        n *= s
    return n


def _inserted_dim(small, big) -> int:
    for i in range(len(big)):
        if big[:i] + big[i + 1:] == tuple(small) and big[i] == 1:
            return i
    raise LayoutError(f"shape_cast {list(small)} <-> {list(big)} is not a unit-dimension change")


def _unslice_or_none(layout, d, shape):
    u = unslice(layout, d)
    return unit_dims(u, shape) if u is not None else None


class PropagateLayout(Rewriter):
    """Rebuilds the function with layouts in every tile type (see the module docstring)."""

    NAME = "propagate-layout"
    LEVEL = "wg"
    RULES = dict(STRUCTURED_RULES)
    RULES[ir.ValueBarrierOp] = "piecewise"   # one value per operand here: rebuilt with its layouts

    def __init__(self, ctx):
        super().__init__(ctx)
        self.G = ctx.num_subgroups
        self.sg = ctx.target.sg_size
        self.layout: Dict[Value, object] = {}
        self.required: Dict[Tuple[Op, int], object] = {}
        self.prefetch_layouts: Dict[Op, object] = {}   # prefetch -> its cooperative layout

    # ---- analysis ------------------------------------------------------------------------------
    def analyze(self, func: ir.FuncOp) -> None:
        rel, ops = _Relations(), []
        collect(func, rel, ops)
        self.ops = ops
        self.chained = chained_dots(ops)
        for op in ops:
            self._anchor(op)
        self._spread(rel)
        # tiles moved along an axis (scans, sorts, gathers' sources) that no anchor reached: each subgroup
        # holds the axis
        for op in ops:
            if not isinstance(op, (ir.TileShuffleOp, ir.TileGatherOp)):
                continue
            moved = op.operands[1] if isinstance(op, ir.TileGatherOp) else op.result
            if moved not in self.layout:
                self._set(moved, axis_layout(_shape(moved), op.axis, self.G, self.sg), op)
                self._spread(rel)
        # defaults go to the largest tiles first, so broadcasts carry slices back to 1-D ranges
        pending = [(v, op) for op in ops for v in list(op.results) + [a for r in op.regions for a in r.args]
                   if _laid(v)]
        # (memory ops whose layout is structural, like chunked gathers and block loads, go first)
        pending.sort(key=lambda p: (-len(_shape(p[0])), _structural(p[1]), -_numel(p[0])))
        for v, op in pending:
            if v not in self.layout:
                self.layout[v] = self._default(v, op)
                self._spread(rel)

    def _set(self, v: Value, layout, why: Op) -> None:
        if layout is None or v in self.layout:
            return
        self.layout[v] = layout

    def _anchor(self, op: Op) -> None:
        user = op.attrs.get("layout")
        if user is not None and op.results:
            r = op.result
            shape = r.type.shape if isinstance(r.type, (VectorType, TensorDescType)) else ()
            try:
                self._set(r, complete_layout(user, shape, self.G, self.sg), op)
            except LayoutError as e:
                raise PassError(f"invalid layout {user}: {e}", op) from None
        if isinstance(op, ir.PrefetchNdOp) and op.attrs.get("layout") is None:
            t = op.tdesc.type   # (set on the rebuilt prefetch: a pass does not edit the ops it is given)
            self.prefetch_layouts[op] = prefetch_layout(t.shape, t.elem, self.target, self.G)
        if isinstance(op, ir.DpasOp):
            a, b = op.operands[0], op.operands[1]
            *batch, m, k = a.type.shape
            n = b.type.shape[-1]
            try:
                fma = self.ctx.emitter.fma_dot
                la, lb, lc = batched_dpas_layouts(self.target, a.type.elem, batch[0], m, n, k, self.G, fma) \
                    if batch else dpas_layouts(self.target, a.type.elem, m, n, k, self.G, _transposed_load(b), fma,
                                               whole_rows=op in self.chained)
            except LayoutError as e:
                raise PassError(f"dot of {a.type.elem.user_name} on {self.target.name}: {e}", op) from None
            self.required[(op, 0)], self.required[(op, 1)] = la, lb
            self._set(a, la, op)
            self._set(b, lb, op)
            self._set(op.result, lc, op)
            if op.acc is not None:
                self.required[(op, 2)] = lc
                self._set(op.acc, lc, op)

    def _spread(self, rel: _Relations) -> None:
        changed = True
        while changed:
            changed = False
            for a, b, f in rel.edges:
                if a in self.layout and b not in self.layout:
                    try:
                        lay = self.layout[a] if f is None else f(self.layout[a])
                    except LayoutError:
                        lay = None
                    if lay is not None:
                        self.layout[b] = lay
                        changed = True

    def _default(self, v: Value, op: Op):
        t = v.type
        shape = t.shape
        if isinstance(t, TensorDescType) and not t.scattered or isinstance(op, ir.LoadNdOp):
            return nd_layout(shape, t.elem, self.target, self.G)
        if isinstance(op, ir.LoadGatherOp) and _chunk(op) > 1:
            return chunk_layout(default_layout(shape[:-1], self.G, self.sg), _chunk(op))
        return default_layout(shape, self.G, self.sg)

    # ---- rebuild ---------------------------------------------------------------------------------
    def run(self, func: ir.FuncOp) -> ir.FuncOp:
        self.analyze(func)
        return super().run(func)

    def type_of(self, v: Value):
        return with_layout(v.type, self.layout.get(v))

    def convert(self, v: Value, layout) -> Value:
        if layout is None or not isinstance(v.type, (VectorType, TensorDescType)) or v.type.layout == layout:
            return v
        if isinstance(v.type, TensorDescType):
            raise PassError(f"a tensor descriptor is used with two layouts ({v.type.layout} and {layout}); "
                            f"give it one with layout= on make_tensor_descriptor")
        return self.b(ir.ConvertLayoutOp, v, v.type.with_layout(layout))

    def piecewise(self, op: Op):
        """Rebuild ``op`` with its assigned layouts; operands that disagree get a convert_layout."""
        req = self.requirements(op)
        operands = []
        for i, v in enumerate(op.operands):
            nv = self.get(v)
            operands.append(self.convert(nv, req.get(i, None)))
        natural = self.natural_results(op, operands)
        new = self.b.insert(op.clone_with(operands, natural))
        if isinstance(op, ir.LoadNdOp):
            self._mark_packed(new)
        if op in self.prefetch_layouts:
            new.attrs["layout"] = self.prefetch_layouts[op]
        outs = []
        for old, r in zip(op.results, new.results):
            outs.append([self.convert(r, self.layout.get(old))])
        return outs

    def requirements(self, op: Op) -> Dict[int, object]:
        """Operand index -> the layout ``op`` needs there, given its assigned result layouts."""
        lay = self.layout
        if isinstance(op, ir.DpasOp):
            return {i: self.required[(op, i)] for i in range(len(op.operands))}
        res = lay.get(op.results[0]) if op.results else None
        if isinstance(op, SAME_LAYOUT):
            return {i: res for i, v in enumerate(op.operands) if _laid(v)}
        if isinstance(op, ir.TileGatherOp) and res is not None:
            a, n = op.axis, _shape(op.operands[1])[op.axis]
            src = resize_axis(res, _shape(op.result), a, n)
            if src is None:
                raise PassError(f"gather: no layout of the source {list(_shape(op.operands[1]))} matches the "
                                f"index's {res} outside axis {a}; give the index a layout (xl.convert_layout) "
                                f"whose share of axis {a} the source's length divides", op)
            return {i: res if i == 0 else src for i in range(len(op.operands))}
        if isinstance(op, ir.ValueBarrierOp):
            return {i: lay.get(r) for i, r in enumerate(op.results) if _laid(r)}
        if isinstance(op, ir.BroadcastOp) and _laid(op.operands[0]) and res is not None:
            return {0: unit_dims(res, op.operands[0].type.shape)}
        if isinstance(op, ir.ShapeCastOp) and _laid(op.operands[0]) and res is not None and \
                len(_shape(op.result)) > len(_shape(op.operands[0])):
            return {0: make_slice(res, [_inserted_dim(_shape(op.operands[0]), _shape(op.result))])}
        if isinstance(op, ir.LoadGatherOp) and _chunk(op) > 1:
            td = unchunk_layout(res)
            return {0: td, 1: td, 2: res}
        if isinstance(op, ir.StoreScatterOp) and _chunk(op) > 1:
            td = lay.get(op.operands[1])
            return {0: chunk_layout(td, _chunk(op)), 2: td}
        if isinstance(op, (ir.LoadGatherOp, ir.AtomicRMWOp, ir.CreateTDescOp, ir.UpdateOffsetOp)):
            return {i: res for i, v in enumerate(op.operands) if _laid(v)}
        if isinstance(op, (ir.StoreScatterOp, ir.PrefetchOp)):
            ref = lay.get(op.operands[1]) if isinstance(op, ir.StoreScatterOp) else None
            return {i: ref for i, v in enumerate(op.operands) if _laid(v) and ref is not None}
        if isinstance(op, ir.StoreNdOp):
            return {0: lay.get(op.tdesc)}
        if isinstance(op, (ir.PrintOp, ir.AssertOp)):  # values and element index: one layout
            laid = [i for i, v in enumerate(op.operands) if _laid(v)]
            return {i: lay.get(op.operands[laid[0]]) for i in laid}
        return {}

    def natural_results(self, op: Op, operands: List[Value]):
        """Result types: derived from the operands for ops whose result layout follows them."""
        lay = self.layout
        out = []
        for i, r in enumerate(op.results):
            t = r.type
            if not isinstance(t, (VectorType, TensorDescType)):
                out.append(t)
                continue
            src = operands[0].type.layout if operands and isinstance(operands[0].type, (VectorType, TensorDescType)) \
                else None
            nat = lay.get(r)
            if isinstance(op, ir.ReduceOp):
                nat = make_slice(src, [op.axis])
            elif isinstance(op, ir.ShapeCastOp) and len(_shape(r)) < len(_shape(op.operands[0])):
                nat = make_slice(src, [_inserted_dim(_shape(r), _shape(op.operands[0]))])
            elif isinstance(op, ir.TransposeOp):
                nat = permute_layout(src, op.perm)
            elif isinstance(op, ir.LoadNdOp):
                td = operands[0].type.layout
                nat = permute_layout(td, (1, 0)) if op.attrs.get("transpose") else \
                    (td if operands[0].type.array_length == 1 else nat)
            elif isinstance(op, (ir.UpdateNdOffsetOp, ir.UpdateOffsetOp)):
                nat = operands[0].type.layout
            out.append(with_layout(t, nat))
        return out

    def _mark_packed(self, op: Op) -> None:
        """Loads whose layout packs rows into 32-bit lanes (VNNI) are packed loads."""
        t = op.result.type
        ld = t.layout.lane_data if t.layout is not None else None
        if ld is not None and len(ld) == 2 and ld[0] > 1 and t.elem.bits < 32 and not op.attrs.get("transpose"):
            op.attrs["packed"] = True

    def rewrite_for(self, op: ir.ForOp):
        # the carried layout is the one the body assigned to its block argument
        for init, arg in zip(op.inits, op.iter_args):
            self.vmap[init] = [self.convert(self.get(init), self.layout.get(arg))]
        return super().rewrite_for(op)

    def rewrite_yield(self, op: Op):
        parent = self.b.block.parent  # the rebuilt for/if/while
        if isinstance(parent, ir.ForOp):
            targets = [a.type for a in parent.iter_args]
        elif isinstance(parent, ir.WhileOp):
            targets = [a.type for a in parent.before.args]
        else:
            targets = [r.type for r in parent.results]
        vals = [self.convert(self.get(v), getattr(t, "layout", None)) for v, t in zip(op.operands, targets)]
        self.b.insert(op.clone_with(vals, []))
        return []

    def rewrite_condition(self, op: Op):
        parent = self.b.block.parent
        vals = [self.convert(self.get(v), getattr(a.type, "layout", None))
                for v, a in zip(op.operands[1:], parent.after.args)]
        self.b.insert(op.clone_with([self.get(op.operands[0])] + vals, []))
        return []

    def rewrite_if(self, op: ir.IfOp):
        new = self.b.create(ir.IfOp, self.get(op.operands[0]), [self.type_of(r) for r in op.results])
        with self.b.at(new.then_block):
            self.region(op.then_block)
        with self.b.at(new.else_block):
            self.region(op.else_block)
        return [[r] for r in new.results]

    def rewrite_while(self, op: ir.WhileOp):
        for init, arg in zip(op.operands, op.before.args):
            self.vmap[init] = [self.convert(self.get(init), self.layout.get(arg))]
        return super().rewrite_while(op)

    def expand(self, t):
        return [t]

    def _bind(self, olds, news):
        for v, n in zip(olds, news):
            self.vmap[v] = [n]


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    """Workgroup IR: layouts from the anchors, ``sg_layout`` included. A subgroup-level kernel's IR
    (level ``sg``, no layouts yet): a subgroup's layouts (``SubgroupLayouts``)."""
    if func.attrs.get("level", "wg") == "sg":
        return SubgroupLayouts(ctx).run(func)
    return PropagateLayout(ctx).run(func)


class SubgroupLayouts(PropagateLayout):
    """The layouts of a subgroup-level kernel (``@xk.jit(level="subgroup")``), pass ``layout`` at level sg:
    the same anchors and relations as ``propagate-layout`` for a workgroup of one subgroup, without the
    ``sg_layout``/``sg_data`` that would distribute it. Its output is the IR ``wg-to-sg`` would have
    produced: every tile is one subgroup's data, laid out by ``inst_data``/``lane_layout``/``lane_data``.
    A tile wanted in two layouts would need a convert_layout, which exists only at workgroup level."""

    NAME = "subgroup-layouts"
    LEVEL = "sg"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.G = 1

    def analyze(self, func: ir.FuncOp) -> None:
        super().analyze(func)
        self.layout = {v: lay.drop_sg() for v, lay in self.layout.items()}
        self.required = {k: lay.drop_sg() for k, lay in self.required.items()}
        for op in self.ops:
            if isinstance(op, ir.PrefetchNdOp) and (self.prefetch_layouts.get(op) or op.attrs.get("layout")):
                self.prefetch_layouts[op] = (self.prefetch_layouts.get(op) or op.attrs["layout"]).drop_sg()

    def convert(self, v: Value, layout) -> Value:
        if layout is None or not isinstance(v.type, (VectorType, TensorDescType)) or v.type.layout == layout:
            return v
        raise PassError(f"subgroup level: a tile {v.type.with_layout(None)} is used in two layouts "
                        f"({v.type.layout} and {layout}); a subgroup-level kernel has no convert_layout "
                        f"(a workgroup-level operation): give the tiles layouts that agree", v.op)
