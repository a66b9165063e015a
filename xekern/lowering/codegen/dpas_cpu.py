"""DPAS on the CPU device (and GPUs without DPAS): the instruction's exact lane-level semantics,
element by element. Lane ``l`` owns C's column ``l``; each A element comes from the lane that owns
it (a shuffle) or, where both operands were just loaded through descriptors, straight from memory
as a K loop of broadcasts and FMAs (the micro-kernel the CPU's vectorizer turns into vector code).
On the CPU emitter (``dpas_k_loops``) operands in registers are multiplied in K loops too, through
private arrays and tables of their owning lanes, rather than unrolled into M x N x K FMAs.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_base as lane_base_py, lane_slot_offsets
from ...ir.types import DType, VectorType
from ..emitter_decisions import loaded_as_is
from ..rewrite import PassError
from .arith import sub_group_shuffle, widen
from .control import counted_loop
from .core import CodeGen, NdDesc, mem_type
from .cpu_tiles import TileAccess, lane_columns, lane_index, uniform
from .memory import lane_base, load_elem, slm_buffer, store_elem, zero
from .nd_elementwise import block_shift, branch_values, nd_origin
from .ocl import F32, I1, I32, I64


def _owners(tile: VectorType, sg: int) -> Dict[Tuple[int, ...], Tuple[int, int]]:
    """Element coordinates -> (lane, slot) of its first owner in a sub-group of ``sg`` lanes."""
    offs = lane_slot_offsets(tile.layout, tile.shape)
    table = {}
    for lane in range(sg):
        base = lane_base_py(tile.layout, tile.shape, lane)
        for s, o in enumerate(offs):
            table.setdefault(tuple(b + x for b, x in zip(base, o)), (lane, s))
    return table


def dpas_emulated(cg: CodeGen, op: ir.DpasOp):
    """DPAS, element by element: lane ``l`` owns C's column ``l``; each A element is fetched with a
    shuffle from the lane that owns it, B's column is the lane's own."""
    tiles = op.attrs["tiles"]
    ta, tb, tc = tiles[0], tiles[1], tiles[-1]
    K = ta.shape[1]
    sg = cg.target.sg_size
    if tb.layout.lane_layout != (1, sg) or tc.layout.lane_layout != (1, sg) or tc.layout.lane_data != (1, 1) \
            or tb.layout.lane_data[1] != 1:
        raise PassError("codegen: dpas operands need B and C spread one column per lane", op)
    if op.attrs.get("fused_dot") is not None:
        return [_fused_dot(cg, op)]
    a_slots, b_slots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    c_slots = cg.slots(op.operands[2]) if len(op.operands) > 2 else None
    owner_a = _owners(ta, sg)
    b_index = {o: s for s, o in enumerate(lane_slot_offsets(tb.layout, tb.shape))}
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    a_cache = {}
    from_memory = _shared_reader(cg, op, op.operands[0]) if cg.emitter.fused_dpas_loads and loaded_as_is(op, 0) \
        else None
    if from_memory is not None and tc.layout.lane_data == (1, 1) and loaded_as_is(op, 1):
        read_b = _shared_reader(cg, op, op.operands[1])
        if read_b is not None:
            return _dpas_from_memory(cg, op, ta, tb, tc, from_memory, read_b)
    if cg.emitter.dpas_k_loops and from_memory is None:
        return _dpas_k_loops(cg, op, ta, tb, tc, c_slots)

    def a_val(i, k):
        v = a_cache.get((i, k))
        if v is None:
            if from_memory is not None:  # every lane reads the same element: a broadcast load
                raw = from_memory(i, k)
            else:  # fetch it from the lane that owns it
                lane, slot = owner_a[(i, k)]
                raw = sub_group_shuffle(cg, "idx", a_slots[slot], cg.i32(lane))
            v = a_cache[(i, k)] = _widen_operand(cg, raw, ea)
        return v

    out = []
    for j, (i, oc) in enumerate(lane_slot_offsets(tc.layout, tc.shape)):
        acc = c_slots[j] if c_slots is not None else zero(ec)
        for k in range(K):
            acc = _mac(cg, a_val(i, k), _widen_operand(cg, b_slots[b_index[(k, oc)]], eb), acc, ec)
        out.append(acc)
    return [out]


def _fused(v) -> bool:
    """Whether DPAS operand ``v`` is a fused load (``emitter-decisions``: no register copy)."""
    return v.op is not None and bool(v.op.attrs.get("fused"))


def _shared_reader(cg: CodeGen, op: ir.Op, v):
    """``_operand_reader(cg, v)``, shared by the DPAS ops of one block that read the same tile (the
    blocks of a subgroup's tile are separate DPAS ops): its row and column parts are built once.
    Safe for dominance: each op's lowering is single-entry single-exit, so what an op of a block
    built dominates the ops after it in that block."""
    key = ("dpas_reader", id(op.parent), v)
    if key not in cg._cache:
        cg._cache[key] = _operand_reader(cg, v)
    return cg._cache[key]


def _operand_reader(cg: CodeGen, v):
    """When ``v`` was just loaded through a 2-D descriptor: a function (i, j) -> the element at
    (i, j) of that tile read from memory (bounds-checked: zero outside the tensor; i, j may be LLVM
    values), with ``.access`` the unchecked form (``cpu_tiles.TileAccess``). None otherwise. Lets
    the CPU's DPAS read operands from memory (a broadcast load when the address is the same in
    every lane) instead of moving them between lanes."""
    load = v.op
    if not isinstance(load, ir.LoadNdOp):
        return None
    d: NdDesc = cg.get(load.tdesc)
    if len(d.type.shape) != 2:
        return None
    index = list(load.results).index(v)
    r_off, c_off = block_shift(load, d, index)
    origin = nd_origin(cg, d, load)
    tr = bool(load.attrs.get("transpose"))
    t = d.type.elem
    bb = cg.b
    r0, c0 = bb.add(origin[0], cg.i32(r_off)), bb.add(origin[1], cg.i32(c_off))
    et = mem_type(t)
    as_i32 = lambda x: cg.i32(x) if isinstance(x, int) else x  # noqa: E731
    # built once per reader (before the DPAS loop): the clamp bounds and the row stride
    tops = [bb.select(bb.icmp_signed(">", n, cg.i32(0)), bb.sub(n, cg.i32(1)), cg.i32(0)) for n in d.shape[:2]]
    stride = cg.to_i64(d.strides[0])
    bases = (r0, c0)
    parts = {}  # (dimension, coordinate) -> (in bounds, clamped offset in elements): a row's part is
    # shared by every element of the row. Coordinates are ints or LLVM values (kept alive by the module)

    def part(dim, x):
        key = (dim, x if isinstance(x, int) else id(x))
        hit = parts.get(key)
        if hit is None:
            c = bb.add(bases[dim], as_i32(x))
            ok = bb.and_(bb.icmp_signed(">=", c, cg.i32(0)), bb.icmp_signed("<", c, d.shape[dim]))
            c = bb.select(bb.icmp_signed("<", c, cg.i32(0)), cg.i32(0), c)
            off = cg.to_i64(bb.select(bb.icmp_signed(">", c, tops[dim]), tops[dim], c))
            hit = parts[key] = (ok, bb.mul(off, stride) if dim == 0 else off)
        return hit

    def read(i, j):
        if tr:
            i, j = j, i
        (ok_r, off_r), (ok_c, off_c) = part(0, i), part(1, j)
        return bb.select(bb.and_(ok_r, ok_c), load_elem(cg, cg.gep(d.base, et, bb.add(off_r, off_c)), t), zero(t))

    def prepare(i=None, j=None):
        """Build the part of row ``i`` / column ``j`` here (before a loop that reads them)."""
        if tr:
            i, j = j, i
        if i is not None:
            part(0, i)
        if j is not None:
            part(1, j)
    read.prepare = prepare
    read.access = TileAccess(cg, d, [r0, c0], tr)
    return read


def _dpas_from_memory(cg: CodeGen, op: ir.DpasOp, ta, tb, tc, read_a, read_b):
    """DPAS on the CPU device with both operands read from memory (``_product``)."""
    c_offs = lane_slot_offsets(tc.layout, tc.shape)
    init = list(cg.slots(op.operands[2])) if len(op.operands) > 2 else [zero(tc.elem)] * len(c_offs)
    return [_product(cg, ta.shape, tb.shape[1], (ta, tb, tc), c_offs, init, read_a, read_b)]


def _fused_dot(cg: CodeGen, op: ir.DpasOp) -> List:
    """The slots of ``op``, one of a group of DPAS ops marked ``fused_dot`` (``lowering/fused_dots``):
    the group's product is computed once, at its first op, as one micro-kernel over the tile all of
    them cover (``_product``); the chains' last ops take their blocks of it, the others (whose only
    use is the next op of their chain) zeros."""
    group = op.attrs["fused_dot"][0]
    key = ("fused_dot", id(op.parent), group)
    if key not in cg._cache:
        members = [o for o in op.parent.ops
                   if isinstance(o, ir.DpasOp) and (o.attrs.get("fused_dot") or (None,))[0] == group]
        cg._cache[key] = _group_product(cg, members)
    results = cg._cache[key]
    tiles = op.attrs["tiles"]
    ta, tb, tc = tiles[0], tiles[1], tiles[-1]
    if results is None:   # (its operands would take too much SLM to stage: the ops go one by one)
        return _dpas_k_loops(cg, op, ta, tb, tc, cg.slots(op.acc) if op.acc is not None else None)[0]
    return results.get(op) or [zero(tc.elem)] * len(lane_slot_offsets(tc.layout, tc.shape))


# the share of the target's SLM a group's staged operands may take (the kernel's own needs the rest)
_STAGING_SHARE = 4


def _group_product(cg: CodeGen, members: List[ir.DpasOp]) -> Optional[Dict[ir.DpasOp, List]]:
    """The product of a ``fused_dot`` group: its chains' last ops -> their slots. Operands read
    from memory (fused loads) go to ``_product``, operands in registers to ``_k_loops``; None when
    those would take more than 1 / ``_STAGING_SHARE`` of the target's SLM to stage."""
    at = {tuple(o.attrs["fused_dot"][1:]): o for o in members}
    tiles = members[0].attrs["tiles"]
    ta, tb, tc = tiles[0], tiles[1], tiles[-1]
    (m, kb), n = ta.shape, tb.shape[1]
    M, N, K = (max(p[d] for p in at) + size for d, size in enumerate((m, n, kb)))
    block = lane_slot_offsets(tc.layout, tc.shape)
    c_offs, init, owners = [], [], []
    for (r, c, k), start in sorted(at.items()):
        if k:
            continue
        acc = list(cg.slots(start.acc)) if start.acc is not None else [zero(tc.elem)] * len(block)
        last = at[(r, c, K - kb)]
        for j, (i, oc) in enumerate(block):
            c_offs.append((r + i, c + oc))
            init.append(acc[j])
            owners.append((last, j))
    first = at[(0, 0, 0)]
    if _fused(first.operands[0]):
        read_a, read_b = _shared_reader(cg, first, first.operands[0]), _shared_reader(cg, first, first.operands[1])
        out = _product(cg, (M, K), N, (ta, tb, tc), c_offs, init, read_a, read_b)
    else:
        b_memory = _fused(first.operands[1])   # (B read from memory where its blocks lie, A staged)
        staged = (M * K + (0 if b_memory else K * N)) * ta.elem.itemsize * cg.options.num_subgroups
        if staged > cg.target.slm_bytes // _STAGING_SHARE:
            return None
        a_blocks = {(r // m, k // kb): cg.slots(o.operands[0]) for (r, _, k), o in at.items()}
        if b_memory:
            out = _k_loops(cg, (ta, tb, tc), a_blocks, None, c_offs, init,
                           read_b=(_shared_reader(cg, first, first.operands[1]), N))
        else:
            b_blocks = {(k // kb, c // n): cg.slots(o.operands[1]) for (_, c, k), o in at.items()}
            out = _k_loops(cg, (ta, tb, tc), a_blocks, b_blocks, c_offs, init)
    results: Dict[ir.DpasOp, List] = {}
    for (last, j), v in zip(owners, out):
        results.setdefault(last, [None] * len(block))[j] = v
    return results


def _product(cg: CodeGen, mk: Tuple[int, int], N: int, tiles, c_offs, init, read_a, read_b,
             inside: bool = False) -> List:
    """C's slots ``c_offs`` ((row, column offset) per slot, from ``init``) plus the ``mk[0] x mk[1]``
    by ``mk[1] x N`` product of two tiles read from memory, as a loop over K: per step every lane
    broadcasts A's column element of each row and multiplies it by its own B element (the
    outer-product micro-kernel: accumulators stay in registers, one vector load of B's row and one
    broadcast of A per row). When both tiles lie inside their tensors (tested once), the loop reads
    without bounds checks through lane-linear addresses (``cpu_tiles``), one loop per group of rows
    whose accumulators fit in registers (``emitter.fma_dot_slots``); the checked loop handles the
    edges. ``tiles``: the (A, B, C) blocks of one DPAS, whose layouts hold for the whole product;
    ``inside``: both tiles are known to lie inside (no test, no checked loop)."""
    M, K = mk
    ta, tb, tc = tiles
    b = cg.b
    sg = cg.target.sg_size
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    # A's row parts and B's column parts do not change with k: built here, before the branch and the
    # loops, so that they dominate both (and the later DPAS ops of the block that share the readers)
    col = lane_base(cg, tc.layout, tc.shape)[1]
    cols_v = {oc: b.add(col, cg.i32(oc)) if oc else col for _, oc in c_offs}
    for i, oc in c_offs:
        read_a.prepare(i=i)
        read_b.prepare(j=cols_v[oc])

    def checked_step(k, offs):
        rows, cols = {}, {}
        for i, oc in offs:
            if i not in rows:
                rows[i] = _widen_operand(cg, read_a(i, k), ea)
            if oc not in cols:
                cols[oc] = _widen_operand(cg, read_b(k, cols_v[oc]), eb)
        return rows, cols

    def fast_step(k, offs):
        rows, cols = {}, {}
        for i, oc in offs:
            if oc not in cols:
                cols[oc] = _widen_operand(cg, load_elem(cg, read_b.access.address(k, oc, lane=True), eb), eb)
        for i, oc in offs:
            if i not in rows:
                rows[i] = _widen_operand(cg, load_elem(cg, read_a.access.address(i, k), ea), ea)
        return rows, cols

    def k_loop(step, offs, start):
        def body(k, accs):
            rows, cols = step(k, offs)
            return [_mac(cg, rows[i], cols[oc], acc, ec) for (i, oc), acc in zip(offs, accs)]
        return counted_loop(cg, K, start, body, ("dpas.k", "dpas.done"))

    def by_rows(step, prepare=()):
        """One K loop per group of rows whose accumulators fit in registers (balanced groups)."""
        for access in prepare:
            access.prepare()
        out = [None] * len(c_offs)
        for part in _row_groups(cg, c_offs, M):
            for j, v in zip(part, k_loop(step, [c_offs[j] for j in part], [init[j] for j in part])):
                out[j] = v
        return [out]

    if not (lane_columns(tc, sg) and lane_columns(tb, sg) and tb.shape[1] == tc.shape[1]):
        return by_rows(checked_step)[0]
    access_a, access_b = read_a.access, read_b.access
    if inside:
        return by_rows(fast_step, (access_a, access_b))[0]
    inside = uniform(cg, b.and_(access_a.inside(M, K), access_b.inside(K, N)))
    return branch_values(cg, inside, lambda: by_rows(fast_step, (access_a, access_b)),
                          lambda: by_rows(checked_step), names=("dpas.inside", "dpas.edge", "dpas.end"))[0]


def _row_groups(cg: CodeGen, c_offs, M: int) -> List[List[int]]:
    """C's slots (indices into ``c_offs``) in groups of whole rows whose accumulators fit in
    registers (``emitter.fma_dot_slots``), balanced: one K loop each."""
    loops = -(-len(c_offs) // cg.emitter.fma_dot_slots)
    rows = -(-M // loops)
    groups = [[j for j, (i, _) in enumerate(c_offs) if r0 <= i < r0 + rows] for r0 in range(0, M, rows)]
    return [g for g in groups if g]


def _dpas_k_loops(cg: CodeGen, op: ir.DpasOp, ta, tb, tc, c_slots):
    """DPAS ``op`` on the CPU device from A in registers (``_k_loops`` on one block), B in
    registers too or read from memory (a fused load)."""
    c_offs = lane_slot_offsets(tc.layout, tc.shape)
    init = list(c_slots) if c_slots is not None else [zero(tc.elem)] * len(c_offs)
    a = {(0, 0): cg.slots(op.operands[0])}
    if _fused(op.operands[1]):
        return [_k_loops(cg, (ta, tb, tc), a, None, c_offs, init,
                         read_b=(_shared_reader(cg, op, op.operands[1]), tb.shape[1]))]
    return [_k_loops(cg, (ta, tb, tc), a, {(0, 0): cg.slots(op.operands[1])}, c_offs, init)]


def _k_loops(cg: CodeGen, tiles, a_blocks, b_blocks, c_offs, init, read_b=None) -> List:
    """C's slots ``c_offs`` ((row, column offset) per slot, from ``init``) plus the product of
    operands in registers: each lane stores its slots of A's blocks (``a_blocks``: (row block, K
    block) -> slots) and B's (``(K block, column block)``) where they belong in a row-major copy
    of the whole A and B in the subgroup's own part of SLM (``_SlmTile``), and ``_product`` reads
    them back as it reads tiles in global memory: A's elements broadcast, B's rows as vectors. The
    code grows with the product's rows and columns, not with M x N x K as an unrolled product does.
    Measured on the OpenCL CPU runtime 2026.2 (tutorial 03's fallback loop, 16 DPAS as one
    group): the product costs its build 0.25 s this way; read from private arrays at indices
    from constant tables, with shuffles from the owning lanes (the former form), about 2.2 s.
    ``tiles``: one DPAS's blocks. ``read_b``: (a reader of B in memory, ``_operand_reader``, and
    the product's N) when B is a fused load: then only A is copied, and ``_product`` reads B from
    memory (unchecked inside the tensor, checked at its edges). The flagship attention's P @ V,
    whose V tiles were otherwise loaded slot by slot behind bounds tests and copied: its forward
    (ragged N_CTX) 10,300 -> 6,500 lines of LLVM IR, the driver's build 1.8 -> 1.5 s."""
    ta, tb, tc = tiles
    (m, kb), n = ta.shape, tb.shape[1]
    M, K = (max(key[0] for key in a_blocks) + 1) * m, (max(key[1] for key in a_blocks) + 1) * kb
    read_a = _SlmTile.staged(cg, ta, a_blocks, (M, K), "a")
    if read_b is not None:
        read_b, N = read_b
    else:
        N = (max(key[1] for key in b_blocks) + 1) * n
        read_b = _SlmTile.staged(cg, tb, b_blocks, (K, N), "b")
    cg.call("_Z17sub_group_barrierj", ll.VoidType(), [cg.i32(_CLK_LOCAL_MEM_FENCE)], convergent=True)
    return _product(cg, (M, K), N, tiles, c_offs, init, read_a, read_b, inside=b_blocks is not None)


_CLK_LOCAL_MEM_FENCE = 1


class _SlmTile:
    """A row-major ``rows x cols`` tile of the subgroup's own part of an SLM buffer, read the way
    ``_product`` reads a tile of a tensor (``_operand_reader``): always inside, so the reader and
    its unchecked ``access`` are the same."""

    def __init__(self, cg: CodeGen, base, cols: int, t: DType):
        self.cg, self.base, self.cols, self.t = cg, base, cols, t
        self.access = self

    @classmethod
    def staged(cls, cg: CodeGen, tile: VectorType, blocks, shape: Tuple[int, int], which: str) -> "_SlmTile":
        """The tile of ``shape`` whose blocks of ``tile``'s shape the lanes hold (``blocks``:
        (row block, column block) -> the lane's slots), stored by every lane. The buffer (one per
        operand, shape and dtype, each subgroup its own part) is shared by the kernel's products:
        each stores before it reads, in the subgroup's program order."""
        rows, cols = shape
        t = tile.elem
        size = rows * cols * t.itemsize
        g = cg.cached(("dpas staging", which, shape, t.name),
                      lambda: slm_buffer(cg, size * cg.options.num_subgroups, "the CPU device's DPAS staging"))
        b = cg.b
        base = cg.gep(g, mem_type(t), b.mul(cg.sg_id(), cg.i32(rows * cols)))
        out = cls(cg, uniform(cg, base), cols, t)
        linear = lane_columns(tile, cg.target.sg_size)   # lane l holds column l: vector stores
        lane = None if linear else lane_base(cg, tile.layout, tile.shape)
        for (br, bc), slots in blocks.items():
            for v, (i, j) in zip(slots, lane_slot_offsets(tile.layout, tile.shape)):
                r, c = br * tile.shape[0] + i, bc * tile.shape[1] + j
                if linear:
                    ptr = out.address(r, c, lane=True)
                else:
                    ptr = out.address(b.add(lane[0], cg.i32(r)), b.add(lane[1], cg.i32(c)))
                store_elem(cg, v, ptr, t)
        return out

    def __call__(self, i, j):
        return load_elem(self.cg, self.address(i, j), self.t)

    def inside(self, rows: int, cols: int):
        """Always (the copy is whole): as ``TileAccess.inside`` has it, for ``_product``'s test."""
        return ll.Constant(I1, 1)

    def prepare(self, i=None, j=None):
        """(Nothing to build before the loops: the base is the subgroup's.)"""

    def address(self, i, j, lane: bool = False):
        """Element (i, j) (ints or non-negative i32 values), plus the lane id along the row when
        ``lane``: in i64, the lane added last, as the CPU vectorizer wants (``cpu_tiles``)."""
        cg, b = self.cg, self.cg.b
        as_i64 = lambda x: ll.Constant(I64, x) if isinstance(x, int) else cg.to_i64(x, signed=False)  # noqa: E731
        if isinstance(i, int) and isinstance(j, int):
            off = as_i64(i * self.cols + j)
        else:
            off = b.add(b.mul(as_i64(i), ll.Constant(I64, self.cols)), as_i64(j))
        p = cg.gep(self.base, mem_type(self.t), off)
        return cg.gep(p, mem_type(self.t), lane_index(cg)) if lane else p


def _mac(cg: CodeGen, x, y, acc, ec: DType):
    """``acc + x * y``: one f32 FMA, or integer multiply and add (int8 DPAS accumulates in i32)."""
    if ec.is_floating:
        return cg.ocl.intrinsic(cg.b, "llvm.fma.f32", F32, [x, y, acc])
    return cg.b.add(acc, cg.b.mul(x, y))


def _widen_operand(cg: CodeGen, v, t: DType):
    if t.is_floating:
        return widen(cg, v, t)
    return cg.b.sext(v, I32) if t.is_signed else cg.b.zext(v, I32)
