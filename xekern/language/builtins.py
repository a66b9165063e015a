"""The kernel language's functions (``xl.*``). Each one unwraps its arguments and forwards to
the semantic layer (``xekern/frontend/sem.py``), which checks them and builds IR.

They can only be called inside an ``@xk.jit`` function.
"""
from __future__ import annotations

import builtins as _py

from ..ir.layout import Layout, SliceLayout
from .core import block_pointer, builtin, float32, int32, uint32, unwrap


class static_range:
    """``for i in xl.static_range(4):`` unrolls the loop at compile time (bounds are constexprs)."""

    def __init__(self, *args):
        self.args = [unwrap(a) for a in args]


class range:  # noqa: A001 - the Triton name
    """``for i in xl.range(lo, hi, step):`` an ordinary device loop (same as ``range``); the extra
    Triton tuning arguments (``num_stages``, ``loop_unroll_factor``) are accepted as hints."""

    def __init__(self, *args, num_stages=None, loop_unroll_factor=None, **_):
        self.args = list(args)
        self.hints = {k: unwrap(v) for k, v in (("num_stages", num_stages),
                                                ("loop_unroll_factor", loop_unroll_factor)) if v is not None}


# ---- ids and sizes ---------------------------------------------------------------------------

@builtin
def program_id(axis, _sem=None):
    """This workgroup's index along grid ``axis`` (0, 1 or 2). ``pid = xl.program_id(0)``"""
    return _sem.program_id(axis)


@builtin
def num_programs(axis, _sem=None):
    """The number of workgroups along grid ``axis``."""
    return _sem.num_programs(axis)


@builtin
def num_subgroups(_sem=None):
    """Subgroups per workgroup, a compile-time constant (the launch's ``num_subgroups``).
    ``BLOCK: xl.constexpr = 64 * xl.num_subgroups()``"""
    return _sem.num_subgroups()


@builtin
def subgroup_size(_sem=None):
    """Lanes per subgroup on the compiled target (16 on pvc, 8 on dg2), a compile-time constant;
    the workgroup has ``xl.num_subgroups() * xl.subgroup_size()`` work items."""
    return _sem.subgroup_size()


@builtin
def subgroup_id(shape=None, layout=None, _sem=None):
    """The int32 tile of ``shape`` whose elements are the ids of the subgroups holding them under
    ``layout`` (default: the default layout of ``shape``); the layout must not replicate elements
    across subgroups. ``sid = xl.subgroup_id((64,), xl.Layout(sg_layout=[4], sg_data=[16]))``.
    At subgroup and lane level, the scalar id of this subgroup: ``sid = xl.subgroup_id()``"""
    return _sem.id_tile("subgroup", shape, layout)


@builtin
def lane_id(shape=None, layout=None, _sem=None):
    """The int32 tile of ``shape`` whose elements are the ids (within their subgroup) of the lanes
    holding them under ``layout``; the layout must not replicate elements across lanes.
    ``lid = xl.lane_id((64,))``. At lane level, the scalar id of this work item: ``lid = xl.lane_id()``"""
    return _sem.id_tile("lane", shape, layout)


@builtin
def global_id(axis=0, _sem=None):
    """Lane level: this work item's index in the launch along ``axis`` (seed 003's ``gpu.global_id``).
    ``i = xl.global_id(0)``"""
    return _sem.global_id(axis)


@builtin
def shuffle(x, lane, mode="idx", _sem=None):
    """Lane level: ``x`` as held by another lane of the subgroup (``gpu.shuffle``): lane ``lane``
    (mode 'idx'), ``lane_id ^ lane`` ('xor'), ``lane_id + lane`` ('down') or ``lane_id - lane`` ('up').
    ``left = xl.shuffle(v, 1, "up")``"""
    return _sem.shuffle(x, lane, mode)


@builtin
def subgroup_reduce(x, op="add", _sem=None):
    """Lane level: ``x`` of every lane of the subgroup combined with ``op`` ('add', 'mul', 'min', 'max',
    'and', 'or', 'xor'); every lane gets the result (``gpu.subgroup_reduce``). ``s = xl.subgroup_reduce(v)``"""
    return _sem.subgroup_reduce(x, op)


