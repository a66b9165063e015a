"""The values a kernel manipulates while it is being compiled, and the ``@builtin`` marker.

A ``tensor`` wraps one IR value (a scalar or a tile); a ``pointer_tile`` is a tile of
addresses kept as ``base + offsets`` (what ``xl.load``/``xl.store`` turn into ``create_tdesc``);
a ``tensor_descriptor`` is a block view made by ``xl.make_tensor_descriptor``. Builtins take a
keyword ``_sem`` (the semantic layer) that the frontend passes in; they only forward to it. A
builtin that inlines a user's ``@xk.jit`` function (``xl.all_reduce``'s combine function) also
takes ``_generator``: the code generator running the kernel, which inlines it as it inlines any
call (as Triton passes ``_generator`` to ``tl.reduce``).
"""
from __future__ import annotations

from enum import IntEnum
from typing import Tuple

from ..ir.types import (ALL_DTYPES, DType, PointerType, VectorType, bfloat16,
                        float8e4b15, float8e4b8, float8e4nv, float8e5, float8e5b16, float16, float32, float64, int1, int8, int16, int32, int64, uint8,
                        uint16, uint32, uint64)

dtype = DType



class PropagateNan(IntEnum):
    """Triton's ``tl.PropagateNan`` for ``xl.maximum`` / ``xl.minimum`` / ``xl.clamp``: ``ALL`` makes a
    NaN operand give NaN, ``NONE`` (the default) returns the other operand."""
    NONE = 0x0000
    ALL = 0xFFFF


# the size limits of a tile (checked as each op is built, docs/language.md "Limits"):
MAX_TILE_NUMEL = 1 << 20      # elements of one tile, as Triton's TRITON_MAX_TENSOR_NUMEL
MAX_LANE_NUMEL = 2048         # elements of one tile per lane: each is unrolled code, so this bounds compile work


def builtin(fn):
    """Mark ``fn`` as a kernel builtin: the frontend calls it with ``_sem=`` at compile time, and
    with ``_generator=`` too if it has that parameter."""
    fn.__xekern_builtin__ = True
    code = fn.__code__
    fn.__xekern_generator__ = "_generator" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return fn


def is_builtin(fn) -> bool:
    return getattr(getattr(fn, "__func__", fn), "__xekern_builtin__", False)


def takes_generator(fn) -> bool:
    """Whether the builtin ``fn`` is called with ``_generator=`` (the running code generator)."""
    return getattr(getattr(fn, "__func__", fn), "__xekern_generator__", False)


class const:
    """Triton's ``tl.const``: annotate a pointer parameter ``x_ptr: xl.const`` to say it points to
    read-only data; a store or atomic through it (or anything made from it) is a compile error."""


class constexpr:
    """A compile-time constant. As an annotation (``BLOCK: xl.constexpr``) it makes a kernel
    parameter part of the specialization: each value compiles its own kernel.

    Example::

        @xk.jit
        def k(x_ptr, BLOCK: xl.constexpr):
            offs = xl.arange(0, BLOCK)
    """

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value

    def __bool__(self):
        return bool(self.value)

    @property
    def type(self):
        """Triton's ``constexpr_type`` of the value."""
        from .type_objects import constexpr_type
        return constexpr_type(self.value)


class condition:
    """Triton's ``tl.condition(cond, disable_licm=False)``: a ``while`` loop's test, with a hint
    for the compiler. ``while xl.condition(i < n): ...`` is ``while i < n: ...`` (the hint is
    accepted and has no effect: xekern hoists nothing out of while loops)."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = bool(unwrap(disable_licm))


class async_task:
    """Triton's ``with tl.async_task(...)`` (warp specialization): the block runs as ordinary code,
    in every subgroup, which computes what it computes under warp specialization."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def unwrap(v):
    return v.value if isinstance(v, constexpr) else v


