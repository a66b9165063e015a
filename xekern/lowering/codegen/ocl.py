"""OpenCL builtins as SPIR-V sees them: Itanium-mangled ``spir_func`` declarations.

Only the spellings live here; what to call for which op is in the rule tables.
"""
from __future__ import annotations

from typing import Dict, Sequence

from llvmlite import ir as ll

# Itanium manglings of OpenCL scalar types
_MANGLE = {"float": "f", "double": "d", "half": "Dh", "i8": "c", "i16": "s", "i32": "i", "i64": "l",
           "u8": "h", "u16": "t", "u32": "j", "u64": "m"}

I1, I8, I16, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(16), ll.IntType(32), ll.IntType(64)
F16, F32, F64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()
VOID = ll.VoidType()


def mangle_scalar(t: ll.Type, unsigned: bool = False) -> str:
    if isinstance(t, ll.FloatType):
        return "f"
    if isinstance(t, ll.DoubleType):
        return "d"
    if isinstance(t, ll.HalfType):
        return "Dh"
    if isinstance(t, ll.IntType):
        return _MANGLE[("u" if unsigned else "i") + str(t.width)]
    raise TypeError(f"no OpenCL mangling for {t}")


def mangle_vector(t: ll.Type, unsigned: bool = False) -> str:
    if isinstance(t, ll.VectorType):
        return f"Dv{t.count}_{mangle_scalar(t.element, unsigned)}"
    return mangle_scalar(t, unsigned)


def mangle_args(types, unsigned=()) -> str:
    """Itanium mangling of an argument list, with substitutions: a vector type seen before is
    written ``S_``, ``S0_``, ``S1_``... (builtin scalar types are never substituted). IGC resolves
    e.g. ``..._k16Dv8_iS_Dv8_f`` but silently leaves ``..._k16Dv8_iDv8_iDv8_f`` an unresolved call."""
    seen, out = [], []
    for i, t in enumerate(types):
        m = mangle_vector(t, i in unsigned)
        if isinstance(t, ll.VectorType):
            if m in seen:
                k = seen.index(m)
                out.append("S_" if k == 0 else f"S{_base36(k - 1)}_")
                continue
            seen.append(m)
        out.append(m)
    return "".join(out)


def _base36(n: int) -> str:
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    s = ""
    while True:
        s = digits[n % 36] + s
        n //= 36
        if n == 0:
            return s


class Builtins:
    """Declares OpenCL builtins in one module on demand and calls them."""

    def __init__(self, module: ll.Module):
        self.module = module
        self.decls: Dict[str, ll.Function] = {}

    def declare(self, name: str, ret: ll.Type, args: Sequence[ll.Type]) -> ll.Function:
        f = self.decls.get(name)
        if f is None:
            existing = self.module.globals.get(name)
            if existing is not None:
                f = existing
            else:
                f = ll.Function(self.module, ll.FunctionType(ret, list(args)), name=name)
                f.calling_convention = "spir_func"
            self.decls[name] = f
        return f

    def call(self, b: ll.IRBuilder, name: str, ret: ll.Type, args: Sequence, convergent: bool = False):
        f = self.declare(name, ret, [a.type for a in args])
        if convergent and "convergent" not in f.attributes:
            f.attributes.add("convergent")
        c = b.call(f, list(args))
        c.calling_convention = "spir_func"
        return c

    def intrinsic(self, b: ll.IRBuilder, name: str, ret: ll.Type, args: Sequence):
        f = self.module.globals.get(name)
        if f is None:
            f = ll.Function(self.module, ll.FunctionType(ret, [a.type for a in args]), name=name)
        return b.call(f, list(args))
