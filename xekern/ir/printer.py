"""A stable, MLIR-like text form of the IR, for dumps, ``kernel.asm`` and printed-IR tests.
``parser.py`` reads it back: ``print_func(parse_func(text)) == text`` for every stage of every kernel.

    func.func @k(%x_ptr: !xegpu.ptr<f32>, %n: i32) attributes {level = "wg", multiple_of = {n = 16}} {
      %0 = gpu.block_id {dim = 0} : i32
      %1 = arith.constant 64 : i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.cmpi <slt> %2, %n : (i32, i32) -> i1
      %4:2 = iree_gpu.value_barrier %2, %2 : i32
      func.return
    }

The text is complete, so that passes can run on parsed IR:
- an op's name; the attribute ``NAME_ATTRS`` shows with it is folded into the name (``arith.addf``:
  a BinaryOp of kind ``addf``) or follows it in angle brackets (``vector.multi_reduction <add>``);
- every other attribute, sorted by name, except those that are None (None and absent read the same,
  ``attrs.get``); False is printed (``block_io = false`` is a decision, not a default);
- attribute values: ints, floats (``repr``: ``0.1``, ``1e-05``, ``inf``, ``-inf``, ``nan``), ``true`` and
  ``false``, ``none`` (inside lists and dicts), strings in double quotes with JSON escapes, ``[...]`` for
  tuples, ``{key = value}`` for dicts, and dtypes, types and layouts in their own syntax;
- the types: ``: T`` when every operand and result has type T, else ``(operand types) -> result
  type(s)``, or the operand types alone for an op without results;
- a structured op's attributes after its last closing brace: ``} {unroll = 2}``.
Values are numbered in order of definition; function arguments keep their names. Not printed: source
locations, and the name hints of values other than function arguments (nothing reads them).
"""
from __future__ import annotations

import json
import re
from typing import Dict, List

import numpy as np

from .core import Block, Op, Value
from .ops_arith import BinaryOp, CastOp, CmpOp, ConstantOp, UnaryOp
from .ops_gpu import SubgroupReduceOp
from .ops_scf import ForOp, FuncOp, IfOp, WhileOp
from .ops_vector import ReduceOp
from .ops_xegpu import AtomicRMWOp

# The attribute each op class shows with its name: (key, folded). Folded: the name is made of it
# (``arith.addf``); else it follows the name in angle brackets (``arith.cmpf <olt>``).
NAME_ATTRS = {BinaryOp: ("kind", True), UnaryOp: ("fn", True), CastOp: ("kind", True), CmpOp: ("pred", False),
              ReduceOp: ("kind", False), SubgroupReduceOp: ("kind", False), AtomicRMWOp: ("kind", False)}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def attr_text(v) -> str:
    """An attribute value's text: ``[1, 2]``, ``"relu"``, ``{n = 16}``, ``bf16``, ``#xegpu.layout<...>``."""
    if v is None:
        return "none"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # the shortest text that reads back as the same double
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(attr_text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key_text(k)} = {attr_text(x)}" for k, x in v.items()) + "}"
    return str(v)  # dtypes, types, layouts


def key_text(k) -> str:
    """A dict key or attribute name: bare when it is an identifier, else a quoted string."""
    return k if isinstance(k, str) and _IDENT.match(k) else attr_text(k)


def attr_dict(attrs: Dict) -> str:
    """`` {a = 1, b = "x"}`` of the attributes that are not None, sorted by name ('' when none is)."""
    items = sorted(((k, v) for k, v in attrs.items() if v is not None), key=lambda kv: str(kv[0]))
    return " {" + ", ".join(f"{key_text(k)} = {attr_text(v)}" for k, v in items) + "}" if items else ""