@builtin
def cdiv(x, div, _sem=None):
    """``(x + div - 1) // div``, on constants or scalars."""
    x, div = unwrap(x), unwrap(div)
    if isinstance(x, int) and isinstance(div, int):
        return -(-x // div)
    return _sem.binary("floordiv", _sem.binary("sub", _sem.binary("add", x, div), 1), div)


# ---- making tiles ------------------------------------------------------------------------------

@builtin
def arange(start, end, layout=None, _sem=None):
    """The int32 tile ``[start, start+1, ..., end-1]``; ``end - start`` must be a power of 2.
    ``offs = pid * BLOCK + xl.arange(0, BLOCK)``"""
    return _sem.arange(start, end, layout)


@builtin
def full(shape, value, dtype, layout=None, _sem=None):
    """A tile of ``shape`` filled with ``value``. ``xl.full((16, 16), 1.0, xl.float32)``"""
    return _sem.full(shape, value, dtype, layout)


@builtin
def zeros(shape, dtype, layout=None, _sem=None):
    """A tile of zeros; ``layout`` pins its distribution (otherwise it is propagated).
    ``acc = xl.zeros((BM, BN), xl.float32)``"""
    return _sem.full(shape, 0, dtype, layout)


@builtin
def zeros_like(x, _sem=None):
    return _sem.full(x.shape, 0, x.dtype)


@builtin
def full_like(x, value, _sem=None):
    return _sem.full(x.shape, value, x.dtype)


@builtin
def cast(x, dtype, fp_downcast_rounding=None, bitcast=False, _sem=None):
    """``xl.cast(x, xl.float16)``, the same as ``x.to(xl.float16)``."""
    return _sem.to_tensor(x).to(dtype, fp_downcast_rounding, bitcast, _sem=_sem)


@builtin
def where(condition, x, y, _sem=None):
    """Elementwise ``condition ? x : y`` with broadcasting. ``xl.where(offs < n, x, 0.0)``"""
    return _sem.where(condition, x, y)


@builtin
def assume(cond, _sem=None):
    """Promise the compiler that the scalar ``cond`` is true (Triton's ``tl.assume``). It is accepted
    and checked to be a scalar condition, and emits nothing: a false assumption changes no result.
    ``xl.assume(stride_am > 0)``"""
    return _sem.assume(cond)


@builtin
def static_assert(cond, msg="", _sem=None):
    """A compile-time check (Triton's ``tl.static_assert``): ``cond`` must be a constant (constexpr
    arithmetic), and a false one is a compile error with ``msg``. ``xl.static_assert(BLOCK % 16 == 0)``"""
    return _sem.static_assert(cond, msg)


@builtin
def static_print(*values, _sem=None):
    """Print constants (and the types of tensors) when the kernel compiles (``tl.static_print``)."""
    return _sem.static_print(values)


@builtin
def debug_barrier(_sem=None):
    """Triton's ``tl.debug_barrier()``: a workgroup barrier (``xl.barrier``)."""
    return _sem.barrier()


def _hint(name):
    @builtin
    def f(input, values, _sem=None):
        return _sem.hint(name, input, values)
    f.__name__ = name
    f.__doc__ = (f"Triton's ``tl.{name}(x, values)``: a promise about ``x`` for the optimizer. It is "
                 f"checked (positive integer constants, one per dimension) and returns ``x``; xekern "
                 f"derives the facts from the values themselves.")
    return f


multiple_of = _hint("multiple_of")
max_contiguous = _hint("max_contiguous")
max_constancy = _hint("max_constancy")


# ---- shapes ------------------------------------------------------------------------------------

@builtin
def expand_dims(x, axis, _sem=None):
    """Insert a size-1 dimension at ``axis`` (``x[:, None]`` is ``xl.expand_dims(x, 1)``)."""
    return _sem.expand_dims(x, axis)


@builtin
def broadcast_to(x, shape, _sem=None):
    return _sem.broadcast_to(x, [unwrap(s) for s in unwrap(shape)])


@builtin
def reshape(x, *shape, can_reorder=False, _sem=None):
    """The same elements in row-major order in another shape (``xl.reshape(x, (M * N,))`` or
    ``xl.reshape(x, M * N)``). Adding or removing size-1 dimensions is free; anything else goes
    through shared local memory (workgroup and subgroup levels). ``can_reorder`` is accepted: the
    order is always kept."""
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        shape = unwrap(shape[0])
    return _sem.reshape(_sem.to_tensor(x), [unwrap(s) for s in shape])


@builtin
def ravel(x, can_reorder=False, _sem=None):
    """The tile as a 1-D tile of its elements in row-major order (``xl.reshape(x, (x.numel,))``)."""
    x = _sem.to_tensor(x)
    n = 1
    for d in x.shape:
        n *= d
    return _sem.reshape(x, [n])


@builtin
def trans(x, *dims, _sem=None):
    """Transpose a 2-D tile (or permute by ``dims``)."""
    return _sem.permute(x, [unwrap(d) for d in dims] or None)


@builtin
def permute(x, dims, _sem=None):
    return _sem.permute(x, [unwrap(d) for d in unwrap(dims)])


@builtin
def split(x, _sem=None):
    """Split a tile whose last dimension is 2 into its two halves (Triton's ``tl.split``).
    ``lo, hi = xl.split(pairs)`` gives ``pairs[..., 0]`` and ``pairs[..., 1]``."""
    return _sem.split(x)


@builtin
def join(a, b, _sem=None):
    """Stack two tiles along a new last dimension of size 2 (Triton's ``tl.join``), the inverse
    of ``split``. ``pairs = xl.join(lo, hi)``"""
    return _sem.join(a, b)


@builtin
def interleave(a, b, _sem=None):
    """Interleave two tiles along their last dimension (Triton's ``tl.interleave``):
    ``xl.interleave(a, b)[..., 2 * j] == a[..., j]`` and ``[..., 2 * j + 1] == b[..., j]``."""
    return _sem.interleave(a, b)


# ---- math --------------------------------------------------------------------------------------

def _math(fn_name):
    @builtin
    def f(x, _sem=None):
        return _sem.math(fn_name, x)
    f.__name__ = fn_name
    f.__doc__ = f"Elementwise {fn_name} (16-bit floats are computed in float32)."
    return f


exp = _math("exp")
exp2 = _math("exp2")
log = _math("log")
log2 = _math("log2")
sqrt = _math("sqrt")
rsqrt = _math("rsqrt")
sin = _math("sin")
cos = _math("cos")
tanh = _math("tanh")
floor = _math("floor")
ceil = _math("ceil")
erf = _math("erf")
abs = _math("abs")  # noqa: A001


@builtin
def sigmoid(x, _sem=None):
    """``1 / (1 + exp(-x))``."""
    return _sem.binary("truediv", 1.0, _sem.binary("add", 1.0, _sem.math("exp", _sem.unary("neg", x))))


@builtin
def maximum(x, y, propagate_nan=False, _sem=None):
    """Elementwise maximum (NaNs are ignored unless ``propagate_nan``)."""
    return _sem.minmax("max", x, y, bool(unwrap(propagate_nan)))


@builtin
def minimum(x, y, propagate_nan=False, _sem=None):
    """Elementwise minimum (NaNs are ignored unless ``propagate_nan``)."""
    return _sem.minmax("min", x, y, bool(unwrap(propagate_nan)))


@builtin
def fma(x, y, z, _sem=None):
    """``x * y + z`` with one rounding."""
    return _sem.fma(x, y, z)


@builtin
def clamp(x, min, max, propagate_nan=0, _sem=None):  # noqa: A002
    """``min(max(x, min), max)``; ``propagate_nan=xl.PropagateNan.ALL`` keeps NaNs of ``x``."""
    nan = bool(unwrap(propagate_nan))
    return _sem.minmax("min", _sem.minmax("max", x, min, nan), max, nan)


# ---- reductions --------------------------------------------------------------------------------

@builtin
def sum(x, axis=None, keep_dims=False, dtype=None, _sem=None):  # noqa: A001
    """Sum along ``axis`` (all axes when None). Integers narrower than 32 bits sum in int32;
    ``dtype=`` converts the tile to that type first (Triton's accumulation type).
    ``total = xl.sum(x, axis=0)``"""
    if unwrap(dtype) is not None:
        x = _sem.cast(x, unwrap(dtype))
    return _sem.reduce(x, unwrap(axis), "sum", keep_dims=unwrap(keep_dims))


@builtin
def prod(x, axis=None, keep_dims=False, dtype=None, _sem=None):
    """Product along ``axis`` (all axes when None); ``dtype=`` converts first."""
    if unwrap(dtype) is not None:
        x = _sem.cast(x, unwrap(dtype))
    return _sem.reduce(x, unwrap(axis), "prod", keep_dims=unwrap(keep_dims))


def _extreme(what, x, axis, return_indices, tie_break_left, keep_dims, _sem):
    value = _sem.reduce(x, unwrap(axis), what, keep_dims=unwrap(keep_dims))
    if not unwrap(return_indices):
        return value
    return value, _sem.argreduce(x, unwrap(axis), "arg" + what, keep_dims=unwrap(keep_dims),
                                 tie_break_left=bool(unwrap(tie_break_left)))


@builtin
def max(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False,  # noqa: A001
        _sem=None):
    """Maximum along ``axis``; with ``return_indices=True`` also its index (the first one, or the
    last with ``return_indices_tie_break_left=False``)."""
    return _extreme("max", x, axis, return_indices, return_indices_tie_break_left, keep_dims, _sem)


@builtin
def min(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False,  # noqa: A001
        _sem=None):
    """Minimum along ``axis``; with ``return_indices=True`` also its index."""
    return _extreme("min", x, axis, return_indices, return_indices_tie_break_left, keep_dims, _sem)


@builtin
def xor_sum(x, axis=None, keep_dims=False, _sem=None):
    return _sem.reduce(x, unwrap(axis), "xor_sum", keep_dims=unwrap(keep_dims))


@builtin
def all_reduce(x, op="add", _sem=None, _generator=None):
    """Every element of the tile ``x`` combined with ``op`` into one scalar that every program
    element sees (``gpu.all_reduce``): 'add', 'mul', 'min', 'max', 'and', 'or', 'xor', or an
    ``@xk.jit`` function of two values (associative and commutative).
    ``total = xl.all_reduce(x, "add")``; ``m = xl.all_reduce(x, absmax)``"""
    return _sem.all_reduce(x, op, _generator)


@builtin
def argmax(x, axis=None, tie_break_left=True, keep_dims=False, _sem=None):
    """Index (int32) of the first maximum along ``axis`` (the last with ``tie_break_left=False``)."""
    return _sem.argreduce(x, unwrap(axis), "argmax", keep_dims=unwrap(keep_dims),
                          tie_break_left=bool(unwrap(tie_break_left)))


@builtin
def argmin(x, axis=None, tie_break_left=True, keep_dims=False, _sem=None):
    """Index (int32) of the first minimum along ``axis`` (the last with ``tie_break_left=False``)."""
    return _sem.argreduce(x, unwrap(axis), "argmin", keep_dims=unwrap(keep_dims),
                          tie_break_left=bool(unwrap(tie_break_left)))


def _scan_input(x, dtype, _sem):
    """Triton's scan inputs: bfloat16 is scanned in float32, integers narrower than 32 bits in
    int32 (uint32), and ``dtype=`` converts first."""
    x = _sem.to_tensor(x)
    if unwrap(dtype) is not None:
        return _sem.cast(x, unwrap(dtype))
    d = x.dtype
    if d.name == "bf16":
        return _sem.cast(x, float32)
    if d.is_int and d.bits < 32:
        return _sem.cast(x, int32 if d.is_signed or d.is_bool else uint32)
    return x


@builtin
def cumsum(x, axis=0, reverse=False, dtype=None, _sem=None):
    """Inclusive prefix sums along ``axis`` (suffix sums with ``reverse=True``).
    ``xl.cumsum(counts, axis=0)``"""
    return _sem.scan(_scan_input(x, dtype, _sem), unwrap(axis), "sum", reverse=bool(unwrap(reverse)))


@builtin
def cumprod(x, axis=0, reverse=False, _sem=None):
    """Inclusive prefix products along ``axis``."""
    return _sem.scan(_scan_input(x, None, _sem), unwrap(axis), "prod", reverse=bool(unwrap(reverse)))


@builtin
def associative_scan(input, axis, combine_fn, reverse=False, _sem=None, _generator=None):
    """An inclusive scan with an ``@xk.jit`` combine function of two values (associative), as
    Triton's ``tl.associative_scan``; of a tuple of tiles, the function takes two values per tile
    and returns one per tile."""
    if not getattr(unwrap(combine_fn), "__xekern_jit__", False):
        raise ValueError(f"combine_fn must be an @xk.jit function, got {unwrap(combine_fn)!r}")
    if isinstance(unwrap(input), (tuple, list)):
        return _sem.scan_tuple(list(unwrap(input)), unwrap(axis), unwrap(combine_fn), _generator,
                               reverse=bool(unwrap(reverse)))
    return _sem.scan(input, unwrap(axis), unwrap(combine_fn), _generator, reverse=bool(unwrap(reverse)))


@builtin
def reduce(input, axis, combine_fn, keep_dims=False, _sem=None, _generator=None):  # noqa: A001
    """Reduce ``input`` along ``axis`` with an ``@xk.jit`` combine function of two values
    (associative), as Triton's ``tl.reduce``; of a tuple of tiles, the function takes two values per
    tile and returns one per tile. ``xl.reduce(x, 1, larger)``, ``xl.reduce((v, i), 1, argmax_pair)``"""
    fn = unwrap(combine_fn)
    if not getattr(fn, "__xekern_jit__", False):
        raise ValueError(f"combine_fn must be an @xk.jit function, got {fn!r}")
    if isinstance(unwrap(input), (tuple, list)):
        return _sem.reduce_tuple(list(unwrap(input)), unwrap(axis), fn, _generator, keep_dims=bool(unwrap(keep_dims)))
    return _sem.reduce_with(input, unwrap(axis), fn, _generator, keep_dims=bool(unwrap(keep_dims)))


@builtin
def flip(x, dim=None, _sem=None):
    """``x`` reversed along ``dim`` (the last dimension when None), as Triton's ``tl.flip``."""
    return _sem.flip(x, unwrap(dim))


@builtin
def cat(input, other, can_reorder=False, _sem=None):
    """``input`` then ``other`` along the first dimension (in order, whatever ``can_reorder``)."""
    return _sem.cat(input, other)


@builtin
def histogram(input, num_bins, mask=None, _sem=None):
    """int32 counts of the values ``0 .. num_bins - 1`` in the 1-D integer tile ``input`` (bins of
    width 1 from 0; other values and masked-off elements are not counted)."""
    return _sem.histogram(input, unwrap(num_bins), mask)


@builtin
def sort(x, dim=None, descending=False, _sem=None):
    """``x`` sorted along ``dim`` (the last dimension when None), ascending unless ``descending``."""
    return _sem.sort(x, unwrap(dim), bool(unwrap(descending)))


@builtin
def bitonic_merge(x, dim=None, descending=0, _sem=None):
    """``x`` sorted along ``dim`` (the last when None) when it is bitonic along it (rising then
    falling, or the reverse): the last stage of ``xl.sort``, ``log2(n)`` compare-exchange steps
    (Triton's ``tl.bitonic_merge``; ``descending`` 0 or 1)."""
    return _sem.bitonic_merge(x, unwrap(dim), bool(unwrap(descending)))


@builtin
def map_elementwise(scalar_fn, *args, pack=1, _sem=None, _generator=None):
    """``scalar_fn`` (an ``@xk.jit`` function) applied elementwise to ``args`` broadcast to one
    shape, as Triton's ``tl.map_elementwise``: one tile when it returns one value, else a tuple.
    ``pack`` elements go to each call: with ``pack = p`` the function takes ``p`` consecutive
    elements (along the last axis) of each argument in turn (``a0, a1, b0, b1`` for two arguments
    and ``p = 2``) and returns ``p`` values per result, result by result; the results come back as
    a tuple. The function is called on whole tiles: an ``if`` in it must test compile-time values
    (branch on data with ``xl.where``)."""
    fn = unwrap(scalar_fn)
    if not getattr(fn, "__xekern_jit__", False):
        raise ValueError(f"map_elementwise: scalar_fn must be an @xk.jit function, got {fn!r}")
    pack = unwrap(pack)
    if not isinstance(pack, int) or pack < 1 or pack & (pack - 1):
        raise ValueError(f"map_elementwise: pack must be a power of 2 (1, 2, 4, ...), got {pack!r}")
    if not args:
        raise ValueError("map_elementwise needs at least one argument")
    vals = [_sem.to_tensor(a) for a in args]
    shape = ()
    for v in vals:
        shape = _sem.broadcast_shapes(shape, v.shape)
    vals = [v if v.shape == shape else _sem.broadcast_to(v, list(shape)) for v in vals]
    if pack == 1:
        return _generator.inline(fn, *vals)
    if not shape or shape[-1] % pack:
        raise ValueError(f"map_elementwise: pack={pack} needs a last dimension that is a multiple of it, "
                         f"got shape {list(shape)}")
    parts = [p for v in vals for p in _unpack(_sem, v, pack)]
    out = _generator.inline(fn, *parts)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(out) % pack:
        raise ValueError(f"map_elementwise: with pack={pack} the function must return a multiple of {pack} "
                         f"values (pack per result), got {len(out)}")
    return tuple(_repack(_sem, out[k * pack:(k + 1) * pack], shape) for k in _py.range(len(out) // pack))


def _unpack(_sem, v, pack: int) -> list:
    """The ``pack`` tiles of elements ``i * pack + e`` (``e`` = 0 .. pack - 1) of ``v``'s last axis."""
    parts = [_sem.reshape(v, list(v.shape[:-1]) + [v.shape[-1] // pack, pack])]
    while parts[0].shape[-1] > 1:   # split the packed axis in halves: element e's bits low first
        halves = [_sem.split(_sem.reshape(p, list(p.shape[:-1]) + [p.shape[-1] // 2, 2])) for p in parts]
        parts = [h[0] for h in halves] + [h[1] for h in halves]
    return [_sem.reshape(p, list(p.shape[:-1])) for p in parts]


def _repack(_sem, pieces: list, shape) -> object:
    """The inverse of ``_unpack``: ``pack`` tiles back into one of ``shape``."""
    parts = [_sem.to_tensor(p) for p in pieces]
    parts = [_sem.reshape(p, list(p.shape) + [1]) for p in parts]
    while len(parts) > 1:
        half = len(parts) // 2
        joined = [_sem.join(a, b) for a, b in zip(parts[:half], parts[half:])]
        parts = [_sem.reshape(j, list(j.shape[:-2]) + [j.shape[-2] * 2]) for j in joined]
    return _sem.reshape(parts[0], list(shape))


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _sem=None):
    """Triton's ``tl.inline_asm_elementwise``, with Intel vISA text instead of PTX: ``asm`` is run
    for each element of ``args`` (broadcast to one shape), with ``$0`` the result and ``$1``, ``$2``,
    ... the arguments as vISA variables of one subgroup's lanes (``constraints``: ``"=rw,rw,rw"``);
    ``dtype`` the result's. GPU targets only (the driver compiles vISA); one result, ``pack=1``.
    ``xl.inline_asm_elementwise("rol (M1, 16) $0(0,0)<1> $1(0,0)<1;1,0> $2(0,0)<1;1,0>",
    "=rw,rw,rw", [x, s], dtype=xl.uint32, is_pure=True, pack=1)``"""
    return _sem.inline_asm(unwrap(asm), unwrap(constraints), [a for a in unwrap(args)], unwrap(dtype),
                           bool(unwrap(is_pure)), unwrap(pack))


@builtin
def topk(x, k, dim=None, _sem=None):
    """The ``k`` largest elements of ``x`` along ``dim`` (the last when None), largest first."""
    return _sem.topk(x, unwrap(k), unwrap(dim))


@builtin
def gather(src, index, axis, _sem=None):
    """``src`` read at ``index`` along ``axis``: ``out[i][j] = src[index[i][j]][j]`` for ``axis=0``."""
    return _sem.gather(src, index, unwrap(axis))


@builtin
def swizzle2d(i, j, size_i, size_j, size_g, _sem=None):
    """Triton's ``tl.swizzle2d``: the index ``(i, j)`` of a ``size_i x size_j`` grid, renumbered so
    that consecutive indices walk groups of ``size_g`` rows column by column (better cache reuse for
    a matmul's program ids). Returns the new ``(i, j)``."""
    b = _sem.binary
    ij = b("add", b("mul", i, size_j), j)
    per_group = b("mul", size_g, size_j)
    first_row = b("mul", b("floordiv", ij, per_group), size_g)
    rows = _sem.minmax("min", b("sub", size_i, first_row), size_g)   # (the last group may be short)
    within = b("mod", ij, per_group)
    return b("add", first_row, b("mod", within, rows)), b("floordiv", within, rows)


@builtin
def broadcast(a, b, _sem=None):
    """``a`` and ``b`` broadcast to their common shape (Triton's ``tl.broadcast``)."""
    return _sem.broadcast_pair(_sem.to_tensor(a), _sem.to_tensor(b))


# ---- memory through pointer tiles ------------------------------------------------------------

@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False, _sem=None):
    """Load a tile through a tile of pointers (``create_tdesc`` + ``load_gather``); elements where
    ``mask`` is False read ``other`` (0 when not given). ``x = xl.load(x_ptr + offs, mask=offs < n)``.
    Through a block pointer (``xl.make_block_ptr``): its current block, as a descriptor load."""
    if isinstance(unwrap(pointer), block_pointer):
        return _sem.load_block_ptr(unwrap(pointer), mask, other, boundary_check, unwrap(padding_option),
                                   hints=_sem.hints(cache_modifier))
    return _sem.load(pointer, mask, other, hints=_sem.hints(cache_modifier), volatile=unwrap(volatile))


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _sem=None):
    """Store a tile through a tile of pointers (``store_scatter``); elements where ``mask`` is
    False are not written. ``xl.store(out_ptr + offs, x + y, mask=offs < n)``. Through a block
    pointer: its current block, as a descriptor store."""
    if isinstance(unwrap(pointer), block_pointer):
        return _sem.store_block_ptr(unwrap(pointer), value, mask, boundary_check, hints=_sem.hints(cache_modifier))
    return _sem.store(pointer, value, mask, hints=_sem.hints(cache_modifier))


def _atomic(kind):
    @builtin
    def f(pointer, val, mask=None, sem=None, scope=None, _sem=None):
        return _sem.atomic(kind, pointer, val, mask, sem=sem, scope=scope)
    f.__name__ = f"atomic_{kind}"
    f.__doc__ = (f"Atomically ``*p = *p {kind} val`` per element where ``mask``; returns the old values "
                 f"(``xegpu.atomic_rmw``).")
    return f


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@builtin
def atomic_cas(pointer, cmp, val, mask=None, sem=None, scope=None, _sem=None):
    """Atomically ``if *p == cmp: *p = val``; returns the old values."""
    return _sem.atomic("cas", pointer, val, mask, cmp=cmp, sem=sem, scope=scope)


@builtin
def create_tdesc(base, offsets, chunk_size=1, _sem=None):
    """Scattered addresses ``base + offsets`` (``xegpu.create_tdesc``), each ``chunk_size`` elements
    long; load, store, prefetch and move them with the returned descriptor's methods."""
    return _sem.create_tdesc(base, offsets, unwrap(chunk_size))


# ---- tensor descriptors, dot, layouts ----------------------------------------------------------

@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, layout=None, array_length=1,
                           boundary_check=True, _sem=None):
    """A block view of a strided 2-D (or 1-D) tensor (``create_nd_tdesc``); loads through it pad
    out-of-bounds elements with zero, stores skip them.

    ``a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))``
    """
    return _sem.make_tensor_descriptor(base, shape, strides, block_shape, layout=layout,
                                       array_length=array_length, boundary_check=boundary_check)


@builtin
def advance(desc, deltas, _sem=None):
    """The descriptor (or block pointer) moved by ``deltas`` elements (``update_nd_offset``)."""
    if isinstance(unwrap(desc), block_pointer):
        return _sem.advance_block_ptr(unwrap(desc), deltas)
    return _sem.advance_nd(desc, deltas)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order, _sem=None):
    """Triton's block pointer: the ``block_shape`` block at ``offsets`` of the strided tensor
    ``shape``/``strides`` at ``base``, moved with ``xl.advance`` and read and written with
    ``xl.load``/``xl.store``. One dimension's stride must be 1 (a literal, or an integer argument
    equal to 1: launches specialize those). It is a tensor descriptor (2-D block messages), so
    loads pad out-of-bounds elements with zero and stores skip them whatever ``boundary_check``
    says; ``order`` is checked, and the layout comes from xekern's passes.

    ``k_ptr = xl.make_block_ptr(K, shape=(D, N), strides=(1, D), offsets=(0, 0), block_shape=(D, BN), order=(0, 1))``
    """
    return _sem.make_block_ptr(base, shape, strides, offsets, block_shape, order)


@builtin
def dot(a, b, acc=None, input_precision=None, out_dtype=None, _sem=None):
    """``acc + a @ b`` on the matrix engine (DPAS): bf16/f16 accumulate in float32, 8-bit ints in
    int32, float32 inputs use tf32 on GPUs. ``acc = xl.dot(a, b, acc)``"""
    return _sem.dot(a, b, acc, out_dtype=unwrap(out_dtype), input_precision=input_precision)


@builtin
def convert_layout(x, layout, _sem=None):
    """The same tile redistributed to ``layout`` (through SLM when subgroups must exchange data)."""
    return _sem.convert_layout(x, layout)


@builtin
def shuffle_tensor(x, layout, mem=None, _sem=None):
    """Redistribute a tile to ``layout`` explicitly through SLM (seed 002's ``shuffle_tensor``): each
    subgroup stores what it holds, a barrier, each loads what ``layout`` gives it, a barrier. ``mem``: an
    ``xl.alloc_slm`` matrix of the tile's shape and dtype to use (else one is allocated).
    ``y = xl.shuffle_tensor(x, xl.Layout(sg_layout=[1, 4], lane_layout=[16, 1]))``"""
    return _sem.shuffle_tensor(x, layout, mem)


# ---- shared local memory and synchronization ---------------------------------------------------

@builtin
def alloc_slm(shape, dtype, block=None, strides=None, _sem=None):
    """A workgroup-shared matrix in SLM (``create_mem_desc``); ``block`` stores it as contiguous
    blocks (``@block``), ``strides`` gives logical strides (``@strides``)."""
    return _sem.alloc_slm(shape, dtype, block=block, strides=strides)


@builtin
def alloc_private(shape, dtype, _sem=None):
    """Lane level: an array of this work item (seed 003's ``private(...)`` memory attribution; a CUDA
    local array, ``float buf[16]``), live for the whole kernel, read and written with runtime indices:
    ``buf = xl.alloc_private((16,), xl.float32)``, ``buf[i] = x``, ``y = buf[j]``, ``buf[i, j] += 1``.
    Its elements start undefined. All of a kernel's private arrays must fit the target's
    ``private_bytes`` per work item."""
    return _sem.alloc_private(shape, dtype)


@builtin
def barrier(_sem=None):
    """Workgroup barrier: every work item waits; memory written before is visible after."""
    return _sem.barrier()


@builtin
def value_barrier(*values, _sem=None):
    """A barrier on values (seed 002's ``iree_gpu.value_barrier``): the ops producing ``values`` finish in
    every work item of the workgroup before anything after it; returns them unchanged (one value, or a
    tuple). ``a, b = xl.value_barrier(a, b)``"""
    return _sem.value_barrier(values)


@builtin
def fence(scope="workgroup", memory_kind="global", _sem=None):
    """Order memory accesses: ``scope`` 'workgroup' or 'gpu', ``memory_kind`` 'global' or 'shared'."""
    return _sem.fence(scope, memory_kind)


@builtin
def alloc_nbarrier(count, _sem=None):
    """Reserve ``count`` named barriers for the workgroup."""
    return _sem.alloc_nbarrier(count)


@builtin
def init_nbarrier(nbarrier_id, num_participants, _sem=None):
    """Bind named barrier ``nbarrier_id`` shared by ``num_participants`` subgroups."""
    return _sem.init_nbarrier(nbarrier_id, num_participants)


@builtin
def nbarrier_arrive(nb, _sem=None):
    return _sem.nbarrier_arrive(nb)


@builtin
def nbarrier_wait(nb, _sem=None):
    return _sem.nbarrier_wait(nb)


@builtin
def compile_hint(hint="scheduling_barrier", _sem=None):
    """Keep the GPU compiler from moving instructions across this point."""
    return _sem.compile_hint(hint)


# ---- debugging (kept only with XEKERN_DEBUG=1 / @xk.jit(debug=True); the interpreter always runs them) ----

@builtin
def device_print(prefix, *values, hex=False, _sem=None):
    """Print ``prefix`` and ``values`` from the device (OpenCL printf), each line starting with the
    program id: scalars once per program, tiles once per element with its index. Python's ``print``
    in a kernel does the same. ``xl.device_print("x =", x)`` prints ``pid (0, 0, 0) idx (3) x = 1.500000``"""
    return _sem.device_print(prefix, *values, hex=hex)


@builtin
def device_assert(cond, msg="", _sem=None):
    """Where ``cond`` (a scalar or a boolean tile) is false, print the kernel's file:line, the
    program id, the element index and ``msg``. OpenCL cannot stop a kernel: it runs on. Python's
    ``assert`` on a runtime value does the same. ``xl.device_assert(offs < n, "out of range")``"""
    return _sem.device_assert(cond, msg)


# ---- Triton spellings of existing operations ---------------------------------------------------------

@builtin
def add(x, y, sanitize_overflow=True, _sem=None):
    """``x + y`` (Triton's ``tl.add``; ``sanitize_overflow`` is accepted: integers wrap)."""
    return _sem.binary("add", x, y)


@builtin
def sub(x, y, sanitize_overflow=True, _sem=None):
    """``x - y`` (Triton's ``tl.sub``)."""
    return _sem.binary("sub", x, y)


@builtin
def mul(x, y, sanitize_overflow=True, _sem=None):
    """``x * y`` (Triton's ``tl.mul``)."""
    return _sem.binary("mul", x, y)


@builtin
def load_tensor_descriptor(desc, offsets, _sem=None):
    """``desc.load(offsets)`` (Triton's functional spelling)."""
    return _sem.load_nd(unwrap(desc), offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value, _sem=None):
    """``desc.store(offsets, value)`` (Triton's functional spelling)."""
    return _sem.store_nd(unwrap(desc), offsets, value)


@builtin
def view(x, *shape, _sem=None):
    """Triton's deprecated ``tl.view``: ``xl.reshape`` (which keeps the order of the elements)."""
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        shape = tuple(unwrap(shape[0]))
    return _sem.reshape(x, tuple(unwrap(s) for s in shape))


@builtin
def reduce_or(x, axis, keep_dims=False, _sem=None):
    """The bitwise or of ``x`` along ``axis`` (Triton's ``tl.reduce_or``; integer tiles)."""
    return _sem.reduce(x, unwrap(axis), "or", keep_dims=unwrap(keep_dims))
