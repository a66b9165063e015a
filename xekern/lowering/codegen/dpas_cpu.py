"""DPAS on the CPU device (and GPUs without DPAS): the instruction's exact lane-level semantics,
element by element. Lane ``l`` owns C's column ``l``; each A element comes from the lane that owns
it (a shuffle) or, where both operands were just loaded through descriptors, straight from memory
as a K loop of broadcasts and FMAs (the micro-kernel the CPU's vectorizer turns into vector code).
On the CPU emitter (``dpas_k_loops``) operands in registers are multiplied in K loops too, through
private arrays and tables of their owning lanes, rather than unrolled into M x N x K FMAs.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_base as lane_base_py, lane_slot_offsets
from ...ir.types import DType, VectorType
from ..emitter_decisions import loaded_as_is
from ..rewrite import PassError
from .arith import sub_group_shuffle, widen
from .control import counted_loop
from .core import CONSTANT, CodeGen, NdDesc, mem_type
from .cpu_tiles import TileAccess, lane_columns, uniform
from .memory import lane_base, load_elem, zero
from .nd_elementwise import block_shift, branch_values, nd_origin
from .ocl import F32, I32


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
        return _dpas_k_loops(cg, ta, tb, tc, a_slots, b_slots, c_slots)

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
    """DPAS on the CPU device with both operands read from memory, as a loop over K: per step
    every lane broadcasts A's column element of each row and multiplies it by its own B element
    (the outer-product micro-kernel: accumulators stay in registers, one vector load of B's row
    and one broadcast of A per row). When both tiles lie inside their tensors (tested once), the
    loop reads without bounds checks through lane-linear addresses (``cpu_tiles``), one loop per
    group of rows whose accumulators fit in registers (``emitter.fma_dot_slots``); the checked
    loop handles the edges."""
    (M, K), (_, N) = ta.shape, tb.shape
    b = cg.b
    sg = cg.target.sg_size
    c_offs = lane_slot_offsets(tc.layout, tc.shape)
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    init = list(cg.slots(op.operands[2])) if len(op.operands) > 2 else [zero(ec)] * len(c_offs)
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
        return by_rows(checked_step)
    access_a, access_b = read_a.access, read_b.access
    inside = uniform(cg, b.and_(access_a.inside(M, K), access_b.inside(K, N)))
    return branch_values(cg, inside, lambda: by_rows(fast_step, (access_a, access_b)),
                          lambda: by_rows(checked_step), names=("dpas.inside", "dpas.edge", "dpas.end"))


def _row_groups(cg: CodeGen, c_offs, M: int) -> List[List[int]]:
    """C's slots (indices into ``c_offs``) in groups of whole rows whose accumulators fit in
    registers (``emitter.fma_dot_slots``), balanced: one K loop each."""
    loops = -(-len(c_offs) // cg.emitter.fma_dot_slots)
    rows = -(-M // loops)
    groups = [[j for j, (i, _) in enumerate(c_offs) if r0 <= i < r0 + rows] for r0 in range(0, M, rows)]
    return [g for g in groups if g]


def _dpas_k_loops(cg: CodeGen, ta, tb, tc, a_slots, b_slots, c_slots):
    """DPAS on the CPU device from operands in registers, as loops over K: the lane's slots of A
    and B go to private arrays, and constant tables say, per step, which lane holds each row's A
    element (then a shuffle from it) and which slot holds each of B's columns. The code grows
    with the tile's rows and columns, not with M x N x K as the unrolled form does (whose size
    the OpenCL CPU runtime pays for at every build: seconds for one 64 x 64 x 32 dot)."""
    (M, K), sg = ta.shape, cg.target.sg_size
    b = cg.b
    owner_a = _owners(ta, sg)
    b_index = {o: s for s, o in enumerate(lane_slot_offsets(tb.layout, tb.shape))}
    c_offs = lane_slot_offsets(tc.layout, tc.shape)
    cols = sorted({oc for _, oc in c_offs})
    a_arr, b_arr = _private_copy(cg, a_slots, "a"), _private_copy(cg, b_slots, "b")
    lanes = _table(cg, [owner_a[(i, k)][0] for i in range(M) for k in range(K)])
    a_at = _table(cg, [owner_a[(i, k)][1] for i in range(M) for k in range(K)])
    b_at = _table(cg, [b_index[(k, oc)] for k in range(K) for oc in cols])
    ea, eb, ec = ta.elem, tb.elem, tc.elem
    init = list(c_slots) if c_slots is not None else [zero(ec)] * len(c_offs)

    def entry(table, index):
        return b.load(cg.gep(table, I32, index), typ=I32)

    def element(arr, index):
        return b.load(b.gep(arr, [cg.i32(0), index], inbounds=True))

    def step(offs):
        def body(k, accs):
            rows, colv = {}, {}
            for i, oc in offs:
                if i not in rows:
                    at = b.add(cg.i32(i * K), k)
                    raw = element(a_arr, entry(a_at, at))
                    rows[i] = _widen_operand(cg, sub_group_shuffle(cg, "idx", raw, entry(lanes, at)), ea)
                if oc not in colv:
                    at = b.add(b.mul(k, cg.i32(len(cols))), cg.i32(cols.index(oc)))
                    colv[oc] = _widen_operand(cg, element(b_arr, entry(b_at, at)), eb)
            return [_mac(cg, rows[i], colv[oc], acc, ec) for (i, oc), acc in zip(offs, accs)]
        return body

    out = [None] * len(c_offs)
    for part in _row_groups(cg, c_offs, M):
        offs = [c_offs[j] for j in part]
        after = counted_loop(cg, K, [init[j] for j in part], step(offs), ("dpas.k", "dpas.done"))
        for j, v in zip(part, after):
            out[j] = v
    return [out]


def _private_copy(cg: CodeGen, slots, which: str):
    """A private array holding ``slots`` (one alloca per element type, length and operand, shared
    by the kernel's DPAS ops: each fills it before its loops read it)."""
    t = ll.ArrayType(slots[0].type, len(slots))
    arr = cg.cached(("dpas_operand", which, str(t)), lambda: cg.b.alloca(t, name=f"dpas.{which}"))
    for j, v in enumerate(slots):
        cg.b.store(v, cg.b.gep(arr, [cg.i32(0), cg.i32(j)], inbounds=True))
    return arr


def _table(cg: CodeGen, values: List[int]):
    """A constant i32 array in OpenCL's constant address space (one per distinct content)."""
    key = ("dpas_table", tuple(values))
    g = cg._cache.get(key)
    if g is None:
        t = ll.ArrayType(I32, len(values))
        g = ll.GlobalVariable(cg.module, t, name=cg.module.get_unique_name("dpas.table"), addrspace=CONSTANT)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ll.Constant(t, [ll.Constant(I32, v) for v in values])
        g.type = ll.PointerType(addrspace=CONSTANT)  # (llvmlite's default: a typed pointer; LLVM 22 has none)
        cg._cache[key] = g
    return g


def _mac(cg: CodeGen, x, y, acc, ec: DType):
    """``acc + x * y``: one f32 FMA, or integer multiply and add (int8 DPAS accumulates in i32)."""
    if ec.is_floating:
        return cg.ocl.intrinsic(cg.b, "llvm.fma.f32", F32, [x, y, acc])
    return cg.b.add(acc, cg.b.mul(x, y))


def _widen_operand(cg: CodeGen, v, t: DType):
    if t.is_floating:
        return widen(cg, v, t)
    return cg.b.sext(v, I32) if t.is_signed else cg.b.zext(v, I32)
