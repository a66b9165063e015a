"""arith and math ops: constants, elementwise arithmetic, comparisons, selects and casts.

They work on scalars and on tiles alike; at every level their operands share one type
(shape, element type and layout), so distributing them is a change of type only.
"""
from __future__ import annotations

from typing import Sequence

from .core import IRError, Op, Value
from .attrs import Attr, LAYOUT
from .types import DType, VectorType, elem_of, int1, like

FLOAT_BINARY = {"addf", "subf", "mulf", "divf", "remf", "maxnumf", "minnumf", "maximumf", "minimumf",
                "powf", "atan2", "copysignf"}
INT_BINARY = {"addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "andi", "ori", "xori",
              "shli", "shrsi", "shrui", "maxsi", "minsi", "maxui", "minui", "mulhisi", "mulhiui"}
MATH_BINARY = {"powf", "atan2", "copysignf"}

FLOAT_UNARY = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "absf", "negf", "sin", "cos", "tan",
               "tanh", "floor", "ceil", "erf", "round", "trunc"}
INT_UNARY = {"absi", "noti", "ctpop", "ctlz"}

CMP_FLOAT = {"oeq", "one", "olt", "ole", "ogt", "oge", "une", "uno", "ord"}
CMP_INT = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}

CASTS = {"extf", "truncf", "sitofp", "uitofp", "fptosi", "fptoui", "extsi", "extui", "trunci", "bitcast"}


def _same_type(op: Op, *vals: Value) -> None:
    t = vals[0].type
    for v in vals[1:]:
        if v.type != t:
            raise IRError(f"operands must have one type, got {t} and {v.type}", op)


class ConstantOp(Op):
    """``arith.constant``: a scalar, a splat tile, or (lane level) a tuple of per-slot values."""

    NAME = "arith.constant"
    ATTRS = (Attr("value", (bool, int, float, tuple), doc="the value; a tuple: one per element (lane level)"),
             Attr("layout", LAYOUT, doc="the layout the user gave (xl.full(..., layout=))"))

    def __init__(self, value, type, loc=None):
        super().__init__([], [type], {"value": value}, loc=loc)

    @property
    def value(self):
        return self.attrs["value"]

    def verify(self):
        t = self.result.type
        v = self.value
        if isinstance(v, tuple):
            if not isinstance(t, VectorType) or len(v) != t.numel:
                raise IRError(f"dense constant of {len(v)} values does not fill {t}", self)
        elif not isinstance(v, (int, float, bool)):
            raise IRError(f"constant value {v!r} is not a number", self)


class BinaryOp(Op):
    """``arith.<kind>``: elementwise ``lhs <kind> rhs`` on equal types."""

    NAME = "arith.binary"
    ATTRS = (Attr("kind", str),)

    def __init__(self, kind: str, lhs: Value, rhs: Value, loc=None):
        super().__init__([lhs, rhs], [lhs.type], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]

    @property
    def op_name(self) -> str:
        return ("math." if self.kind in MATH_BINARY else "arith.") + self.kind

    def verify(self):
        _same_type(self, *self.operands)
        e = elem_of(self.operands[0].type)
        if self.kind in FLOAT_BINARY and not e.is_floating:
            raise IRError(f"{self.kind} needs floating-point operands, got {e}", self)
        if self.kind in INT_BINARY and not e.is_int:
            raise IRError(f"{self.kind} needs integer operands, got {e}", self)
        if self.kind not in FLOAT_BINARY | INT_BINARY:
            raise IRError(f"unknown binary kind {self.kind}", self)


class UnaryOp(Op):
    """``math.<fn>``: an elementwise function of one operand."""

    NAME = "math.unary"
    ATTRS = (Attr("fn", str),)

    def __init__(self, fn: str, x: Value, loc=None):
        super().__init__([x], [x.type], {"fn": fn}, loc=loc)

    @property
    def fn(self) -> str:
        return self.attrs["fn"]

    @property
    def op_name(self) -> str:
        return ("arith." if self.fn in ("negf", "noti") else "math.") + self.fn

    def verify(self):
        e = elem_of(self.operands[0].type)
        if self.fn in FLOAT_UNARY and not e.is_floating:
            raise IRError(f"{self.fn} needs a floating-point operand, got {e}", self)
        if self.fn in INT_UNARY and not e.is_int:
            raise IRError(f"{self.fn} needs an integer operand, got {e}", self)
        if self.fn not in FLOAT_UNARY | INT_UNARY:
            raise IRError(f"unknown function {self.fn}", self)


class FmaOp(Op):
    """``math.fma``: ``a * b + c`` rounded once."""

    NAME = "math.fma"

    def __init__(self, a, b, c, loc=None):
        super().__init__([a, b, c], [a.type], loc=loc)

    def verify(self):
        _same_type(self, *self.operands)


