"""An IRBuilder that folds integer arithmetic on constants as it builds.

Lane-level IR is full of arithmetic on compile-time numbers (layout offsets, ``x + 0``, selects on a
constant condition); llvmlite's builder emits all of it and LLVM then spends time folding it away.
Folding here makes smaller modules, faster to print, parse, optimize and emit. Only integers fold,
with LLVM's wrap-around semantics; everything else is built as llvmlite builds it.
"""
from __future__ import annotations

import llvmlite.ir as ll


def _int(v):
    """The value of an integer constant (unsigned, in its width), or None."""
    if isinstance(v, ll.Constant) and isinstance(v.type, ll.IntType) and isinstance(v.constant, int):
        return v.constant & ((1 << v.type.width) - 1)
    return None


def _signed(u: int, width: int) -> int:
    return u - (1 << width) if u >> (width - 1) else u


_ICMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
         "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class FoldingBuilder(ll.IRBuilder):
    def _fold(self, lhs, rhs, fn, build, name, flags=()):
        a, b = _int(lhs), _int(rhs)
        if a is not None and b is not None:
            return ll.Constant(lhs.type, fn(a, b) & ((1 << lhs.type.width) - 1))
        return build(lhs, rhs, name, flags=flags) if flags else build(lhs, rhs, name)

    def add(self, lhs, rhs, name="", flags=()):
        if _int(rhs) == 0:
            return lhs
        if _int(lhs) == 0:
            return rhs
        return self._fold(lhs, rhs, lambda a, b: a + b, super().add, name, flags)

    def sub(self, lhs, rhs, name=""):
        if _int(rhs) == 0:
            return lhs
        return self._fold(lhs, rhs, lambda a, b: a - b, super().sub, name)

    def mul(self, lhs, rhs, name="", flags=()):
        if _int(rhs) == 1:
            return lhs
        if _int(lhs) == 1:
            return rhs
        return self._fold(lhs, rhs, lambda a, b: a * b, super().mul, name, flags)

    def shl(self, lhs, rhs, name=""):
        if _int(rhs) == 0:
            return lhs
        return self._fold(lhs, rhs, lambda a, b: a << b if b < lhs.type.width else 0, super().shl, name)

    def lshr(self, lhs, rhs, name=""):
        if _int(rhs) == 0:
            return lhs
        return self._fold(lhs, rhs, lambda a, b: a >> b if b < lhs.type.width else 0, super().lshr, name)

    def and_(self, lhs, rhs, name=""):
        return self._fold(lhs, rhs, lambda a, b: a & b, super().and_, name)

    def or_(self, lhs, rhs, name=""):
        if _int(rhs) == 0:
            return lhs
        return self._fold(lhs, rhs, lambda a, b: a | b, super().or_, name)

    def xor(self, lhs, rhs, name=""):
        return self._fold(lhs, rhs, lambda a, b: a ^ b, super().xor, name)

    def udiv(self, lhs, rhs, name=""):
        if _int(rhs) == 1:
            return lhs
        return self._fold(lhs, rhs, lambda a, b: a // b if b else 0, super().udiv, name) if _int(rhs) else \
            super().udiv(lhs, rhs, name)

    def urem(self, lhs, rhs, name=""):
        return self._fold(lhs, rhs, lambda a, b: a % b, super().urem, name) if _int(rhs) else \
            super().urem(lhs, rhs, name)

    def _fold_icmp(self, cmpop, lhs, rhs, signed, build, name):
        a, b = _int(lhs), _int(rhs)
        if a is not None and b is not None and cmpop in _ICMP:
            if signed:
                a, b = _signed(a, lhs.type.width), _signed(b, lhs.type.width)
            return ll.Constant(ll.IntType(1), int(_ICMP[cmpop](a, b)))
        return build(cmpop, lhs, rhs, name)

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        return self._fold_icmp(cmpop, lhs, rhs, True, super().icmp_signed, name)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        return self._fold_icmp(cmpop, lhs, rhs, False, super().icmp_unsigned, name)

    def select(self, cond, lhs, rhs, name="", flags=()):
        c = _int(cond)
        if c is not None:
            return lhs if c else rhs
        if lhs is rhs:
            return lhs
        return super().select(cond, lhs, rhs, name, flags)
