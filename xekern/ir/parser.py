"""Reading a function's text (``printer.print_func``) back into IR: the real op classes, types, layouts
and attribute values, so that passes run on parsed IR and ``print_func(parse_func(text)) == text``.

    >>> f = parse_func('''
    ... func.func @k(%x: !xegpu.ptr<f32>, %n: i32) attributes {level = "wg", num_subgroups = 4, sg_size = 16} {
    ...   %0 = arith.constant 2 : i32
    ...   %1 = arith.muli %n, %0 : i32
    ...   func.return
    ... }''', "k.ir")
    >>> f.body.ops[1].kind, f.body.ops[1].loc
    ('muli', Loc(file='k.ir', line=4, col=3, func='k'))
    >>> ir.verify_func(f)    # the parser checks what it reads (names, types, syntax); the verifier the rest

An op's class is found by its printed name (``NAME``; ``arith.addf`` is a BinaryOp of kind ``addf``,
see ``printer.NAME_ATTRS``). Ops are built without their constructors (``object.__new__`` and
``Op.__init__``, as ``Op.clone_with`` does), since the text gives operands, result types and
attributes as they are. Each op's ``loc`` is its place in the text, so that the error of a pass run
on parsed IR names its line. Errors are ``ParseError`` with ``file:line:col``.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from .core import Block, Loc, Op, Value
from .ops_arith import (CASTS, CMP_FLOAT, CMP_INT, FLOAT_BINARY, FLOAT_UNARY, INT_BINARY, INT_UNARY, BinaryOp, CastOp,
                        CmpOp, ConstantOp, UnaryOp)
from .ops_scf import ForOp, FuncOp, IfOp, WhileOp
from .parse_attrs import read_attr, read_attr_dict, read_ident, read_type
from .printer import NAME_ATTRS
from .scanner import ParseError, Scanner
from .types import Type

__all__ = ["parse_func", "ParseError", "op_classes"]

_OP_NAME = re.compile(r"[a-z_][a-z0-9_]*\.[a-z0-9_.]+")
_VALUE = re.compile(r"%[\w$.]+(?:#\d+)?")
_RESULTS = re.compile(r"(%[\w$.]+)(?::(\d+))?\s*=(?!=)")
_SYMBOL = re.compile(r"@[\w$.]+")

# classes whose printed name depends on an attribute (printer.NAME_ATTRS), and its values: the name is
# made of it (folded: arith.addf), or only chosen by it (arith.cmpf <olt>, arith.cmpi <slt>)
_NAMED_BY = {BinaryOp: FLOAT_BINARY | INT_BINARY, UnaryOp: FLOAT_UNARY | INT_UNARY, CastOp: CASTS,
             CmpOp: CMP_FLOAT | CMP_INT}


def _subclasses(cls):
    for c in cls.__subclasses__():
        yield c
        yield from _subclasses(c)


def op_classes() -> Dict[str, Tuple[type, Dict[str, object]]]:
    """Printed op name -> (op class, the attributes the name stands for), for every op class of
    ``xekern.ir`` (``arith.addf`` -> (BinaryOp, {"kind": "addf"}))."""
    package = Op.__module__.rsplit(".", 1)[0]
    out: Dict[str, Tuple[type, Dict[str, object]]] = {}

    def add(name, entry):
        if name in out and out[name] != entry:
            raise AssertionError(f"two op classes print as {name}: {out[name][0].__name__}, {entry[0].__name__}")
        out[name] = entry
    for cls in _subclasses(Op):
        if not cls.__module__.startswith(package + ".") or cls.NAME == Op.NAME:
            continue  # (ops of other packages, e.g. tests'; abstract bases)
        key, folded = NAME_ATTRS.get(cls, (None, False))
        if cls not in _NAMED_BY:
            add(cls.NAME, (cls, {}))
            continue
        for v in sorted(_NAMED_BY[cls]):
            bare = object.__new__(cls)
            bare.attrs = {key: v}
            add(bare.op_name, (cls, {key: v} if folded else {}))
    return out


_CLASSES: Optional[Dict[str, Tuple[type, Dict[str, object]]]] = None


def build(cls, operands: Sequence[Value], result_types: Sequence[Type], attrs: Dict, regions=(), loc=None) -> Op:
    """An op of ``cls`` as the text describes it, without running ``cls.__init__``."""
    op = object.__new__(cls)
    Op.__init__(op, operands, result_types, attrs, regions, loc)
    return op


class _Parser:
    def __init__(self, text: str, file: str):
        global _CLASSES
        if _CLASSES is None:
            _CLASSES = op_classes()
        self.sc = Scanner(text, file)
        self.scopes: List[Dict[str, Value]] = [{}]
        self.func_name = ""

    # ---- names ----------------------------------------------------------------------------------
    def define(self, name: str, v: Value, pos: int) -> None:
        if any(name in s for s in self.scopes):
            raise self.sc.error(f"{name} is defined twice", pos)
        self.scopes[-1][name] = v

    def use(self) -> Value:
        pos = self.sc.skip()
        m = self.sc.expect_match(_VALUE, "a value (%name)")
        for s in reversed(self.scopes):
            v = s.get(m.group())
            if v is not None:
                return v
        raise self.sc.error(f"use of undefined value {m.group()}", pos)

    def uses(self) -> List[Value]:
        """``%a, %b, ...``: an op's operands."""
        out = [self.use()]
        while self.sc.accept(","):
            out.append(self.use())
        return out

    def loc(self, pos: int) -> Loc:
        line, col = self.sc.line_col(pos)
        return Loc(self.sc.file, line, col, self.func_name)

    def types(self, close: str) -> List[Type]:
        out: List[Type] = []
        if self.sc.accept(close):
            return out
        while True:
            out.append(read_type(self.sc))
            if self.sc.accept(close):
                return out
            self.sc.expect(",", f"or '{close}' in a type list")

    # ---- the function -------------------------------------------------------------------------------
    def func(self) -> FuncOp:
        sc = self.sc
        start = sc.skip()
        sc.expect("func.func", "(a function)")
        self.func_name = sc.expect_match(_SYMBOL, "the function's name (@name)").group()[1:]
        sc.expect("(", "opening the argument list")
        names, types, places = [], [], []
        if not sc.accept(")"):
            while True:
                places.append(sc.skip())
                names.append(sc.expect_match(_VALUE, "an argument (%name)").group())
                sc.expect(":", f"and the type of argument {names[-1]}")
                types.append(read_type(sc))
                if sc.accept(")"):
                    break
                sc.expect(",", "or ')' in the argument list")
        attrs = {"sym_name": self.func_name}
        if sc.accept("attributes"):
            at = sc.skip()
            extra = read_attr_dict(sc)
            if "sym_name" in extra:
                raise sc.error("sym_name is the function's @name, not an attribute", at)
            attrs.update(extra)
        body = Block(types, [n[1:] for n in names])
        f = build(FuncOp, [], [], attrs, [body], self.loc(start))
        for n, a, p in zip(names, body.args, places):
            self.define(n, a, p)
        sc.expect("{", "opening the function body")
        self.block(body)
        if not sc.at_end():
            raise sc.expected("the end of the text after the function")
        return f

    def block(self, b: Block, args: Sequence[Tuple[str, int]] = ()) -> None:
        """The ops of ``b`` up to its closing brace (consumed); ``args``: names of its arguments."""
        self.scopes.append({})
        for (name, pos), a in zip(args, b.args):
            self.define(name, a, pos)
        while not self.sc.accept("}"):
            if self.sc.at_end():
                raise self.sc.expected("an op or '}' closing the block")
            self.op(b)
        self.scopes.pop()

    # ---- ops ------------------------------------------------------------------------------------------
    def op(self, b: Block) -> None:
        sc = self.sc
        start = sc.skip()
        res = sc.match(_RESULTS)
        count = 0 if res is None else int(res.group(2) or 1)
        if res is not None and count < 1:
            raise sc.error(f"{res.group(1)}:{count}: an op has at least one result", start)
        name_at = sc.skip()
        name = sc.expect_match(_OP_NAME, "an op name (like arith.addf)").group()
        special = {"scf.for": self.for_op, "scf.if": self.if_op, "scf.while": self.while_op,
                   "arith.constant": self.constant}.get(name)
        if special is not None:
            op = special(count, self.loc(start))
        else:
            op = self.generic(name, name_at, count, self.loc(start))
        b.append(op)
        if res is not None:
            first = res.group(1)
            self.define(first, op.results[0], start)
            for i, r in enumerate(op.results):
                self.scopes[-1][f"{first}#{i}"] = r

    def generic(self, name: str, name_at: int, count: int, loc: Loc) -> Op:
        sc = self.sc
        entry = _CLASSES.get(name)
        if entry is None:
            raise sc.error(f"unknown op '{name}'", name_at)
        cls, attrs = entry[0], dict(entry[1])
        key, folded = NAME_ATTRS.get(cls, (None, False))
        if sc.peek_inline("<"):
            sc.accept("<")
            if key is None or folded:
                raise sc.error(f"'{name}' takes no <...> after its name", sc.pos - 1)
            attrs[key] = read_ident(sc, f"the {key} of {name}")
            sc.expect(">", f"closing the {key}")
        operands = self.uses() if sc.peek_inline("%") else []
        if sc.peek("{"):
            self.attrs_into(attrs, name)
        ins: List[Type] = []
        outs: List[Type] = []
        types_at = None
        if operands or count:
            sc.expect(":", f"and the types of '{name}'")
            types_at = sc.skip()
            ins, outs = self.signature(len(operands), count, name)
        self.check_types(operands, ins, types_at)
        op = build(cls, operands, outs, attrs, (), loc)
        if op.op_name != name:
            raise sc.error(f"'{name}' with {key} = {attrs.get(key)!r} is '{op.op_name}'", name_at)
        return op

    def attrs_into(self, attrs: Dict, name: str) -> None:
        at = self.sc.skip()
        for k, v in read_attr_dict(self.sc).items():
            if k in attrs:
                raise self.sc.error(f"attribute '{k}' of '{name}' is given twice (once with the name)", at)
            attrs[k] = v

    def signature(self, n_in: int, n_out: int, name: str) -> Tuple[List[Type], List[Type]]:
        """``: T`` (every operand and result), ``: (ins) -> out`` / ``(ins) -> (outs)``, or ``: ins``."""
        sc = self.sc
        at = sc.skip()
        if sc.accept("("):
            ins = self.types(")")
            sc.expect("->", "and the result types")
            outs = self.types(")") if sc.accept("(") else [read_type(sc)]
        else:
            types = [read_type(sc)]
            while n_out == 0 and sc.accept(","):
                types.append(read_type(sc))
            ins, outs = (types, []) if n_out == 0 else ([types[0]] * n_in, [types[0]] * n_out)
        if len(ins) != n_in or len(outs) != n_out:
            raise sc.error(f"'{name}' has {n_in} operand(s) and {n_out} result(s), but its types give "
                           f"{len(ins)} and {len(outs)}", at)
        return ins, outs

    def check_types(self, operands: Sequence[Value], types: Sequence[Type], at: Optional[int] = None) -> None:
        for i, (v, t) in enumerate(zip(operands, types)):
            if v.type != t:
                raise self.sc.error(f"operand {i} has type {v.type}, but the op's types say {t}", at)

    def trailing_attrs(self) -> Dict:
        """A structured op's attributes, after its last closing brace."""
        return read_attr_dict(self.sc) if self.sc.peek("{") else {}

    def constant(self, count: int, loc: Loc) -> Op:
        sc = self.sc
        if count != 1:
            raise sc.error("arith.constant has one result")
        if sc.accept("dense<"):
            value = read_attr(sc)
            if not isinstance(value, tuple):
                raise sc.expected("a list of values in dense<...>")
            sc.expect(">", "closing dense<...>")
        else:
            value = read_attr(sc)
        attrs = {"value": value}
        if sc.peek("{"):
            self.attrs_into(attrs, "arith.constant")
        sc.expect(":", "and the constant's type")
        return build(ConstantOp, [], [read_type(sc)], attrs, (), loc)

    def result_types(self, count: int, what: str) -> List[Type]:
        """``-> (T, ...)`` of a structured op with ``count`` results (none: no arrow)."""
        at = self.sc.skip()
        types = []
        if self.sc.accept("->"):
            self.sc.expect("(", "opening the result types")
            types = self.types(")")
        if len(types) != count:
            raise self.sc.error(f"{what} has {count} result name(s) but {len(types)} result type(s)", at)
        return types

    def bindings(self) -> Tuple[List[Tuple[str, int]], List[Value]]:
        """``%a = %x, %b = %y)``: the names bound inside a region, and the values they start from."""
        names, inits = [], []
        if self.sc.accept(")"):
            return names, inits
        while True:
            pos = self.sc.skip()
            names.append((self.sc.expect_match(_VALUE, "a region argument (%name)").group(), pos))
            self.sc.expect("=", f"and the initial value of {names[-1][0]}")
            inits.append(self.use())
            if self.sc.accept(")"):
                return names, inits
            self.sc.expect(",", "or ')' in the bindings")

    def for_op(self, count: int, loc: Loc) -> Op:
        sc = self.sc
        iv_at = sc.skip()
        iv = sc.expect_match(_VALUE, "the induction variable (%name)").group()
        sc.expect("=", "after the induction variable")
        lb = self.use()
        sc.expect("to", "after the lower bound")
        ub = self.use()
        sc.expect("step", "after the upper bound")
        step = self.use()
        names, inits = [], []
        if sc.accept("iter_args"):
            sc.expect("(", "opening iter_args")
            names, inits = self.bindings()
        sc.expect(":", "and the type of the bounds")
        at = sc.skip()
        t = read_type(sc)
        self.check_types([lb], [t], at)
        results = self.result_types(count, "scf.for")
        sc.expect("{", "opening the loop body")
        body = Block([t] + [v.type for v in inits], ["iv"])
        self.block(body, [(iv, iv_at)] + names)
        return build(ForOp, [lb, ub, step, *inits], results, self.trailing_attrs(), [body], loc)

    def if_op(self, count: int, loc: Loc) -> Op:
        sc = self.sc
        cond = self.use()
        results = self.result_types(count, "scf.if")
        then, other = Block(), Block()
        sc.expect("{", "opening the then-region")
        self.block(then)
        sc.expect("else", "(scf.if always has an else-region)")
        sc.expect("{", "opening the else-region")
        self.block(other)
        return build(IfOp, [cond], results, self.trailing_attrs(), [then, other], loc)

    def while_op(self, count: int, loc: Loc) -> Op:
        sc = self.sc
        sc.expect("(", "opening the loop's bindings")
        names, inits = self.bindings()
        results = self.result_types(count, "scf.while")
        sc.expect("{", "opening the before-region")
        before = Block([v.type for v in inits])
        self.block(before, names)
        sc.expect("do", "after the before-region")
        sc.expect("{", "opening the after-region")
        sc.expect("^bb0(", "(the after-region's arguments)")
        after_names, after_types = [], []
        if not sc.accept(")"):
            while True:
                pos = sc.skip()
                after_names.append((sc.expect_match(_VALUE, "an argument (%name)").group(), pos))
                sc.expect(":", "and its type")
                after_types.append(read_type(sc))
                if sc.accept(")"):
                    break
                sc.expect(",", "or ')' in the after-region's arguments")
        sc.expect(":", "after the after-region's arguments")
        after = Block(after_types)
        self.block(after, after_names)
        return build(WhileOp, inits, results, self.trailing_attrs(), [before, after], loc)


def parse_func(text: str, file: str = "<string>") -> FuncOp:
    """The function ``text`` holds (as ``print_func`` writes it; ``//`` comments allowed). Raises
    ParseError at the first thing that does not read; run ``verify_func`` on the result for the rest."""
    return _Parser(text, file).func()
