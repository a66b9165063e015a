"""Descriptor loads and stores element by element: the CPU device, GPUs without 2D block IO, and
tiles whose layout no block message fits. Each slot's coordinates come from the lane id; loads are
bounds-checked (zero padding), stores skip out-of-bounds elements. A tile that lies inside the
tensor is stored without per-element tests where the layout allows vector accesses (the CPU's
lane columns, ``_store_row_runs`` for lanes that hold rows). A load whose lanes hold runs of a
memory row (``messages.lane_row_runs``: dg2's transposed DPAS B operand, the row pairs of
``pair_rows_layout``) reads each run with one per-lane vector message (``_load_lane_runs``)."""
from __future__ import annotations

from typing import List, Tuple

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ...ir.types import VectorType
from ..messages import lane_first_columns, lane_row_runs
from .core import CodeGen, NdDesc, VecSlots, ll_type, mem_type, unpacked
from .cpu_tiles import TileAccess, lane_columns, uniform
from .ocl import F16, F32, I32, I64
from .memory import lane_base, load_elem, slot_coords, store_elem, zero
from .pointer_blocks import slot_loop


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

    runs = [_lane_runs(cg, d, tile, tr) for tile in tiles]
    if all(runs):
        return _load_lane_runs(cg, op, d, origin, tiles, runs, tr)
    return _load_checked(cg, op, d, origin, tiles, tr)


def _load_checked(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, origin: List, tiles, tr: bool) -> List:
    """Element by element, each element's address clamped into the tensor and its value selected."""
    t = d.type.elem

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


def _lane_runs(cg: CodeGen, d: NdDesc, tile, tr: bool) -> List[Tuple[int, int, int, int]]:
    """``messages.lane_row_runs`` of a tile of ``d`` (none unless its column stride is 1)."""
    stride = d.strides[-1] if len(d.shape) == 2 else None
    if not (isinstance(stride, ll.Constant) and stride.constant == 1) or d.type.elem.is_bool:
        return []
    return lane_row_runs(tile, cg.target.sg_size, d.type.elem.bits, tr)