@builtin
def pointer_type(element_ty, address_space=1, const=False, _sem=None):
    """Triton's ``tl.pointer_type``: the type of a pointer to ``element_ty`` elements in global
    memory (``address_space`` 1), for pointer casts ``p.to(xl.pointer_type(xl.uint8))``."""
    element_ty = unwrap(element_ty)
    if not isinstance(element_ty, DType):
        raise TypeError(f"pointer_type needs an element dtype such as xl.uint8, got {element_ty!r}")
    if unwrap(address_space) != 1:
        raise TypeError(f"pointer_type: address_space {unwrap(address_space)} (only 1, global memory, is supported)")
    return PointerType(element_ty)


pi32_t = PointerType(int32)   # Triton's pointer_type(int32)


class base_value:
    """Anything a kernel variable can hold that is not a compile-time Python value."""

    def flatten(self):
        """The IR values this value is made of (loops and branches carry these)."""
        raise NotImplementedError

    def rebuild(self, handles):
        """A value of the same kind made of ``handles`` (as returned by ``flatten``)."""
        raise NotImplementedError


class handle_value(base_value):
    """A value made of one IR value (``handle``): tensors, descriptors, SLM matrices, barriers."""

    def __init__(self, handle):
        self.handle = handle

    @property
    def type(self):
        return self.handle.type

    def flatten(self):
        return [self.handle]

    def rebuild(self, handles):
        return type(self)(handles[0])


class tensor(handle_value):
    """A scalar or a tile of a kernel. ``x.dtype``, ``x.shape``, ``x.to(dtype)``, ``x[:, None]``,
    and Python operators work on it."""

    @property
    def dtype(self):
        t = self.handle.type
        return t.elem if isinstance(t, VectorType) else t

    @property
    def shape(self) -> Tuple[int, ...]:
        t = self.handle.type
        return tuple(t.shape) if isinstance(t, VectorType) else ()

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_tile(self) -> bool:
        return isinstance(self.handle.type, VectorType)

    def __repr__(self) -> str:
        return f"tensor<{self.handle.type}>"

    def __bool__(self):
        raise TypeError("a kernel tensor has no truth value at compile time; use xl.where or an "
                        "if on a scalar")

    # methods: the frontend calls these with _sem
    @builtin
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False, _sem=None):
        """``x.to(xl.float16)``: convert the elements (``bitcast=True`` reinterprets the bits; floats
        round to nearest even, the only ``fp_downcast_rounding`` accepted besides None)."""
        if unwrap(fp_downcast_rounding) not in (None, "rtne"):
            raise ValueError(f"fp_downcast_rounding={unwrap(fp_downcast_rounding)!r}: only 'rtne' (round to "
                             f"nearest even) is supported")
        return _sem.cast(self, unwrap(dtype), bitcast=unwrap(bitcast))

    cast = to   # (Triton's tl.cast(x, dtype) as a method)

    @builtin
    def reshape(self, *shape, _sem=None):
        """``x.reshape(shape)``: only inserting or removing unit dimensions is supported."""
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
            shape = unwrap(shape[0])
        return _sem.reshape(self, [unwrap(s) for s in shape])

    @builtin
    def trans(self, *dims, _sem=None):
        return _sem.permute(self, [unwrap(d) for d in dims] or None)

    @builtin
    def sum(self, axis=None, keep_dims=False, _sem=None):
        return _sem.reduce(self, unwrap(axis), "sum", keep_dims=unwrap(keep_dims))

    @builtin
    def max(self, axis=None, keep_dims=False, _sem=None):
        return _sem.reduce(self, unwrap(axis), "max", keep_dims=unwrap(keep_dims))

    @builtin
    def min(self, axis=None, keep_dims=False, _sem=None):
        return _sem.reduce(self, unwrap(axis), "min", keep_dims=unwrap(keep_dims))

    @builtin
    def broadcast_to(self, *shape, _sem=None):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
            shape = unwrap(shape[0])
        return _sem.broadcast_to(self, [unwrap(s) for s in shape])


