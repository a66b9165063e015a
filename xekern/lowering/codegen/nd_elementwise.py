"""Descriptor loads and stores element by element: the CPU device, GPUs without 2D block IO, and
tiles whose layout no block message fits. Each slot's coordinates come from the lane id; loads are
bounds-checked (zero padding), stores skip out-of-bounds elements. A tile that lies inside the
tensor is stored without per-element tests where the layout allows vector accesses (the CPU's
lane columns, ``_store_row_runs`` for lanes that hold rows)."""
from __future__ import annotations

from typing import List, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ...ir.types import VectorType
from .core import CodeGen, NdDesc, VecSlots, mem_type
from .cpu_tiles import TileAccess, lane_columns, uniform
from .ocl import F16, F32, I32
from .memory import lane_base, load_elem, slot_coords, store_elem, zero


def nd_origin(cg: CodeGen, d: NdDesc, op) -> List:
    """The block's origin in the tensor: the descriptor's offsets plus the op's (i32 each)."""
    return [cg.b.add(o, cg.to_i32(cg.get(v))) for o, v in zip(d.offsets, op.offsets)]


def _element_address(cg: CodeGen, d: NdDesc, mem: List, clamp: bool = False):
    """(in-bounds i1, address) of memory coordinates ``mem`` in the descriptor's tensor. With
    ``clamp`` the address of an out-of-bounds element is moved to the nearest element inside the
    tensor, so it may be read unconditionally (a select then zeroes it): no branch per element."""
    b = cg.b
    inb = None
    off = None
    for c, n, s in zip(mem, d.shape, d.strides):
        ok = b.and_(b.icmp_signed(">=", c, cg.i32(0)), b.icmp_signed("<", c, n))
        inb = ok if inb is None else b.and_(inb, ok)
        if clamp:
            top = b.sub(n, cg.i32(1))
            c = b.select(b.icmp_signed("<", c, cg.i32(0)), cg.i32(0), c)
            c = b.select(b.icmp_signed(">", c, top), top, c)
        term = b.mul(cg.to_i64(c), cg.to_i64(s))
        off = term if off is None else b.add(off, term)
    return inb, cg.gep(d.base, mem_type(d.type.elem), off)


def _nonempty(cg: CodeGen, d: NdDesc):
    """True when every dimension of the tensor has an element (clamped addresses are valid then)."""
    b = cg.b
    ok = None
    for n in d.shape:
        x = b.icmp_signed(">", n, cg.i32(0))
        ok = x if ok is None else b.and_(ok, x)
    return ok


def _mem_coords(cg: CodeGen, origin: List, rel: List, transposed: bool) -> List:
    """Memory coordinates of a slot whose coordinates in the loaded tile are ``rel``."""
    rel = list(reversed(rel)) if transposed else list(rel)
    return [cg.b.add(o, r) for o, r in zip(origin, rel)]