class Printer:
    def __init__(self):
        self.names: Dict[Value, str] = {}
        self.counter = 0
        self.lines: List[str] = []

    def name(self, v: Value) -> str:
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = f"%{self.counter}"
            self.counter += 1
        return n

    def names_of(self, vals) -> str:
        return ", ".join(self.name(v) for v in vals)

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def func(self, f: FuncOp) -> str:
        used = set()
        args = []
        for a in f.args:
            n = a.hint or f"arg{len(args)}"
            while n in used:
                n += "_"
            used.add(n)
            self.names[a] = "%" + n
            args.append(f"%{n}: {a.type}")
        attrs = attr_dict({k: v for k, v in f.attrs.items() if k != "sym_name"})
        self.emit(0, f"func.func @{f.name}({', '.join(args)}){' attributes' + attrs if attrs else ''} {{")
        self.block(f.body, 1)
        self.emit(0, "}")
        return "\n".join(self.lines) + "\n"

    def block(self, b: Block, depth: int) -> None:
        for op in b.ops:
            self.op(op, depth)

    def _results(self, op: Op) -> str:
        if not op.results:
            return ""
        if len(op.results) == 1:
            return self.name(op.results[0]) + " = "
        first = self.name(op.results[0])
        for i, r in enumerate(op.results[1:], 1):
            self.names[r] = f"{first}#{i}"
        return f"{first}:{len(op.results)} = "

    def op(self, op: Op, depth: int) -> None:
        if isinstance(op, ForOp):
            return self._for(op, depth)
        if isinstance(op, IfOp):
            return self._if(op, depth)
        if isinstance(op, WhileOp):
            return self._while(op, depth)
        text = self._results(op) + op.op_name
        attrs = dict(op.attrs)
        if isinstance(op, ConstantOp):
            v = attrs.pop("value")
            text += " " + (f"dense<{attr_text(v)}>" if isinstance(v, tuple) else attr_text(v))
            self.emit(depth, f"{text}{attr_dict(attrs)} : {op.result.type}")
            return
        key, folded = NAME_ATTRS.get(type(op), (None, False))
        if key is not None and (folded or (isinstance(attrs.get(key), str) and _IDENT.match(attrs[key]))):
            v = attrs.pop(key)
            if not folded:
                text += f" <{v}>"
        if op.operands:
            text += " " + self.names_of(op.operands)
        text += attr_dict(attrs)
        if op.operands or op.results:
            text += " : " + self._sig(op)
        self.emit(depth, text)

    def _sig(self, op: Op) -> str:
        ins = [str(v.type) for v in op.operands]
        outs = [str(r.type) for r in op.results]
        if outs and len(set(ins + outs)) == 1:
            return outs[0]
        if not outs:
            return ", ".join(ins) if ins else "()"
        o = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        return f"({', '.join(ins)}) -> {o}"

    def _yield_types(self, op: Op) -> str:
        if not op.results:
            return ""
        return " -> (" + ", ".join(str(r.type) for r in op.results) + ")"

    def _close(self, op: Op, depth: int) -> None:
        """The closing brace of a structured op, and its attributes (printed after its regions)."""
        self.emit(depth, "}" + attr_dict(op.attrs))

    def _for(self, op: ForOp, depth: int) -> None:
        res = self._results(op)
        lb, ub, st = op.operands[:3]
        iv = self.name(op.iv)
        text = f"{res}scf.for {iv} = {self.name(lb)} to {self.name(ub)} step {self.name(st)}"
        if op.iter_args:
            pairs = ", ".join(f"{self.name(a)} = {self.name(v)}" for a, v in zip(op.iter_args, op.inits))
            text += f" iter_args({pairs})"
        text += f" : {lb.type}{self._yield_types(op)} {{"
        self.emit(depth, text)
        self.block(op.body, depth + 1)
        self._close(op, depth)

    def _if(self, op: IfOp, depth: int) -> None:
        res = self._results(op)
        self.emit(depth, f"{res}scf.if {self.name(op.operands[0])}{self._yield_types(op)} {{")
        self.block(op.then_block, depth + 1)
        self.emit(depth, "} else {")
        self.block(op.else_block, depth + 1)
        self._close(op, depth)

    def _while(self, op: WhileOp, depth: int) -> None:
        res = self._results(op)
        args = ", ".join(f"{self.name(a)} = {self.name(v)}" for a, v in zip(op.before.args, op.operands))
        self.emit(depth, f"{res}scf.while ({args}){self._yield_types(op)} {{")
        self.block(op.before, depth + 1)
        after_args = ", ".join(f"{self.name(a)}: {a.type}" for a in op.after.args)
        self.emit(depth, f"}} do {{ ^bb0({after_args}):")
        self.block(op.after, depth + 1)
        self._close(op, depth)


def print_func(f: FuncOp) -> str:
    """The function's stable text form."""
    return Printer().func(f)
