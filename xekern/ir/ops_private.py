"""Private memory (seed 003's ``private(...)`` memory attribution of ``gpu.func``): arrays of one
work item, live for the whole kernel, indexed with runtime values.

``gpu.alloc_private`` declares one; codegen makes it an ``alloca`` in the kernel's entry block (LLVM's
private address space, SPIR-V ``Function`` storage), wherever the op stands, so it is allocated once
per work item for the whole kernel. ``memref.load`` / ``memref.store`` access one element at i32
indices, one per dimension (row-major)::

    %0 = gpu.alloc_private : memref<16xf32, #gpu.address_space<private>>
    memref.store %v, %0, %i : f32, memref<16xf32, #gpu.address_space<private>>, i32
    %2 = memref.load %0, %j : (memref<16xf32, #gpu.address_space<private>>, i32) -> f32

Lane level only: a workgroup or subgroup tile is already spread over the work items' registers.
"""
from __future__ import annotations

from typing import Sequence

from .core import IRError, Op, Value
from .types import DType, PrivateArrayType, int32


class AllocPrivateOp(Op):
    """``gpu.alloc_private``: one private array of each work item (``xl.alloc_private``)."""

    NAME = "gpu.alloc_private"
    HAS_SIDE_EFFECTS = True   # its memory is the kernel's: never removed even if unused

    def __init__(self, type: PrivateArrayType, loc=None):
        super().__init__([], [type], loc=loc)

    def verify(self):
        t = self.result.type
        if not isinstance(t, PrivateArrayType) or not t.shape or any(s <= 0 for s in t.shape):
            raise IRError(f"a private array has a positive static shape, got {t}", self)


def _check_indices(op: Op, arr: Value, indices: Sequence[Value]) -> PrivateArrayType:
    t = arr.type
    if not isinstance(t, PrivateArrayType):
        raise IRError(f"expected a private array, got {t}", op)
    if len(indices) != len(t.shape):
        raise IRError(f"{t} takes {len(t.shape)} indices, got {len(indices)}", op)
    for v in indices:
        if v.type != int32:
            raise IRError(f"private array indices are i32, got {v.type}", op)
    return t


class PrivateLoadOp(Op):
    """``memref.load %arr, %i, ...``: one element of a private array."""

    NAME = "memref.load"

    def __init__(self, arr: Value, indices: Sequence[Value], loc=None):
        super().__init__([arr, *indices], [arr.type.elem], loc=loc)

    def verify(self):
        t = _check_indices(self, self.operands[0], self.operands[1:])
        if self.result.type != t.elem:
            raise IRError(f"loads {t.elem}, not {self.result.type}", self)


class PrivateStoreOp(Op):
    """``memref.store %value, %arr, %i, ...``: write one element of a private array."""

    NAME = "memref.store"
    HAS_SIDE_EFFECTS = True

    def __init__(self, value: Value, arr: Value, indices: Sequence[Value], loc=None):
        super().__init__([value, arr, *indices], [], loc=loc)

    def verify(self):
        t = _check_indices(self, self.operands[1], self.operands[2:])
        if not isinstance(self.operands[0].type, DType) or self.operands[0].type != t.elem:
            raise IRError(f"stores a {t.elem} scalar into {t}, got {self.operands[0].type}", self)
