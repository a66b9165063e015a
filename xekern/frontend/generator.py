"""The frontend: an ``ast.NodeVisitor`` that turns a kernel's Python source into workgroup IR.

Compile-time Python values (constexpr parameters, module constants, literals) are folded;
everything else becomes SSA IR with structured control flow. ``if`` on a scalar becomes
``scf.if``, ``for ... in range`` becomes ``scf.for`` (``xl.static_range`` unrolls), ``while``
becomes ``scf.while``; variables reassigned inside them are carried as block arguments. Calls
to other ``@xk.jit`` functions are inlined. Anything else is a CompilationError that points at
the kernel's own file and line.
"""
from __future__ import annotations

import ast
import builtins
import types as pytypes
from typing import Any, Dict, List, Optional

from .. import ir
from ..errors import CompilationError
from ..ir import types as T
from ..ir.core import Block, Loc
from ..ir.layout import Layout, LayoutError, SliceLayout
from ..language import builtins as lb, core as lcore, type_objects as lto
from ..language.core import (base_value, constexpr, is_builtin, pointer_tile, private_array, takes_generator, tensor,
                             unwrap)
from . import control_flow
from .sem import Semantic
from .semantic import SemanticError
from .source import KernelSource

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "lshift", ast.RShift: "rshift"}
_PYOPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
          "pow": lambda a, b: a ** b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
          "xor": lambda a, b: a ^ b, "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PYCMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
          "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_UNSUPPORTED = {
    "Lambda": "lambdas are not supported in kernels; write a separate @xk.jit function",
    "ListComp": "list comprehensions are not supported in kernels; use xl.static_range or tiles",
    "SetComp": "set comprehensions are not supported in kernels",
    "DictComp": "dict comprehensions are not supported in kernels",
    "GeneratorExp": "generator expressions are not supported in kernels",
    "Dict": "dicts are not supported in kernels",
    "Set": "sets are not supported in kernels",
    "Try": "try/except is not supported in kernels",
    "TryStar": "try/except is not supported in kernels",
    "With": "'with' is supported in kernels only as 'with xl.async_task(...):'",
    "Raise": "raise is not supported in kernels; use xl.device_assert or a static assert on constexprs",
    "ClassDef": "classes cannot be defined in kernels",
    "FunctionDef": "nested functions are not supported; define a separate @xk.jit function",
    "AsyncFunctionDef": "async functions are not supported in kernels",
    "Global": "global statements are not supported: kernels cannot mutate module state",
    "Nonlocal": "nonlocal statements are not supported in kernels",
    "Delete": "del is not supported in kernels",
    "Import": "imports are not allowed inside kernels; import at module level",
    "ImportFrom": "imports are not allowed inside kernels; import at module level",
    "Yield": "yield is not supported in kernels", "YieldFrom": "yield is not supported in kernels",
    "Await": "await is not supported in kernels", "NamedExpr": "':=' is not supported in kernels",
    "Starred": "*args unpacking is not supported in kernels",
    "Break": "break outside a loop",
    "Continue": "continue outside a loop",
    "Match": "match statements are not supported in kernels",
    "AsyncFor": "async for is not supported in kernels", "AsyncWith": "async with is not supported in kernels",
}

_CONST_TYPES = (int, float, bool, str, type(None), T.DType, Layout, SliceLayout)
_BREAKPOINT = object()  # Python's breakpoint() in a kernel: pdb in the interpreter (semantic_debug.breakpoint)
_ALLOWED_PY_BUILTINS = {"range", "len", "min", "max", "int", "float", "bool", "abs", "isinstance", "getattr",
                        "tuple", "list", "print", "enumerate", "zip", "reversed", "str", "hasattr", "round",
                        "divmod", "sum", "any", "all", "type"}
_PY_CLASSES = (Layout, SliceLayout, constexpr, lto.block_type, lto.constexpr_type, lto.slice)
# Triton's wrappers of kernel values: built at compile time around what they are given
_VALUE_CLASSES = (lto.tuple, lcore.condition, lcore.async_task)


class _Range:
    """Marks a loop iterable: ``range``/``xl.range`` (scf.for) or ``xl.static_range`` (unrolled)."""

    def __init__(self, args, static: bool, hints=None):
        self.args = args
        self.static = static
        self.hints = hints or {}


def _is_jit(obj) -> bool:
    return getattr(obj, "__xekern_jit__", False)


def _is_const(v) -> bool:
    v = unwrap(v)
    if isinstance(v, (tuple, list)):
        return all(_is_const(x) for x in v)
    return isinstance(v, _CONST_TYPES)


def _assigned_names(stmts) -> List[str]:
    """Names a list of statements assigns (in order of first appearance)."""
    seen: Dict[str, None] = {}
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                seen.setdefault(node.id, None)
    return list(seen)


