"""Semantic rules for memory: pointer-tile loads/stores and atomics (scattered ops), tensor
descriptors (nd block ops), shared local memory (mem_desc), barriers and fences."""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..ir import types as T
from ..ir.types import DType, MemDescType, PointerType, TensorDescType, VectorType
from ..language.core import (block_pointer, mem_desc, nbarrier, pointer_tile, scatter_descriptor, tensor, tensor_descriptor,
                             unwrap)
from .semantic import SemanticError

# Triton's cache modifiers mapped to XeGPU cache hints (L1, L3)
_CACHE_MODIFIERS = {"": {}, ".ca": {"l1_hint": "cached", "l3_hint": "cached"},
                    ".cg": {"l1_hint": "uncached", "l3_hint": "cached"},
                    ".cs": {"l1_hint": "streaming", "l3_hint": "streaming"},
                    ".cv": {"l1_hint": "uncached", "l3_hint": "uncached"},
                    ".wb": {"l1_hint": "write_back", "l3_hint": "write_back"},
                    ".wt": {"l1_hint": "write_through", "l3_hint": "write_through"}}

ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg", "cas")


class MemorySemantic:
    def hints(self, cache_modifier="", l1=None, l2=None, l3=None) -> dict:
        cm = unwrap(cache_modifier) or ""
        if cm not in _CACHE_MODIFIERS:
            raise SemanticError(f"unknown cache_modifier {cm!r}; use one of {sorted(_CACHE_MODIFIERS)}")
        h = dict(_CACHE_MODIFIERS[cm])
        for k, v in (("l1_hint", l1), ("l2_hint", l2), ("l3_hint", l3)):
            v = unwrap(v)
            if v is not None:
                h[k] = v
        from ..ir.ops_xegpu import CACHE_HINTS
        for k, v in h.items():
            if v not in CACHE_HINTS:
                raise SemanticError(f"{k}={v!r} is not a cache hint; use one of "
                                    f"{sorted(x for x in CACHE_HINTS if x)}")
        return h

    # ---- pointer tiles: create_tdesc + load_gather / store_scatter --------------------------------
    def _mask(self, mask, shape) -> tensor:
        if mask is None:
            return self.const(True, T.int1, shape)
        m = self.to_tensor(mask)
        if m.dtype != T.int1:
            raise SemanticError(f"mask must be a boolean tile (e.g. offs < n), got {m.dtype!r}")
        return self.broadcast_to(m, shape)

    def _scatter_desc(self, p: pointer_tile, shape, chunk: int = 1) -> tensor:
        offs = self.broadcast_to(p.offsets, shape)
        if not offs.dtype.is_int or offs.dtype.is_bool:
            raise SemanticError("pointer offsets must be integers")
        ptr_t: PointerType = p.base.dtype
        td = TensorDescType(tuple(shape), ptr_t.elem, scattered=True, chunk_size=chunk,
                            memory_scope="slm" if ptr_t.space == "slm" else "global")
        return self.op(ir.CreateTDescOp, p.base.handle, offs.handle, td)

    def _access_shape(self, p: pointer_tile, *others) -> tuple:
        shape = p.shape
        for o in others:
            o = unwrap(o)
            if isinstance(o, tensor):
                shape = self.broadcast_shapes(shape, o.shape)
        return shape

    # kernel parameters annotated xl.const (IR value -> name): no store or atomic may reach them
    read_only: dict = {}

    def check_writable(self, target, what: str) -> None:
        """Refuse ``what`` through a pointer, tile of pointers or descriptor derived from a parameter
        annotated ``xl.const`` (Triton: "Cannot store to a constant pointer")."""
        t = unwrap(target)
        v = t.base.handle if isinstance(t, pointer_tile) else getattr(t, "handle", None)
        while v is not None and v not in self.read_only and v.op is not None and \
                isinstance(v.op, (ir.AddPtrOp, ir.PtrCastOp, ir.CreateNdTDescOp, ir.UpdateNdOffsetOp)):
            v = v.op.operands[0]
        if v is not None and v in self.read_only:
            raise SemanticError(f"{what} through '{self.read_only[v]}', a parameter annotated xl.const "
                                f"(a pointer to read-only data)")

    def _write_shape(self, p: pointer_tile, what: str, **operands) -> tuple:
        """A store or atomic writes each pointer once (Triton's rule): its value and mask broadcast
        to the pointers' shape, never the pointers to theirs, which would write an address many
        times and, unmasked past a ragged edge, outside the buffer."""
        for name, o in operands.items():
            o = unwrap(o)
            if isinstance(o, tensor) and o.is_tile and self.broadcast_shapes(p.shape, o.shape) != tuple(p.shape):
                raise SemanticError(f"{what} writes each pointer once: the {name} of shape {list(o.shape)} must "
                                    f"broadcast to the pointers' shape {list(p.shape)}; broadcast the pointers "
                                    f"instead (e.g. ptr + rows[:, None] * stride + cols[None, :])")
        return tuple(p.shape)

    def load(self, ptr, mask=None, other=None, hints=None, volatile=False):
        """``xl.load(ptrs, mask, other)``: masked-off elements read ``other`` (zero if absent)."""
        scalar = not isinstance(unwrap(ptr), pointer_tile)
        p = self.pointer_tile_of(ptr)
        elem = p.dtype.elem
        shape = self._access_shape(p, mask, other) if not scalar else (1,)
        if scalar and isinstance(unwrap(mask), tensor) and unwrap(mask).is_tile:
            raise SemanticError("a scalar pointer takes a scalar mask")
        m = self._mask(mask, shape)
        oth = None
        if other is not None:
            oth = self.broadcast_to(self.cast(self.to_tensor(other, elem), elem), shape)
        td = self._scatter_desc(p, shape)
        r = self.op(ir.LoadGatherOp, td.handle, m.handle, VectorType(shape, elem),
                    oth.handle if oth is not None else None, hints=hints)
        if volatile:
            r.handle.owner.attrs["volatile"] = True
        return self.reshape(r, ()) if scalar else r

    def store(self, ptr, value, mask=None, hints=None):
        """``xl.store(ptrs, value, mask)``: masked-off elements are not written."""
        self.check_writable(ptr, "xl.store")
        scalar = not isinstance(unwrap(ptr), pointer_tile)
        p = self.pointer_tile_of(ptr)
        elem = p.dtype.elem
        v = self.to_tensor(value, elem)
        if scalar and v.is_tile:
            raise SemanticError(f"storing a tile of shape {list(v.shape)} through a scalar pointer; "
                                f"add offsets (ptr + xl.arange(...)) to address a tile")
        shape = self._write_shape(p, "xl.store", value=v, mask=mask) if not scalar else (1,)
        v = self.broadcast_to(self.cast(v, elem), shape)
        m = self._mask(mask, shape)
        td = self._scatter_desc(p, shape)
        self.b.create(ir.StoreScatterOp, v.handle, td.handle, m.handle, hints=hints)

    def atomic(self, kind: str, ptr, val, mask=None, cmp=None, sem=None, scope=None):
        """``xl.atomic_<kind>(ptrs, val, mask)``: returns the old values."""
        self.check_writable(ptr, f"atomic_{kind}")
        if kind not in ATOMIC_KINDS:
            raise SemanticError(f"unknown atomic {kind}")
        for name, v, ok in (("sem", sem, (None, "relaxed", "acq_rel", "acquire", "release")),
                            ("scope", scope, (None, "gpu", "cta", "sys"))):
            if unwrap(v) not in ok:
                raise SemanticError(f"atomic {name}={unwrap(v)!r} is not one of {[x for x in ok if x]}")
        scalar = not isinstance(unwrap(ptr), pointer_tile)
        p = self.pointer_tile_of(ptr)
        elem = p.dtype.elem
        v = self.to_tensor(val, elem)
        shape = self._write_shape(p, f"xl.atomic_{kind}", value=v, mask=mask, cmp=cmp) if not scalar else (1,)
        if elem.bits not in (32, 64) and not (elem.is_floating and elem.bits == 16 and kind == "add"):
            raise SemanticError(f"atomic_{kind} needs 32- or 64-bit elements, got {elem.user_name}")
        if elem.is_floating and kind in ("and", "or", "xor"):
            raise SemanticError(f"atomic_{kind} needs integer elements, got {elem.user_name}")
        v = self.broadcast_to(self.cast(v, elem), shape)
        m = self._mask(mask, shape)
        c = None
        if kind == "cas":
            c = self.broadcast_to(self.cast(self.to_tensor(cmp, elem), elem), shape)
        td = self._scatter_desc(p, shape)
        r = self.op(ir.AtomicRMWOp, kind, td.handle, v.handle, m.handle, c.handle if c is not None else None)
        r.handle.owner.attrs.update(sem=unwrap(sem) or "acq_rel", scope=unwrap(scope) or "gpu")
        return self.reshape(r, ()) if scalar else r

    # ---- scattered descriptors: create_tdesc + load_gather / store_scatter / prefetch / update_offset --
    def create_tdesc(self, base, offsets, chunk_size=1) -> scatter_descriptor:
        self.require_level("xl.create_tdesc", "wg", "sg")
        base = unwrap(base)
        if not self._is_ptr(base):
            raise SemanticError(f"create_tdesc needs a scalar pointer as base, got {base!r}")
        offs = self.to_tensor(offsets)
        if not offs.is_tile or not offs.dtype.is_int or offs.dtype.is_bool:
            raise SemanticError(f"create_tdesc offsets must be an integer tile, got {offs.type}")
        if chunk_size not in (1, 2, 3, 4, 8, 16, 32, 64):
            raise SemanticError(f"chunk_size {chunk_size!r} must be one of 1, 2, 3, 4, 8 (RFC), or 16..64 (Xe2)")
        if chunk_size > 1 and len(offs.shape) != 1:
            raise SemanticError("chunked descriptors take 1-D offsets (one address per lane row)")
        return scatter_descriptor(self._scatter_desc(pointer_tile(base, offs), offs.shape, chunk_size).handle)

    def _value_shape(self, d: scatter_descriptor):
        return tuple(d.shape) + ((d.chunk_size,) if d.chunk_size > 1 else ())

    def load_gather(self, d: scatter_descriptor, mask=None, other=None, hints=None):
        shape = self._value_shape(d)
        m = self._mask(mask, d.shape)
        oth = None
        if other is not None:
            oth = self.broadcast_to(self.cast(self.to_tensor(other, d.dtype), d.dtype), shape)
        return self.op(ir.LoadGatherOp, d.handle, m.handle, VectorType(shape, d.dtype),
                       oth.handle if oth is not None else None, hints=hints)

    def store_scatter(self, d: scatter_descriptor, value, mask=None, hints=None):
        shape = self._value_shape(d)
        v = self.broadcast_to(self.cast(self.to_tensor(value, d.dtype), d.dtype), shape)
        m = self._mask(mask, d.shape)
        self.b.create(ir.StoreScatterOp, v.handle, d.handle, m.handle, hints=hints)

    def prefetch_scatter(self, d: scatter_descriptor, hints=None):
        self.b.create(ir.PrefetchOp, d.handle, hints=hints)

    def update_offset(self, d: scatter_descriptor, delta) -> scatter_descriptor:
        delta = self.broadcast_to(self.to_tensor(delta), d.shape)
        if not delta.dtype.is_int:
            raise SemanticError("update_offset takes integer deltas")
        return scatter_descriptor(self.b(ir.UpdateOffsetOp, d.handle, delta.handle))

    # ---- tensor descriptors: create_nd_tdesc + load_nd / store_nd / prefetch_nd -------------------
    def _index(self, v, what: str) -> tensor:
        t = self.to_tensor(v, T.int32)
        if t.is_tile or not t.dtype.is_int or t.dtype.is_bool:
            raise SemanticError(f"{what} must be integer scalars, got {t.type}")
        return self.cast(t, T.int32) if t.dtype != T.int32 else t

    def _index_list(self, vals, rank: int, what: str):
        vals = unwrap(vals)
        if not isinstance(vals, (tuple, list)):
            vals = (vals,)
        if len(vals) != rank:
            raise SemanticError(f"{what} needs {rank} values, got {len(vals)}")
        return [self._index(v, what) for v in vals]

    def make_tensor_descriptor(self, base, shape, strides, block_shape, layout=None, array_length=1,
                               boundary_check=True, memory_scope="global"):
        self.require_level("xl.make_tensor_descriptor", "wg", "sg",
                           hint="; a lane-level kernel loads scalars through pointers (xl.load(ptr + i))")
        base = unwrap(base)
        if not self._is_ptr(base):
            raise SemanticError(f"make_tensor_descriptor needs a pointer argument as base, got {base!r}")
        block = self.check_shape(unwrap(block_shape), "block")
        rank = len(block)
        if 3 <= rank <= 5 and unwrap(layout) is None and unwrap(array_length) == 1:
            return self.make_nd_descriptor(base, shape, strides, block)
        if rank not in (1, 2):
            raise SemanticError(f"tensor descriptors have 1 to 5 dimensions (3 to 5 without layout= or "
                                f"array_length=), got block_shape {list(block)}")
        shp = self._index_list(shape, rank, "shape")
        strides = unwrap(strides)
        if not isinstance(strides, (tuple, list)) or len(strides) != rank:
            raise SemanticError(f"strides needs {rank} values")
        if unwrap(strides[-1]) != 1:
            raise SemanticError("the innermost stride must be the constant 1 (XeGPU block loads read rows "
                                "of contiguous elements); describe a transposed matrix with its own strides "
                                "and load it with transpose=True")
        std = [self._index(s, "strides") for s in strides]
        zero = [self.const(0, T.int32) for _ in range(rank)]
        layout = self.check_layout(unwrap(layout), block)
        al = unwrap(array_length)
        if al not in (1, 2, 4):
            raise SemanticError(f"array_length must be 1, 2 or 4, got {al}")
        td = TensorDescType(block, base.dtype.elem, array_length=1, boundary_check=bool(unwrap(boundary_check)),
                            memory_scope=unwrap(memory_scope))
        h = self.b(ir.CreateNdTDescOp, base.handle, [s.handle for s in shp], [s.handle for s in std],
                   [z.handle for z in zero], td)
        if layout is not None:
            h.owner.attrs["layout"] = layout
        if al != 1:
            h.owner.attrs["array_length"] = al
        given = unwrap(shape) if isinstance(unwrap(shape), (tuple, list)) else (shape,)
        return tensor_descriptor(h, dims=(tuple(unwrap(v) for v in given), tuple(unwrap(v) for v in strides)))

    def _offsets(self, d: tensor_descriptor, offsets):
        rank = len(d.type.shape)
        if offsets is None:
            return [self.const(0, T.int32).handle for _ in range(rank)]
        return [o.handle for o in self._index_list(offsets, rank, "offsets")]

    def load_nd(self, d: tensor_descriptor, offsets, transpose=False, packed=None, transpose_bit_width=None,
                layout=None, hints=None, padding_option="zero"):
        if padding_option not in ("zero", None, ""):
            raise SemanticError(f"padding_option {padding_option!r}: descriptor loads pad with zero")
        shape = d.type.value_shape
        perm = None
        if transpose:
            if len(shape) != 2:
                raise SemanticError("transpose needs a 2-D descriptor")
            perm = (1, 0)
            shape = (shape[1], shape[0])
        layout = self.check_layout(layout, shape)
        r = self.op(ir.LoadNdOp, d.handle, self._offsets(d, offsets), VectorType(tuple(shape), d.dtype),
                    transpose=perm, packed=bool(packed), transpose_bit_width=transpose_bit_width, hints=hints)
        if layout is not None:
            r.handle.owner.attrs["layout"] = layout
        return r

    def store_nd(self, d: tensor_descriptor, offsets, value, hints=None):
        self.check_writable(d, "a descriptor store")
        v = self.to_tensor(value, d.dtype)
        shape = d.type.value_shape
        if v.is_tile and v.shape != tuple(shape):
            raise SemanticError(f"storing a tile of shape {list(v.shape)} through a descriptor with block "
                                f"{list(shape)}")
        v = self.broadcast_to(self.cast(v, d.dtype), shape)
        self.b.create(ir.StoreNdOp, v.handle, d.handle, self._offsets(d, offsets), hints=hints)

    def prefetch_nd(self, d: tensor_descriptor, offsets, hints=None):
        self.b.create(ir.PrefetchNdOp, d.handle, self._offsets(d, offsets), hints=hints)

    def advance_nd(self, d: tensor_descriptor, deltas):
        return d.rebuild([self.b(ir.UpdateNdOffsetOp, d.handle, self._offsets(d, deltas))])

    # ---- block pointers (Triton's make_block_ptr, as tensor descriptors) -----------------------------
    def make_block_ptr(self, base, shape, strides, offsets, block_shape, order) -> block_pointer:
        block = self.check_shape(unwrap(block_shape), "block")
        rank = len(block)
        lists = {"shape": unwrap(shape), "strides": unwrap(strides), "offsets": unwrap(offsets), "order": unwrap(order)}
        for name, v in lists.items():
            if not isinstance(v, (tuple, list)) or len(v) != rank:
                raise SemanticError(f"make_block_ptr: {name} needs {rank} values (block_shape has {rank})")
        if sorted(unwrap(o) for o in lists["order"]) != list(range(rank)):
            raise SemanticError(f"make_block_ptr: order {list(unwrap(o) for o in lists['order'])} is not a "
                                f"permutation of {list(range(rank))}")
        unit = [unwrap(s) == 1 for s in lists["strides"]]
        if unit[-1]:
            flip = False
        elif rank == 2 and unit[0]:
            flip = True   # the first dimension is contiguous: a transposed view of a row-major matrix
        else:
            raise SemanticError("make_block_ptr: the contiguous dimension's stride must be 1 (a literal, or an "
                                "integer argument equal to 1, which launches specialize); xekern block pointers "
                                "are 2-D block messages over rows of contiguous elements")
        rev = (lambda v: tuple(v)[::-1]) if flip else tuple  # noqa: E731
        d = self.make_tensor_descriptor(base, rev(lists["shape"]), rev(lists["strides"]), rev(block))
        d = self.advance_nd(d, rev(lists["offsets"]))
        return block_pointer(d.handle, d.options, d._dims, transposed=flip)

    def _block_ptr_checks(self, p: block_pointer, mask, boundary_check, what: str):
        if mask is not None:
            raise SemanticError(f"{what} through a block pointer takes boundary_check, not a mask")
        dims = unwrap(boundary_check)
        dims = tuple(unwrap(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
        rank = len(p.block_shape)
        if any(not isinstance(d, int) or not 0 <= d < rank for d in dims):
            raise SemanticError(f"{what}: boundary_check {list(dims)} names dimensions outside 0..{rank - 1}")

    def load_block_ptr(self, p: block_pointer, mask, other, boundary_check, padding_option, hints=None):
        self._block_ptr_checks(p, mask, boundary_check, "xl.load")
        if other is not None:
            raise SemanticError("xl.load through a block pointer takes padding_option, not other")
        if padding_option not in ("", "zero", None):
            raise SemanticError(f"padding_option {padding_option!r}: block pointers pad with zero (they are "
                                f"tensor descriptors)")
        return self.load_nd(p, None, transpose=p.transposed, hints=hints)

    def store_block_ptr(self, p: block_pointer, value, mask, boundary_check, hints=None):
        self._block_ptr_checks(p, mask, boundary_check, "xl.store")
        v = self.to_tensor(value, p.dtype)
        if p.transposed and v.is_tile:
            if tuple(v.shape) != p.block_shape:
                raise SemanticError(f"storing a tile of shape {list(v.shape)} through a block pointer with block "
                                    f"{list(p.block_shape)}")
            v = self.permute(v, (1, 0))
        self.store_nd(p, None, v, hints=hints)

    def advance_block_ptr(self, p: block_pointer, deltas):
        deltas = unwrap(deltas)
        if not isinstance(deltas, (tuple, list)) or len(deltas) != len(p.block_shape):
            raise SemanticError(f"xl.advance of a {len(p.block_shape)}-D block pointer needs "
                                f"{len(p.block_shape)} offsets")
        return self.advance_nd(p, tuple(deltas)[::-1] if p.transposed else tuple(deltas))

    # ---- shared local memory ----------------------------------------------------------------------
    def alloc_slm(self, shape, dtype, block=None, strides=None) -> mem_desc:
        self.require_level("xl.alloc_slm", "wg", "sg")
        shape = tuple(unwrap(s) for s in (unwrap(shape) if isinstance(unwrap(shape), (tuple, list)) else (shape,)))
        if not all(isinstance(s, int) and s > 0 for s in shape):
            raise SemanticError(f"SLM shape {list(shape)} must be positive compile-time integers")
        dtype = unwrap(dtype)
        if not isinstance(dtype, DType):
            raise SemanticError(f"dtype must be an xl dtype, got {dtype!r}")
        blk = tuple(unwrap(block)) if block is not None else None
        std = tuple(unwrap(strides)) if strides is not None else None
        t = MemDescType(shape, dtype, strides=std, block=blk)
        if blk is not None and (len(blk) != len(shape) or any(s % b for s, b in zip(shape, blk))):
            raise SemanticError(f"block {list(blk)} must tile the matrix {list(shape)} (RFC: @block divides "
                                f"the shape)")
        limit = self.options.target.slm_bytes
        self.slm_bytes = getattr(self, "slm_bytes", 0) + t.nbytes
        if self.slm_bytes > limit:
            raise SemanticError(f"shared local memory use {self.slm_bytes} bytes exceeds the "
                                f"{self.options.target.name} limit of {limit} bytes per workgroup")
        return mem_desc(self.b(ir.CreateMemDescOp, t))

    def load_matrix(self, m: mem_desc, offsets, shape, layout=None, subgroup_block_io=False):
        rank = len(m.shape)
        shape = tuple(shape) if shape is not None else tuple(m.shape)
        self.check_shape(shape)
        layout = self.check_layout(layout, shape)
        offs = [o.handle for o in self._index_list(offsets, rank, "offsets")]
        r = self.op(ir.LoadMatrixOp, m.handle, offs, VectorType(shape, m.dtype),
                    subgroup_block_io=bool(subgroup_block_io))
        if layout is not None:
            r.handle.owner.attrs["layout"] = layout
        return r

    def store_matrix(self, m: mem_desc, offsets, value, subgroup_block_io=False):
        v = self.cast(self.to_tensor(value, m.dtype), m.dtype)
        if not v.is_tile:
            raise SemanticError("store_matrix stores a tile")
        offs = [o.handle for o in self._index_list(offsets, len(m.shape), "offsets")]
        self.b.create(ir.StoreMatrixOp, v.handle, m.handle, offs, subgroup_block_io=bool(subgroup_block_io))

    def shuffle_tensor(self, x, layout, mem=None) -> tensor:
        """``xl.shuffle_tensor(x, layout, mem)`` (seed 002's ``iree_gpu.shuffle_tensor``): every
        subgroup writes the pieces of ``x`` it holds into a workgroup-shared SLM matrix, a barrier, every
        subgroup reads the pieces ``layout`` gives it, a barrier (so the matrix may be reused). Always
        through SLM, even where a register-only conversion would exist; ``mem`` is the caller's matrix
        (an ``xl.alloc_slm`` of the tile's shape and dtype), else one is allocated. Builds one
        ``iree_gpu.shuffle_tensor`` op; ``wg-to-sg`` lowers it."""
        self.require_level("xl.shuffle_tensor", "wg")
        x = self.to_tensor(x)
        if not x.is_tile:
            raise SemanticError("xl.shuffle_tensor redistributes a tile, got a scalar")
        layout = self.check_layout(unwrap(layout), x.shape)
        if layout is None:
            raise SemanticError("xl.shuffle_tensor needs the xl.Layout to redistribute to")
        mem = unwrap(mem)
        if mem is None:
            mem = self.alloc_slm(x.shape, x.dtype)
        elif not isinstance(mem, mem_desc):
            raise SemanticError(f"xl.shuffle_tensor: mem must be an xl.alloc_slm matrix, got {type(mem).__name__}")
        elif tuple(mem.shape) != tuple(x.shape) or mem.dtype != x.dtype:
            raise SemanticError(f"xl.shuffle_tensor: the SLM matrix {list(mem.shape)} x {mem.dtype.user_name} must "
                                f"have the tile's shape and dtype, {list(x.shape)} x {x.dtype.user_name}")
        r = self.op(ir.ShuffleTensorOp, x.handle, mem.handle, VectorType(tuple(x.shape), x.dtype))
        r.handle.owner.attrs["layout"] = layout
        return r

    # ---- synchronization --------------------------------------------------------------------------
    def barrier(self):
        self.b.create(ir.BarrierOp)

    def value_barrier(self, values):
        """``xl.value_barrier(*values)`` (seed 002's ``iree_gpu.value_barrier``): the ops producing
        ``values`` (and every memory access before) complete in every work item of the workgroup before
        anything after; returns the values unchanged. One ``iree_gpu.value_barrier`` op, which codegen
        emits as a ``gpu.barrier`` after the producers."""
        if not values:
            raise SemanticError("xl.value_barrier needs at least one value")
        out = []
        for i, v in enumerate(values):
            v = unwrap(v)
            if not isinstance(v, tensor):
                raise SemanticError(f"xl.value_barrier: argument {i} must be a tensor or scalar kernel value, "
                                    f"got {type(v).__name__} {v!r}")
            out.append(v)
        op = self.b.create(ir.ValueBarrierOp, [v.handle for v in out])
        res = [v.rebuild([r]) for v, r in zip(out, op.results)]
        return res[0] if len(res) == 1 else tuple(res)

    def fence(self, scope="workgroup", memory_kind="global"):
        scope, kind = unwrap(scope), unwrap(memory_kind)
        if scope not in ("workgroup", "gpu"):
            raise SemanticError(f"fence scope must be 'workgroup' or 'gpu', got {scope!r}")
        if kind not in ("global", "shared"):
            raise SemanticError(f"fence memory_kind must be 'global' or 'shared', got {kind!r}")
        self.b.create(ir.FenceOp, scope, kind)

    def alloc_nbarrier(self, count):
        count = unwrap(count)
        limit = self.options.target.named_barriers
        if not isinstance(count, int) or not 1 <= count <= limit:
            raise SemanticError(f"alloc_nbarrier({count!r}): the count must be a compile-time integer in "
                                f"1..{limit} on {self.options.target.name}")
        self.nbarrier_count = count
        self.b.create(ir.AllocNBarrierOp, count)

    def init_nbarrier(self, nbarrier_id, participants):
        if not getattr(self, "nbarrier_count", 0):
            raise SemanticError("init_nbarrier needs an earlier xl.alloc_nbarrier(count)")
        i = unwrap(nbarrier_id)
        if isinstance(i, int) and not 0 <= i < self.nbarrier_count:
            raise SemanticError(f"named barrier id {i} is outside the {self.nbarrier_count} allocated")
        return nbarrier(self.b(ir.InitNBarrierOp, self._index(nbarrier_id, "id").handle,
                               self._index(participants, "participants").handle))

    def nbarrier_arrive(self, nb: nbarrier):
        self.b.create(ir.NBarrierArriveOp, nb.handle)

    def nbarrier_wait(self, nb: nbarrier):
        self.b.create(ir.NBarrierWaitOp, nb.handle)

    def compile_hint(self, hint="scheduling_barrier"):
        hint = unwrap(hint)
        if hint != "scheduling_barrier":
            raise SemanticError(f"compile_hint({hint!r}): the only hint is 'scheduling_barrier'")
        self.b.create(ir.CompileHintOp, hint)