def block_shift(op, d: NdDesc, index: int) -> Tuple[int, ...]:
    """Memory offset of result ``index`` of a load covering ``block_grid`` blocks (column-major)."""
    gv, ga = op.attrs.get("block_grid") or (1, 1)
    shape = d.type.shape
    if len(shape) == 1:
        return ((index // gv) * shape[0],)
    return ((index % gv) * shape[0], (index // gv) * shape[1])


def _zero_origin(tile: VectorType):
    return [ll.Constant(I32, 0)] * tile.rank


def load_elementwise(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc) -> List:
    origin = nd_origin(cg, d, op)
    tr = bool(op.attrs.get("transpose"))
    t = d.type.elem
    tiles = op.attrs["tiles"]
    if cg.emitter.vector_tile_access and not tr and len(d.shape) == 2 and \
            all(lane_columns(tile, cg.target.sg_size) for tile in tiles):
        out = []
        for bi, tile in enumerate(tiles):
            at = [cg.b.add(o, cg.i32(x)) if x else o for o, x in zip(origin, block_shift(op, d, bi))]
            out.append(_load_lanes(cg, d, at, tile, t))
        return out

    def body():
        out = []
        for bi, tile in enumerate(tiles):
            vals = []
            shift = block_shift(op, d, bi)
            for rel in slot_coords(cg, tile, _zero_origin(tile)):
                mem = _mem_coords(cg, origin, rel, tr)
                mem = [cg.b.add(m, cg.i32(x)) if x else m for m, x in zip(mem, shift)]
                inb, ptr = _element_address(cg, d, mem, clamp=True)
                vals.append(cg.b.select(inb, load_elem(cg, ptr, t), zero(t)))
            out.append(vals)
        return out
    # an empty tensor has no element to clamp to: then the whole block reads as zero
    res = branch_values(cg, _nonempty(cg, d), body, [[zero(t)] * len(lane_slot_offsets(tl.layout, tl.shape))
                                                      for tl in tiles])
    return res


def branch_values(cg: CodeGen, cond, then, otherwise, names=("nonempty", "nonempty.else", "nonempty.end")):
    """``cond ? then() : otherwise`` for lists of slot lists, with ``then`` run only under ``cond``;
    ``otherwise`` is the values themselves or a function building them (run only without ``cond``)."""
    b = cg.b
    start = b.block
    on = cg.fn.append_basic_block(names[0])
    off = cg.fn.append_basic_block(names[1]) if callable(otherwise) else None
    done = cg.fn.append_basic_block(names[2])
    b.cbranch(cond, on, off or done)
    b.position_at_end(on)
    vals = then()
    end = b.block
    b.branch(done)
    if off is not None:
        b.position_at_end(off)
        otherwise = otherwise()
        start = b.block
        b.branch(done)
    b.position_at_end(done)
    out = []
    for vs, ws in zip(vals, otherwise):
        row = []
        for v, w in zip(vs, ws):
            phi = b.phi(v.type)
            phi.add_incoming(v, end)
            phi.add_incoming(w, start)
            row.append(phi)
        out.append(row)
    return out


def store_elementwise(cg: CodeGen, op: ir.StoreNdOp, d: NdDesc) -> None:
    origin = nd_origin(cg, d, op)
    (tile,) = op.attrs["tiles"]
    t, et = d.type.elem, mem_type(d.type.elem)
    b = cg.b
    vals = cg.slots(op.operands[0])

    def checked():
        """Element by element, each in bounds stored: a row's (column's) bounds test and offset are
        built once and shared by its slots."""
        starts = [b.add(o, x) for o, x in zip(origin, lane_base(cg, tile.layout, tile.shape))]
        strides = [None] * len(starts)
        parts = {}

        def part(dim, x):
            hit = parts.get((dim, x))
            if hit is None:
                c = b.add(starts[dim], cg.i32(x)) if x else starts[dim]
                ok = b.and_(b.icmp_signed(">=", c, cg.i32(0)), b.icmp_signed("<", c, d.shape[dim]))
                if strides[dim] is None:
                    strides[dim] = cg.to_i64(d.strides[dim])
                hit = parts[(dim, x)] = (ok, b.mul(cg.to_i64(c), strides[dim]))
            return hit

        for v, so in zip(vals, lane_slot_offsets(tile.layout, tile.shape)):
            inb = off = None
            for dim, x in enumerate(so):
                ok, term = part(dim, x)
                inb = ok if inb is None else b.and_(inb, ok)
                off = term if off is None else b.add(off, term)
            ptr = cg.gep(d.base, et, off)
            cg.masked(inb, lambda v=v, p=ptr: store_elem(cg, v, p, t))
    runs = _row_runs(cg, d, tile)
    if runs:
        return _store_row_runs(cg, d, origin, tile, vals, runs, checked)
    if not cg.emitter.vector_tile_access or len(d.shape) != 2 or not lane_columns(tile, cg.target.sg_size):
        return checked()
    # the CPU device: a tile inside the tensor is stored with vector stores, no per-element test
    access = TileAccess(cg, d, origin)
    b = cg.b
    inside, edge = cg.fn.append_basic_block("store.inside"), cg.fn.append_basic_block("store.edge")
    done = cg.fn.append_basic_block("store.end")
    b.cbranch(uniform(cg, access.inside(*tile.shape)), inside, edge)
    b.position_at_end(inside)
    access.prepare()
    for v, (i, oc) in zip(vals, lane_slot_offsets(tile.layout, tile.shape)):
        store_elem(cg, v, access.address(i, oc, lane=True), t)
    b.branch(done)
    b.position_at_end(edge)
    _store_edge_lanes(cg, d, origin, tile, vals, t)
    b.branch(done)
    b.position_at_end(done)


def _load_lanes(cg: CodeGen, d: NdDesc, origin, tile, t) -> List:
    """A CPU tile load whose lane ``l`` holds column ``l`` (+ the slot's offset): each slot read
    behind its bounds test (zero outside, ``_lane_slots``), which the CPU vectorizer makes one
    masked vector load. Read element by element with clamped addresses instead, a slot took 15
    instructions and a gather (attention's K and V tiles: most of its 14,000 lines of LLVM IR)."""
    return [cg.masked(ok, lambda p=p: load_elem(cg, p, t), zero(t)) for ok, p in _lane_slots(cg, d, origin, tile)]


def _store_edge_lanes(cg: CodeGen, d: NdDesc, origin, tile, vals, t) -> None:
    """The edge of a CPU tile store whose lane ``l`` holds column ``l``: each slot stored behind
    its bounds test (``_lane_slots``), which the CPU vectorizer makes one masked vector store;
    element addresses it cannot see as consecutive made it 16 scalar stores per slot (tutorial
    03a's 128 x 128 tile on 8 subgroups: 128 slots per lane)."""
    for v, (ok, p) in zip(vals, _lane_slots(cg, d, origin, tile)):
        cg.masked(ok, lambda v=v, p=p: store_elem(cg, v, p, t))


def _lane_slots(cg: CodeGen, d: NdDesc, origin, tile) -> List:
    """(in bounds, address) of each slot of a 2-D ``tile`` at ``origin`` whose lane ``l`` holds
    column ``l`` (+ the slot's offset): the row's and the column's tests, each built once, and lane
    0's address broadcast plus the lane id (``TileAccess``: what the CPU vectorizer takes for a
    vector access)."""
    b = cg.b
    access = TileAccess(cg, d, origin)
    access.prepare()
    col0 = b.add(origin[1], lane_base(cg, tile.layout, tile.shape)[1])
    rows, cols, out = {}, {}, []

    def within(c, n):
        return b.and_(b.icmp_signed(">=", c, cg.i32(0)), b.icmp_signed("<", c, n))
    for i, oc in lane_slot_offsets(tile.layout, tile.shape):
        if i not in rows:
            rows[i] = within(b.add(origin[0], cg.i32(i)), d.shape[0])
        if oc not in cols:
            cols[oc] = within(b.add(col0, cg.i32(oc)), d.shape[1])
        out.append((b.and_(rows[i], cols[oc]), access.address(i, oc, lane=True)))
    return out


def _row_runs(cg: CodeGen, d: NdDesc, tile) -> List[Tuple[int, int, int, int]]:
    """For a 2-D tile whose lanes hold rows (lane ``l`` row ``l + r``, as in a transposed DPAS
    result) in a tensor with unit column stride: the runs of consecutive columns in each lane's
    slots as (first slot, row, column, length), up to 8 dwords each; else []."""
    from ...ir.layout import lane_base as base_of
    t, sg = d.type.elem, cg.target.sg_size
    stride = d.strides[-1] if len(d.shape) == 2 else None
    if not (isinstance(stride, ll.Constant) and stride.constant == 1) or t.bits not in (16, 32) or t.is_bool \
            or tile.rank != 2 or any(base_of(tile.layout, tile.shape, lane)[1] != 0 for lane in range(sg)):
        return []
    most = 8 * 32 // t.bits
    runs, offs = [], [tuple(o) for o in lane_slot_offsets(tile.layout, tile.shape)]
    s = 0
    while s < len(offs):
        r, c = offs[s]
        n = 1
        while s + n < len(offs) and n < most and offs[s + n] == (r, c + n):
            n += 1
        if n * t.bits % 32:
            return []
        runs.append((s, r, c, n))
        s += n
    return runs if len(runs) < len(offs) else []


def _store_row_runs(cg: CodeGen, d: NdDesc, origin, tile, vals, runs, checked) -> None:
    """A tile with the ``runs`` of ``_row_runs``: inside the tensor, each run of a lane's columns
    is one vector store (IGC makes it one message of up to 8 dwords per lane, as many messages as a
    2D block store would take; the CPU device, a scatter per dword); at the edges, ``checked``
    (element by element)."""
    b, t = cg.b, d.type.elem
    et = mem_type(t)
    inside, edge = cg.fn.append_basic_block("store.inside"), cg.fn.append_basic_block("store.edge")
    done = cg.fn.append_basic_block("store.end")
    b.cbranch(TileAccess(cg, d, origin).inside(*tile.shape), inside, edge)
    b.position_at_end(inside)
    row0 = b.add(origin[0], lane_base(cg, tile.layout, tile.shape)[0])
    stride = cg.to_i64(d.strides[0])
    for s, r, c, n in runs:
        row = b.mul(cg.to_i64(b.add(row0, cg.i32(r))), stride)
        ptr = cg.gep(d.base, et, b.add(row, cg.to_i64(b.add(origin[1], cg.i32(c)))))
        data = slots_as_vector(cg, vals, s, n, t.bits)
        b.store(b.bitcast(data, ll.VectorType(I32, n * t.bits // 32)), ptr, align=t.itemsize)
    b.branch(done)
    b.position_at_end(edge)
    checked()
    b.branch(done)
    b.position_at_end(done)


def slots_as_vector(cg: CodeGen, vals, s: int, n: int, bits: int):
    """Slots ``s .. s + n`` of a lane as one ``<n x i{bits}>``: a piece of the vector the slots
    come from (one shufflevector) when they are ``VecSlots`` of that width, else built element by
    element."""
    b = cg.b
    vec = vals.vec if isinstance(vals, VecSlots) and vals.per == 1 else None
    if vec is not None and isinstance(vec.type, ll.VectorType) and _bits(vec.type.element) == bits:
        piece = b.shuffle_vector(vec, ll.Constant(vec.type, None),
                                 ll.Constant(ll.VectorType(I32, n), list(range(s, s + n))))
    else:
        piece = ll.Constant(ll.VectorType(vals[s].type, n), None)
        for i in range(n):
            piece = b.insert_element(piece, vals[s + i], cg.i32(i))
    return b.bitcast(piece, ll.VectorType(ll.IntType(bits), n))


def _bits(t: ll.Type) -> int:
    return t.width if isinstance(t, ll.IntType) else {F16: 16, F32: 32}.get(t, 0)
