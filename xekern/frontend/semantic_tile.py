"""Semantic rules for whole tiles: ids, ranges, fills, reductions, permutes, layouts and dot."""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..ir import types as T
from ..ir.layout import Layout, LayoutError, SliceLayout
from ..ir.types import DType, PointerType, VectorType
from ..language.core import tensor, unwrap
from .semantic import SemanticError

_REDUCE = {"sum": ("add", "add", "add"), "prod": ("mul", "mul", "mul"),
           "max": ("maxnumf", "maxsi", "maxui"), "min": ("minnumf", "minsi", "minui"),
           "xor_sum": (None, "xor", "xor"), "and": (None, "and", "and"), "or": (None, "or", "or")}


class TileSemantic:
    # ---- ids ----------------------------------------------------------------------------------
    def program_id(self, axis) -> tensor:
        axis = unwrap(axis)
        if axis not in (0, 1, 2):
            raise SemanticError(f"program_id axis must be 0, 1 or 2, got {axis!r}")
        return self.op(ir.BlockIdOp, axis)

    def num_programs(self, axis) -> tensor:
        axis = unwrap(axis)
        if axis not in (0, 1, 2):
            raise SemanticError(f"num_programs axis must be 0, 1 or 2, got {axis!r}")
        return self.op(ir.GridDimOp, axis)

    def num_subgroups(self) -> int:
        """Subgroups per workgroup: a compile-time constant of the compilation (``num_subgroups=``)."""
        return self.options.num_subgroups

    def subgroup_size(self) -> int:
        """Lanes per subgroup: the target's compiled sub-group size, a compile-time constant."""
        return self.options.target.sg_size

    def id_tile(self, which: str, shape, layout) -> tensor:
        """``xl.subgroup_id(shape, layout)`` / ``xl.lane_id(shape, layout)``: the i32 tile of the
        ids of the subgroups (lanes) holding each element. In a workgroup-level program a scalar is
        one value for the whole workgroup, so a per-subgroup id only makes sense as a tile whose
        distribution says who holds what; the layout is pinned (given, or the default for the
        shape) and must give every copy of an element the same id."""
        from ..layouts import ownership
        from ..lowering.layouts import complete_layout, default_layout
        name = f"{which}_id"
        if self.level == "lane" or self.level == "sg" and which == "subgroup":
            if shape is not None:
                raise SemanticError(f"xl.{name}(shape, layout) is a tile, which a {self.LEVEL_NAMES[self.level]}-"
                                    f"level kernel does not have for {which} ids: xl.{name}() is a scalar here")
            return self.op(ir.SubgroupIdOp if which == "subgroup" else ir.LaneIdOp)
        if shape is None and self.level == "sg":
            raise SemanticError("xl.lane_id() needs a tile shape at subgroup level (a subgroup's values are "
                                "tiles): xl.lane_id(shape, layout) gives the id of the lane holding each element")
        if shape is None:
            raise SemanticError(
                f"xl.{name}() needs a tile shape: a workgroup-level kernel has no per-{which} scalars "
                f"(a scalar is one value for the whole workgroup). Use xl.{name}(shape, layout), the tile "
                f"of the ids of the {which}s that hold each element")
        shape = self.check_shape(unwrap(shape) if isinstance(unwrap(shape), (tuple, list)) else (shape,))
        layout = self.check_layout(unwrap(layout), shape)
        G, sg = self.options.num_subgroups if self.level == "wg" else 1, self.options.target.sg_size
        try:
            layout = complete_layout(layout, shape, G, sg) if layout is not None else \
                default_layout(shape, G, sg)
            owners = ownership(layout, shape, sg_size=sg, num_subgroups=G)
        except LayoutError as e:
            raise SemanticError(f"xl.{name}: invalid layout {layout}: {e}") from None
        for coords, os in owners.items():
            ids = {getattr(o, "sg" if which == "subgroup" else "lane") for o in os}
            if len(ids) != 1:
                raise SemanticError(
                    f"xl.{name}{list(shape)}: element {list(coords)} is held by {which}s {sorted(ids)} under "
                    f"{layout}, so it has no single {which} id; use a layout that does not replicate "
                    f"elements across {which}s")
        t = self.op(ir.IdTileOp, which, VectorType(shape, T.int32))
        return self._anchor(t, layout if self.level == "wg" else layout.drop_sg())

    def global_id(self, axis) -> tensor:
        """``xl.global_id(axis)`` at lane level: this work item's index in the whole launch; along axis 0
        ``program_id(0) * workgroup size + subgroup_id * subgroup size + lane_id`` (workgroups are 1-D)."""
        self.require_level("xl.global_id", "lane", hint="; a workgroup-level kernel uses program_id * BLOCK + "
                                                        "xl.arange(0, BLOCK)")
        axis = unwrap(axis)
        if axis not in (0, 1, 2):
            raise SemanticError(f"global_id axis must be 0, 1 or 2, got {axis!r}")
        pid = self.program_id(axis)
        if axis:
            return pid
        sg = self.options.target.sg_size
        local = self.binary("add", self.binary("mul", self.op(ir.SubgroupIdOp), sg), self.op(ir.LaneIdOp))
        return self.binary("add", self.binary("mul", pid, sg * self.options.num_subgroups), local)

    def shuffle(self, x, lane, mode: str) -> tensor:
        """``xl.shuffle(x, lane, mode)`` at lane level (``gpu.shuffle``): the value ``x`` of another lane of
        the subgroup: lane ``lane`` ('idx'), ``self ^ lane`` ('xor'), ``self + lane`` ('down'), ``self - lane``
        ('up')."""
        self.require_level("xl.shuffle", "lane")
        mode = unwrap(mode)
        if mode not in ("idx", "xor", "down", "up"):
            raise SemanticError(f"xl.shuffle mode must be 'idx', 'xor', 'down' or 'up', got {mode!r}")
        x = self.to_tensor(x)
        if isinstance(x.dtype, PointerType) or x.dtype.bits > 32 and not x.dtype.is_floating:
            raise SemanticError(f"xl.shuffle moves numbers of up to 32 bits (and float64), got {x.dtype}")
        lane = self.cast(self.to_tensor(lane, T.int32), T.int32)
        return self.op(ir.ShuffleOp, mode, x.handle, lane.handle)

    def subgroup_reduce(self, x, op: str) -> tensor:
        """``xl.subgroup_reduce(x, op)`` at lane level (``gpu.subgroup_reduce``): ``x`` of every lane of the
        subgroup combined with ``op`` ('add', 'mul', 'min', 'max', 'and', 'or', 'xor'); every lane gets it."""
        self.require_level("xl.subgroup_reduce", "lane", hint="; tiles reduce with xl.sum / xl.max / ...")
        op = unwrap(op)
        x = self.to_tensor(x)
        if op not in self._REDUCE_OPS:
            raise SemanticError(f"subgroup_reduce op {op!r} is not one of {', '.join(self._REDUCE_OPS)}")
        f, s, u = _REDUCE[self._REDUCE_OPS[op]]
        kind = f if x.dtype.is_floating else (s if x.dtype.is_signed else u)
        if kind is None:
            raise SemanticError(f"subgroup_reduce {op!r} needs integers, got {x.dtype.user_name}")
        return self.op(ir.SubgroupReduceOp, kind, x.handle, self.options.target.sg_size)

    _REDUCE_OPS = {"add": "sum", "mul": "prod", "min": "min", "max": "max", "and": "and", "or": "or",
                   "xor": "xor_sum"}

    # ---- making tiles ---------------------------------------------------------------------------
    def check_layout(self, layout, shape) -> Optional[Layout]:
        if layout is None:
            return None
        if not isinstance(layout, (Layout, SliceLayout)):
            raise SemanticError(f"layout must be an xl.Layout, got {type(layout).__name__}")
        if self.level == "lane":
            raise SemanticError("a lane-level kernel has no tiles, so no layouts")
        if self.level == "sg" and (layout.root.sg_layout is not None or layout.root.sg_data is not None):
            raise SemanticError(f"layout {layout} has sg_layout/sg_data, which distribute a workgroup tile over "
                                f"subgroups; at subgroup level a tile is one subgroup's data and its layout "
                                f"has only inst_data, lane_layout, lane_data and order")
        if layout.rank != len(shape):
            raise SemanticError(f"layout of rank {layout.rank} given for a tile of shape {list(shape)}")
        return layout

    def _anchor(self, t: tensor, layout) -> tensor:
        if layout is not None:
            t.handle.owner.attrs["layout"] = layout
        return t

    def arange(self, start, end, layout=None) -> tensor:
        self.require_level("xl.arange", "wg", "sg", hint="; a lane-level kernel computes scalars (xl.global_id())")
        start, end = unwrap(start), unwrap(end)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise SemanticError("arange bounds must be compile-time integers (use xl.constexpr arguments)")
        n = end - start
        if n <= 0 or n & (n - 1):
            raise SemanticError(f"arange({start}, {end}): the length {n} must be a positive power of 2")
        if not -(1 << 31) <= start and end <= (1 << 31):
            raise SemanticError("arange bounds must fit in int32")
        layout = self.check_layout(unwrap(layout), (n,))
        r = self._anchor(self.op(ir.StepOp, VectorType((n,), T.int32)), layout)
        if start:
            r = self.binary("add", r, start)
        return r

    def full(self, shape, value, dtype, layout=None) -> tensor:
        self.require_level("a tile (xl.full / xl.zeros)", "wg", "sg", hint="; a lane-level kernel computes scalars")
        shape = self.check_shape(unwrap(shape) if isinstance(unwrap(shape), (tuple, list)) else (shape,))
        dtype = unwrap(dtype)
        if not isinstance(dtype, DType):
            raise SemanticError(f"dtype must be an xl dtype such as xl.float32, got {dtype!r}")
        layout = self.check_layout(unwrap(layout), shape)
        value = unwrap(value)
        if isinstance(value, tensor):
            if value.is_tile:
                raise SemanticError("full() takes a scalar value")
            return self._anchor(self.splat(self.cast(value, dtype), shape), layout)
        return self._anchor(self.const(value, dtype, shape), layout)

    def convert_layout(self, x, layout) -> tensor:
        self.require_level("xl.convert_layout", "wg")
        x = self.to_tensor(x)
        layout = self.check_layout(unwrap(layout), x.shape)
        if layout is None:
            raise SemanticError("convert_layout needs a layout")
        return self._anchor(self.op(ir.ConvertLayoutOp, x.handle, x.handle.type), layout)

    # ---- reductions -----------------------------------------------------------------------------
    def _axis(self, x: tensor, axis) -> int:
        axis = unwrap(axis)
        r = len(x.shape)
        if not isinstance(axis, int) or not -r <= axis < r:
            raise SemanticError(f"axis {axis!r} is out of range for a tile of shape {list(x.shape)}")
        return axis % r

    def reduce(self, x, axis, what: str, keep_dims: bool = False) -> tensor:
        """``xl.sum/max/min/...(x, axis)``; ``axis=None`` reduces every dimension."""
        x = self.to_tensor(x)
        if not x.is_tile:
            return x
        if axis is None:
            out = x
            for _ in range(len(x.shape)):
                out = self.reduce(out, len(out.shape) - 1, what)
            if keep_dims:
                out = self.reshape(self.splat(out, (1,)), (1,) * len(x.shape))
            return out
        axis = self._axis(x, axis)
        dt = x.dtype
        if what == "sum" and dt.is_int and dt.bits < 32:
            x = self.cast(x, T.int32 if dt.is_signed or dt.is_bool else T.uint32)
            dt = x.dtype
        f, s, u = _REDUCE[what]
        kind = f if dt.is_floating else (s if dt.is_signed else u)
        if kind is None:
            raise SemanticError(f"{what} needs integer tiles, got {dt.user_name}")
        out = self._reduce_to(ir.ReduceOp, kind, x, axis, dt)
        return self.expand_dims(out, axis) if keep_dims else out

    _ALL_REDUCE = {"add": "sum", "mul": "prod", "min": "min", "max": "max", "and": "and", "or": "or",
                   "xor": "xor_sum"}

    def all_reduce(self, x, op, generator) -> tensor:
        """``xl.all_reduce(x, op)`` (seed 003's ``gpu.all_reduce``): every element of the tile ``x``
        combined into one scalar, which every program element sees. ``op`` is a name (add, mul, min,
        max, and, or, xor: the tile reductions, whose cross-subgroup step goes through SLM) or an
        ``@xk.jit`` combine function of two tiles (associative and commutative), applied in a tree
        through SLM: ``log2(numel)`` steps, one barrier each, each step inlining the function through
        ``generator`` (the frontend's running code generator). A scalar is one program element: its
        all-reduce is itself."""
        self.require_level("xl.all_reduce", "wg", hint="; at lane level use xl.subgroup_reduce, at subgroup "
                                                       "level xl.sum / xl.max / ... of the subgroup's tile")
        x = self.to_tensor(x)
        op = unwrap(op)
        if isinstance(op, str):
            if op not in self._ALL_REDUCE:
                raise SemanticError(f"all_reduce op {op!r} is not one of {', '.join(self._ALL_REDUCE)} "
                                    f"(or pass an @xk.jit combine function)")
            return self.reduce(x, None, self._ALL_REDUCE[op])
        if not getattr(op, "__xekern_jit__", False):
            raise SemanticError(f"all_reduce op must be a name such as 'add' or an @xk.jit function of two "
                                f"values, got {op!r}")
        if not x.is_tile:
            return x
        return self._all_reduce_tree(x, op, generator)

    def _combine(self, generator, fn, a: tensor, b: tensor) -> tensor:
        """Inline the user's combine function on two tiles, as a call from the kernel would be."""
        return self._combine_tuple(generator, fn, [a], [b])[0]

    def _all_reduce_tree(self, x: tensor, fn, generator) -> tensor:
        shape = list(x.shape)
        bufs = [self.alloc_slm(tuple(shape), x.dtype), self.alloc_slm(tuple(shape), x.dtype)]
        zeros = [0] * len(shape)
        self.store_matrix(bufs[0], zeros, x)
        self.barrier()
        src, acc = 0, x
        for d in reversed(range(len(shape))):
            while shape[d] > 1:
                shape[d] //= 2
                hi = list(zeros)
                hi[d] = shape[d]
                a = self.load_matrix(bufs[src], zeros, tuple(shape))
                b = self.load_matrix(bufs[src], hi, tuple(shape))
                acc = self._combine(generator, fn, a, b)
                if any(s > 1 for s in shape):
                    self.store_matrix(bufs[1 - src], zeros, acc)
                    self.barrier()
                    src = 1 - src
        return self.reshape(acc, ())

    _SCAN_KINDS = {"sum": "add", "prod": "mul"}

    def scan(self, x, axis, combine, generator=None, reverse: bool = False) -> tensor:
        """An inclusive scan of ``x`` along ``axis`` (``xl.cumsum``, ``xl.cumprod``,
        ``xl.associative_scan``): ``combine`` is "sum", "prod" or an ``@xk.jit`` function of two
        tiles (associative). Hillis-Steele through SLM (``_scan_steps``)."""
        self.require_level("a scan", "wg", hint="; scan a subgroup's tile with xl.subgroup_* at lane level")
        x = self.to_tensor(x)
        if not x.is_tile:
            return x
        return self._scan_steps([x], self._axis(x, axis),
                                lambda a, b: [self._combine_pair(generator, combine, a[0], b[0])], reverse)[0]

    def scan_tuple(self, xs, axis, fn, generator, reverse: bool = False) -> tuple:
        """``xl.associative_scan((a, b, ...), axis, combine_fn)``: several tiles of one shape scanned
        together, ``combine_fn`` taking the two sides' values (``a1, b1, ..., a2, b2, ...``) and
        returning one value per tile (Triton's tuple form)."""
        self.require_level("a scan", "wg", hint="; scan a subgroup's tile with xl.subgroup_* at lane level")
        xs = [self.to_tensor(x) for x in xs]
        if len({tuple(x.shape) for x in xs}) != 1:
            raise SemanticError(f"a scan of several tiles needs one shape, got {[list(x.shape) for x in xs]}")
        if not xs[0].is_tile:
            return tuple(xs)
        return tuple(self._scan_steps(xs, self._axis(xs[0], axis),
                                      lambda a, b: self._combine_tuple(generator, fn, a, b), reverse))

    def _scan_steps(self, xs, axis: int, combine, reverse: bool) -> list:
        """Hillis-Steele: step ``k`` (1, 2, 4, ...) combines each element with the one ``k`` before it
        (after it when ``reverse``), which a ``tile_shuffle`` brings to it (a rotation by ``n - k``,
        or ``k``: the layout passes move the data through lanes, or through SLM between subgroups);
        elements with nothing ``k`` before them keep their value. ``log2(n)`` steps.
        ``combine(earlier, later)`` takes and gives one tile per input."""
        n = xs[0].shape[axis]
        if n == 1:
            return list(xs)
        idx = self._along(xs[0], axis)
        acc, k = list(xs), 1
        while k < n:
            other = [self.tile_shuffle(a, axis, "window", k if reverse else n - k) for a in acc]
            both = combine(acc, other) if reverse else combine(other, acc)
            has = self.compare("lt", idx, n - k) if reverse else self.compare("ge", idx, k)
            acc = [self.where(has, b, a) for b, a in zip(both, acc)]
            k *= 2
        return acc

    def tile_shuffle(self, x: tensor, axis: int, mode: str, distance: int) -> tensor:
        """Element ``i`` along ``axis`` takes element ``i ^ distance`` (``mode = "xor"``) or
        ``(i + distance) % n`` (``"window"``): ``gpu.tile_shuffle``."""
        return self.op(ir.TileShuffleOp, mode, axis, distance, [x.handle])

    def reduce_tuple(self, xs, axis, fn, generator, keep_dims: bool = False) -> tuple:
        """``xl.reduce((a, b, ...), axis, combine_fn)``: the last elements of ``scan_tuple``, taken out
        by a sum with ``-0.0`` (0 for integers) everywhere else, which is exact for every value.
        ``axis=None`` reduces every dimension in turn."""
        xs = [self.to_tensor(x) for x in xs]
        if not xs[0].is_tile:
            return tuple(xs)
        if axis is None:
            out = xs
            for _ in range(len(xs[0].shape)):
                out = list(self.reduce_tuple(out, len(out[0].shape) - 1, fn, generator))
            return tuple(self.reshape(self.splat(o, (1,)), (1,) * len(xs[0].shape)) for o in out) if keep_dims \
                else tuple(out)
        axis = self._axis(xs[0], axis)
        n = xs[0].shape[axis]
        scanned = self.scan_tuple(xs, axis, fn, generator)
        last = self.compare("eq", self._along(xs[0], axis), n - 1)
        return tuple(self.reduce(self.where(last, s, self.const(-0.0 if s.dtype.is_floating else 0, s.dtype)), axis,
                                 "sum", keep_dims=keep_dims) for s in scanned)

    def _combine_tuple(self, generator, fn, a: list, b: list) -> list:
        """Inline the combine function on the values of two sides (one tile per input each); one
        value per input back, cast to its dtype and shape."""
        import inspect
        want = "two values" if len(a) == 1 else f"{2 * len(a)} values"
        try:
            inspect.signature(fn.fn).bind(*a, *b)
        except TypeError as e:
            raise SemanticError(f"combine function {fn.__name__} must take {want}: {e}") from None
        r = unwrap(generator.inline(fn, *a, *b))
        if len(a) == 1 and isinstance(r, tensor):
            r = (r,)
        if not isinstance(r, (tuple, list)) or len(r) != len(a):
            raise SemanticError(f"combine function {fn.__name__} must return {'one value' if len(a) == 1 else f'{len(a)} values'}"
                                f", got {r!r}")
        return [self.cast(self.broadcast_to(self.to_tensor(v), x.shape), x.dtype) for v, x in zip(r, a)]

    def flip(self, x, axis) -> tensor:
        """``xl.flip(x, dim)``: element ``i`` along ``axis`` becomes ``n - 1 - i``, which is ``i ^ (n - 1)``
        (``n`` a power of two): one ``tile_shuffle``."""
        self.require_level("xl.flip", "wg")
        x, axis, n = self._along_last(x, axis)
        if n == 1:
            return x
        return self.tile_shuffle(x, axis, "xor", n - 1)

    def _along_last(self, x, axis):
        """(tile, axis, its length) for the tile algorithms: ``axis`` None is the last; a scalar has
        length 1 (it is its own result)."""
        x = self.to_tensor(x)
        if not x.is_tile:
            return x, 0, 1
        axis = self._axis(x, len(x.shape) - 1 if axis is None else axis)
        return x, axis, x.shape[axis]

    def cat(self, a, b) -> tensor:
        """``xl.cat(a, b)``: the tiles one after the other along the first dimension (in order:
        Triton's ``can_reorder`` is accepted and not needed): a ``gpu.tile_gather`` of the two by the
        positions ``0 .. 2n - 1`` (in registers where each subgroup holds the first dimension)."""
        self.require_level("xl.cat", "wg")
        a, b = self.to_tensor(a), self.to_tensor(b)
        if not (a.is_tile and b.is_tile) or a.shape[1:] != b.shape[1:] or a.shape[0] != b.shape[0]:
            raise SemanticError(f"cat needs two tiles of one shape, got {list(a.shape)} and {list(b.shape)}")
        dt = self.promote(a.dtype, b.dtype)
        shape = (2 * a.shape[0],) + tuple(a.shape[1:])
        return self._positions_of([self.cast(a, dt), self.cast(b, dt)], 0, shape)

    def _positions_of(self, srcs, axis: int, shape) -> tensor:
        """The tile of ``shape`` holding, along ``axis``, the sources' elements ``0 .. shape[axis] - 1``
        (the sources one after the other): a ``gpu.tile_gather`` by an index of those positions."""
        return self.op(ir.TileGatherOp, axis, self._along(shape, axis).handle, [x.handle for x in srcs])

    def histogram(self, x, bins: int, mask=None) -> tensor:
        """``xl.histogram(x, num_bins)``: int32 counts of the values ``0 .. num_bins - 1`` in ``x``
        (other values, and masked-off elements, are not counted): a comparison of every element with
        every bin, summed."""
        x = self.to_tensor(x)
        if not x.is_tile or not x.dtype.is_int or x.dtype.is_bool:
            raise SemanticError(f"histogram counts an integer tile, got {x.type}")
        if not isinstance(bins, int) or bins <= 0 or bins & (bins - 1):
            raise SemanticError(f"num_bins must be a positive power of 2 constant, got {bins!r}")
        flat = x if len(x.shape) == 1 else None
        if flat is None:
            raise SemanticError("histogram counts a 1-D tile")
        hit = self.compare("eq", self.expand_dims(flat, 1), self.expand_dims(self.arange(0, bins), 0))
        if mask is not None:
            m = self.broadcast_to(self.to_tensor(mask), x.shape)
            hit = self.logical("and", hit, self.expand_dims(m, 1))
        return self.reduce(self.cast(hit, T.int32), 0, "sum")

    def _along(self, x, axis: int) -> tensor:
        """The index along ``axis`` of every element of ``x`` (a tile, or a shape): an int32 tile of
        that shape."""
        shape = tuple(x.shape) if isinstance(x, tensor) else tuple(x)
        idx = self.arange(0, shape[axis])
        for d in range(len(shape)):
            if d != axis:
                idx = self.expand_dims(idx, d)
        return self.broadcast_to(idx, shape)

    def sort(self, x, axis, descending: bool = False) -> tensor:
        """``xl.sort(x, dim, descending)``: a bitonic sort along ``axis``. Each of its
        ``log2(n) (log2(n) + 1) / 2`` compare-exchange steps pairs element ``i`` with ``i ^ j`` (a
        ``tile_shuffle``: through lanes, or SLM between subgroups, as the layout has it), and keeps
        the smaller or the larger of the two: always one of them, so the result is a permutation (a
        NaN stays, somewhere)."""
        return self._bitonic("xl.sort", x, axis, descending, merge_only=False)

    def bitonic_merge(self, x, axis, descending: bool = False) -> tensor:
        """``xl.bitonic_merge(x, dim, descending)``: the last stage of ``sort``, which sorts a
        sequence along ``axis`` that is bitonic (rises then falls, or falls then rises):
        ``log2(n)`` compare-exchange steps, as Triton's ``tl.bitonic_merge``."""
        return self._bitonic("xl.bitonic_merge", x, axis, descending, merge_only=True)

    def _bitonic(self, what: str, x, axis, descending: bool, merge_only: bool) -> tensor:
        self.require_level(what, "wg")
        x, axis, n = self._along_last(x, axis)
        if n == 1:
            return x
        idx = self._along(x, axis)
        acc, k = x, n if merge_only else 2
        while k <= n:
            j = k // 2
            while j >= 1:
                other = self.tile_shuffle(acc, axis, "xor", j)
                swap = self.compare("lt", other, acc)                        # the partner is smaller
                small = self.where(swap, other, acc)
                large = self.where(swap, acc, other)
                # the lower slot of a pair keeps the small one in an ascending run (i & k == 0, and the
                # last merge), the large one in a descending run; a descending sort swaps the two
                lower = self.compare("eq", self.binary("and", idx, j), 0)
                if k < n:
                    ascending = self.compare("eq", self.binary("and", idx, k), 0)
                    lower = self.compare("eq", self.cast(lower, T.int32), self.cast(ascending, T.int32))
                keep_small = self.compare("eq", self.cast(lower, T.int32), 0 if descending else 1)
                acc = self.where(keep_small, small, large)
                j //= 2
            k *= 2
        return acc

    def topk(self, x, k: int, axis) -> tensor:
        """``xl.topk(x, k, dim)``: the ``k`` largest elements along ``axis``, largest first (a
        descending sort, of which the first ``k`` are taken by a ``gpu.tile_gather``)."""
        x = self.to_tensor(x)
        if not x.is_tile:
            raise SemanticError("topk needs a tile")
        axis = self._axis(x, len(x.shape) - 1 if axis is None else axis)
        n = x.shape[axis]
        if not isinstance(k, int) or k <= 0 or k > n or k & (k - 1):
            raise SemanticError(f"topk: k must be a power of 2 constant between 1 and {n}, got {k!r}")
        ordered = self.sort(x, axis, descending=True)
        if k == n:
            return ordered
        shape = list(x.shape)
        shape[axis] = k
        return self._positions_of([ordered], axis, tuple(shape))

    def gather(self, src, index, axis) -> tensor:
        """``xl.gather(src, index, axis)``: ``out[..., i, ...] = src[..., index[..., i, ...], ...]`` along
        ``axis`` (the other dimensions of ``index`` match ``src``'s): a ``gpu.tile_gather`` (lanes through
        sub-group shuffles, subgroups through SLM, as the layout has it). An index outside ``[0, n)``
        gives ``-0.0`` (0)."""
        src, index = self.to_tensor(src), self.to_tensor(index)
        if not (src.is_tile and index.is_tile) or len(src.shape) != len(index.shape):
            raise SemanticError(f"gather needs a source and an index tile of one rank, got {src.type} and "
                                f"{index.type}")
        if not index.dtype.is_int or index.dtype.is_bool:
            raise SemanticError(f"gather indices must be integers, got {index.dtype.user_name}")
        rank = len(src.shape)
        axis = self._axis(src, axis)
        if any(index.shape[d] != src.shape[d] for d in range(rank) if d != axis):
            raise SemanticError(f"gather: index shape {list(index.shape)} must match source shape "
                                f"{list(src.shape)} except along axis {axis}")
        return self.op(ir.TileGatherOp, axis, self.cast(index, T.int32).handle, [src.handle])

    def reduce_with(self, x, axis, fn, generator, keep_dims: bool = False) -> tensor:
        """``xl.reduce(x, axis, combine_fn)`` of one tile: ``reduce_tuple`` of ``(x,)``."""
        return self.reduce_tuple([x], axis, fn, generator, keep_dims)[0]

    def _combine_pair(self, generator, combine, a: tensor, b: tensor) -> tensor:
        if isinstance(combine, str):
            return self.binary(self._SCAN_KINDS[combine], a, b)
        return self._combine(generator, combine, a, b)

    def argreduce(self, x, axis, what: str, keep_dims: bool = False, tie_break_left: bool = True) -> tensor:
        """Index (int32) of the first maximum/minimum: ``min(where(x == max(x), index, BIG))`` (the
        last one with ``tie_break_left=False``: ``max(where(x == max(x), index, -1))``)."""
        x = self.to_tensor(x)
        if not x.is_tile:
            raise SemanticError(f"{what} needs a tile")
        if axis is None:
            if len(x.shape) != 1:
                raise SemanticError(f"{what} with axis=None needs a 1-D tile")
            axis = 0
        axis = self._axis(x, axis)
        ext = self.reduce(x, axis, "max" if what == "argmax" else "min", keep_dims=True)
        hit = self.compare("eq", x, self.broadcast_to(ext, x.shape))
        idx = self._along(x, axis)
        if not tie_break_left:
            return self.reduce(self.where(hit, idx, -1), axis, "max", keep_dims=keep_dims)
        cand = self.where(hit, idx, x.shape[axis])
        return self.reduce(cand, axis, "min", keep_dims=keep_dims)

    def _reduce_to(self, cls, kind, x: tensor, axis: int, dtype: DType) -> tensor:
        shape = x.shape[:axis] + x.shape[axis + 1:]
        rt = VectorType(shape, dtype) if shape else dtype
        return self.op(cls, kind, x.handle, axis, rt)

    # ---- shape changes --------------------------------------------------------------------------
    def split(self, x):
        """``xl.split(x)``: a tile whose last dimension is 2 as the two tiles ``x[..., 0]`` and
        ``x[..., 1]``. Each is a select of its half and a sum over the size-2 axis with ``-0.0``
        (0 for integers) in the other slot, which is exact for every value, NaN and -0.0
        included, so no new op (nor layout rule) is needed."""
        x = self.to_tensor(x)
        if not x.is_tile or x.shape[-1] != 2:
            raise SemanticError(f"split needs a tile whose last dimension is 2, got shape {list(x.shape)}")
        if isinstance(x.dtype, T.PointerType):
            raise SemanticError("split does not apply to pointers")
        idx = self.arange(0, 2)
        for _ in range(len(x.shape) - 1):
            idx = self.expand_dims(idx, 0)
        none = -0.0 if x.dtype.is_floating else 0
        halves = []
        for i in (0, 1):
            picked = self.where(self.compare("eq", idx, i), x, self.const(none, x.dtype))
            halves.append(self.cast(self.reduce(picked, -1, "sum"), x.dtype))
        return tuple(halves)

    def join(self, a, b) -> tensor:
        """``xl.join(a, b)``: the tile of shape ``a.shape + (2,)`` holding ``a`` and ``b`` along a
        new last dimension (the inverse of ``split``); a select between the two broadcast."""
        ta, tb = self._weak_operands(a, b)
        dt = self.promote(ta.dtype, tb.dtype)
        ta, tb = self.broadcast_pair(self.cast(ta, dt), self.cast(tb, dt))
        shape = ta.shape + (2,)
        idx = self.arange(0, 2)
        for _ in range(len(ta.shape)):
            idx = self.expand_dims(idx, 0)
        ea, eb = self.expand_dims(ta, len(ta.shape)), self.expand_dims(tb, len(tb.shape))
        return self.where(self.broadcast_to(self.compare("eq", idx, 0), shape), ea, eb)

    def interleave(self, a, b) -> tensor:
        """``xl.interleave(a, b)``: ``(..., N)`` tiles into one ``(..., 2N)`` tile alternating their
        elements along the last dimension (Triton's ``tl.interleave``). Built like ``split``:
        ``out[..., k]`` is the sum over ``j`` of ``a[..., j]`` where ``k == 2j``, ``b[..., j]`` where
        ``k == 2j + 1`` and ``-0.0`` (0) elsewhere, exact for every value; it costs a
        ``(..., 2N, N)`` tile, so ``N`` is limited to 64."""
        ta, tb = self._weak_operands(a, b)
        dt = self.promote(ta.dtype, tb.dtype)
        ta, tb = self.broadcast_pair(self.cast(ta, dt), self.cast(tb, dt))
        if not ta.is_tile:
            ta, tb = self.splat(ta, (1,)), self.splat(tb, (1,))
        if isinstance(dt, T.PointerType):
            raise SemanticError("interleave does not apply to pointers")
        n = ta.shape[-1]
        if n > 64:
            raise SemanticError(f"interleave of tiles of shape {list(ta.shape)}: the last dimension must be "
                                f"at most 64 (the interleave is built from a {2 * n} x {n} select per row)")
        lead = ta.shape[:-1]
        shape = lead + (2 * n, n)
        k = self.expand_dims(self.arange(0, 2 * n), 1)  # (2N, 1)
        j2 = self.expand_dims(self.binary("mul", self.arange(0, n), 2), 0)  # (1, N): 2j
        for _ in lead:
            k, j2 = self.expand_dims(k, 0), self.expand_dims(j2, 0)
        ea = self.broadcast_to(self.expand_dims(ta, len(lead)), shape)
        eb = self.broadcast_to(self.expand_dims(tb, len(lead)), shape)
        none = self.const(-0.0 if dt.is_floating else 0, dt)
        even = self.broadcast_to(self.compare("eq", k, j2), shape)
        odd = self.broadcast_to(self.compare("eq", k, self.binary("add", j2, 1)), shape)
        picked = self.where(even, ea, self.where(odd, eb, none))
        return self.cast(self.reduce(picked, -1, "sum"), dt)

    def permute(self, x, dims=None) -> tensor:
        x = self.to_tensor(x)
        r = len(x.shape)
        if dims is None:
            if r != 2:
                raise SemanticError("trans() without dims needs a 2-D tile")
            dims = (1, 0)
        dims = tuple(dims)
        if sorted(dims) != list(range(r)):
            raise SemanticError(f"permutation {list(dims)} is not a permutation of {r} dimensions")
        shape = tuple(x.shape[d] for d in dims)
        return self.op(ir.TransposeOp, x.handle, dims, VectorType(shape, x.dtype))

    # ---- dot --------------------------------------------------------------------------------------
    _DOT_ACC = {T.bfloat16: T.float32, T.float16: T.float32, T.float32: T.float32, T.int8: T.int32,
                T.uint8: T.int32}

    def dot(self, a, b, acc=None, out_dtype=None, input_precision=None) -> tensor:
        self.require_level("xl.dot", "wg", "sg", hint="; DPAS multiplies a subgroup's tiles")
        """``xl.dot(a, b, acc)``: a DPAS matrix product, f32 accumulation (int32 for 8-bit ints)."""
        a, b = self.to_tensor(a), self.to_tensor(b)
        if not (len(a.shape) == len(b.shape) and len(a.shape) in (2, 3)):
            raise SemanticError(f"dot multiplies 2-D tiles, or 3-D tiles with a leading batch dimension, got "
                                f"shapes {list(a.shape)} and {list(b.shape)}")
        if a.shape[-1] != b.shape[-2]:
            raise SemanticError(f"dot: inner dimensions differ: {list(a.shape)} x {list(b.shape)}")
        if a.shape[:-2] != b.shape[:-2]:
            raise SemanticError(f"dot: batch dimensions differ: {list(a.shape)} x {list(b.shape)}")
        sg = self.options.target.sg_size
        if b.shape[-1] < sg:
            raise SemanticError(f"dot: N = {b.shape[-1]} (the columns of {list(a.shape)} x {list(b.shape)}) is below "
                                f"{sg}, the N of one DPAS instruction on a {sg}-lane subgroup "
                                f"({self.options.target.name}); make the tile at least {sg} wide and mask the extra "
                                f"columns, or write a matrix-vector product as xl.sum(a * x[None, :], axis=1)")
        ea, eb = a.dtype, b.dtype
        if ea.is_fp8 or eb.is_fp8:
            # no fp8 DPAS on these GPUs: both formats widen to f16 exactly, and f16 DPAS multiplies
            if not {ea, eb} <= {T.float8e5, T.float8e4nv, T.float8e4b8, T.float8e5b16, T.float16}:
                raise SemanticError(f"dot of {ea.user_name} and {eb.user_name}: an fp8 operand goes with fp8 "
                                    f"or float16")
            return self.dot(self.cast(a, T.float16), self.cast(b, T.float16), acc, out_dtype, input_precision)
        if ea != eb and not ({ea, eb} <= {T.int8, T.uint8}):
            raise SemanticError(f"dot operands must share a dtype, got {ea.user_name} and {eb.user_name}")
        if ea not in self._DOT_ACC:
            raise SemanticError(f"dot does not support {ea.user_name} operands "
                                f"(bfloat16, float16, float32 (tf32), int8, uint8)")
        native = self._DOT_ACC[ea]
        acc_dt = unwrap(out_dtype) or native
        if acc_dt != native and not (ea in (T.float16, T.bfloat16) and acc_dt in (T.float16, T.bfloat16)):
            raise SemanticError(f"dot of {ea.user_name} operands: out_dtype must be {native.user_name}"
                                + (" or a 16-bit float" if native == T.float32 and ea != T.float32 else "")
                                + f", got {getattr(acc_dt, 'user_name', acc_dt)}")
        shape = a.shape[:-1] + (b.shape[-1],)
        if acc is not None:
            acc = self.to_tensor(acc)
            if acc.shape != shape:
                raise SemanticError(f"dot accumulator has shape {list(acc.shape)}, expected {list(shape)}")
            if acc.dtype != acc_dt:
                raise SemanticError(f"dot accumulator is {acc.dtype.user_name}; {ea.user_name} products "
                                    f"accumulate in {acc_dt.user_name}")
        if acc_dt != native:   # a 16-bit result: the matrix engine accumulates in f32, rounded once at the end
            wide = self.dot(a, b, self.cast(acc, native) if acc is not None else None, None, input_precision)
            return self.cast(wide, acc_dt)
        attrs = {}
        prec = unwrap(input_precision)
        if ea == T.float32 and prec not in (None, "tf32", "ieee"):
            raise SemanticError(f"input_precision must be 'tf32' or 'ieee', got {prec!r}")
        r = self.op(ir.DpasOp, a.handle, b.handle, acc.handle if acc is not None else None,
                    VectorType(shape, acc_dt))
        if ea == T.float32:
            r.handle.owner.attrs["precision"] = prec or "tf32"
        return r
