"""A stable, MLIR-like text form of the IR, for dumps, ``kernel.asm`` and printed-IR tests."""
from __future__ import annotations

from typing import Dict, List

from .core import Block, Op, Value
from .ops_arith import ConstantOp
from .ops_scf import ConditionOp, ForOp, FuncOp, IfOp, WhileOp


def _attr(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


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
        attrs = {k: v for k, v in f.attrs.items() if k != "sym_name"}
        attr_s = ""
        if attrs:
            attr_s = " attributes {" + ", ".join(f"{k} = {_attr(v)}" for k, v in sorted(attrs.items())) + "}"
        self.emit(0, f"func.func @{f.name}({', '.join(args)}){attr_s} {{")
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
        res = self._results(op)
        text = res + op.op_name
        if isinstance(op, ConstantOp):
            v = op.value
            text += " " + (("dense<" + _attr(list(v)) + ">") if isinstance(v, tuple) else _attr(v))
            extra = {k: x for k, x in op.attrs.items() if k != "value" and x is not None}
            if extra:
                text += " {" + ", ".join(f"{k} = {_attr(x)}" for k, x in sorted(extra.items())) + "}"
            self.emit(depth, f"{text} : {op.result.type}")
            return
        if op.operands:
            text += " " + self.names_of(op.operands)
        attrs = {k: v for k, v in op.attrs.items() if v is not None and v is not False
                 and k not in ("kind", "fn", "pred")}
        for k in ("kind", "fn", "pred"):
            if k in op.attrs and op.attrs[k] not in op.op_name:
                text = text.replace(op.op_name, f"{op.op_name} <{op.attrs[k]}>", 1)
        if attrs:
            text += " {" + ", ".join(f"{k} = {_attr(v)}" for k, v in sorted(attrs.items())) + "}"
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
        self.emit(depth, "}")

    def _if(self, op: IfOp, depth: int) -> None:
        res = self._results(op)
        self.emit(depth, f"{res}scf.if {self.name(op.operands[0])}{self._yield_types(op)} {{")
        self.block(op.then_block, depth + 1)
        self.emit(depth, "} else {")
        self.block(op.else_block, depth + 1)
        self.emit(depth, "}")

    def _while(self, op: WhileOp, depth: int) -> None:
        res = self._results(op)
        args = ", ".join(f"{self.name(a)} = {self.name(v)}" for a, v in zip(op.before.args, op.operands))
        self.emit(depth, f"{res}scf.while ({args}){self._yield_types(op)} {{")
        self.block(op.before, depth + 1)
        after_args = ", ".join(f"{self.name(a)}: {a.type}" for a in op.after.args)
        self.emit(depth, f"}} do {{ ^bb0({after_args}):")
        self.block(op.after, depth + 1)
        self.emit(depth, "}")


def print_func(f: FuncOp) -> str:
    """The function's stable text form."""
    return Printer().func(f)
