"""The IR's skeleton: values, operations, blocks, functions, and a builder.

The rule for mutation: a pass never edits the function it is given. It builds a new one
(``lowering/rewrite.Rewriter``) and may change what it built (an op's attributes, a block's list of
ops) before it returns it; a pass that only changes a few ops edits a copy
(``lowering/rewrite.copy_func``). An op carries only the attributes its class declares
(``ir/attrs.py``), which the verifier checks. Structured control flow
(``scf.for``/``scf.if``/``scf.while``) holds its bodies as blocks, so a value is visible in the
block that defines it and in blocks nested in it.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Iterator, List, Optional, Sequence, Tuple

from .types import Type


@dataclass(frozen=True)
class Loc:
    """A source location: the kernel's file, line and column (for error messages)."""

    file: str
    line: int
    col: int = 0
    func: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class IRError(Exception):
    """An IR invariant is broken (a bug in a pass, or an op built with wrong types)."""

    def __init__(self, message: str, op: "Op" = None):
        self.op = op
        where = f" (at {op.loc})" if op is not None and op.loc is not None else ""
        name = f"'{op.op_name}': " if op is not None else ""
        super().__init__(f"{name}{message}{where}")


class Value:
    """An SSA value: the result of an op, or an argument of a block."""

    __slots__ = ("type", "owner", "index", "hint")

    def __init__(self, type: Type, owner=None, index: int = 0, hint: str = ""):
        self.type = type
        self.owner = owner
        self.index = index
        self.hint = hint

    @property
    def op(self) -> Optional["Op"]:
        return self.owner if isinstance(self.owner, Op) else None

    def __repr__(self) -> str:
        return f"<Value {self.hint or id(self)}: {self.type}>"


class Block:
    """A list of ops with arguments; the body of a function or of a structured op."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: Sequence[Type] = (), hints: Sequence[str] = ()):
        hints = list(hints) + [""] * (len(arg_types) - len(hints))
        self.args: List[Value] = [Value(t, self, i, h) for i, (t, h) in enumerate(zip(arg_types, hints))]
        self.ops: List[Op] = []
        self.parent: Optional[Op] = None

    def append(self, op: "Op") -> "Op":
        self.ops.append(op)
        op.parent = self
        return op

    @property
    def terminator(self) -> Optional["Op"]:
        return self.ops[-1] if self.ops and self.ops[-1].IS_TERMINATOR else None


class Op:
    """Base class of every operation.

    Subclasses set ``NAME`` (the printed name) and implement ``verify`` for the rules of the
    seeds; ``attrs`` holds plain Python values (ints, strings, tuples, layouts, dtypes).
    """

    NAME: ClassVar[str] = "op"
    IS_TERMINATOR: ClassVar[bool] = False
    HAS_SIDE_EFFECTS: ClassVar[bool] = False
    ATTRS: ClassVar[tuple] = ()   # the attributes the op may carry (``ir/attrs.Attr``), besides its bases'

    __slots__ = ("operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attrs: Optional[Dict[str, Any]] = None, regions: Sequence[Block] = (), loc: Loc = None):
        for v in operands:
            if not isinstance(v, Value):
                raise IRError(f"operand {v!r} is not an IR value", None)
        self.operands: Tuple[Value, ...] = tuple(operands)
        self.results: Tuple[Value, ...] = tuple(Value(t, self, i) for i, t in enumerate(result_types))
        self.attrs: Dict[str, Any] = dict(attrs or {})
        self.regions: Tuple[Block, ...] = tuple(regions)
        for r in self.regions:
            r.parent = self
        self.loc = loc
        self.parent: Optional[Block] = None

    @property
    def op_name(self) -> str:
        return self.NAME

    @classmethod
    def declared(cls) -> Dict[str, Any]:
        """Every attribute this op class may carry (its ``ATTRS`` and its bases'), by name."""
        got = cls.__dict__.get("_declared")
        if got is None:
            got = {a.name: a for c in reversed(cls.__mro__) for a in c.__dict__.get("ATTRS", ())}
            setattr(cls, "_declared", got)
        return got

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise IRError(f"has {len(self.results)} results, not one", self)
        return self.results[0]

    def verify(self) -> None:
        """Check this op's own rules; raise IRError naming the rule."""

    def clone_with(self, operands: Sequence[Value], result_types: Sequence[Type],
                   attrs: Optional[Dict[str, Any]] = None) -> "Op":
        """A new op of this class (without regions) on other operands and result types."""
        new = object.__new__(type(self))
        Op.__init__(new, operands, result_types, dict(self.attrs if attrs is None else attrs), (), self.loc)
        return new

    def walk(self) -> Iterator["Op"]:
        yield self
        for r in self.regions:
            for op in r.ops:
                yield from op.walk()

    def __repr__(self) -> str:
        return f"<{self.op_name}>"


def blocks(root: "Op") -> List["Block"]:
    """Every block of ``root`` and of the ops nested in it, each once, outer before inner (a
    function's body first)."""
    return [r for o in root.walk() for r in o.regions]


def users(root: "Op") -> Dict["Value", List[Tuple["Op", int]]]:
    """Each value an op in ``root`` (``root`` itself and the ops nested in it) reads -> those
    readers with the operand's index, in walk order."""
    out: Dict[Value, List[Tuple[Op, int]]] = {}
    for o in root.walk():
        for i, v in enumerate(o.operands):
            out.setdefault(v, []).append((o, i))
    return out


class Builder:
    """Appends ops to a block; ``loc`` is stamped on every op built through it."""

    def __init__(self, block: Optional[Block] = None, loc: Optional[Loc] = None):
        self.block = block
        self.loc = loc

    def insert(self, op: Op) -> Op:
        if op.loc is None:
            op.loc = self.loc
        self.block.append(op)
        return op

    def create(self, cls, *args, **kw) -> Op:
        kw.setdefault("loc", self.loc)
        return self.insert(cls(*args, **kw))

    def __call__(self, cls, *args, **kw) -> Value:
        """Build an op and return its single result."""
        return self.create(cls, *args, **kw).result

    @contextmanager
    def at(self, block: Block):
        saved = self.block
        self.block = block
        try:
            yield self
        finally:
            self.block = saved

    @contextmanager
    def located(self, loc: Optional[Loc]):
        saved = self.loc
        if loc is not None:
            self.loc = loc
        try:
            yield self
        finally:
            self.loc = saved