class CmpOp(Op):
    """``arith.cmpi``/``arith.cmpf``: elementwise comparison producing i1."""

    NAME = "arith.cmp"
    ATTRS = (Attr("pred", str),)

    def __init__(self, pred: str, lhs: Value, rhs: Value, loc=None):
        super().__init__([lhs, rhs], [like(lhs.type, int1)], {"pred": pred}, loc=loc)

    @property
    def pred(self) -> str:
        return self.attrs["pred"]

    @property
    def op_name(self) -> str:
        return "arith.cmpf" if self.pred in CMP_FLOAT else "arith.cmpi"

    def verify(self):
        _same_type(self, *self.operands)
        e = elem_of(self.operands[0].type)
        if (self.pred in CMP_FLOAT) != e.is_floating or self.pred not in CMP_FLOAT | CMP_INT:
            raise IRError(f"predicate {self.pred} does not apply to {e}", self)


class SelectOp(Op):
    """``arith.select``: ``cond ? a : b`` elementwise (``cond`` may be a scalar)."""

    NAME = "arith.select"

    def __init__(self, cond: Value, a: Value, b: Value, loc=None):
        super().__init__([cond, a, b], [a.type], loc=loc)

    def verify(self):
        c, a, b = self.operands
        _same_type(self, a, b)
        if elem_of(c.type) != int1:
            raise IRError(f"the condition must be i1, got {c.type}", self)
        if isinstance(c.type, VectorType) and c.type != like(a.type, int1):
            raise IRError(f"condition {c.type} does not match {a.type}", self)


class CastOp(Op):
    """``arith.<kind>``: an elementwise conversion to another element type."""

    NAME = "arith.cast"
    ATTRS = (Attr("kind", str),)

    def __init__(self, kind: str, x: Value, to: DType, loc=None):
        super().__init__([x], [like(x.type, to)], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]

    @property
    def op_name(self) -> str:
        return "arith." + self.kind

    def verify(self):
        src, dst = elem_of(self.operands[0].type), elem_of(self.result.type)
        k = self.kind
        ok = {
            "extf": src.is_floating and dst.is_floating and dst.bits > src.bits,
            "truncf": src.is_floating and dst.is_floating and dst.bits < src.bits,
            "sitofp": src.is_int and dst.is_floating, "uitofp": src.is_int and dst.is_floating,
            "fptosi": src.is_floating and dst.is_int, "fptoui": src.is_floating and dst.is_int,
            "extsi": src.is_int and dst.is_int and dst.bits > src.bits,
            "extui": src.is_int and dst.is_int and dst.bits > src.bits,
            "trunci": src.is_int and dst.is_int and dst.bits < src.bits,
            "bitcast": src.bits == dst.bits,
        }.get(k)
        if ok is None:
            raise IRError(f"unknown cast {k}", self)
        if not ok:
            raise IRError(f"{k} cannot convert {src} to {dst}", self)


def cast_kind(src: DType, dst: DType) -> str:
    """The cast op kind converting ``src`` to ``dst`` (which must differ)."""
    if src.is_floating and dst.is_floating:
        if src.bits == dst.bits:
            return "viaf32"  # f16 <-> bf16: the semantic layer goes through f32
        return "extf" if dst.bits > src.bits else "truncf"
    if src.is_int and dst.is_floating:
        return "uitofp" if src.kind in ("uint", "bool") else "sitofp"
    if src.is_floating and dst.is_int:
        return "fptoui" if dst.kind in ("uint", "bool") else "fptosi"
    if dst.bits == src.bits:
        return "bitcast"
    if dst.bits < src.bits:
        return "trunci"
    return "extui" if src.kind in ("uint", "bool") else "extsi"


class InlineAsmOp(Op):
    """``gpu.elementwise_inline_asm``: inline assembly (Intel vISA text) applied elementwise, Triton's
    ``tl.inline_asm_elementwise``. Its operands and its result share one shape (and layout); the
    text names the result ``$0`` and the operands ``$1``, ``$2``, ... as vISA variables of one
    subgroup's lanes (``constraints``: ``=rw`` for the result, ``rw`` per operand). It is kept even
    when its result is unused (the text may have effects of its own)."""

    NAME = "gpu.elementwise_inline_asm"
    HAS_SIDE_EFFECTS = True
    ATTRS = (Attr("asm", str, doc="the vISA text"), Attr("constraints", str, doc="LLVM-style, outputs first"),
             Attr("pure", bool, doc="Triton's is_pure (recorded)"))

    def __init__(self, asm: str, constraints: str, args: Sequence[Value], result_type, pure: bool = True, loc=None):
        super().__init__(list(args), [result_type], {"asm": asm, "constraints": constraints, "pure": pure}, loc=loc)

    def verify(self):
        shape = getattr(self.result.type, "shape", None)
        for v in self.operands:
            if getattr(v.type, "shape", None) != shape:
                raise IRError(f"operands must have the result's shape {shape}, got {v.type}", self)
