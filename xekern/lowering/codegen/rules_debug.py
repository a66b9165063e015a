"""Codegen of ``debug.print`` / ``debug.assert``: OpenCL ``printf`` (SPIR-V ``OpenCL.std printf``).

The format string is a constant in address space 2 (UniformConstant), passed from its start. IGC 2.x
insists on that: its printf lowering finds the string by the global the pointer names, and a
pointer one byte in (which Debian 12's spirv-val wanted, as LLVM's SPIR-V backend folds a pointer to
the start into the array variable) makes it abort ("unexpected dynamic format string path"). The
toolchain's spirv-val accepts the folded form.

Floats are passed as ``double`` (C's promotion, which OpenCL applies where fp64 exists); integers
narrower than 32 bits as ``i32``. Lines start like Triton's: ``pid (x, y, z) idx (i, j) prefix v``.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ... import ir
from ...ir.types import DType
from .core import CONSTANT, CodeGen, rule
from .ocl import F64, I8, I32, I64


def _printf(cg: CodeGen, fmt: str, args) -> None:
    data = bytearray(fmt.encode("utf-8") + b"\0")
    arr = ll.ArrayType(I8, len(data))
    key = ("printf_fmt", fmt)
    g = cg._cache.get(key)
    if g is None:
        g = ll.GlobalVariable(cg.module, arr, name=cg.module.get_unique_name(".fmt"), addrspace=CONSTANT)
        g.global_constant = True
        g.linkage = "private"
        g.unnamed_addr = True
        g.initializer = ll.Constant(arr, data)
        cg._cache[key] = g
    ptr = g.gep([ll.Constant(I32, 0), ll.Constant(I32, 0)])  # the start (see the module docstring)
    f = cg.module.globals.get("printf")
    if f is None:
        f = ll.Function(cg.module, ll.FunctionType(I32, [ll.PointerType(addrspace=CONSTANT)], var_arg=True),
                        name="printf")
        f.calling_convention = "spir_func"
    c = cg.b.call(f, [ptr, *args])
    c.calling_convention = "spir_func"


def _conv(cg: CodeGen, t: DType, v, hex: bool = False):
    """(printf conversion, LLVM argument) for one value of dtype ``t``."""
    if t.is_floating:
        if t.name == "bf16" or t.is_fp8:
            from .arith import widen
            v = widen(cg, v, t)
        return "%f", cg.b.fpext(v, F64) if v.type != F64 else v
    signed = t.is_signed and not t.is_bool
    if t.bits == 64:
        return ("0x%llx" if hex else "%lld" if signed else "%llu"), v
    if t.bits < 32:
        v = cg.b.sext(v, I32) if signed else cg.b.zext(v, I32)
    return ("0x%x" if hex else "%d" if signed else "%u"), v


def _pid(cg: CodeGen):
    return [cg.b.trunc(cg.call("_Z12get_group_idj", I64, [cg.i32(d)]), I32) for d in range(3)]


def _coords(cg: CodeGen, lin, shape):
    """The row-major coordinates of the element with linear index ``lin`` in ``shape``."""
    out, stride = [], 1
    for d in reversed(shape):
        q = cg.b.udiv(lin, ll.Constant(I32, stride)) if stride != 1 else lin
        out.append(cg.b.urem(q, ll.Constant(I32, d)))
        stride *= d
    return list(reversed(out))


def _first_item(cg: CodeGen):
    """True in the workgroup's first work item (scalars print once per program)."""
    return cg.b.icmp_unsigned("==", cg.b.or_(cg.sg_id(), cg.lane_id()), ll.Constant(I32, 0))


def _escape(s: str) -> str:
    return s.replace("%", "%%")


@rule(ir.PrintOp)
def _print(cg: CodeGen, op: ir.PrintOp):
    hex = op.attrs.get("hex", False)
    prefix = f" {_escape(op.prefix)}" if op.prefix else ""
    values = [(v, v.type.elem if isinstance(v.type, ir.VectorType) else v.type) for v in op.values]
    if op.index is None:
        def emit():
            convs = [_conv(cg, t, cg.get(v), hex) for v, t in values]
            fmt = "pid (%d, %d, %d)" + prefix + "".join(" " + c for c, _ in convs) + "\n"
            _printf(cg, fmt, _pid(cg) + [a for _, a in convs])
        cg.masked(_first_item(cg), emit)
        return []
    shape = op.attrs["shape"]
    idx = cg.slots(op.index)
    for i in range(len(idx)):
        convs = []
        for v, t in values:
            s = cg.slots(v)
            convs.append(_conv(cg, t, s[i] if len(s) > 1 or isinstance(v.type, ir.VectorType) else s[0], hex))
        fmt = ("pid (%d, %d, %d) idx (" + ", ".join(["%d"] * len(shape)) + ")" + prefix
               + "".join(" " + c for c, _ in convs) + "\n")
        _printf(cg, fmt, _pid(cg) + _coords(cg, idx[i], shape) + [a for _, a in convs])
    return []


@rule(ir.AssertOp)
def _assert(cg: CodeGen, op: ir.AssertOp):
    where = f"{_escape(op.attrs['file'])}:{op.attrs['line']}"
    msg = _escape(op.attrs["msg"])
    conds = cg.slots(op.cond)
    idx = cg.slots(op.index) if op.index is not None else None
    shape = op.attrs.get("shape") or ()
    for i, c in enumerate(conds):
        def fail(i=i):
            if idx is None:
                _printf(cg, f"{where}: pid (%d, %d, %d): Assertion failed: {msg}\n", _pid(cg))
            else:
                _printf(cg, f"{where}: pid (%d, %d, %d) idx (" + ", ".join(["%d"] * len(shape))
                        + f"): Assertion failed: {msg}\n", _pid(cg) + _coords(cg, idx[i], shape))
        failed = cg.b.not_(c)
        if idx is None:  # a scalar condition is the same in every work item: report it once
            failed = cg.b.and_(failed, _first_item(cg))
        cg.masked(failed, fail)
    return []
