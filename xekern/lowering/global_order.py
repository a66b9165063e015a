"""Pass ``global-order``: a store never overtakes an earlier load of the program in another subgroup.

A tile op is one operation of the program: ``z = xl.load(Z row 0)`` completes before a later
``xl.store(Z tile, ...)`` begins, whichever subgroups the two tiles are spread over. After the
workgroup is split into subgroups, nothing orders subgroup 0's store of row 0 before subgroup 1's
load of it, so (without this pass) rows 4-15 of ``z += xl.load(Z row 0)[None, :]; xl.store(Z, z)``
read values the program itself wrote later.

A store (``store_scatter``, ``store_nd``, ``atomic_rmw``) through a pointer parameter that an
earlier load (``load_gather``, ``load_nd``) also reads gets a workgroup barrier (with its global
fence) in front of it, unless every lane stores exactly the elements it loaded: the same layout
and structurally the same addresses (the in-place ``x = load(X + offs); store(X + offs, f(x))``).
In a loop body every load of the body counts as earlier (the previous iteration's). Kernels of
one subgroup (and subgroup-level kernels, which order their own accesses) are left alone; pointer
parameters are assumed not to overlap each other, as Triton users write them.

Example: ``%a = xegpu.load_gather %row0 ...; ...; xegpu.store_scatter %v, %tile ...`` becomes
``...; gpu.barrier; xegpu.store_scatter %v, %tile ...``.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Op, Value
from ..ir.types import PointerType
from .launch_facts import param_roots
from .rewrite import copy_func

_LOADS = (ir.LoadGatherOp, ir.LoadNdOp)
_STORES = (ir.StoreScatterOp, ir.StoreNdOp, ir.AtomicRMWOp)


def run(func: ir.FuncOp, ctx) -> ir.FuncOp:
    if func.attrs.get("num_subgroups", 1) <= 1:
        return func
    ops = list(func.walk())
    if not any(isinstance(op, _LOADS) for op in ops) or not any(isinstance(op, _STORES) for op in ops):
        return func
    params = {id(a): a.hint for a in func.args if isinstance(a.type, PointerType)}
    plan = _Plan(params)
    plan.scan(func.body, [])
    if not plan.before:
        return func
    out = copy_func(func, ctx)
    # the copy has the same ops in the same order: find the stores again by position
    marks = {i for i, op in enumerate(ops) if id(op) in plan.before}
    for i, op in enumerate(list(out.walk())):
        if i in marks:
            block = op.parent
            bar = ir.BarrierOp(loc=op.loc)
            bar.parent = block
            block.ops.insert(block.ops.index(op), bar)
    return out


class _Plan:
    """Which stores need a barrier in front (``before``: ids of the store ops)."""

    def __init__(self, params: Dict[int, str]):
        self.params = params
        self.before = set()
        self._roots: Dict[int, List[str]] = {}

    def roots(self, v: Value) -> List[str]:
        r = self._roots.get(id(v))
        if r is None:
            r = self._roots[id(v)] = param_roots(v, self.params)
        return r

    def scan(self, block, pending: List[Op]) -> List[Op]:
        """Walk ``block`` with the loads not yet ordered before it (``pending``); return those after it."""
        pending = list(pending)
        for op in block.ops:
            if isinstance(op, _LOADS):
                pending.append(op)
            elif isinstance(op, _STORES):
                if any(self._conflict(ld, op) for ld in pending):
                    self.before.add(id(op))
                    pending = []
            elif isinstance(op, ir.BarrierOp) and op.attrs.get("memory") != "local":
                pending = []
            if op.regions:
                loop = isinstance(op, (ir.ForOp, ir.WhileOp))
                after = list(pending)
                for region in op.regions:
                    inner = list(pending)
                    if loop:   # (the previous iteration's loads come before this one's stores)
                        inner += _loads_in(region)
                    after += [o for o in self.scan(region, inner) if o not in after]
                pending = after
        return pending

    def _conflict(self, load: Op, store: Op) -> bool:
        lt, st = _tdesc(load), _tdesc(store)
        if not set(self.roots(lt)) & set(self.roots(st)):
            return False
        return not _same_owner(load, store)


def _loads_in(block) -> List[Op]:
    out = []
    for op in block.ops:
        if isinstance(op, _LOADS):
            out.append(op)
        for r in op.regions:
            out += _loads_in(r)
    return out


def _tdesc(op: Op) -> Value:
    if isinstance(op, (ir.LoadNdOp, ir.StoreNdOp)):
        return op.tdesc
    if isinstance(op, ir.StoreScatterOp):
        return op.operands[1]
    return op.operands[0]   # load_gather, atomic_rmw


def _addresses(op: Op) -> Tuple[Value, ...]:
    """The values that decide which elements ``op`` touches and which lane touches each."""
    if isinstance(op, (ir.LoadNdOp, ir.StoreNdOp)):
        return (op.tdesc, *op.offsets)
    return (_tdesc(op),)


def _same_owner(load: Op, store: Op) -> bool:
    """Every lane stores exactly the elements it loaded: same descriptor type (shape and layout),
    structurally the same addresses."""
    if type(load) is ir.LoadGatherOp and type(store) is not ir.StoreScatterOp:
        return False
    if type(load) is ir.LoadNdOp and type(store) is not ir.StoreNdOp:
        return False
    if isinstance(load, ir.LoadNdOp) and (load.attrs.get("transpose") or load.attrs.get("packed")):
        return False
    if _tdesc(load).type != _tdesc(store).type:
        return False
    a, b = _addresses(load), _addresses(store)
    memo: Dict[Tuple[int, int], bool] = {}
    return len(a) == len(b) and all(_same_value(x, y, memo) for x, y in zip(a, b))


def _same_value(a: Value, b: Value, memo, depth: int = 0) -> bool:
    """``a`` and ``b`` are computed the same way from the same values (pure ops only)."""
    if a is b:
        return True
    key = (id(a), id(b))
    if key in memo:
        return memo[key]
    oa, ob = a.owner, b.owner
    same = (depth < 64 and isinstance(oa, Op) and isinstance(ob, Op) and type(oa) is type(ob)
            and not oa.HAS_SIDE_EFFECTS and not oa.regions and not ob.regions
            and a.type == b.type and oa.results.index(a) == ob.results.index(b)
            and _attrs(oa) == _attrs(ob) and len(oa.operands) == len(ob.operands)
            and all(_same_value(x, y, memo, depth + 1) for x, y in zip(oa.operands, ob.operands)))
    memo[key] = same
    return same


def _attrs(op: Op) -> Optional[tuple]:
    return tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))
