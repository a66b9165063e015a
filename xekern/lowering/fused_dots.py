"""Which lane-level DPAS ops of a block make up one subgroup's product, for the emitter that
computes DPAS with FMAs (the CPU device's micro-kernel, ``codegen/dpas_cpu.py``).

Blocking cuts a subgroup's ``dot`` into DPAS-sized ops: tutorial 03's 64 x 64 x 32 tile on 4
subgroups becomes 16 ops per subgroup and K step, 8 x 16 x 16 products chained along K through
their accumulators. Emitted one by one, each is a K loop of its own, with its own bounds checks,
or its own copies of its operands and its own tables of who holds them: tutorial 03 had 48 such
loops, 11,600 lines of LLVM IR and 4.4 s of the OpenCL CPU driver's build. Taken together they
are one product, which one micro-kernel computes in a few loops (one per group of rows whose
accumulators fit in registers).

A group is DPAS ops of one block with the same tiles that tile an ``M x K`` by ``K x N`` product
without gaps: for each block of C a chain over every K block (each link's result used by the
next link alone; the first link takes its accumulator from outside the group). Two kinds:

* both operands fused loads (``emitter-decisions``: read from memory by the DPAS) of the same two
  descriptors, at constant offsets from the same positions: the blocks sit where their loads
  say, A's K offset must be B's, and the chains run in increasing K;
* neither operand a fused load (operands in registers): chains with the same A operands form a
  row of blocks, chains with the same B operands a column, in chain order;
* A in registers, B fused loads of one descriptor (attention's ``P @ V``): placed as the last
  kind, where B's blocks must lie in memory as their places say (one position plus constants).

Its ops then carry ``fused_dot = [group, row, column, k]``: the op's block in the product, in
elements. The group is computed where its first op is, so its operands and the accumulators its
chains start from must come before that op, and nothing from there to its last op may write
memory or synchronize (memory operands are read there).

Example (two K blocks of one C block)::

    %c1 = xegpu.dpas %a0, %b0, %acc {fused_dot = [0, 0, 0, 0]}
    %c2 = xegpu.dpas %a1, %b1, %c1 {fused_dot = [0, 0, 0, 16]}
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import ir
from ..ir.core import Block, Value

Place = Tuple[int, int, int]   # (row, column, k) of a DPAS's block in its group's product


def mark(func: ir.FuncOp, uses) -> int:
    """Mark the groups of every block of ``func`` (after its loads are marked ``fused``); returns
    how many groups."""
    count = 0
    for block in ir.blocks(func):
        for members, from_memory in _candidates(block):
            placed = _chains(members, uses)
            if placed is not None and from_memory == "both":
                placed = _memory_places(placed)
            elif placed is not None and from_memory == "b" and not _b_where_placed(placed):
                placed = None
            if placed is not None and _in_order(placed, block):
                for op, (r, c, k) in placed.items():
                    op.attrs["fused_dot"] = (count, r, c, k)
                count += 1
    return count


def _candidates(block: Block) -> List[Tuple[List[ir.DpasOp], str]]:
    """The block's DPAS ops by tiles and kind: (ops, the operands read from memory: "both", "b" or
    ""). Those reading memory go by their loads' descriptors and transposition too."""
    by_key: Dict[tuple, List[ir.DpasOp]] = {}
    for op in block.ops:
        if not isinstance(op, ir.DpasOp):
            continue
        fused = [_fused_load(v) for v in op.operands[:2]]
        if all(fused):
            key = ("both", fused[0].tdesc, fused[1].tdesc, _transposed(fused[0]), _transposed(fused[1]))
        elif fused[1] is not None:
            key = ("b", fused[1].tdesc, _transposed(fused[1]))
        elif fused[0] is None:
            key = ("",)
        else:
            continue
        tiles = op.attrs["tiles"]   # (A, B[, the accumulator], C)
        by_key.setdefault(key + tuple(str(t) for t in (tiles[0], tiles[1], tiles[-1])), []).append(op)
    return [(ops, key[0]) for key, ops in by_key.items() if len(ops) > 1]


def _fused_load(v: Value) -> Optional[ir.LoadNdOp]:
    load = v.op
    return load if isinstance(load, ir.LoadNdOp) and load.attrs.get("fused") else None


def _transposed(load: ir.LoadNdOp) -> bool:
    return bool(load.attrs.get("transpose"))


def _chains(members: List[ir.DpasOp], uses) -> Optional[Dict[ir.DpasOp, Place]]:
    """Places by chain structure: rows of chains with the same A operands, columns of chains with
    the same B operands, K along each chain; None unless they tile the product once each."""
    ta, tb = members[0].attrs["tiles"][:2]
    (m, kb), n = ta.shape, tb.shape[1]
    group = set(members)
    chains = []
    for op in members:
        if op.acc is not None and op.acc.op in group:
            continue
        chain = [op]
        while True:
            nxt = [u for u, _ in uses.get(chain[-1].result, []) if u in group]
            if not nxt:
                break
            if len(nxt) != 1 or len(uses[chain[-1].result]) != 1 or nxt[0].acc is not chain[-1].result:
                return None
            chain.append(nxt[0])
        chains.append(chain)
    if sum(map(len, chains)) != len(members) or len({len(c) for c in chains}) != 1:
        return None
    rows = list(dict.fromkeys(tuple(o.operands[0] for o in c) for c in chains))
    cols = list(dict.fromkeys(tuple(o.operands[1] for o in c) for c in chains))
    spots = {(rows.index(tuple(o.operands[0] for o in c)), cols.index(tuple(o.operands[1] for o in c)))
             for c in chains}
    if len(spots) != len(chains) or len(spots) != len(rows) * len(cols):
        return None
    placed = {}
    for c in chains:
        r, j = rows.index(tuple(o.operands[0] for o in c)), cols.index(tuple(o.operands[1] for o in c))
        for t, op in enumerate(c):
            placed[op] = (r * m, j * n, t * kb)
    return placed


