"""Tensor descriptors of 3 to 5 dimensions (Triton's ``make_tensor_descriptor`` of any rank).

XeGPU's block messages are 2-D, so an N-D descriptor is its base pointer, its leading shape and
strides, and a 2-D descriptor of the last two dimensions: ``load([i, j, r, c])`` makes, for each
position of the block along the leading dimensions, a 2-D descriptor at ``base + i * s0 + j * s1``
(with zero rows when that position is outside the tensor: its load pads with zero and its store
writes nothing, as a 2-D block past an edge does) and loads the ``(BR, BC)`` block there. A block
whose leading dimensions are 1 (a batched GEMM's ``(1, BM, BK)``) is that one load; larger ones are
stacked by selects (and split the same way for stores: a sum of the selected block with ``-0.0``
elsewhere, exact for every value).

    d = xl.make_tensor_descriptor(a_ptr, shape=(B, M, K), strides=(M * K, K, 1), block_shape=(1, BM, BK))
    a = d.load([b, m0, k0]).reshape(BM, BK)
"""
from __future__ import annotations

import itertools

from ..ir import types as T
from ..language.core import base_value, builtin, tensor, unwrap
from .semantic import SemanticError


class nd_descriptor(base_value):
    """A tensor descriptor of rank 3 to 5 (see the module docstring)."""

    def __init__(self, base: tensor, shape, lead_strides, row_stride, block_shape, dims):
        self.base = base
        self.lead_shape = list(shape[:-2])       # int32 scalars
        self.lead_strides = list(lead_strides)   # int64 scalars
        self.inner_shape = list(shape[-2:])      # int32 scalars
        self.row_stride = row_stride             # int32 scalar (the last stride is the constant 1)
        self.block_shape = tuple(block_shape)
        self._dims = dims

    @property
    def dtype(self):
        return self.base.dtype.elem

    @property
    def shape(self):
        return self._dims[0]

    @property
    def strides(self):
        return self._dims[1]

    def flatten(self):
        return [v.handle for v in [self.base] + self.lead_shape + self.lead_strides + self.inner_shape +
                [self.row_stride]]

    def rebuild(self, handles):
        n = len(self.lead_shape)
        t = [tensor(h) for h in handles]
        return nd_descriptor(t[0], t[1:1 + n] + t[1 + 2 * n:3 + 2 * n], t[1 + n:1 + 2 * n], t[3 + 2 * n],
                             self.block_shape, self._dims)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{len(self.block_shape)}-D, block {list(self.block_shape)} of {self.dtype}>"

    @builtin
    def load(self, offsets=None, padding_option="zero", cache_modifier="", _sem=None):
        return _sem.load_nd_n(self, offsets, padding_option=unwrap(padding_option))

    @builtin
    def store(self, offsets, value=None, cache_modifier="", _sem=None):
        return _sem.store_nd_n(self, offsets, value)


class NdDescriptorSemantic:
    def make_nd_descriptor(self, base, shape, strides, block) -> nd_descriptor:
        rank = len(block)
        shp = self._index_list(shape, rank, "shape")
        strides = unwrap(strides)
        if not isinstance(strides, (tuple, list)) or len(strides) != rank:
            raise SemanticError(f"strides needs {rank} values")
        if unwrap(strides[-1]) != 1:
            raise SemanticError("the innermost stride must be the constant 1 (XeGPU block loads read rows of "
                                "contiguous elements)")
        lead = [self.cast(self._index(s, "strides"), T.int64) for s in strides[:-2]]
        given = unwrap(shape) if isinstance(unwrap(shape), (tuple, list)) else (shape,)
        return nd_descriptor(base, shp, lead, self._index(strides[-2], "strides"), block,
                             (tuple(unwrap(v) for v in given), tuple(unwrap(v) for v in strides)))

    def _nd_pieces(self, d: nd_descriptor, offsets):
        """([(leading block position, its 2-D descriptor)] for every position of the block along the
        leading dimensions, the row and column offsets)."""
        rank = len(d.block_shape)
        offs = self._index_list(offsets if offsets is not None else [0] * rank, rank, "offsets")
        out = []
        for pos in itertools.product(*(range(b) for b in d.block_shape[:-2])):
            ptr, inside = d.base, None
            for k, (o, n, s) in enumerate(zip(offs, d.lead_shape, d.lead_strides)):
                i = self.binary("add", o, pos[k])
                ok = self.binary("and", self.compare("ge", i, 0), self.compare("lt", i, n))
                inside = ok if inside is None else self.binary("and", inside, ok)
                ptr = self.binary("add", ptr, self.binary("mul", self.cast(i, T.int64), s))
            rows = self.where(inside, d.inner_shape[0], self.const(0, T.int32))
            desc = self.make_tensor_descriptor(ptr, [rows, d.inner_shape[1]], [d.row_stride, 1], d.block_shape[-2:])
            out.append((pos, desc))
        return out, offs[-2:]

    def _lead_index(self, block, k: int) -> tensor:
        """The block's index along leading dimension ``k``, broadcast to the block's shape."""
        idx = self.arange(0, block[k])
        for _ in range(k):
            idx = self.expand_dims(idx, 0)
        while len(idx.shape) < len(block):
            idx = self.expand_dims(idx, len(idx.shape))
        return self.broadcast_to(idx, block)

    def _at(self, block, pos) -> tensor:
        """Whether an element of a ``block``-shaped tile lies at leading position ``pos``."""
        hit = None
        for k, p in enumerate(pos):
            if block[k] == 1:
                continue
            h = self.compare("eq", self._lead_index(block, k), p)
            hit = h if hit is None else self.binary("and", hit, h)
        return hit

    def load_nd_n(self, d: nd_descriptor, offsets, padding_option="zero"):
        if padding_option not in ("zero", None, ""):
            raise SemanticError(f"padding_option {padding_option!r}: descriptor loads pad with zero")
        pieces, inner = self._nd_pieces(d, offsets)
        block, out = d.block_shape, None
        for pos, desc in pieces:
            piece = self.load_nd(desc, inner)
            for _ in range(len(block) - 2):   # (one unit dimension at a time: each a plain shape cast)
                piece = self.expand_dims(piece, 0)
            piece = self.broadcast_to(piece, block)
            out = piece if out is None else self.where(self._at(block, pos), piece, out)
        return out

    def store_nd_n(self, d: nd_descriptor, offsets, value):
        if value is None:
            offsets, value = None, offsets
        self.check_writable(d.base, "a descriptor store")
        block = d.block_shape
        v = self.to_tensor(value, d.dtype)
        if v.is_tile and tuple(v.shape) != tuple(block):
            raise SemanticError(f"storing a tile of shape {list(v.shape)} through a descriptor with block "
                                f"{list(block)}")
        v = self.broadcast_to(self.cast(v, d.dtype), block)
        pieces, inner = self._nd_pieces(d, offsets)
        lead = list(range(len(block) - 2))
        zero = self.const(-0.0 if d.dtype.is_floating else 0, d.dtype)
        for pos, desc in pieces:
            hit = self._at(block, pos)
            piece = v if hit is None else self.where(hit, v, zero)
            for k in reversed(lead):
                piece = self.reduce(piece, k, "sum") if block[k] > 1 else self.reshape(
                    piece, piece.shape[:k] + piece.shape[k + 1:])
            self.store_nd(desc, inner, piece)