class CodeGenerator(ast.NodeVisitor):
    """Builds the IR of one function body (the kernel, or an inlined callee) into ``sem.b``."""

    def __init__(self, src: KernelSource, sem: Semantic, scope: Dict[str, Any], call_chain=(), depth=0):
        self.src = src
        self.sem = sem
        self.b = sem.b
        self.scope = scope
        self.call_chain = call_chain
        self.depth = depth
        self.ret: Any = None
        self.returned = False
        self.ret_node: Optional[ast.Return] = None   # (where a kernel's stray return value is reported)
        self.one_branch = set()   # names assigned in only one branch of an if
        self.loop_locals = set()  # names first assigned inside a loop body
        self._stack = ()          # jit functions being inlined (to reject recursion)
        self.builtin_call = None  # the call of the builtin running with _generator=self (inline's call site)

    # ---- errors and locations -------------------------------------------------------------------
    def error(self, node, message: str) -> CompilationError:
        return self.src.error(node, message, self.call_chain)

    def loc(self, node) -> Loc:
        line, col = self.src.position(node)
        return Loc(self.src.file, line, col, self.src.name)

    def visit(self, node):
        if node is None:
            return None
        loc = self.loc(node) if hasattr(node, "lineno") else None
        with self.b.located(loc):
            try:
                return super().visit(node)
            except CompilationError:
                raise
            except (SemanticError, LayoutError) as e:
                raise self.error(node, str(e)) from None
            except RecursionError:
                raise self.error(node, "the kernel is nested too deeply (recursion?)") from None
            except ir.IRError as e:
                raise self.error(node, f"internal IR error: {e}") from e
            except (TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError,
                    OverflowError, ArithmeticError) as e:
                raise self.error(node, f"{type(e).__name__}: {e}") from e

    def generic_visit(self, node):
        name = type(node).__name__
        raise self.error(node, _UNSUPPORTED.get(name, f"unsupported Python construct in a kernel: {name}"))

    # ---- function bodies ------------------------------------------------------------------------
    def visit_function(self, fn: ast.FunctionDef) -> Any:
        a = fn.args
        if a.vararg is not None or a.kwarg is not None:
            raise self.error(fn, "*args and **kwargs are not supported in kernel signatures")
        for i, stmt in enumerate(fn.body):
            if isinstance(stmt, ast.Return) and i != len(fn.body) - 1:
                raise self.error(stmt, "code after return is unreachable; return must be the last statement")
        body = fn.body
        if any(isinstance(n, ast.Return) and n not in fn.body for n in ast.walk(fn)):
            body = control_flow.returns_at_the_end(fn.body)
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Return) and node is not body[-1]:
                    raise self.error(node, "return inside for/while is not supported; compute the value "
                                           "with xl.where or assign it in the loop and return after it")
        self.visit_stmts(body)
        return self.ret

    def visit_stmts(self, stmts) -> None:
        for s in stmts:
            self.visit(s)

    # ---- statements -----------------------------------------------------------------------------
    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Return(self, node):
        self.ret = self.visit(node.value) if node.value is not None else None
        self.returned = True
        self.ret_node = node

    def visit_With(self, node):
        """``with xl.async_task(...):`` (Triton's warp specialization): the block, as ordinary code."""
        for item in node.items:
            ctx = unwrap(self.visit(item.context_expr))
            if not isinstance(ctx, lcore.async_task) or item.optional_vars is not None:
                raise self.error(item.context_expr, _UNSUPPORTED["With"])
        self.visit_stmts(node.body)

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise self.error(node, "a bare annotation needs a value")
        self.assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Subscript):
            arr = unwrap(self.visit(node.target.value))
            if isinstance(arr, private_array):   # buf[i] += v: read, combine, write the element
                idx = self._private_index(node.target)
                cur = self.sem.private_load(arr, idx)
                rhs = self.visit(node.value)
                self.sem.private_store(arr, idx, self.binop(_BINOPS[type(node.op)], cur, rhs, node))
                return
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment works on names and private array elements only")
        cur = self.lookup(node.target.id, node)
        rhs = self.visit(node.value)
        self.assign(node.target, self.binop(_BINOPS[type(node.op)], cur, rhs, node))

    def assign(self, target, value):
        if isinstance(target, ast.Name):
            v = unwrap(value)
            if isinstance(v, list):
                v = tuple(v)
            self.scope[target.id] = v
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            v = unwrap(value)
            if not isinstance(v, (tuple, list)):
                raise self.error(target, f"cannot unpack {type(v).__name__} into {len(target.elts)} names")
            if len(v) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(v)} values into {len(target.elts)} names")
            for t, x in zip(target.elts, v):
                self.assign(t, x)
            return
        if isinstance(target, ast.Subscript):
            arr = unwrap(self.visit(target.value))
            if isinstance(arr, private_array):
                with self.b.located(self.loc(target)):
                    try:
                        self.sem.private_store(arr, self._private_index(target), value)
                    except SemanticError as e:
                        raise self.error(target, str(e)) from None
                return
            if isinstance(arr, tuple):
                raise self.error(target, "a tuple cannot be changed (as in Triton): build a new one, "
                                         "e.g. t = xl.tuple([v, t[1]])")
            raise self.error(target, "item assignment is not supported: tiles are values; use xl.where "
                                     "to change elements, xl.store to write memory, or xl.alloc_private "
                                     "for an array of a work item (lane level)")
        if isinstance(target, ast.Attribute):
            raise self.error(target, "attribute assignment is not supported in kernels")
        raise self.error(target, f"cannot assign to {type(target).__name__}")

    def visit_Assert(self, node):
        cond = unwrap(self.visit(node.test))
        msg = unwrap(self.visit(node.msg)) if node.msg is not None else "assertion failed"
        if isinstance(cond, base_value):
            if hasattr(self.sem, "device_assert"):
                return self.sem.device_assert(cond, str(msg))
            raise self.error(node, "assert on a runtime value is not supported; assert on constexprs only")
        if not cond:
            raise self.error(node, f"static assertion failed: {msg}")

    # ---- control flow ---------------------------------------------------------------------------
    def visit_If(self, node):
        cond = unwrap(self.visit(node.test))
        if not isinstance(cond, base_value):
            self.visit_stmts(node.body if cond else node.orelse)
            return
        cond = self.scalar_condition(cond, node.test)
        self.dynamic_if(cond, node)

    def scalar_condition(self, cond, node) -> tensor:
        if not isinstance(cond, tensor) or isinstance(cond.dtype, T.PointerType):
            raise self.error(node, f"a condition must be a scalar number or boolean, got {cond!r}")
        if cond.is_tile:
            raise self.error(node, f"a condition must be a scalar, not a tile of shape {list(cond.shape)}; "
                                   f"reduce it (xl.max, xl.sum) or use xl.where for elementwise choices")
        return self.sem.cast(cond, T.int1) if cond.dtype != T.int1 else cond

    def _run_block(self, stmts, scope, block: Block):
        saved = self.scope
        self.scope = dict(scope)
        try:
            with self.b.at(block):
                self.visit_stmts(stmts)
            return self.scope
        finally:
            self.scope = saved

    def dynamic_if(self, cond: tensor, node):
        before = dict(self.scope)
        then_b, else_b = Block(), Block()
        ts = self._run_block(node.body, before, then_b)
        es = self._run_block(node.orelse, before, else_b)
        merged = dict(before)
        names, tv, ev = [], [], []
        for n in dict.fromkeys(list(ts) + list(es)):
            a, b = ts.get(n, before.get(n, _MISSING)), es.get(n, before.get(n, _MISSING))
            if a is _MISSING or b is _MISSING:
                self.one_branch.add(n)
                continue
            if a is b or (_is_const(a) and _is_const(b) and type(a) is type(b) and a == b):
                merged[n] = a
                continue
            a, b = self._unify(n, a, b, then_b, else_b, node)
            names.append(n)
            tv.append(a)
            ev.append(b)
        flat_t = [h for v in tv for h in v.flatten()]
        flat_e = [h for v in ev for h in v.flatten()]
        op = ir.IfOp(cond.handle, [h.type for h in flat_t], loc=self.loc(node))
        op.regions = (then_b, else_b)
        then_b.parent = else_b.parent = op
        then_b.append(ir.YieldOp(flat_t, loc=op.loc))
        else_b.append(ir.YieldOp(flat_e, loc=op.loc))
        self.b.insert(op)
        results = list(op.results)
        for n, v in zip(names, tv):
            k = len(v.flatten())
            merged[n] = v.rebuild(results[:k])
            results = results[k:]
        self.scope = merged

    def _unify(self, name, a, b, block_a, block_b, node):
        """Give two branch values of ``name`` one IR type (materializing Python numbers)."""
        a, b = unwrap(a), unwrap(b)
        if not isinstance(a, base_value) and not isinstance(b, base_value):
            with self.b.at(block_a):
                a = self.sem.to_tensor(a)
            with self.b.at(block_b):
                b = self.sem.to_tensor(b)
        elif not isinstance(a, base_value):
            with self.b.at(block_a):
                a = self.materialize(a, b, name, node)
        elif not isinstance(b, base_value):
            with self.b.at(block_b):
                b = self.materialize(b, a, name, node)
        ta = [h.type for h in a.flatten()]
        tb = [h.type for h in b.flatten()]
        if type(a) is not type(b) or ta != tb:
            if isinstance(a, tensor) and isinstance(b, tensor) and a.shape == b.shape and \
                    not isinstance(a.dtype, T.PointerType) and not isinstance(b.dtype, T.PointerType):
                raise self.error(node, f"'{name}' is {a.dtype!r} in one branch and {b.dtype!r} in the other; "
                                       f"convert one with .to() so both branches agree")
            raise self.error(node, f"'{name}' has different types in the two branches: "
                                   f"{', '.join(map(str, ta))} vs {', '.join(map(str, tb))}")
        return a, b

    def materialize(self, value, like, name, node):
        """A Python number as a tensor of ``like``'s type (for carrying it through control flow)."""
        value = unwrap(value)
        if isinstance(like, tensor) and _is_const(value) and isinstance(value, (int, float, bool)):
            if like.is_tile:
                return self.sem.full(like.shape, value, like.dtype)
            return self.sem.const(value, like.dtype)
        raise self.error(node, f"'{name}' is a compile-time {type(value).__name__} on one path and a "
                               f"runtime {like!r} on another")

    def _jumpless(self, node):
        """``node`` (a for or while loop) with its break/continue rewritten, and the name of its
        break flag (None without a break), set to False in the scope (``control_flow.jumpless``)."""
        loop, flag = control_flow.jumpless(node)
        if flag is not None:
            self.scope[flag] = False
        return loop, flag

    def visit_For(self, node):
        if node.orelse:
            raise self.error(node, "for ... else is not supported in kernels")
        node, flag = self._jumpless(node)
        try:
            self._visit_for(node)
        finally:
            if flag is not None:
                self.scope.pop(flag, None)

    def _visit_for(self, node):
        it = self.visit(node.iter)
        if isinstance(unwrap(it), (tuple, list)) or (isinstance(it, _Range) and it.static):
            values = unwrap(it) if not isinstance(it, _Range) else range(*it.args)
            for v in values:
                self.assign(node.target, v)
                self.visit_stmts(node.body)
            return
        if not isinstance(it, _Range):
            raise self.error(node.iter, "a kernel loop iterates over range(...), xl.range(...), "
                                        "xl.static_range(...) or a tuple of constants")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        step = unwrap(it.args[2]) if len(it.args) == 3 else 1
        if isinstance(step, int) and not isinstance(step, bool) and step < 0:
            return self._downward_for(node, it, step)
        self.dynamic_for(node, it)

    def _downward_for(self, node, it: _Range, step: int):
        """``for i in range(a, b, -s)``: an ``scf.for`` counts up (its step is positive), so the loop
        runs ``k`` over ``range(0, max(0, ceil((a - b) / s)))`` with ``i = a - k * s`` first in its body."""
        a, b = (self.sem.to_tensor(v) for v in it.args[:2])
        for t in (a, b):
            if t.is_tile or not t.dtype.is_int or t.dtype.is_bool:
                raise self.error(node, f"range bounds must be integer scalars, got {t!r}")
        span = self.sem.binary("sub", a, b)
        trips = self.sem.where(self.sem.compare("gt", span, 0),
                               self.sem.binary("floordiv", self.sem.binary("add", span, -step - 1), -step), 0)
        tag = f"__xk_down{id(node)}"
        self.scope[tag + "_a"] = a
        loop = control_flow.counting_up(node, tag + "_a", tag + "_k", step)
        self.dynamic_for(loop, _Range((0, trips), False, it.hints))
        self.scope.pop(tag + "_a", None)

    def _range_bounds(self, it: _Range, node):
        args = list(it.args)
        if not 1 <= len(args) <= 3:
            raise self.error(node, f"range takes 1 to 3 arguments, got {len(args)}")
        if len(args) == 1:
            args = [0] + args
        if len(args) == 2:
            args.append(1)
        step = unwrap(args[2])
        if _is_const(step) and (not isinstance(step, int) or step <= 0):
            raise self.error(node, f"range step must be a positive integer, got {step!r}")
        ts = [self.sem.to_tensor(a) for a in args]
        for t in ts:
            if t.is_tile or not t.dtype.is_int or t.dtype.is_bool:
                raise self.error(node, f"range bounds must be integer scalars, got {t!r}")
        dt = T.int64 if any(t.dtype.bits == 64 for t in ts) else T.int32
        return [self.sem.cast(t, dt) for t in ts]

    def _carried(self, stmts, exclude=()) -> List[str]:
        return [n for n in _assigned_names(stmts) if n in self.scope and n not in exclude]

    def _carry_types(self, names, extra_scope, stmts, make_block, node):
        """Find the IR types of loop-carried names by dry runs of the body (Python numbers that the
        body turns into tensors take the body's type)."""
        want: Dict[str, Any] = {}
        for _ in range(4):
            proto = self._prototypes(names, want, node)
            types = [h.type for n in names if proto[n] is not None for h in proto[n].flatten()]
            block = make_block(types)
            snap = self.sem.snapshot()
            scope = dict(self.scope)
            scope.update(extra_scope(block))
            args = list(block.args[len(block.args) - len(types):])
            for n in names:
                if proto[n] is not None:
                    k = len(proto[n].flatten())
                    scope[n] = proto[n].rebuild(args[:k])
                    args = args[k:]
            saved_one = set(self.one_branch)
            after = self._run_block(stmts, scope, block)
            self.one_branch = saved_one
            self.sem.restore(snap)
            changed = False
            for n in names:
                before, post = unwrap(self.scope[n]), unwrap(after[n])
                if proto[n] is None:  # a compile-time value before the loop
                    if _is_const(post) and type(post) is type(before) and post == before:
                        continue
                    new = post if isinstance(post, base_value) else self.sem_type_of(post)
                    if want.get(n) is None or not self._same_kind(want[n], new):
                        want[n] = new
                        changed = True
                    continue
                pt = [h.type for h in proto[n].flatten()]
                if isinstance(post, base_value):
                    qt = [h.type for h in post.flatten()]
                    if qt != pt:
                        raise self.error(node, f"loop-carried '{n}' changes type in the loop body: "
                                               f"{', '.join(map(str, pt))} before, {', '.join(map(str, qt))} "
                                               f"after; convert with .to() to keep it stable")
            if not changed:
                return proto
        raise self.error(node, "could not settle the types of the loop-carried variables")

    @staticmethod
    def _same_kind(a, b) -> bool:
        if isinstance(a, base_value) and isinstance(b, base_value):
            return [h.type for h in a.flatten()] == [h.type for h in b.flatten()]
        return a == b

    def sem_type_of(self, v):
        return self.sem.python_dtype(unwrap(v))

    def _prototypes(self, names, want, node):
        """Per carried name: a value whose ``flatten`` types are what the loop carries (None: not
        carried, a compile-time constant the body leaves alone)."""
        proto = {}
        for n in names:
            v = unwrap(self.scope[n])
            if isinstance(v, base_value):
                proto[n] = v
            elif n in want:
                w = want[n]
                if isinstance(w, base_value):
                    proto[n] = _TypeProto(w)
                else:
                    proto[n] = _TypeProto.scalar(w)
            elif _is_const(v):
                proto[n] = None
            else:
                raise self.error(node, f"'{n}' holds {type(v).__name__}, which a loop cannot carry")
        return proto

    def _init_values(self, names, proto, node):
        """The values entering the loop, with Python numbers materialized to the carried types."""
        vals = []
        for n in names:
            p = proto[n]
            if p is None:
                continue
            v = unwrap(self.scope[n])
            if isinstance(p, _TypeProto):
                if isinstance(v, base_value):
                    vals.append(v)
                elif p.like is not None:
                    vals.append(self.materialize(v, p.like, n, node))
                else:
                    vals.append(self.sem.const(v, p.dtype))
            else:
                vals.append(v)
        return vals

    def dynamic_for(self, node, it: _Range):
        lb, ub, st = self._range_bounds(it, node)
        var = node.target.id
        names = self._carried(node.body, exclude=(var,))

        def make_block(types):
            return Block([lb.type] + types)

        proto = self._carry_types(names, lambda blk: {var: tensor(blk.args[0])}, node.body, make_block, node)
        carried = [n for n in names if proto[n] is not None]
        inits = self._init_values(names, proto, node)
        flat = [h for v in inits for h in v.flatten()]
        op = self.b.create(ir.ForOp, lb.handle, ub.handle, st.handle, flat)
        if it.hints:
            op.attrs.update(it.hints)
        scope = dict(self.scope)
        scope[var] = tensor(op.iv)
        args = list(op.iter_args)
        for n, v in zip(carried, inits):
            k = len(v.flatten())
            scope[n] = v.rebuild(args[:k])
            args = args[k:]
        after = self._run_block(node.body, scope, op.body)
        with self.b.at(op.body):
            ys = self._yields(carried, inits, after, node)
            op.body.append(ir.YieldOp(ys, loc=op.loc))
        self._bind_results(carried, inits, op.results, after, names, proto)
        self._forget_body_locals(node.body, names + [var])

    def _yields(self, carried, inits, after, node):
        ys = []
        for n, v in zip(carried, inits):
            post = unwrap(after[n])
            if not isinstance(post, base_value):
                post = self.materialize(post, v, n, node)
            ys.extend(post.flatten())
        return ys

    def _bind_results(self, carried, inits, results, after, names, proto):
        results = list(results)
        for n, v in zip(carried, inits):
            k = len(v.flatten())
            self.scope[n] = v.rebuild(results[:k])
            results = results[k:]

    def _forget_body_locals(self, stmts, keep):
        for n in _assigned_names(stmts):
            if n not in keep and n not in self.scope:
                self.loop_locals.add(n)

    def visit_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported in kernels")
        node, flag = self._jumpless(node)
        try:
            self._visit_while(node)
        finally:
            if flag is not None:
                self.scope.pop(flag, None)

    def _visit_while(self, node):
        names = self._carried(node.body)
        proto = self._carry_types(names, lambda blk: {}, node.body, lambda types: Block(types), node)
        carried = [n for n in names if proto[n] is not None]
        inits = self._init_values(names, proto, node)
        flat = [h for v in inits for h in v.flatten()]
        op = self.b.create(ir.WhileOp, flat)

        def bind(block):
            scope = dict(self.scope)
            args = list(block.args)
            for n, v in zip(carried, inits):
                k = len(v.flatten())
                scope[n] = v.rebuild(args[:k])
                args = args[k:]
            return scope

        saved = self.scope
        self.scope = bind(op.before)
        try:
            with self.b.at(op.before):
                test = unwrap(self.visit(node.test))
                if isinstance(test, lcore.condition):   # xl.condition(cond, disable_licm=): the test
                    test = unwrap(test.condition)
                cond = self.scalar_condition(test, node.test)
                op.before.append(ir.ConditionOp(cond.handle, list(op.before.args), loc=op.loc))
        finally:
            self.scope = saved
        after = self._run_block(node.body, bind(op.after), op.after)
        with self.b.at(op.after):
            op.after.append(ir.YieldOp(self._yields(carried, inits, after, node), loc=op.loc))
        self._bind_results(carried, inits, op.results, after, names, proto)
        self._forget_body_locals(node.body, names)

    # ---- expressions ----------------------------------------------------------------------------
    def visit_Constant(self, node):
        return node.value

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            x = unwrap(self.visit(v.value if isinstance(v, ast.FormattedValue) else v))
            if isinstance(x, base_value):
                raise self.error(v, "f-strings can only format compile-time values")
            parts.append(str(x) if isinstance(v, ast.FormattedValue) else x)
        return "".join(parts)

    def lookup(self, name: str, node):
        if name in self.scope:
            return self.scope[name]
        if name in self.one_branch:
            raise self.error(node, f"'{name}' is assigned in only one branch of an if; assign it in both "
                                   f"branches (or before the if) to use it afterwards")
        if name in self.loop_locals:
            raise self.error(node, f"'{name}' is first assigned inside a loop body; assign it before the "
                                   f"loop to use it after the loop")
        for table in (self.src.closure, self.src.globals):
            if name in table:
                return self.check_global(name, table[name], node)
        if name == "breakpoint":
            return _BREAKPOINT
        if name in _ALLOWED_PY_BUILTINS:
            return getattr(builtins, name)
        if hasattr(builtins, name):
            raise self.error(node, f"the Python builtin '{name}' is not supported in kernels")
        raise self.error(node, f"name '{name}' is not defined")

    def check_global(self, name, v, node):
        if isinstance(v, constexpr):
            return v.value
        if isinstance(v, list):
            raise self.error(node, f"global '{name}' is a list; kernels can only read constants that cannot "
                                   f"change after compilation: use a tuple, or pass the values as arguments")
        if _is_const(v) or isinstance(v, pytypes.ModuleType) or _is_jit(v) or is_builtin(v) or \
                v in _PY_CLASSES or isinstance(v, pytypes.BuiltinFunctionType) and v.__module__ == "math":
            return v
        if callable(v):
            return v  # rejected at the call site with a clear message
        raise self.error(node, f"global '{name}' is a {type(v).__name__}; kernels can only read "
                               f"compile-time constants (int, float, bool, str, dtypes, layouts, tuples), "
                               f"modules and @xk.jit functions")

    def visit_Name(self, node):
        return self.lookup(node.id, node)

    def visit_Attribute(self, node):
        obj = unwrap(self.visit(node.value))
        attr = node.attr
        if isinstance(obj, tensor):
            if attr == "T":
                return self.sem.permute(obj)
            if attr in ("dtype", "shape", "numel", "type"):
                return getattr(obj, attr)
        if isinstance(obj, pointer_tile) and attr in ("dtype", "shape"):
            return getattr(obj, attr)
        if isinstance(obj, base_value) and attr.startswith("_"):
            raise self.error(node, f"'{attr}' is private")
        if type(obj) in (int, float, bool) and attr == "type":   # a compile-time number, as Triton's constexpr
            return lto.constexpr_type(obj)
        if type(obj) in (int, float, bool) and not hasattr(obj, attr) and hasattr(tensor, attr):
            # a Python number in a variable is a scalar of the kernel, as in Triton: `z = 3; z.to(xl.int64)`
            return getattr(self.sem.to_tensor(obj), attr)
        try:
            return getattr(obj, attr)
        except AttributeError:
            what = type(obj).__name__ if not isinstance(obj, pytypes.ModuleType) else f"module '{obj.__name__}'"
            raise self.error(node, f"{what} has no attribute '{attr}'") from None

    def visit_Subscript(self, node):
        obj = unwrap(self.visit(node.value))
        idx = node.slice
        if isinstance(obj, (tuple, list, str)):
            i = unwrap(self.visit(idx))
            if isinstance(i, base_value):
                raise self.error(node, "tuples can only be indexed by compile-time integers")
            if isinstance(i, lto.slice):
                if any(isinstance(b, base_value) for b in (i.start, i.stop, i.step)):
                    raise self.error(node, "a tuple is sliced with compile-time bounds")
                part = obj[i.as_python()]
                return type(obj)(part) if isinstance(obj, lto.tuple) else part
            return obj[i]
        if isinstance(obj, private_array):
            return self.sem.private_load(obj, self._private_index(node))
        if not isinstance(obj, (tensor, pointer_tile)):
            raise self.error(node, f"{type(obj).__name__} cannot be indexed")
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        rank = len(obj.shape)
        out = obj
        pos = 0
        news = 0
        for e in elts:
            v = unwrap(self.visit(e))
            if v is None:
                out = self._expand(out, pos)
                news += 1
                pos += 1
            elif isinstance(v, lto.slice) and v.is_whole():
                pos += 1
            else:
                raise self.error(e, "tiles can only be indexed with ':' and None (e.g. x[:, None]); "
                                    "element indexing is not supported")
        if pos - news > rank:
            raise self.error(node, f"too many indices for a tile of rank {rank}")
        return out

    def visit_Slice(self, node):
        """``a:b:c`` in a subscript: Triton's ``slice`` of the bounds."""
        return lto.slice(*(unwrap(self.visit(b)) if b is not None else None
                           for b in (node.lower, node.upper, node.step)))

    def _private_index(self, node: ast.Subscript):
        """The indices of ``buf[i, j]`` (kernel values or compile-time integers; no slices)."""
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error(e, "a private array is indexed one element at a time (buf[i] or buf[i, j]), "
                                    "not with slices")
        return tuple(self.visit(e) for e in elts)

    def _expand(self, v, axis):
        return self.sem.expand_dims(v, axis)

    def binop(self, opname, a, b, node):
        ua, ub = unwrap(a), unwrap(b)
        if not isinstance(ua, base_value) and not isinstance(ub, base_value):
            try:
                return _PYOPS[opname](ua, ub)
            except Exception as e:
                raise self.error(node, f"{type(e).__name__}: {e}") from None
        return self.sem.binary(opname, ua, ub)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            return self.sem.dot(self.visit(node.left), self.visit(node.right))
        return self.binop(_BINOPS[type(node.op)], self.visit(node.left), self.visit(node.right), node)

    def visit_UnaryOp(self, node):
        v = unwrap(self.visit(node.operand))
        name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}[type(node.op)]
        if not isinstance(v, base_value):
            return {"neg": lambda x: -x, "pos": lambda x: +x, "invert": lambda x: ~x,
                    "not": lambda x: not x}[name](v)
        return self.sem.unary(name, v)

    def visit_Compare(self, node):
        left = unwrap(self.visit(node.left))
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = unwrap(self.visit(right_node))
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                if isinstance(left, base_value) or isinstance(right, base_value):
                    raise self.error(node, "'is' and 'in' work on compile-time values only")
                r = {ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
                     ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}[type(op)](left, right)
            else:
                name = _CMPOPS[type(op)]
                if isinstance(left, base_value) or isinstance(right, base_value):
                    r = self.sem.compare(name, left, right)
                else:
                    r = _PYCMP[name](left, right)
            result = r if result is None else self._and(result, r, node)
            left = right
        return result

    def _and(self, a, b, node):
        if not isinstance(a, base_value) and not isinstance(b, base_value):
            return a and b
        return self.sem.binary("and", self.sem.to_tensor(a), self.sem.to_tensor(b))

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        acc = unwrap(self.visit(node.values[0]))
        for vnode in node.values[1:]:
            if not isinstance(acc, base_value):
                if (not acc) if is_and else bool(acc):
                    return acc  # short circuit on a compile-time value
                acc = unwrap(self.visit(vnode))
                continue
            nxt = unwrap(self.visit(vnode))
            acc = self.sem.logical("and" if is_and else "or", acc, nxt)
        return acc

    def visit_IfExp(self, node):
        cond = unwrap(self.visit(node.test))
        if not isinstance(cond, base_value):
            return self.visit(node.body) if cond else self.visit(node.orelse)
        cond = self.scalar_condition(cond, node.test)
        return self.sem.where(cond, self.visit(node.body), self.visit(node.orelse))

    def visit_Call(self, node):
        fn = unwrap(self.visit(node.func))
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, _UNSUPPORTED["Starred"])
        args = [self.visit(a) for a in node.args]
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(k, "**kwargs unpacking is not supported in kernels")
            kwargs[k.arg] = self.visit(k.value)
        if fn is range:
            if kwargs:
                raise self.error(node, "range takes no keyword arguments")
            return _Range(args, static=False)
        if fn is lb.range:
            r = lb.range(*args, **kwargs)
            return _Range(r.args, static=False, hints=r.hints)
        if fn is lb.static_range:
            vals = [unwrap(a) for a in args]
            if not all(isinstance(v, int) for v in vals) or kwargs:
                raise self.error(node, "static_range bounds must be compile-time integers")
            return _Range(vals, static=True)
        if _is_jit(fn):
            return self.call_jit(fn, args, kwargs, node)
        if fn is _BREAKPOINT:
            if args or kwargs:
                raise self.error(node, "breakpoint() in a kernel takes no arguments")
            return self.sem.breakpoint(self.scope)
        if is_builtin(fn):
            if takes_generator(fn):  # it inlines a user's function: this generator does, at this call
                self.builtin_call = node
                return fn(*args, _sem=self.sem, _generator=self, **kwargs)
            return fn(*args, _sem=self.sem, **kwargs)
        if isinstance(getattr(fn, "__self__", None), (T.Type, lto.slice, lto.constexpr_type)):
            vals = [unwrap(a) for a in args]   # a method of a type (x.type.is_block()): compile time
            if any(isinstance(v, base_value) for v in vals + list(kwargs.values())):
                raise self.error(node, f"{fn.__name__}(...) needs compile-time arguments")
            return fn(*vals, **{k: unwrap(v) for k, v in kwargs.items()})
        if fn in _VALUE_CLASSES:
            return fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
        if fn in _PY_CLASSES:
            vals = [unwrap(a) for a in args]
            if any(isinstance(v, base_value) for v in vals + list(kwargs.values())):
                raise self.error(node, f"{fn.__name__}(...) needs compile-time arguments")
            return fn(*vals, **{k: unwrap(v) for k, v in kwargs.items()})
        if getattr(fn, "__module__", None) == "builtins" and getattr(fn, "__name__", "") in _ALLOWED_PY_BUILTINS:
            return self.call_python_builtin(fn, args, kwargs, node)
        if isinstance(fn, pytypes.BuiltinFunctionType) and getattr(fn, "__module__", "") == "math":
            return self.call_python_builtin(fn, args, kwargs, node)
        name = getattr(fn, "__name__", repr(fn))
        raise self.error(node, f"'{name}' is not an @xk.jit function or an xl builtin and cannot be called "
                               f"from a kernel (decorate it with @xk.jit to inline it)")

    def call_python_builtin(self, fn, args, kwargs, node):
        vals = [unwrap(a) for a in args]
        if fn is print:
            if hasattr(self.sem, "device_print"):
                return self.sem.device_print(" ".join(str(v) for v in vals if isinstance(v, str)),
                                             *[v for v in vals if not isinstance(v, str)])
            raise self.error(node, "print is not supported in kernels; use xl.device_print")
        if fn in (min, max) and not kwargs and any(isinstance(v, base_value) for v in vals):
            return self.python_minmax(fn, vals, node)
        if any(isinstance(v, base_value) for v in vals + [unwrap(v) for v in kwargs.values()]):
            hint = {"abs": "xl.abs", "float": ".to(xl.float32)", "int": ".to(xl.int32)"}.get(fn.__name__)
            raise self.error(node, f"Python's {fn.__name__}() works on compile-time values only"
                                   + (f"; use {hint} on tensors" if hint else ""))
        return fn(*vals, **{k: unwrap(v) for k, v in kwargs.items()})

    def python_minmax(self, fn, vals, node):
        """``min(a, b, ...)`` / ``max`` with runtime operands: Triton's ``xl.minimum`` / ``xl.maximum``
        chained over the operands, after folding the compile-time ones together."""
        if len(vals) == 1:
            raise self.error(node, f"{fn.__name__}() of one runtime value: use xl.{fn.__name__}(x, axis) to "
                                   f"reduce a tile")
        consts = [v for v in vals if not isinstance(v, base_value)]
        for v in consts:
            if not isinstance(v, (int, float)):
                raise self.error(node, f"{fn.__name__}() takes numbers and tensors, got {type(v).__name__} {v!r}")
        acc = fn(consts) if consts else None
        for v in vals:
            if isinstance(v, base_value):
                acc = v if acc is None else self.sem.minmax(fn.__name__, acc, v)
        return acc

    def inline(self, jit, *args):
        """Inline ``jit(*args)`` for the builtin being called with ``_generator=self`` (``xl.all_reduce``
        inlines its combine function): as a call written at that builtin's call, so errors and the
        call chain name it, and recursion is caught."""
        return self.call_jit(jit, list(args), {}, self.builtin_call)

    def call_jit(self, jit, args, kwargs, node):
        """Inline a call to another @xk.jit function."""
        import inspect
        chain = self.call_chain + (f"{self.src.file}:{self.loc(node).line} in {self.src.name}",)
        if len(chain) > 32 or any(c is jit for c in self._stack):
            raise self.error(node, f"recursive call to '{jit.__name__}' is not supported")
        sig = inspect.signature(jit.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"bad call to {jit.__name__}: {e}") from None
        bound.apply_defaults()
        # (a constexpr annotation on a helper's parameter takes runtime values too, as Triton's
        # tutorial 06 passes offs_m and N_CTX: the helper is inlined either way)
        scope = {name: unwrap(v) for name, v in bound.arguments.items()}
        gen = CodeGenerator(jit.source, self.sem, scope, chain, self.depth + 1)
        gen._stack = self._stack + (jit,)
        return gen.visit_function(jit.source.tree)


class _Missing:
    pass


_MISSING = _Missing()


class _TypeProto(base_value):
    """A stand-in that carries a loop type before any real value of it exists."""

    def __init__(self, like=None, dtype=None):
        self.like = like
        self.dtype = dtype

    @classmethod
    def scalar(cls, dtype):
        return cls(None, dtype)

    def flatten(self):
        if self.like is not None:
            return self.like.flatten()
        return [ir.Value(self.dtype)]

    def rebuild(self, handles):
        if self.like is not None:
            return self.like.rebuild(handles)
        return tensor(handles[0])