def _memory_places(placed: Dict[ir.DpasOp, Place]) -> Optional[Dict[ir.DpasOp, Place]]:
    """Places from where the operands lie in memory, for a group whose chains ``placed`` found:
    A's and B's offsets as the same positions plus constants, A's K offset that of B, the chains
    in increasing K, the blocks tiling the product once each; None otherwise."""
    ops = list(placed)
    ta, tb = ops[0].attrs["tiles"][:2]
    (m, kb), n = ta.shape, tb.shape[1]
    a_at, b_at = {}, {}
    for op in ops:
        a, b = _tile_position(op.operands[0]), _tile_position(op.operands[1])
        if a is None or b is None or a[0] != _tile_position(ops[0].operands[0])[0] or \
                b[0] != _tile_position(ops[0].operands[1])[0]:
            return None
        a_at[op], b_at[op] = a[1], b[1]
    r0, k0 = (min(a[d] for a in a_at.values()) for d in (0, 1))
    kb0, c0 = (min(b[d] for b in b_at.values()) for d in (0, 1))
    out = {}
    for op in ops:
        (r, k), (k2, c) = a_at[op], b_at[op]
        if k - k0 != k2 - kb0:
            return None
        out[op] = (r - r0, c - c0, k - k0)
    extent = [max(p[d] for p in out.values()) + size for d, size in enumerate((m, n, kb))]
    if len(set(out.values())) != len(out) or len(out) * m * n * kb != extent[0] * extent[1] * extent[2] or \
            any(p[0] % m or p[1] % n or p[2] % kb for p in out.values()):
        return None
    # each chain one block of C, in increasing K: the order of the FMAs, and so the rounding, stays the chain's
    blocks: Dict[Tuple[int, int], set] = {}
    for op in ops:
        blocks.setdefault(placed[op][:2], set()).add(out[op][:2])
    if any(out[op][2] != placed[op][2] for op in ops) or any(len(b) != 1 for b in blocks.values()):
        return None
    return out


def _b_where_placed(placed: Dict[ir.DpasOp, Place]) -> bool:
    """Whether the fused B operands of a group that ``_chains`` placed lie in memory as their places
    say: one position plus constants, each block's (K, column) offset from the first block's its
    place's."""
    at = {op: _tile_position(op.operands[1]) for op in placed}
    if any(b is None for b in at.values()) or len({b[0] for b in at.values()}) != 1:
        return False
    k0, c0 = (min(b[1][d] for b in at.values()) for d in (0, 1))
    return all((b[1][0] - k0, b[1][1] - c0) == (placed[op][2], placed[op][1]) for op, b in at.items())


def _in_order(placed: Dict[ir.DpasOp, Place], block: Block) -> bool:
    """Whether the group may be computed where its first op is: its operands and the accumulators
    its chains start from come before that op, and no op from there to its last op writes memory,
    synchronizes or holds a region."""
    index = {op: i for i, op in enumerate(block.ops)}
    first = min(index[o] for o in placed)
    last = max(index[o] for o in placed)

    def before(v: Value) -> bool:   # a block argument, a value from outside the block, or an earlier op's
        return v.op is None or v.op not in index or index[v.op] < first
    for op, (_, _, k) in placed.items():
        if not (before(op.operands[0]) and before(op.operands[1])):
            return False
        if k == 0 and op.acc is not None and not before(op.acc):
            return False
    return not any(o.HAS_SIDE_EFFECTS or o.regions for o in block.ops[first:last + 1] if o not in placed)


def _tile_position(v: Value):
    """((root of each offset), (row, column)) of fused operand ``v``'s block in its tile's
    coordinates: the load's offsets as (SSA root, constant) pairs plus the block's shift in a
    multi-block load; None when an offset is not a root plus constants."""
    load = v.op
    parts = [_root_plus_constant(o) for o in load.offsets]
    if len(parts) != 2 or any(p is None for p in parts):
        return None
    shift = _block_shift(load, list(load.results).index(v))
    mem = [c + s for (_, c), s in zip(parts, shift)]
    roots = tuple(r for r, _ in parts)
    if _transposed(load):
        return roots[::-1], (mem[1], mem[0])
    return roots, (mem[0], mem[1])


def _block_shift(load: ir.LoadNdOp, index: int) -> Tuple[int, int]:
    """Memory offset of result ``index`` of a load covering ``block_grid`` blocks (column-major),
    as ``codegen.nd_elementwise.block_shift`` has it."""
    gv, _ = load.attrs.get("block_grid") or (1, 1)
    shape = load.tdesc.type.shape
    return ((index % gv) * shape[0], (index // gv) * shape[1])


def _root_plus_constant(v: Value) -> Tuple[Optional[Value], int]:
    """(root, c) with ``v = root + c`` through ``arith.addi`` of constants (root None: ``v`` is
    the constant ``c``)."""
    c = 0
    while True:
        k = _constant(v)
        if k is not None:
            return None, c + k
        op = v.op
        if not (isinstance(op, ir.BinaryOp) and op.kind == "addi"):
            return v, c
        x, y = op.operands
        if _constant(y) is not None:
            c, v = c + _constant(y), x
        elif _constant(x) is not None:
            c, v = c + _constant(x), y
        else:
            return v, c


def _constant(v: Value) -> Optional[int]:
    op = v.op
    if isinstance(op, ir.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
        return op.value
    return None