def _load_lane_runs(cg: CodeGen, op: ir.LoadNdOp, d: NdDesc, origin: List, tiles, runs, tr: bool) -> List:
    """Tiles whose lanes hold runs of memory rows (``_lane_runs``): each run is one per-lane vector
    load (IGC: one ``load.ugm.d32xN`` message of up to 8 dwords per lane, where the element-wise path
    takes one message per element) where it lies inside the tensor at a dword-aligned place (a test
    per lane and run, ``_edge_run``; else its elements one by one), with no test at all where pass
    ``split-edges`` proved the load inside and aligned (``inside = true``). One test per op instead,
    with the lanes' tests behind it, made the edge's code so large that IGC spilled around the K
    loop of dg2's flagship GEMM (224). Each tile's slots come as one vector of dwords."""
    b, t = cg.b, d.type.elem
    per = 32 // t.bits
    ats = [[b.add(o, cg.i32(x)) if x else o for o, x in zip(origin, block_shift(op, d, bi))]
           for bi in range(len(tiles))]
    words = [len(lane_slot_offsets(tl.layout, tl.shape)) // per for tl in tiles]
    aligned = None   # (split-edges proved it for the loads it marks)
    g = op.attrs.get("column_multiple") or 0
    if per > 1 and not (op.attrs.get("inside") or g):
        # the base, the row pitch and the origin column in whole dwords
        lo = b.or_(b.trunc(b.ptrtoint(d.base, I64), I32), b.mul(d.strides[0], cg.i32(t.itemsize)))
        lo = b.or_(lo, b.mul(origin[1], cg.i32(t.itemsize)))
        aligned = b.icmp_unsigned("==", b.and_(lo, cg.i32(3)), cg.i32(0))

    def each_run(read):
        out = []
        for tile, at, tile_runs in zip(tiles, ats, runs):
            base = lane_base(cg, tile.layout, tile.shape)
            base = list(reversed(base)) if tr else base
            cols = lane_first_columns(tile, cg.target.sg_size, tr)
            out.append([_concat(cg, [read(at, base, r, c, n, g and all((x + c) % g + n <= g for x in cols))
                                     for _, r, c, n in tile_runs])])
        return out

    def inside(at, base, r, c, n, whole=True):
        return b.load(_inside_address(cg, d, at, base, r, c), typ=dwords(n // per), align=4)

    def edge(at, base, r, c, n, whole):
        row, col = (b.add(b.add(o, x), cg.i32(k)) if k else b.add(o, x) for o, x, k in zip(at, base, (r, c)))
        return _edge_run(cg, d, row, col, n, aligned, lambda: inside(at, base, r, c, n), whole)

    vecs = each_run(inside if op.attrs.get("inside") else edge)
    return [unpacked(cg, v, k * per, t) if k > 1 else _dword_slots(cg, v, per, t) for (v,), k in zip(vecs, words)]


def _dword_slots(cg: CodeGen, v, per: int, t) -> List:
    """The ``per`` elements of dtype ``t`` in the i32 ``v``, low bits first."""
    b, it = cg.b, ll.IntType(t.bits)
    vals = [b.trunc(b.lshr(v, cg.i32(i * t.bits)) if i else v, it) if per > 1 else v for i in range(per)]
    return [x if x.type == ll_type(t) else b.bitcast(x, ll_type(t)) for x in vals]


def _edge_run(cg: CodeGen, d: NdDesc, row, col, n: int, aligned, whole, whole_columns: bool = False):
    """A lane's run of ``n`` elements of row ``row`` from column ``col`` at the tensor's edge: one
    vector load (``whole``) where it lies inside (and ``aligned``, uniform, holds), else a loop over
    its elements, each behind its own test (zero outside); zero when the run's columns can only lie
    all inside or all outside (``whole_columns``, from the load's ``column_multiple``)."""
    b, t = cg.b, d.type.elem
    within = lambda c, lim: b.and_(b.icmp_signed(">=", c, cg.i32(0)), b.icmp_signed("<", c, lim))  # noqa: E731
    row_ok = within(row, d.shape[0])
    full = b.and_(row_ok, b.and_(b.icmp_signed(">=", col, cg.i32(0)),
                                 b.icmp_signed("<=", col, b.sub(d.shape[1], cg.i32(n)))))
    if aligned is not None:
        full = b.and_(full, aligned)
    wt = dwords(n * t.bits // 32)

    it = ll.IntType(t.bits)

    def elements():   # loops (the driver does not unroll them): the edge's code stays small
        parts = []
        for first in range(0, n, VECTOR_ELEMS):
            m = min(VECTOR_ELEMS, n - first)

            def one(j, acc, first=first):
                c = b.add(col, b.add(j, cg.i32(first)) if first else j)
                x = cg.masked(b.and_(row_ok, within(c, d.shape[1])),
                              lambda: b.load(_run_address(cg, d, row, c), typ=it, align=t.itemsize),
                              ll.Constant(it, 0))
                return b.insert_element(acc, x, j)
            v = slot_loop(cg, m, one, ll.Constant(ll.VectorType(it, m), None))
            parts.append(b.bitcast(v, dwords(m * t.bits // 32)))
        return [[_concat(cg, parts)]]
    if whole_columns:
        return cg.masked(full, whole, ll.Constant(wt, 0 if wt == I32 else [0] * wt.count))
    return branch_values(cg, full, lambda: [[whole()]], elements, ("run.whole", "run.parts", "run.end"))[0][0]


def _inside_address(cg: CodeGen, d: NdDesc, at: List, lane: List, r: int, c: int):
    """The address of a lane's run at ``at`` (the tile's origin, uniform) + ``lane`` (the lane's first
    element) + (``r``, ``c``), inside the tensor. On a GPU, as a 32-bit byte offset from the kernel
    argument the descriptor's base is computed from (``_from_argument``): the offset of the origin
    (uniform: scalar instructions) plus the lane's (the same in every iteration of a loop around:
    IGC computes it once), so a message takes one add of its own; IGC addresses the buffer with it
    statefully. Elsewhere ``_run_address``."""
    b = cg.b
    start = _from_argument(cg, d.base) if cg.target.kind == "gpu" else None
    if start is None:
        row, col = (b.add(b.add(o, x), cg.i32(k)) if k else b.add(o, x) for o, x, k in zip(at, lane, (r, c)))
        return _run_address(cg, d, row, col)
    arg, first = start
    size = cg.i32(d.type.elem.itemsize)
    uniform = b.add(first, b.mul(b.add(b.mul(at[0], d.strides[0]), at[1]), size))
    row = b.add(lane[0], cg.i32(r)) if r else lane[0]
    col = b.add(lane[1], cg.i32(c)) if c else lane[1]
    own = b.mul(b.add(b.mul(row, d.strides[0]), col), size)
    return cg.gep(arg, ll.IntType(8), cg.to_i64(b.add(uniform, own), False))


def _from_argument(cg: CodeGen, ptr):
    """(the kernel argument ``ptr`` is computed from by getelementptr, the byte offset between them as
    an i32) or None when ``ptr`` is not so computed from an argument by 32-bit indices."""
    b = cg.b
    off = None
    while isinstance(ptr, ll.GEPInstr):
        if len(ptr.indices) != 1:
            return None
        idx, size = ptr.indices[0], _BYTES.get(str(ptr.source_etype))
        if size is None:
            return None
        if isinstance(idx, ll.Constant):
            idx = cg.i32(idx.constant)
        elif isinstance(idx, ll.CastInstr) and idx.opname in ("sext", "zext") and idx.operands[0].type == I32:
            idx = idx.operands[0]
        else:
            return None
        idx = b.mul(idx, cg.i32(size))
        off = idx if off is None else b.add(off, idx)
        ptr = ptr.pointer
    if not isinstance(ptr, ll.Argument):
        return None
    return ptr, off if off is not None else cg.i32(0)


_BYTES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}


def _run_address(cg: CodeGen, d: NdDesc, row, col):
    """The address of element (``row``, ``col``) of ``d``'s tensor (unit column stride), both inside.
    On a GPU the element offset is an unsigned 32-bit number, zero-extended: IGC then proves it
    non-negative and addresses the buffer statefully with 32-bit offsets (``.a32 ... bss``), where a
    64-bit offset costs four instructions per message (no 64-bit integer ALU on dg2) -- as IGC
    itself assumes for every buffer it addresses so (it is compiled without
    ``-cl-intel-greater-than-4GB-buffer-required``). The CPU device takes the 64-bit offset."""
    b = cg.b
    if cg.target.kind == "gpu":   # (unsigned: an int8 tensor of 2 to 4 GiB has offsets past 2^31)
        off = cg.to_i64(b.add(b.mul(row, d.strides[0], flags=("nuw",)), col, flags=("nuw",)), False)
    else:
        off = b.add(b.mul(cg.to_i64(row, False), cg.to_i64(d.strides[0], False), flags=NO_WRAP),
                    cg.to_i64(col, False), flags=NO_WRAP)
    return cg.gep(d.base, mem_type(d.type.elem), off)


# an in-bounds element's offset: non-negative products and sums of non-negative i32 values
NO_WRAP = ("nuw", "nsw")
# the widest vector a loop carries: LLVM's SPIR-V backend splits none of more elements (as
# rules_memory.WIDE_ELEMS)
VECTOR_ELEMS = 16


def dwords(k: int) -> ll.Type:
    """``k`` dwords: an i32 for one (SPIR-V has no vector of one component), else a vector."""
    return I32 if k == 1 else ll.VectorType(I32, k)


def _concat(cg: CodeGen, parts: List):
    """Dwords and vectors of dwords end to end, as one (an i32 when it is one dword)."""
    b = cg.b
    if len(parts) > 1 and any(p.type == I32 for p in parts):   # element by element
        n = sum(1 if p.type == I32 else p.type.count for p in parts)
        out, i = ll.Constant(ll.VectorType(I32, n), None), 0
        for p in parts:
            for x in [p] if p.type == I32 else [b.extract_element(p, cg.i32(j)) for j in range(p.type.count)]:
                out, i = b.insert_element(out, x, cg.i32(i)), i + 1
        return out
    while len(parts) > 1:
        nxt = []
        for i in range(0, len(parts) - 1, 2):
            x, y = parts[i], parts[i + 1]
            if x.type.count != y.type.count:   # shufflevector takes equal types: widen the shorter
                big = max(x.type.count, y.type.count)
                x, y = (_widen(cg, v, big) for v in (x, y))
                mask = list(range(parts[i].type.count)) + [big + j for j in range(parts[i + 1].type.count)]
            else:
                mask = list(range(2 * x.type.count))
            nxt.append(b.shuffle_vector(x, y, ll.Constant(ll.VectorType(I32, len(mask)), mask)))
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


def _widen(cg: CodeGen, v, n: int):
    if v.type.count == n:
        return v
    mask = list(range(v.type.count)) + [v.type.count] * (n - v.type.count)
    return cg.b.shuffle_vector(v, ll.Constant(v.type, None), ll.Constant(ll.VectorType(I32, n), mask))


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
        b.store(b.bitcast(data, dwords(n * t.bits // 32)), ptr, align=t.itemsize)
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
