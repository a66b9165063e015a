"""LLVM IR text of a module, faster than llvmlite's printer and character for character the same.

llvmlite prints each instruction through layers of ``str.format`` calls (a third of a GEMM's
codegen time). ``prefill`` writes the text of the common instructions straight into llvmlite's
per-instruction string cache with f-strings that copy llvmlite's own ``descr`` methods (0.50);
``str(module)`` then only joins them. Any instruction class not listed here is left to llvmlite.
tests/test_compile_speed.py checks that both printers agree on the GEMMs and the test kernels, and
benchmarks/spirv_hashes.py hashes the text.
"""
from __future__ import annotations

import llvmlite
from llvmlite.ir import instructions as I
from llvmlite.ir import types as T

# the llvmlite releases whose descr methods the rules below copy; any other leaves printing to llvmlite
COPIED_FROM = ("0.50.",)

_CACHE = "_StrCaching__cached_str"  # where llvmlite's _StrCaching.__str__ keeps an instruction's text
_REF = "_StringReferenceCaching__cached_refstr"  # and get_reference its reference


def _md(i) -> str:
    return i._stringify_metadata(leading_comma=True) if i.metadata else ""


def _generic(i) -> str:  # Instruction.descr (binary operators, ...)
    opname = " ".join([i.opname] + i.flags) if i.flags else i.opname
    ops = ", ".join([op.get_reference() for op in i.operands])
    return f"{opname} {i.type} {ops}{_md(i)}"


def _select(i) -> str:
    c, a, b = i.operands
    return (f"select {' '.join(i.flags)} {c.type} {c.get_reference()}, {a.type} {a.get_reference()}, "
            f"{b.type} {b.get_reference()} {_md(i)}")


def _compare(i) -> str:
    a, b = i.operands
    flags = "".join(" " + f for f in i.flags)
    return f"{i.opname}{flags} {i.op} {a.type} {a.get_reference()}, {b.get_reference()} {_md(i)}"


def _cast(i) -> str:
    v = i.operands[0]
    return f"{i.opname} {v.type} {v.get_reference()} to {i.type} {_md(i)}"


def _load(i) -> str:
    p = i.operands[0]
    align = f", align {i.align:d}" if i.align is not None else ""
    return f"load {i.type}, {p.type} {p.get_reference()}{align}{_md(i)}"


def _store(i) -> str:
    v, p = i.operands
    align = f", align {i.align:d}" if i.align is not None else ""
    return f"store {v.type} {v.get_reference()}, {p.type} {p.get_reference()}{align}{_md(i)}"


def _gep(i) -> str:
    idx = ", ".join([f"{x.type} {x.get_reference()}" for x in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    p = i.pointer
    return f"{op} {i.source_etype}, {p.type} {p.get_reference()}, {idx} {_md(i)}"


def _phi(i) -> str:
    incs = ", ".join([f"[{v.get_reference()}, {b.get_reference()}]" for v, b in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incs} {_md(i)}"


def _element(i) -> str:  # ExtractElement / InsertElement: no metadata printed
    ops = ", ".join([f"{op.type} {op.get_reference()}" for op in i.operands])
    return f"{i.opname} {ops}"


def _terminator(i) -> str:  # Branch, ConditionalBranch
    ops = ", ".join([f"{op.type} {op.get_reference()}" for op in i.operands])
    return f"{i.opname} {ops}{_md(i)}"


def _call(i):  # CallInstr._descr, for calls without argument, function or fast-math attributes
    if i.arg_attributes or i.attributes or i.fastmath:
        return None  # llvmlite prints it
    args = ", ".join([f"{a.type} {a.get_reference()}" for a in i.args])
    fnty = i.callee.function_type
    ty = fnty if fnty.var_arg else fnty.return_type
    callee = f"{ty} {i.callee.get_reference()}"
    if i.cconv:
        callee = f"{i.cconv} {callee}"
    tail = f"{i.tail} " if i.tail else ""
    return f"{tail}{i.opname} {callee}({args}){_md(i)}"


_RULES = {
    I.Instruction: _generic, I.SelectInstr: _select, I.ICMPInstr: _compare, I.FCMPInstr: _compare,
    I.CastInstr: _cast, I.LoadInstr: _load, I.StoreInstr: _store, I.GEPInstr: _gep, I.PhiInstr: _phi,
    I.ExtractElement: _element, I.InsertElement: _element, I.Branch: _terminator,
    I.ConditionalBranch: _terminator, I.CallInstr: _call,
}


def prefill(module) -> None:
    """Store the text of every instruction with a rule above in llvmlite's string cache (only on
    the llvmlite releases the rules copy: a newer printer may have changed)."""
    if not llvmlite.__version__.startswith(COPIED_FROM):
        return
    void = T.VoidType
    rules = _RULES
    for fn in module.functions:
        for block in fn.blocks:
            for i in block.instructions:
                rule = rules.get(type(i))
                body = rule(i) if rule is not None else None
                if body is None:
                    continue
                if not isinstance(i.type, void):
                    name = i._name
                    if "\\" in name or '"' in name:
                        ref = i.get_reference()
                    else:  # NamedValue._get_reference, without its format call
                        ref = f'%"{name}"'
                        setattr(i, _REF, ref)
                    body = f"{ref} = {body}"
                setattr(i, _CACHE, body.rstrip())