class pointer_tile(base_value):
    """A tile of addresses ``base + offsets`` (offsets in elements). ``x_ptr + xl.arange(0, 16)``
    makes one; ``xl.load`` / ``xl.store`` use it."""

    def __init__(self, base: tensor, offsets: tensor):
        self.base = base
        self.offsets = offsets

    @property
    def dtype(self) -> PointerType:
        return self.base.handle.type

    @property
    def shape(self):
        return self.offsets.shape

    @property
    def type(self):
        return VectorType(self.offsets.shape, int64)  # for messages only

    def flatten(self):
        return [self.base.handle, self.offsets.handle]

    def rebuild(self, handles):
        return pointer_tile(tensor(handles[0]), tensor(handles[1]))

    @builtin
    def to(self, dtype, bitcast=False, _sem=None):
        """``(p + offs).to(xl.pointer_type(xl.uint8))``: the same addresses, another element type."""
        return _sem.cast(self, unwrap(dtype), bitcast=unwrap(bitcast))

    cast = to

    def __repr__(self) -> str:
        return f"pointer_tile<{self.base.handle.type} + {self.offsets.handle.type}>"


class tensor_descriptor(handle_value):
    """A block view of a strided tensor in memory (``create_nd_tdesc``), made by
    ``xl.make_tensor_descriptor``. ``d.load(offsets)``, ``d.store(offsets, v)``,
    ``d.prefetch(offsets)``, ``d.advance(deltas)``.

    Example::

        a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
        a = a_desc.load((m0, k0))
    """

    def __init__(self, handle, options=None, dims=None):
        super().__init__(handle)
        self.options = dict(options or {})
        self._dims = dims   # (shape, strides): the tensors it was made with (``d.shape``, ``d.strides``)

    @property
    def block_shape(self):
        return self.type.value_shape

    @property
    def dtype(self):
        return self.type.elem

    @property
    def shape(self):
        """The tensor's shape the descriptor was made with (a tuple of int32 scalars), as Triton's."""
        return self._dims_part(0, "shape")

    @property
    def strides(self):
        """The strides the descriptor was made with (the last one the constant 1)."""
        return self._dims_part(1, "strides")

    def _dims_part(self, k: int, what: str):
        if self._dims is None:
            raise AttributeError(f"this descriptor's {what} is unknown here (it was not made by "
                                 f"xl.make_tensor_descriptor in this kernel)")
        return self._dims[k]

    def rebuild(self, handles):
        return tensor_descriptor(handles[0], self.options, self._dims)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.type}>"

    @builtin
    def load(self, offsets=None, transpose=False, padding_option="zero", cache_modifier="", packed=None,
             transpose_bit_width=None, layout=None, l1_hint=None, l2_hint=None, l3_hint=None, _sem=None):
        return _sem.load_nd(self, offsets, transpose=unwrap(transpose), packed=unwrap(packed),
                            transpose_bit_width=unwrap(transpose_bit_width), layout=unwrap(layout),
                            hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint),
                            padding_option=unwrap(padding_option))

    @builtin
    def store(self, offsets, value=None, cache_modifier="", l1_hint=None, l2_hint=None, l3_hint=None,
              _sem=None):
        if value is None:  # d.store(value) with the descriptor's own offsets
            offsets, value = None, offsets
        return _sem.store_nd(self, offsets, value, hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint))

    @builtin
    def prefetch(self, offsets=None, cache_modifier="", l1_hint=None, l2_hint=None, l3_hint=None, _sem=None):
        return _sem.prefetch_nd(self, offsets, hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint))

    @builtin
    def advance(self, deltas, _sem=None):
        return _sem.advance_nd(self, deltas)


