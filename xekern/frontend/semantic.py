"""The semantic layer: checks types and shapes of kernel operations and builds workgroup IR.

Builtins in ``xekern.language`` only unwrap their arguments and call into this class. Type
rules follow Triton's so that ported kernels behave the same: Python numbers are "weak" and
take the other operand's type, mixed ints promote C-style, integer ``//`` and ``%`` truncate
toward zero, ``/`` on integers gives float32, and shapes broadcast NumPy-style.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

from .. import ir
from ..ir import types as T
from ..ir.types import DType, MemDescType, PointerType, VectorType
from ..language.core import MAX_LANE_NUMEL, MAX_TILE_NUMEL, mem_desc, pointer_tile, tensor, unwrap

MAX_KERNEL_OPS = 100_000   # operations the frontend builds for one kernel (bounds the compile)


class SemanticError(Exception):
    """A user mistake found while building IR; the frontend adds the source location."""


_OP_SYMBOL = {"truediv": "/", "floordiv": "//", "mod": "%"}


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _np_dtype_name(d) -> str:
    return d.user_name if isinstance(d, DType) else str(d)


class ArithSemantic:
    """Scalars and tiles: constants, casts, broadcasting, arithmetic, comparisons, math."""

    def __init__(self, builder: ir.Builder, options):
        self.b = builder
        self.options = options
        self.level = getattr(options, "level", "wg")

    LEVEL_NAMES = {"wg": "workgroup", "sg": "subgroup", "lane": "lane"}

    def require_level(self, what: str, *levels: str, hint: str = "") -> None:
        """A builtin that exists only at some programming levels (``@xk.jit(level=...)``)."""
        if self.level not in levels:
            names = " or ".join(self.LEVEL_NAMES[lv] for lv in levels)
            raise SemanticError(f"{what} is a {names}-level operation; this kernel is written at "
                                f"{self.LEVEL_NAMES[self.level]} level (@xk.jit(level="
                                f"{self.LEVEL_NAMES[self.level]!r})){hint}")

    # ---- building blocks ------------------------------------------------------------------
    def op(self, cls, *args, **kw) -> tensor:
        self._ops += 1
        if self._ops > MAX_KERNEL_OPS:
            raise SemanticError(f"the kernel's IR passed {MAX_KERNEL_OPS} operations here (xl.static_range "
                                f"loops and Python loops over constants unroll into the IR); use range() for a "
                                f"loop that runs on the device, or a smaller unroll")
        v = self.b(cls, *args, **kw)
        t = getattr(v, "type", None)
        if isinstance(t, VectorType) and len(t.shape) and math.prod(t.shape) > self._small_tile:
            self._check_tile_size(t)
        return tensor(v)

    _small_tile = 512   # (tiles up to this size pass every limit on every target: no check)
    _ops = 0

    def _check_tile_size(self, t: VectorType) -> None:
        """Refuse, at the op that makes it, a tile no compile could finish: more than MAX_TILE_NUMEL
        elements, or more than MAX_LANE_NUMEL per lane of the workgroup (each is unrolled code)."""
        n = math.prod(t.shape)
        if n > MAX_TILE_NUMEL:
            raise SemanticError(f"a tile of shape {list(t.shape)} has {n} elements; a tile may have at most "
                                f"{MAX_TILE_NUMEL} (xl.MAX_TILE_NUMEL, as Triton's TRITON_MAX_TENSOR_NUMEL)")
        groups = self.options.num_subgroups if self.level == "wg" else 1
        lanes = groups * self.options.target.sg_size
        if n > MAX_LANE_NUMEL * lanes:
            raise SemanticError(f"a tile of shape {list(t.shape)} gives each of the {lanes} lanes ({groups} "
                                f"subgroup(s) x {self.options.target.sg_size}) {n // lanes} elements; a kernel may "
                                f"hold at most {MAX_LANE_NUMEL} per lane (xl.MAX_LANE_NUMEL: each element is unrolled "
                                f"code, so this bounds the compile); use a smaller block or more subgroups "
                                f"(@xk.jit(num_subgroups=...))")

    def const(self, value, dtype: DType, shape=()) -> tensor:
        if dtype.is_bool:
            value = bool(value)
        elif dtype.is_int:
            value = int(value)
            lo, hi = (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if dtype.is_signed else \
                (0, (1 << dtype.bits) - 1)
            if not lo <= value <= hi:
                value = ((value - lo) % (1 << dtype.bits)) + lo  # wrap like C
        else:
            value = float(value)
        t = VectorType(tuple(shape), dtype) if shape else dtype
        return self.op(ir.ConstantOp, value, t)

    @staticmethod
    def python_dtype(value) -> DType:
        if isinstance(value, bool):
            return T.int1
        if isinstance(value, int):
            if -(1 << 31) <= value < (1 << 31):
                return T.int32
            if -(1 << 63) <= value < (1 << 63):
                return T.int64
            if 0 <= value < (1 << 64):
                return T.uint64
            raise SemanticError(f"integer constant {value} does not fit in 64 bits")
        if isinstance(value, float):
            return T.float32
        raise SemanticError(f"{type(value).__name__} value {value!r} cannot be used as a kernel value "
                            f"(only numbers, tensors and pointers can)")

    def to_tensor(self, x, hint: Optional[DType] = None) -> tensor:
        """``x`` as a tensor; a Python number becomes a constant (of ``hint`` when given)."""
        x = unwrap(x)
        if isinstance(x, tensor):
            return x
        if isinstance(x, pointer_tile):
            raise SemanticError("a tile of pointers cannot be used as a number here")
        if isinstance(x, (bool, int, float)):
            return self.const(x, hint or self.python_dtype(x))
        raise SemanticError(f"expected a tensor or a number, got {type(x).__name__} {x!r}")

    # ---- shapes ---------------------------------------------------------------------------------
    def check_shape(self, shape: Sequence[int], what: str = "tile") -> tuple:
        shape = tuple(unwrap(s) for s in shape)
        for s in shape:
            if not isinstance(s, int) or isinstance(s, bool):
                raise SemanticError(f"{what} shape {list(shape)} must be compile-time integers "
                                    f"(declare the sizes as xl.constexpr)")
            if not _is_pow2(s):
                raise SemanticError(f"{what} shape {list(shape)}: every dimension must be a power of 2")
        return shape

    def splat(self, x: tensor, shape) -> tensor:
        if x.shape == tuple(shape):
            return x
        if x.is_tile:
            return self.broadcast_to(x, shape)
        return self.op(ir.BroadcastOp, x.handle, VectorType(tuple(shape), x.dtype))

    def expand_dims(self, x: tensor, axis: int) -> tensor:
        if isinstance(unwrap(x), pointer_tile):   # a tile of pointers: its offsets (``ptr[:, None]`` too)
            p = unwrap(x)
            return pointer_tile(p.base, self.expand_dims(p.offsets, axis))
        x = self.to_tensor(x)
        if not x.is_tile:  # a scalar becomes a one-element tile
            if unwrap(axis) not in (0, -1):
                raise SemanticError(f"axis {unwrap(axis)} is out of range for a scalar")
            return self.splat(x, (1,))
        rank = len(x.shape) + 1
        axis = unwrap(axis)
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise SemanticError(f"axis {axis} is out of range for a result of rank {rank}")
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        return self.op(ir.ShapeCastOp, x.handle, VectorType(shape, x.dtype))

    def reshape(self, x: tensor, shape) -> tensor:
        shape = tuple(shape)
        if [d for d in x.shape if d != 1] != [d for d in shape if d != 1]:
            if x.is_tile and len(shape) == len(x.shape) + 1 and shape[:-2] == x.shape[:-1] \
                    and shape[-2] * shape[-1] == x.shape[-1] and shape[-2] <= 16:
                return self._split_last_dim(x, shape)
            if x.is_tile and math.prod(shape) == math.prod(x.shape) and all(d > 0 for d in shape):
                return self._reshape_through_slm(x, shape)
            raise SemanticError(f"reshape {list(x.shape)} -> {list(shape)}: the number of elements differs "
                                f"({math.prod(x.shape)} and {math.prod(shape)})")
        if shape == x.shape:
            return x
        src = x.handle.op
        if isinstance(src, ir.ShapeCastOp) and isinstance(src.operands[0].type, VectorType) and \
                tuple(src.operands[0].type.shape) == shape:
            return tensor(src.operands[0])   # (a unit dimension added and taken away again)
        if not shape:
            return self.op(ir.ShapeCastOp, x.handle, x.dtype)
        if not x.is_tile:
            x = self.splat(x, (1,))
        if math.prod(shape) > 1 and sum(d == 1 for d in shape) + sum(d == 1 for d in x.shape) > 1:
            # several unit dimensions: one shape cast per dimension (the layout rules relate a cast
            # that inserts or drops one): drop x's, then insert the new shape's
            while 1 in x.shape:
                k = x.shape.index(1)
                x = self.op(ir.ShapeCastOp, x.handle, VectorType(x.shape[:k] + x.shape[k + 1:], x.dtype))
            for k, d in enumerate(shape):
                if d == 1:
                    x = self.op(ir.ShapeCastOp, x.handle, VectorType(x.shape[:k] + (1,) + x.shape[k:], x.dtype))
            return x
        return self.op(ir.ShapeCastOp, x.handle, VectorType(shape, x.dtype))

    def _reshape_through_slm(self, x: tensor, shape) -> tensor:
        """Any reshape (the same elements in row-major order): the tile is stored into shared local
        memory as a row-major matrix of its shape and loaded back through a view of the same bytes
        as one of the new shape (``xegpu.mem_desc_view``), a barrier between (and one before, for a
        reshape in a loop whose earlier loads must be done)."""
        self.require_level("a reshape that moves elements between dimensions", "wg", "sg")
        if isinstance(x.dtype, T.PointerType):
            raise SemanticError("reshape of a tile of pointers is not supported; reshape the offsets")
        m = self.alloc_slm(x.shape, x.dtype)
        view = mem_desc(self.b(ir.MemDescViewOp, m.handle, MemDescType(tuple(shape), x.dtype)))
        self.barrier()
        self.store_matrix(m, [0] * len(x.shape), x)
        self.barrier()
        return self.load_matrix(view, [0] * len(shape), tuple(shape))

    def _split_last_dim(self, x: tensor, shape) -> tensor:
        """``(..., N) -> (..., A, B)`` through shared local memory: the tile is stored, each
        ``(..., B)`` column block is loaded back and they are stacked along the new axis by selects
        (no register-only rearrangement exists for a row split across lanes in every layout)."""
        if isinstance(x.dtype, T.PointerType):
            raise SemanticError("reshape of a tile of pointers is not supported; reshape the offsets")
        a, b = shape[-2], shape[-1]
        m = self.alloc_slm(x.shape, x.dtype)
        zeros = [0] * len(x.shape)
        self.barrier()  # earlier readers of this buffer (a reshape in a loop) are done
        self.store_matrix(m, zeros, x)
        self.barrier()
        idx = self.arange(0, a)
        idx = self.expand_dims(idx, 1)
        for _ in range(len(shape) - 2):
            idx = self.expand_dims(idx, 0)
        out = None
        for i in range(a):
            piece = self.load_matrix(m, zeros[:-1] + [i * b], x.shape[:-1] + (b,))
            piece = self.broadcast_to(self.expand_dims(piece, len(shape) - 2), shape)
            if out is None:
                out = piece
            else:
                out = self.where(self.broadcast_to(self.compare("eq", idx, i), shape), piece, out)
        return out

    def broadcast_to(self, x: tensor, shape) -> tensor:
        x = self.to_tensor(x)
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not x.is_tile:
            return self.op(ir.BroadcastOp, x.handle, VectorType(shape, x.dtype))
        if len(x.shape) > len(shape):
            raise SemanticError(f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
        while len(x.shape) < len(shape):
            x = self.expand_dims(x, 0)
        for a, b in zip(x.shape, shape):
            if a != b and a != 1:
                raise SemanticError(f"cannot broadcast shape {list(x.shape)} to {list(shape)}: "
                                    f"dimensions {a} and {b} differ")
        return self.op(ir.BroadcastOp, x.handle, VectorType(shape, x.dtype))

    @staticmethod
    def broadcast_shapes(a, b) -> tuple:
        ra, rb = list(a), list(b)
        while len(ra) < len(rb):
            ra.insert(0, 1)
        while len(rb) < len(ra):
            rb.insert(0, 1)
        out = []
        for x, y in zip(ra, rb):
            if x != y and 1 not in (x, y):
                raise SemanticError(f"incompatible shapes {list(a)} and {list(b)} (dimensions {x} and {y})")
            out.append(max(x, y))
        return tuple(out)

    def broadcast_pair(self, a: tensor, b: tensor):
        if a.shape == b.shape:
            return a, b
        shape = self.broadcast_shapes(a.shape, b.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    # ---- types ----------------------------------------------------------------------------------
    @staticmethod
    def promote(a: DType, b: DType, div_or_mod: bool = False) -> DType:
        """Triton's computation type of ``a <op> b``: f64, then f32; float16 with another narrow float
        is float16, bfloat16 with fp8 float32, two fp8 formats float16 (``/`` and ``%`` of narrow
        floats: float32)."""
        if a == b and not (div_or_mod and a.computed_in_f32):
            return a
        if T.float64 in (a, b):
            return T.float64
        if T.float32 in (a, b):
            return T.float32
        if a.is_floating or b.is_floating:
            fa = a if a.is_floating else b
            fb = b if b.is_floating else a
            if div_or_mod:
                return T.float32
            if fa.is_floating and fb.is_floating and fa != fb:
                if T.float16 in (fa, fb):
                    return T.float16
                return T.float32 if T.bfloat16 in (fa, fb) else T.float16
            return fa
        if a.is_bool and b.is_bool:
            return T.int1
        if a.is_bool:
            return b
        if b.is_bool:
            return a
        if a.is_signed == b.is_signed:
            return a if a.bits >= b.bits else b
        s, u = (a, b) if a.is_signed else (b, a)
        return u if u.bits >= s.bits else s

    def _weak_operands(self, a, b):
        """Tensors for ``a`` and ``b``; a Python number takes the other side's type where it fits."""
        a, b = unwrap(a), unwrap(b)
        ta = a if isinstance(a, tensor) else None
        tb = b if isinstance(b, tensor) else None
        if ta is None and tb is None:
            return self.to_tensor(a), self.to_tensor(b)
        if ta is None:
            return self._weak(a, tb.dtype), tb
        if tb is None:
            return ta, self._weak(b, ta.dtype)
        return ta, tb

    def _weak(self, v, other: DType) -> tensor:
        if isinstance(v, bool):
            return self.const(v, T.int1 if other.is_bool else other)
        if isinstance(v, int) and not other.is_bool:
            if other.is_floating:
                return self.const(v, other)
            lo, hi = (-(1 << (other.bits - 1)), (1 << (other.bits - 1)) - 1) if other.is_signed else \
                (0, (1 << other.bits) - 1)
            if lo <= v <= hi:
                return self.const(v, other)
            return self.to_tensor(v)
        if isinstance(v, float) and other.is_floating:
            return self.const(v, other)
        return self.to_tensor(v)

    def cast(self, x, dtype, bitcast: bool = False) -> tensor:
        """``x.to(dtype)``; a pointer (or tile of them) to an ``xl.pointer_type``."""
        if isinstance(dtype, PointerType) or isinstance(unwrap(x), pointer_tile):
            return self.pointer_cast(unwrap(x), dtype)
        x = self.to_tensor(x)
        if not isinstance(dtype, DType):
            raise SemanticError(f"to() needs an xl dtype such as xl.float32, got {dtype!r}")
        src = x.dtype
        if isinstance(src, PointerType):
            raise SemanticError("a pointer converts only to another pointer type: p.to(xl.pointer_type(xl.uint8))")
        if src == dtype:
            return x
        if bitcast:
            if src.bits != dtype.bits:
                raise SemanticError(f"bitcast needs equal widths: {src.user_name} has {src.bits} bits, "
                                    f"{dtype.user_name} has {dtype.bits}")
            return self.op(ir.CastOp, "bitcast", x.handle, dtype)
        if dtype.is_bool:
            return self.compare("ne", x, 0)
        kind = ir.cast_kind(src, dtype)
        if kind == "viaf32":
            return self.cast(self.cast(x, T.float32), dtype)
        if src.is_bool and dtype.is_floating:
            kind = "uitofp"
        return self.op(ir.CastOp, kind, x.handle, dtype)

    # ---- arithmetic -----------------------------------------------------------------------------
    _INT_KIND = {"add": "addi", "sub": "subi", "mul": "muli", "and": "andi", "or": "ori", "xor": "xori",
                 "lshift": "shli"}
    _FLOAT_KIND = {"add": "addf", "sub": "subf", "mul": "mulf"}

    def binary(self, opname: str, a, b) -> tensor:
        """``a <opname> b`` for opname in add sub mul truediv floordiv mod and or xor lshift rshift pow."""
        ua, ub = unwrap(a), unwrap(b)
        if isinstance(ua, pointer_tile) or isinstance(ub, pointer_tile) or self._is_ptr(ua) or self._is_ptr(ub):
            return self.pointer_arith(opname, ua, ub)
        div_or_mod = opname in ("truediv", "floordiv", "mod")
        ta, tb = self._weak_operands(ua, ub)
        if div_or_mod and ta.dtype.is_int and tb.dtype.is_int and not (ta.dtype.is_bool or tb.dtype.is_bool) \
                and ta.dtype.is_signed != tb.dtype.is_signed:
            raise SemanticError(f"'{_OP_SYMBOL[opname]}' between {_np_dtype_name(ta.dtype)} and "
                                f"{_np_dtype_name(tb.dtype)}: the operands have different signedness, which is "
                                f"unlikely to give a useful answer (Triton rejects it too); cast one of them with "
                                f".to(...) first")
        # Triton shifts right by the left operand's own signedness, whatever the promoted type
        arith_shift = opname == "rshift" and isinstance(ua, tensor) and ta.dtype.is_int and ta.dtype.is_signed
        dt = self.promote(ta.dtype, tb.dtype, div_or_mod)
        if opname == "truediv" and dt.is_int:
            dt = T.float32
        if opname in ("and", "or", "xor", "lshift", "rshift") and dt.is_floating:
            raise SemanticError(f"bitwise '{opname}' needs integer operands, got "
                                f"{_np_dtype_name(ta.dtype)} and {_np_dtype_name(tb.dtype)}")
        ta, tb = self.cast(ta, dt), self.cast(tb, dt)
        ta, tb = self.broadcast_pair(ta, tb)
        if arith_shift and not dt.is_signed:
            return self.op(ir.BinaryOp, "shrsi", ta.handle, tb.handle)
        return self._binary_same(opname, ta, tb, dt)

    def _binary_same(self, opname: str, ta: tensor, tb: tensor, dt: DType) -> tensor:
        h = (ta.handle, tb.handle)
        if opname == "pow":
            if not dt.is_floating:
                raise SemanticError("** needs floating-point operands; convert with .to(xl.float32)")
            return self.op(ir.BinaryOp, "powf", *h)
        if dt.is_floating:
            if opname in self._FLOAT_KIND:
                return self.op(ir.BinaryOp, self._FLOAT_KIND[opname], *h)
            if opname == "truediv":
                return self.op(ir.BinaryOp, "divf", *h)
            if opname == "floordiv":
                return self.op(ir.UnaryOp, "floor", self.op(ir.BinaryOp, "divf", *h).handle)
            if opname == "mod":
                return self.op(ir.BinaryOp, "remf", *h)
        else:
            if opname in self._INT_KIND:
                return self.op(ir.BinaryOp, self._INT_KIND[opname], *h)
            signed = dt.is_signed
            if opname == "floordiv":
                return self.op(ir.BinaryOp, "divsi" if signed else "divui", *h)
            if opname == "mod":
                return self.op(ir.BinaryOp, "remsi" if signed else "remui", *h)
            if opname == "rshift":
                return self.op(ir.BinaryOp, "shrsi" if signed else "shrui", *h)
        raise SemanticError(f"operator '{opname}' is not supported for {_np_dtype_name(dt)}")

    _CMP = {"lt": ("olt", "slt", "ult"), "le": ("ole", "sle", "ule"), "gt": ("ogt", "sgt", "ugt"),
            "ge": ("oge", "sge", "uge"), "eq": ("oeq", "eq", "eq"), "ne": ("une", "ne", "ne")}

    def compare(self, opname: str, a, b) -> tensor:
        ua, ub = unwrap(a), unwrap(b)
        if isinstance(ua, pointer_tile) or isinstance(ub, pointer_tile) or self._is_ptr(ua) or self._is_ptr(ub):
            raise SemanticError("pointers cannot be compared; compare their offsets instead")
        ta, tb = self._weak_operands(ua, ub)
        dt = self.promote(ta.dtype, tb.dtype)
        ta, tb = self.broadcast_pair(self.cast(ta, dt), self.cast(tb, dt))
        f, s, u = self._CMP[opname]
        pred = f if dt.is_floating else (s if dt.is_signed else u)
        return self.op(ir.CmpOp, pred, ta.handle, tb.handle)

    def unary(self, opname: str, x) -> tensor:
        x = self.to_tensor(x)
        dt = x.dtype
        if isinstance(dt, PointerType):
            raise SemanticError(f"unary '{opname}' does not apply to pointers")
        if opname == "neg":
            if dt.is_floating:
                return self.op(ir.UnaryOp, "negf", x.handle)
            return self.binary("sub", self.const(0, dt, x.shape), x)
        if opname == "pos":
            return x
        if opname == "invert":
            if dt.is_floating:
                raise SemanticError("~ needs an integer or boolean operand")
            return self.binary("xor", x, self.const(-1 if not dt.is_bool else 1, dt, x.shape))
        if opname == "not":
            return self.compare("eq", x, 0) if not dt.is_bool else self.binary("xor", x, True)
        raise SemanticError(f"unsupported unary operator {opname}")

    def logical(self, opname: str, a, b) -> tensor:
        """``and`` / ``or`` of runtime values: both sides are evaluated and taken as booleans
        (``!= 0``); on tiles it is elementwise, as in Triton (``m = (r < M) and (c < N)``)."""
        ta, tb = self.to_tensor(a), self.to_tensor(b)
        return self.binary(opname, self.cast(ta, T.int1), self.cast(tb, T.int1))

    def static_assert(self, cond, msg) -> None:
        c, m = unwrap(cond), unwrap(msg)
        if isinstance(c, tensor):
            raise SemanticError("xl.static_assert needs a compile-time condition (constexpr arithmetic), got a "
                                "runtime value; use xl.device_assert for values known only when the kernel runs")
        if not c:
            raise SemanticError(f"static_assert failed: {m}" if m else "static_assert failed")

    def static_print(self, values) -> None:
        import sys
        parts = [f"{v.type}" if isinstance(v, tensor) else str(v) for v in (unwrap(x) for x in values)]
        print(*parts, file=sys.stderr)

    def hint(self, name: str, x, values):
        v = unwrap(values)
        vs = [unwrap(e) for e in v] if isinstance(v, (list, tuple)) else [v]
        if not all(isinstance(e, int) and not isinstance(e, bool) and e > 0 for e in vs):
            raise SemanticError(f"xl.{name}(x, values): values must be positive integer constants, got {v!r}")
        t = unwrap(x)
        if isinstance(t, tensor) and t.is_tile and len(vs) not in (1, len(t.shape)):
            raise SemanticError(f"xl.{name}(x, values): {len(vs)} values for a tile of rank {len(t.shape)}")
        return x

    def assume(self, cond) -> None:
        """``xl.assume(cond)``: a promise that the scalar ``cond`` holds. Nothing is emitted: the
        condition is checked for its type and dropped (unused IR is removed with it), which is
        always correct; LLVM and IGC derive the facts Triton passes through ``llvm.assume``
        (non-negative ids and strides) from the values themselves."""
        c = unwrap(cond)
        if not isinstance(c, tensor):
            if isinstance(c, (bool, int)) and not c:
                raise SemanticError("xl.assume(cond): cond is False at compile time")
            if not isinstance(c, (bool, int)):
                raise SemanticError(f"xl.assume needs a boolean condition, got {type(c).__name__} {c!r}")
            return None
        if c.is_tile or isinstance(c.dtype, PointerType) or not (c.dtype.is_bool or c.dtype.is_int):
            raise SemanticError(f"xl.assume needs a scalar boolean condition, got {c!r}")
        return None

    def inline_asm(self, asm, constraints, args, dtype, pure: bool, pack) -> tensor:
        """``xl.inline_asm_elementwise``: the vISA text on every element of ``args``."""
        emitter = getattr(self.options, "emitter", None)
        if emitter is None or not emitter.driver.inline_visa:
            where = f"target {self.options.target.name}" + (f" (driver {emitter.driver.name})" if emitter else "")
            raise SemanticError(f"inline_asm_elementwise: the assembly is Intel vISA text, which only Intel GPU "
                                f"drivers compile; {where} has no inline assembly (compile for a GPU target, "
                                f"e.g. compile_offline(..., target='pvc'))")
        if not isinstance(asm, str) or not isinstance(constraints, str):
            raise SemanticError("inline_asm_elementwise: asm and constraints must be strings")
        if isinstance(dtype, (tuple, list)) or not isinstance(dtype, DType):
            raise SemanticError(f"inline_asm_elementwise: dtype must be one dtype (one result), got {dtype!r}")
        if pack != 1:
            raise SemanticError(f"inline_asm_elementwise: pack={pack!r}; only pack=1 (vISA operands are whole "
                                f"variables of the subgroup's lanes, one element each)")
        vals = [self.to_tensor(a) for a in args]
        if not vals:
            raise SemanticError("inline_asm_elementwise needs at least one argument")
        n_out = sum(1 for c in constraints.split(",") if c.strip().startswith("="))
        if n_out != 1 or len(constraints.split(",")) != 1 + len(vals):
            raise SemanticError(f"inline_asm_elementwise: constraints {constraints!r} must name one output and "
                                f"one input per argument ({len(vals)}), e.g. '=rw' + ',rw' * {len(vals)}")
        shape = ()
        for v in vals:
            shape = self.broadcast_shapes(shape, v.shape)
        vals = [v if v.shape == shape else self.broadcast_to(v, list(shape)) for v in vals]
        t = VectorType(tuple(shape), dtype) if shape else dtype
        return self.op(ir.InlineAsmOp, asm, constraints, [v.handle for v in vals], t, pure)

    def where(self, cond, a, b) -> tensor:
        ua, ub = unwrap(a), unwrap(b)
        c = self.to_tensor(cond)
        if isinstance(ua, pointer_tile) or isinstance(ub, pointer_tile):
            return self.pointer_where(c, ua, ub)
        if c.dtype != T.int1:
            c = self.cast(c, T.int1)
        ta, tb = self._weak_operands(ua, ub)
        dt = self.promote(ta.dtype, tb.dtype)
        ta, tb = self.cast(ta, dt), self.cast(tb, dt)
        shape = self.broadcast_shapes(self.broadcast_shapes(ta.shape, tb.shape), c.shape)
        ta, tb, c = self.broadcast_to(ta, shape), self.broadcast_to(tb, shape), self.broadcast_to(c, shape)
        return self.op(ir.SelectOp, c.handle, ta.handle, tb.handle)

    _MATH_FLOAT_ONLY = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "floor",
                        "ceil", "erf"}

    def math(self, fn: str, x) -> tensor:
        x = self.to_tensor(x)
        dt = x.dtype
        if fn == "abs":
            if dt.is_floating:
                return self.op(ir.UnaryOp, "absf", x.handle)
            if dt.is_signed:
                return self.op(ir.UnaryOp, "absi", x.handle)
            return x
        if fn in self._MATH_FLOAT_ONLY:
            if not dt.is_floating:
                x = self.cast(x, T.float32)
            if x.dtype in (T.float16, T.bfloat16) and fn not in ("floor", "ceil"):
                # compute in f32 like Triton's libdevice path; round the result back
                return self.cast(self.op(ir.UnaryOp, fn, self.cast(x, T.float32).handle), x.dtype)
            return self.op(ir.UnaryOp, fn, x.handle)
        raise SemanticError(f"unknown math function {fn}")

    def float_of(self, x) -> tensor:
        """``x`` as a float tensor (integers and Python numbers become float32)."""
        x = self.to_tensor(x)
        return x if x.dtype.is_floating else self.cast(x, T.float32)

    def mulhi(self, a, b, signed: bool) -> tensor:
        """The high half of the 2N-bit product of two N-bit integers (``xl.math.umulhi``)."""
        ta, tb = self._weak_operands(a, b)
        dt = self.promote(ta.dtype, tb.dtype)
        if not dt.is_int or dt.is_bool:
            raise SemanticError(f"umulhi needs integer operands, got {_np_dtype_name(ta.dtype)} and "
                                f"{_np_dtype_name(tb.dtype)}")
        ta, tb = self.broadcast_pair(self.cast(ta, dt), self.cast(tb, dt))
        return self.op(ir.BinaryOp, "mulhisi" if signed else "mulhiui", ta.handle, tb.handle)

    def minmax(self, kind: str, a, b, propagate_nan: bool = False) -> tensor:
        ta, tb = self._weak_operands(a, b)
        dt = self.promote(ta.dtype, tb.dtype)
        ta, tb = self.broadcast_pair(self.cast(ta, dt), self.cast(tb, dt))
        if dt.is_floating:
            k = ("maximumf" if kind == "max" else "minimumf") if propagate_nan else \
                ("maxnumf" if kind == "max" else "minnumf")
        else:
            k = ("max" if kind == "max" else "min") + ("si" if dt.is_signed else "ui")
        return self.op(ir.BinaryOp, k, ta.handle, tb.handle)

    def fma(self, a, b, c) -> tensor:
        ta, tb, tc = self.to_tensor(a), self.to_tensor(b), self.to_tensor(c)
        dt = self.promote(self.promote(ta.dtype, tb.dtype), tc.dtype)
        if not dt.is_floating:
            raise SemanticError("fma needs floating-point operands")
        shape = self.broadcast_shapes(self.broadcast_shapes(ta.shape, tb.shape), tc.shape)
        ts = [self.broadcast_to(self.cast(t, dt), shape) for t in (ta, tb, tc)]
        return self.op(ir.FmaOp, *[t.handle for t in ts])

    # ---- pointers -------------------------------------------------------------------------------
    @staticmethod
    def _is_ptr(v) -> bool:
        return isinstance(v, tensor) and isinstance(v.dtype, PointerType)

    def pointer_arith(self, opname: str, a, b):
        if opname not in ("add", "sub"):
            raise SemanticError(f"pointers support only + and - with integers, not '{opname}'")
        if isinstance(b, pointer_tile) or self._is_ptr(b):
            if opname == "sub" or isinstance(a, pointer_tile) or self._is_ptr(a):
                raise SemanticError("pointer - pointer and pointer + pointer are not supported")
            a, b = b, a
        off = self.to_tensor(b)
        if not off.dtype.is_int or off.dtype.is_bool:
            raise SemanticError(f"a pointer offset must be an integer, got {_np_dtype_name(off.dtype)}")
        if opname == "sub":
            off = self.unary("neg", off)
        if isinstance(a, pointer_tile):
            return pointer_tile(a.base, self.binary("add", a.offsets, off))
        if off.is_tile:
            return pointer_tile(a, off)
        return self.op(ir.AddPtrOp, a.handle, off.handle)

    def pointer_cast(self, p, dtype):
        """A pointer, or a tile of them, as pointers to ``dtype.elem`` (the same addresses). A tile's
        offsets are in elements, so they scale by the ratio of the element sizes: a cast to an
        element no wider (``float32`` to ``uint8``) always works; to a wider one, cast the base
        pointer before adding the offsets."""
        if not isinstance(dtype, PointerType):
            raise SemanticError(f"a pointer converts only to another pointer type (xl.pointer_type(...)), got "
                                f"{getattr(dtype, 'user_name', dtype)!r}")
        if isinstance(p, pointer_tile):
            old, new = p.dtype.elem.itemsize, dtype.elem.itemsize
            if old % new:
                raise SemanticError(f"casting a tile of {p.dtype.elem.user_name} pointers to {dtype.elem.user_name} "
                                    f"pointers: its offsets count {old}-byte elements, which {new}-byte ones do not "
                                    f"divide; cast the base pointer first, then add the offsets")
            offs = p.offsets if old == new else self.binary("mul", p.offsets, old // new)
            return pointer_tile(self.pointer_cast(p.base, dtype), offs)
        if not self._is_ptr(p):
            raise SemanticError(f"only pointers convert to a pointer type, got {p!r}")
        if p.dtype == dtype:
            return p
        return self.op(ir.PtrCastOp, p.handle, dtype)

    def pointer_where(self, c: tensor, a, b):
        pa = a if isinstance(a, pointer_tile) else None
        pb = b if isinstance(b, pointer_tile) else None
        if pa is None or pb is None or pa.base.handle is not pb.base.handle:
            raise SemanticError("xl.where on pointers needs two tiles of pointers into the same base "
                                "pointer; select the offsets instead")
        return pointer_tile(pa.base, self.where(c, pa.offsets, pb.offsets))

    def pointer_tile_of(self, p) -> pointer_tile:
        """``p`` as base + offsets; a scalar pointer becomes a one-element tile."""
        p = unwrap(p)
        if isinstance(p, pointer_tile):
            return p
        if self._is_ptr(p):
            return pointer_tile(p, self.const(0, T.int32, (1,)))
        raise SemanticError(f"expected a pointer or a tile of pointers, got {p!r}")
