"""Control flow the frontend rewrites before it builds IR: ``return`` inside ``if``, and ``break`` /
``continue`` in loops.

The IR's structured ``scf.if`` / ``scf.for`` / ``scf.while`` have no early exits, so these Python
statements become the structured equivalent on the function's AST (a copy: the cached source tree
is not touched), which the code generator then builds as any other code:

- ``returns_at_the_end``: the statements after an ``if`` that returns move into the branches that
  do not, and a returned value is assigned to a hidden name returned last (``if pid >= n: return``);
- ``jumpless``: a ``continue`` ends its branch the same way, and a ``break`` also sets a hidden
  loop-carried flag that guards the rest of the loop;
- ``counting_up``: ``for i in range(a, b, -s)`` as a loop over a counter that goes up (``scf.for``
  has a positive step), ``i = a - k * s`` first in its body.
"""
from __future__ import annotations

import ast
import copy


_RET = "__xk_return_value"


def returns_at_the_end(stmts: list) -> list:
    """A function body whose ``return``s inside ``if``s are moved to its end: the statements after an
    ``if`` that returns go into the branches that do not (``if c: return`` + rest becomes
    ``if c: pass else: rest``), and a returned value is assigned to a hidden name returned last.
    Returns inside loops are left where they are (the caller reports them)."""
    body = _lift(copy.deepcopy(stmts))
    valued = any(isinstance(n, ast.Return) and n.value is not None for s in body for n in ast.walk(s))
    body = _retarget(body, valued)
    if valued:
        last = ast.Return(value=ast.Name(id=_RET, ctx=ast.Load()))
        body.append(ast.fix_missing_locations(ast.copy_location(last, stmts[-1])))
    return body or [ast.Pass()]


def _returns(node) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _lift(stmts: list) -> list:
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _returns(s):
            rest = stmts[i + 1:]
            s.body = _branch(s.body, rest)
            s.orelse = _branch(s.orelse, rest)
            out.append(s)
            return out
        out.append(s)
        if isinstance(s, ast.Return):
            return out   # (what follows a return never runs)
    return out


def _branch(stmts: list, rest: list) -> list:
    if stmts and isinstance(stmts[-1], ast.Return):
        return _lift(stmts)
    return _lift(stmts + copy.deepcopy(rest)) or [ast.Pass()]


def _retarget(stmts: list, valued: bool) -> list:
    """Each ``return v`` (now last in its branch) becomes ``_RET = v``; a bare one is dropped."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Return):
            if valued:
                value = s.value if s.value is not None else ast.Constant(None)
                out.append(ast.copy_location(ast.Assign(targets=[ast.Name(id=_RET, ctx=ast.Store())],
                                                        value=value), s))
            continue
        if isinstance(s, ast.If):
            s.body = _retarget(s.body, valued) or [ast.copy_location(ast.Pass(), s)]
            s.orelse = _retarget(s.orelse, valued)
        out.append(s)
    return [ast.fix_missing_locations(s) for s in out]


def jumps(stmts: list, kinds=(ast.Break, ast.Continue)) -> bool:
    """A break/continue of this loop among ``stmts`` (not of a loop nested in them)."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            return True
        if not isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))
    return False


def without_jumps(stmts: list, flag: str) -> list:
    """A loop body whose ``continue``s end their branch (what follows moves into the branches that
    go on) and whose ``break``s set ``flag`` and end their branch likewise."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Continue):
            return out
        if isinstance(s, ast.Break):
            out.append(ast.fix_missing_locations(ast.copy_location(
                ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())], value=ast.Constant(True)), s)))
            return out
        if isinstance(s, ast.If) and jumps([s]):
            rest = stmts[i + 1:]
            s.body = _jump_branch(s.body, rest, flag) or [ast.copy_location(ast.Pass(), s)]
            s.orelse = _jump_branch(s.orelse, rest, flag)
            out.append(s)
            return out
        out.append(s)
    return out


def _jump_branch(stmts: list, rest: list, flag: str) -> list:
    if stmts and isinstance(stmts[-1], (ast.Break, ast.Continue)):
        return without_jumps(stmts, flag)
    return without_jumps(stmts + copy.deepcopy(rest), flag)


def jumpless(node):
    """``node`` (a for or while loop) with its break/continue rewritten (``without_jumps``), and the
    name of its break flag (None without a break; the caller sets it to False before the loop)."""
    if not jumps(node.body):
        return node, None
    flag = f"__xk_break{id(node)}" if jumps(node.body, (ast.Break,)) else None
    body = without_jumps(copy.deepcopy(node.body), flag or "")
    if flag is not None:
        guard = ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load()))
        if isinstance(node, ast.For):
            body = [ast.If(test=guard, body=body or [ast.Pass()], orelse=[])]
    loop = copy.copy(node)
    loop.body = [ast.fix_missing_locations(ast.copy_location(b, node)) for b in body] or [ast.Pass()]
    if flag is not None and isinstance(node, ast.While):
        loop.test = ast.BoolOp(op=ast.And(), values=[node.test, guard])
    return ast.fix_missing_locations(ast.copy_location(loop, node)), flag


def counting_up(node: ast.For, start: str, counter: str, step: int) -> ast.For:
    """``node`` (``for i in range(a, b, step)``, ``step < 0``) over the name ``counter`` instead,
    with ``i = start + counter * step`` first in its body (``start`` names ``a``'s value)."""
    k = ast.copy_location(ast.Name(id=counter, ctx=ast.Store()), node.target)
    first = ast.copy_location(ast.Assign(
        targets=[node.target],
        value=ast.BinOp(left=ast.Name(id=start, ctx=ast.Load()), op=ast.Add(),
                        right=ast.BinOp(left=ast.Name(id=counter, ctx=ast.Load()), op=ast.Mult(),
                                        right=ast.Constant(step)))), node)
    ast.fix_missing_locations(first)
    return ast.copy_location(ast.For(target=k, iter=node.iter, body=[first] + node.body, orelse=[]), node)