class block_pointer(tensor_descriptor):
    """Triton's block pointer (``xl.make_block_ptr``): a tensor descriptor with its current block's
    offsets. ``xl.load(p, boundary_check=...)``, ``xl.store(p, v)``, ``xl.advance(p, deltas)``. One
    whose contiguous dimension is the first (``strides[0] == 1``, a transposed 2-D view) is kept as
    a descriptor of the stored matrix whose blocks are loaded transposed (``transposed``)."""

    def __init__(self, handle, options=None, dims=None, transposed=False):
        super().__init__(handle, options, dims)
        self.transposed = transposed

    @property
    def block_shape(self):
        shape = self.type.value_shape
        return tuple(shape[::-1]) if self.transposed else tuple(shape)

    def rebuild(self, handles):
        return block_pointer(handles[0], self.options, self._dims, self.transposed)

    def __repr__(self) -> str:
        return f"block_pointer<{self.type}{', transposed' if self.transposed else ''}>"


class scatter_descriptor(handle_value):
    """Per-element addresses ``base + offsets`` (``xegpu.create_tdesc``), each covering
    ``chunk_size`` consecutive elements. ``d.load(mask)`` gives a tile of shape
    ``offsets.shape + (chunk_size,)`` (the chunk dimension dropped when it is 1).

    Example::

        d = xl.create_tdesc(x_ptr, rows * 4, chunk_size=4)   # 4 consecutive floats per row
        v = d.load(mask=rows < n)                             # shape (R, 4)
        d = d.update_offset(xl.full((R,), 4 * R, xl.int32))
    """


    @property
    def chunk_size(self) -> int:
        return self.type.chunk_size

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.elem

    @builtin
    def load(self, mask=None, other=None, cache_modifier="", l1_hint=None, l2_hint=None, l3_hint=None, _sem=None):
        return _sem.load_gather(self, mask, other, hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint))

    @builtin
    def store(self, value, mask=None, cache_modifier="", l1_hint=None, l2_hint=None, l3_hint=None, _sem=None):
        return _sem.store_scatter(self, value, mask, hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint))

    @builtin
    def prefetch(self, cache_modifier="", l1_hint=None, l2_hint=None, l3_hint=None, _sem=None):
        return _sem.prefetch_scatter(self, hints=_sem.hints(cache_modifier, l1_hint, l2_hint, l3_hint))

    @builtin
    def update_offset(self, delta, _sem=None):
        return _sem.update_offset(self, delta)


class mem_desc(handle_value):
    """A matrix in shared local memory (``xegpu.create_mem_desc``), made by ``xl.alloc_slm``.
    ``m.load(offsets, shape)``, ``m.store(offsets, value)``."""

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.elem

    @builtin
    def load(self, offsets=(0, 0), shape=None, layout=None, subgroup_block_io=False, _sem=None):
        return _sem.load_matrix(self, offsets, unwrap(shape), layout=unwrap(layout),
                                subgroup_block_io=unwrap(subgroup_block_io))

    @builtin
    def store(self, offsets, value, subgroup_block_io=False, _sem=None):
        return _sem.store_matrix(self, offsets, value, subgroup_block_io=unwrap(subgroup_block_io))


class private_array(handle_value):
    """An array of one work item (``gpu.alloc_private``), made by ``xl.alloc_private`` in a lane-level
    kernel: ``buf[i]`` reads an element, ``buf[i] = v`` and ``buf[i] += v`` write one; ``i`` may be a
    runtime value (one index per dimension). ``buf.shape``, ``buf.dtype``."""

    @property
    def shape(self):
        return tuple(self.type.shape)

    @property
    def dtype(self):
        return self.type.elem

    def __repr__(self) -> str:
        return f"private_array<{self.type}>"


class nbarrier(handle_value):
    """A named barrier bound by ``xl.init_nbarrier``."""

    @builtin
    def arrive(self, _sem=None):
        return _sem.nbarrier_arrive(self)

    @builtin
    def wait(self, _sem=None):
        return _sem.nbarrier_wait(self)


__all__ = ["builtin", "constexpr", "tensor", "pointer_tile", "tensor_descriptor", "scatter_descriptor", "mem_desc",
           "nbarrier", "private_array",
           "dtype", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float8e5", "float8e4nv", "float8e4b8", "float8e5b16", "float16", "bfloat16", "float32", "float64", "ALL_DTYPES", "block_pointer",
           "pointer_type", "pi32_t", "const"]
