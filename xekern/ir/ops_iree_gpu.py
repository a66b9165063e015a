"""iree_gpu ops (seed 002): values exchanged or synchronized by all the workers of a workgroup.

``iree_gpu.shuffle_tensor`` redistributes a tile through a shared allocation: every subgroup writes
the pieces it holds (the source's layout) into the workgroup's SLM matrix, a barrier, every subgroup
reads the pieces the result's layout gives it, a barrier (so the matrix may be written again). The
seed's op inserts a slice and reads through a region; here the intermediate is the whole tile, so
the op is ``source -> mem -> result`` with the result's layout saying who reads what::

    %5 = iree_gpu.shuffle_tensor %3, %4 {layout = #xegpu.layout<...>}
         : (vector<16x64xf32>, !xegpu.mem_desc<16x64xf32>) -> vector<16x64xf32>

``iree_gpu.value_barrier`` returns its operands unchanged once every work item of the workgroup has
produced them (and finished its memory accesses before): a ``gpu.barrier`` ordering the operands'
producers before the results' users, which codegen emits where the op stands.

Both are workgroup-level: ``wg-to-sg`` lowers shuffle_tensor to ``xegpu.store_matrix`` /
``gpu.barrier`` / ``xegpu.load_matrix`` / ``gpu.barrier``; value_barrier is split with its operands
by every pass and becomes the barrier in codegen.
"""
from __future__ import annotations

from typing import Sequence

from .core import IRError, Op, Value
from .attrs import USER_LAYOUT
from .types import MemDescType, VectorType


class ShuffleTensorOp(Op):
    """``iree_gpu.shuffle_tensor %source, %mem``: ``source`` written to the SLM matrix ``mem`` by the
    subgroups holding it, read back in the result's layout (``attrs["layout"]``, the user's)."""

    NAME = "iree_gpu.shuffle_tensor"
    HAS_SIDE_EFFECTS = True   # it writes the shared matrix and synchronizes the workgroup
    ATTRS = (USER_LAYOUT,)

    def __init__(self, source: Value, mem: Value, type: VectorType, loc=None):
        super().__init__([source, mem], [type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def mem(self) -> Value:
        return self.operands[1]

    def verify(self):
        s, m, r = self.source.type, self.mem.type, self.result.type
        if not isinstance(s, VectorType) or not isinstance(r, VectorType):
            raise IRError(f"shuffle_tensor moves a tile to a tile, got {s} -> {r}", self)
        if not isinstance(m, MemDescType):
            raise IRError(f"the intermediate must be an SLM matrix (seed 002: a shared allocation), got {m}", self)
        if tuple(s.shape) != tuple(r.shape) or s.elem != r.elem:
            raise IRError(f"the result {r} must have the source's shape and element type ({s})", self)
        if tuple(m.shape) != tuple(s.shape) or m.elem != s.elem:
            raise IRError(f"the SLM matrix {m} must hold the whole tile {s} (seed 002: the source must be "
                          f"in bounds of the intermediate)", self)


class ValueBarrierOp(Op):
    """``iree_gpu.value_barrier %a, %b, ...``: the operands, unchanged, once every work item of the
    workgroup has produced them."""

    NAME = "iree_gpu.value_barrier"
    HAS_SIDE_EFFECTS = True   # a workgroup barrier: never removed, never moved

    def __init__(self, values: Sequence[Value], loc=None):
        super().__init__(list(values), [v.type for v in values], loc=loc)

    def verify(self):
        if not self.operands:
            raise IRError("value_barrier needs at least one value", self)
        for v, r in zip(self.operands, self.results):
            if v.type != r.type:
                raise IRError(f"each result has its operand's type (seed 002: a value equivalent to the "
                              f"input), got {v.type} -> {r.type}", self)
