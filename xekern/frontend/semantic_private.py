"""Semantic rules for private memory (seed 003's ``private(...)`` memory attribution): arrays of one
work item in lane-level kernels, ``xl.alloc_private`` and element reads and writes ``buf[i]``."""
from __future__ import annotations

from .. import ir
from ..ir import types as T
from ..ir.types import DType, PrivateArrayType
from ..language.core import private_array, tensor, unwrap
from .semantic import SemanticError


class PrivateSemantic:
    def alloc_private(self, shape, dtype) -> private_array:
        """``xl.alloc_private(shape, dtype)``: declared at the kernel's top level (seed 003 attributes
        private memory to the function: it lives for the whole kernel), counted against the target's
        ``private_bytes`` per work item."""
        self.require_level("xl.alloc_private", "lane",
                           hint="; a workgroup or subgroup tile already lives in the registers of the work items "
                                "holding it (make one with xl.zeros / xl.full); private arrays are per work item")
        if not isinstance(self.b.block.parent, ir.FuncOp):
            raise SemanticError("xl.alloc_private must be called at the top level of the kernel, not inside a loop "
                                "or a branch: private memory belongs to the kernel (seed 003's gpu.func private(...) "
                                "attribution) and lives for all of it")
        shape = unwrap(shape)
        shape = tuple(unwrap(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
            raise SemanticError(f"private array shape {list(shape)} must be positive compile-time integers")
        dtype = unwrap(dtype)
        if not isinstance(dtype, DType):
            raise SemanticError(f"dtype must be an xl dtype, got {dtype!r}")
        t = PrivateArrayType(shape, dtype)
        target = self.options.target
        self.private_bytes = getattr(self, "private_bytes", 0) + t.nbytes
        if self.private_bytes > target.private_bytes:
            raise SemanticError(f"private memory use {self.private_bytes} bytes per work item (this array: "
                                f"{list(shape)} x {dtype.user_name}, {t.nbytes} bytes) exceeds the {target.name} "
                                f"limit of {target.private_bytes} bytes (Target.private_bytes: the GPU compiler's "
                                f"scratch space per hardware thread over its {target.sg_size} lanes)")
        return private_array(self.b(ir.AllocPrivateOp, t))

    def _private_indices(self, arr: private_array, index) -> list:
        index = unwrap(index)
        idx = list(index) if isinstance(index, (tuple, list)) else [index]
        shape = arr.shape
        if len(idx) != len(shape):
            raise SemanticError(f"a private array of shape {list(shape)} takes {len(shape)} indices, got {len(idx)}")
        out = []
        for d, (i, n) in enumerate(zip(idx, shape)):
            i = unwrap(i)
            if isinstance(i, int) and not isinstance(i, bool) and not 0 <= i < n:
                raise SemanticError(f"index {i} is out of bounds for dimension {d} of size {n} of the private "
                                    f"array {list(shape)}")
            t = self.to_tensor(i, T.int32)
            if not isinstance(t, tensor) or t.is_tile or not t.dtype.is_int or t.dtype.is_bool:
                raise SemanticError(f"private array indices are integer scalars, got {t.type}")
            out.append((self.cast(t, T.int32) if t.dtype != T.int32 else t).handle)
        return out

    def private_load(self, arr: private_array, index) -> tensor:
        """``buf[i, ...]``: one element. Runtime indices are not checked (like C): out of bounds reads
        another private value or garbage."""
        return self.op(ir.PrivateLoadOp, arr.handle, self._private_indices(arr, index))

    def private_store(self, arr: private_array, index, value) -> None:
        """``buf[i, ...] = value``: the value is converted to the array's dtype like a store."""
        idx = self._private_indices(arr, index)
        v = self.to_tensor(value, arr.dtype)
        if v.is_tile:
            raise SemanticError(f"a private array element is a scalar; got a tile {v.type}")
        v = self.cast(v, arr.dtype)
        self.b.create(ir.PrivateStoreOp, v.handle, arr.handle, idx)
