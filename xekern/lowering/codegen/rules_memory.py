"""Codegen rules (table ``common``) for memory through addresses: scalar pointers, scattered
descriptors (gathers, scatters, atomics), and matrices in shared local memory. Every masked
access is a branch, so a masked-off address is never touched."""
from __future__ import annotations

from typing import Dict, List

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ...ir.types import DType, MemDescType, elem_of
from ..rewrite import PassError
from . import block_io, pointer_blocks, run_chains, slm_read
from .core import LOCAL, CodeGen, ScatterDesc, SlmMatrix, VecSlots, ll_type, mem_type, rule, unpacked
from ..messages import lane_offsets, origin_multiple_of
from .memory import load_elem, load_from_dword, slm_buffer, slm_offset, slot_coords, store_elem, zero
from .ocl import F16, I1, I8, I32, I64


@rule(ir.PtrCastOp)
def _ptrcast(cg: CodeGen, op: ir.PtrCastOp):
    return [cg.get(op.operands[0])]   # (pointers are opaque: the address is the value)


@rule(ir.AddPtrOp)
def _addptr(cg: CodeGen, op: ir.AddPtrOp):
    p, off = (cg.get(v) for v in op.operands)
    return [cg.gep(p, mem_type(op.result.type.elem), cg.to_i64(off, op.operands[1].type.is_signed))]


# ---- scattered access ------------------------------------------------------------------------------

@rule(ir.CreateTDescOp)
def _create_tdesc(cg: CodeGen, op: ir.CreateTDescOp):
    base, offs = op.operands
    signed = elem_of(offs.type).is_signed
    return [ScatterDesc(cg.get(base), [cg.to_i64(o, signed) for o in cg.slots(offs)], op.result.type)]


@rule(ir.UpdateOffsetOp)
def _update_offset(cg: CodeGen, op: ir.UpdateOffsetOp):
    d = cg.get(op.operands[0])
    delta = cg.slots(op.operands[1])
    signed = elem_of(op.operands[1].type).is_signed
    return [ScatterDesc(d.base, [cg.b.add(a, cg.to_i64(x, signed)) for a, x in zip(d.offsets, delta)], d.type)]


def _addresses(cg: CodeGen, d: ScatterDesc) -> List:
    et = mem_type(d.type.elem)
    return [cg.gep(d.base, et, o) for o in d.offsets]


@rule(ir.LoadGatherOp)
def _load_gather(cg: CodeGen, op: ir.LoadGatherOp):
    run_chains.chains(cg)   # (finds the chains before their first load: the store emits their loads)
    if op in cg.deferred:
        return []
    d: ScatterDesc = cg.get(op.operands[0])
    masks = cg.slots(op.operands[1])
    t = d.type.elem
    other = cg.slots(op.operands[2]) if len(op.operands) > 2 else None
    chunk = d.type.chunk_size
    et = mem_type(t)

    load = load_from_dword if cg.emitter.dword_gathers and t.itemsize < 4 else load_elem

    def loads(slots: List[int]) -> List:   # the slots' chunks, element by element
        vals = []
        for i in slots:
            p = cg.gep(d.base, et, d.offsets[i])
            vals.extend(load(cg, p if c == 0 else cg.gep(p, et, ll.Constant(I64, c)), t) for c in range(chunk))
        return vals
    runs = op.attrs.get("block_runs") or ()
    got = {s: [v] for s, v in pointer_blocks.load_runs(cg, d, op.operands[1], masks, other, runs,
                                                       bool(op.attrs.get("runs_aligned"))).items()}
    # the other slots behind one branch per mask value (loads have no order to keep): a tile whose
    # mask is the same for many slots (a lane's row, or a uniform test) branches once, not per slot
    groups: Dict[int, List[int]] = {}
    for i in range(len(d.offsets)):
        if i not in got:
            groups.setdefault(id(masks[i]), []).append(i)
    for slots in groups.values():
        fallback = [other[i * chunk + c] if other is not None else zero(t) for i in slots for c in range(chunk)]
        vals = cg.masked_all(masks[slots[0]], lambda slots=slots: loads(slots), fallback)
        for n, i in enumerate(slots):
            got[i] = vals[n * chunk:(n + 1) * chunk]
    return [[v for i in range(len(d.offsets)) for v in got[i]]]


@rule(ir.StoreScatterOp)
def _store_scatter(cg: CodeGen, op: ir.StoreScatterOp):
    chain = run_chains.chains(cg).get(op)
    if chain is not None:
        run_chains.emit(cg, chain)
        return []
    vals = cg.slots(op.operands[0])
    d: ScatterDesc = cg.get(op.operands[1])
    masks = cg.slots(op.operands[2])
    t = d.type.elem
    chunk = d.type.chunk_size
    et = mem_type(t)

    def slot(i: int) -> None:
        def st():
            p = cg.gep(d.base, et, d.offsets[i])
            for c in range(chunk):
                q = p if c == 0 else cg.gep(p, et, ll.Constant(I64, c))
                store_elem(cg, vals[i * chunk + c], q, t)
        cg.masked(masks[i], st)
    runs = op.attrs.get("block_runs") or ()
    done = pointer_blocks.store_runs(cg, d, vals, op.operands[2], masks, runs,
                                     bool(op.attrs.get("runs_aligned")))
    for i in range(len(d.offsets)):
        if i not in done:
            slot(i)
    return []


@rule(ir.PrefetchOp)
def _prefetch(cg: CodeGen, op):
    return []  # a cache hint; the CPU device has no use for it and IGC 12504 has no SPIR-V prefetch for it


_ATOMIC_INT = {"add": "add", "max": "max", "min": "min", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg"}
_ATOMIC_UINT = dict(_ATOMIC_INT, max="umax", min="umin")
_ATOMIC_FLOAT = {"add": "fadd", "max": "fmax", "min": "fmin", "xchg": "xchg"}
_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
_SCOPE = {"gpu": "device", "cta": "workgroup", "sys": "all_svm_devices"}


@rule(ir.AtomicRMWOp)
def _atomic(cg: CodeGen, op: ir.AtomicRMWOp):
    d: ScatterDesc = cg.get(op.operands[0])
    vals = cg.slots(op.operands[1])
    masks = cg.slots(op.operands[2])
    cmps = cg.slots(op.operands[3]) if len(op.operands) > 3 else None
    t = d.type.elem
    order = _ORDER[op.attrs.get("sem", "acq_rel")]
    scope = _SCOPE[op.attrs.get("scope", "gpu")]
    ordering = f'syncscope("{scope}") {order}' if scope != "all_svm_devices" else order
    kind = op.kind
    table = _ATOMIC_FLOAT if t.is_floating else (_ATOMIC_INT if t.is_signed else _ATOMIC_UINT)
    if kind != "cas" and kind not in table:
        raise PassError(f"codegen: atomic {kind} on {t.user_name} is not supported", op)
    narrow = t.is_floating and t.bits == 16
    if t.is_floating and kind in ("add", "max", "min") and not narrow:
        cg.extensions.add("SPV_EXT_shader_atomic_float_add" if kind == "add" else
                          "SPV_EXT_shader_atomic_float_min_max")
    out = []
    for i, (p, m) in enumerate(zip(_addresses(cg, d), masks)):
        def do(p=p, i=i):
            if kind == "cas":
                pair = cg.b.cmpxchg(p, cmps[i], vals[i], ordering, _fail_order(ordering))
                return cg.b.extract_value(pair, 0)
            v = vals[i]
            if narrow:
                return _atomic16(cg, kind, t, p, v, ordering)
            return cg.b.atomic_rmw(table[kind], p, v, ordering)
        out.append(cg.masked(m, do, zero(t)))
    return [out]


def _atomic16(cg: CodeGen, kind: str, t: DType, p, v, ordering: str):
    """A 16-bit float atomic as a compare-and-swap loop on the aligned 32-bit word holding it: SPIR-V's
    16-bit float atomics need ``SPV_EXT_shader_atomic_float16_add``, which neither LLVM's backend here
    nor every driver takes. Returns the old value."""
    from .arith import bf16_to_f32, f32_to_bf16
    b = cg.b
    I16 = ll.IntType(16)
    addr = b.ptrtoint(p, I64)
    word = b.inttoptr(b.and_(addr, ll.Constant(I64, ~3)), p.type)
    shift = b.trunc(b.shl(b.and_(addr, ll.Constant(I64, 2)), ll.Constant(I64, 3)), I32)
    keep = b.xor(b.shl(ll.Constant(I32, 0xFFFF), shift), ll.Constant(I32, -1))
    first = b.load_atomic(word, "monotonic", 4, typ=I32)
    start = b.block
    loop = cg.fn.append_basic_block("cas16")
    done = cg.fn.append_basic_block("cas16_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(I32)
    old.add_incoming(first, start)
    bits = b.trunc(b.lshr(old, shift), I16)
    if t.name == "bf16":
        cur, x = bf16_to_f32(cg, bits), bf16_to_f32(cg, v)
    else:
        cur, x = b.bitcast(bits, F16), v
    if kind == "add":
        new = b.fadd(cur, x)
    elif kind == "xchg":
        new = x
    else:   # max / min: the other operand where the comparison says so (NaN in memory is replaced)
        take = b.fcmp_unordered(">" if kind == "max" else "<", x, cur)
        new = b.select(take, x, cur)
    new_bits = f32_to_bf16(cg, new) if t.name == "bf16" else b.bitcast(new, I16)
    merged = b.or_(b.and_(old, keep), b.shl(b.zext(new_bits, I32), shift))
    pair = b.cmpxchg(word, old, merged, ordering, _fail_order(ordering))
    seen = b.extract_value(pair, 0)
    old.add_incoming(seen, b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return bits if t.name == "bf16" else b.bitcast(bits, F16)


def _fail_order(ordering: str) -> str:
    # a failed cmpxchg only reads: no release semantics; the syncscope is written once, before both
    order = ordering.split()[-1]
    return {"acq_rel": "acquire", "release": "monotonic"}.get(order, order)


# ---- shared local memory -------------------------------------------------------------------------

@rule(ir.CreateMemDescOp)
def _create_mem_desc(cg: CodeGen, op: ir.CreateMemDescOp):
    t: MemDescType = op.result.type
    return [SlmMatrix(slm_buffer(cg, max(t.nbytes, 1), "the kernel", op), t)]


@rule(ir.MemDescViewOp)
def _mem_desc_view(cg: CodeGen, op: ir.MemDescViewOp):
    return [SlmMatrix(cg.get(op.operands[0]).ptr, op.result.type)]


def _matrix_addresses(cg: CodeGen, m: SlmMatrix, op, offsets: List, tile) -> List:
    et = mem_type(m.type.elem)
    if tile is None:
        return [cg.gep(m.ptr, et, cg.to_i64(slm_offset(cg, m.type, offsets), False))]
    lead = len(offsets) - tile.rank
    coords = slot_coords(cg, tile, offsets[lead:])
    return [cg.gep(m.ptr, et, cg.to_i64(slm_offset(cg, m.type, offsets[:lead] + c), False)) for c in coords]


def _block_io_runs(cg: CodeGen, op, m: MemDescType, offsets, tile):
    """The sub-group block messages that move ``tile`` at ``offsets`` (see ``block_io.plan``), or
    None (element by element). ``subgroup_block_io=True`` makes None a compile error."""
    asked = bool(op.attrs.get("subgroup_block_io"))
    sg = cg.target.sg_size
    why = None
    if tile is None:
        why = "a scalar is not a sub-group block"
    else:
        lead = len(offsets) - tile.rank
        rel = lane_offsets(tile, sg, lambda c: m.offset((0,) * lead + c))
        runs, g = block_io.plan(rel, sg, m.elem.bits), 1
        for wide in (2, 4):  # sub-32-bit slots that lanes hold in pairs / quads: one wider element each
            if runs is None and m.elem.bits * wide <= 32 and not m.elem.is_bool:
                runs, g = block_io.plan(block_io.pack(rel, wide), sg, m.elem.bits * wide), wide
        origin = origin_multiple_of(m, offsets)
        if runs is None:
            why = (f"the tile's layout {tile.layout} does not give each slot {sg} consecutive "
                   f"{m.elem.user_name} elements of the matrix in lane order, 16-byte aligned (use a @block "
                   f"layout whose rows match the lanes)")
        elif origin == 0 or origin * m.elem.itemsize % block_io.ALIGN_BYTES:
            why = (f"the origin is not provably {block_io.ALIGN_BYTES}-byte aligned"
                   + (" on a @block boundary" if m.block is not None else ""))
        else:
            # in element units: message slots and offsets of the wide elements, ``g`` elements each
            return [(tuple(s * g + j for s in slots for j in range(g)), f * g, g) for slots, f in runs]
    if asked:
        raise PassError(f"subgroup_block_io: {why}", op)
    return None


def _block_io_base(cg: CodeGen, mat: SlmMatrix, offsets, rel: int, g: int = 1):
    """The element pointer of a block message (of ``g``-element wide elements). LLVM folds a GEP by
    a constant 0 into the SLM variable itself, whose SPIR-V type is a byte array:
    OpSubgroupBlockReadINTEL on that is rejected by the OpenCL CPU runtime. An offset LLVM cannot
    fold (``sub_group_id >> 31``, always 0) keeps the GEP, and with it the pointer's element type."""
    et = mem_type(mat.type.elem) if g == 1 else ll.IntType(mat.type.elem.bits * g)
    off = slm_offset(cg, mat.type, offsets)
    off = cg.b.add(off, cg.i32(rel)) if rel else off
    if g > 1:  # the origin and ``rel`` are multiples of g (``_block_io_runs``)
        off = cg.b.lshr(off, cg.i32(g.bit_length() - 1))
    opaque_zero = cg.cached("opaque_zero", lambda: cg.b.lshr(cg.sg_id(), cg.i32(31)))
    return cg.gep(mat.ptr, et, cg.to_i64(cg.b.add(off, opaque_zero), False))


def _as_int(cg: CodeGen, v, t: DType):
    if t.is_bool:
        return cg.b.zext(v, I8)
    return v if isinstance(v.type, ll.IntType) else cg.b.bitcast(v, ll.IntType(t.bits))


def _from_int(cg: CodeGen, v, t: DType):
    if t.is_bool:
        return cg.b.trunc(v, I1)
    lt = ll_type(t)
    return v if v.type == lt else cg.b.bitcast(v, lt)


def _join(cg: CodeGen, ints: List, bits: int):
    """``ints`` (``bits`` wide each, the first lowest) as one integer."""
    wide = ll.IntType(bits * len(ints))
    out = None
    for j, x in enumerate(ints):
        x = cg.b.zext(x, wide)
        x = cg.b.shl(x, ll.Constant(wide, j * bits)) if j else x
        out = x if out is None else cg.b.or_(out, x)
    return out


def _split(cg: CodeGen, x, bits: int, n: int) -> List:
    """The ``n`` integers of ``bits`` packed in ``x`` (the inverse of ``_join``)."""
    return [cg.b.trunc(cg.b.lshr(x, ll.Constant(x.type, j * bits)) if j else x, ll.IntType(bits)) for j in range(n)]


# widest element-wise SLM access: 8 dwords per lane, one LSC message (IGC 12504 emits store.slm.d32x8 for
# pvc straight from a VNNI block read's registers; 16-byte halves cost a copy of the block first)
WIDE_BYTES = 32
# at most this many elements per access when they are packed or unpacked one by one: LLVM turns the
# shifts into a vector of the elements, and its SPIR-V backend cannot split one of more than 16
WIDE_ELEMS = 16


def _wide_groups(cg: CodeGen, m: MemDescType, offsets, tile, max_bytes: int):
    """When sub-group block IO does not apply: runs ``(first slot, n)`` of a lane's slots that hold
    ``n`` consecutive matrix elements in every lane, aligned to their size, each one access of up
    to ``max_bytes`` instead of ``n`` (a lane's 8 VNNI dwords of int8 are one 32-byte store). None when
    every run would be one element (always for 64-bit elements)."""
    if tile is None or m.elem.is_bool or m.elem.bits > 32:
        return None
    lead = len(offsets) - tile.rank
    rel = lane_offsets(tile, cg.target.sg_size, lambda c: m.offset((0,) * lead + c))
    origin = origin_multiple_of(m, offsets) * m.elem.itemsize
    if rel is None or origin == 0:
        return None
    size, n = m.elem.itemsize, len(rel[0])
    groups, s = [], 0
    while s < n:
        g = max_bytes // size
        while g > 1 and not (s + g <= n and origin % (g * size) == 0 and
                             all(lane[s] % g == 0 and lane[s:s + g] == list(range(lane[s], lane[s] + g))
                                 for lane in rel)):
            g //= 2
        groups.append((s, g))
        s += g
    return groups if any(g > 1 for _, g in groups) else None


def _wide_type(bits: int, n: int) -> ll.Type:
    """The integer (or vector of dwords) type of ``n`` packed ``bits``-bit elements."""
    total = bits * n
    return ll.IntType(total) if total <= 32 else ll.VectorType(I32, total // 32)


def _wide_load(cg: CodeGen, ptr, t: DType, n: int) -> List:
    wt = _wide_type(t.bits, n)
    v = cg.b.load(ptr, typ=wt, align=n * t.itemsize)
    words = [v] if isinstance(wt, ll.IntType) else [cg.b.extract_element(v, cg.i32(i)) for i in range(wt.count)]
    per = n // len(words)
    return [_from_int(cg, x, t) for w in words for x in (_split(cg, w, t.bits, per) if per > 1 else [w])]


def _packed_words(cg: CodeGen, slots, s: int, n: int, t: DType):
    """Slots ``s .. s + n`` as the dwords that already hold them (one i32, or a vector of them taken
    from the block with one shufflevector) when ``slots`` unpack a vector of dwords (a VNNI block
    read: 4 int8 per dword), else None. Re-joining the bytes would cost IGC a copy of the block."""
    if not isinstance(slots, VecSlots) or t.is_bool:
        return None
    per, vt = slots.per, slots.vec.type
    if per * t.bits != 32 or not isinstance(vt, ll.VectorType) or vt.element != I32 or s % per or n % per:
        return None
    first, count = s // per, n // per
    if count == 1:
        return cg.b.extract_element(slots.vec, cg.i32(first))
    if count == vt.count:
        return slots.vec
    return cg.b.shuffle_vector(slots.vec, ll.Constant(vt, None),
                               ll.Constant(ll.VectorType(I32, count), list(range(first, first + count))))


def _wide_store(cg: CodeGen, slots, s: int, n: int, ptr, t: DType) -> None:
    wt = _wide_type(t.bits, n)
    data = _packed_words(cg, slots, s, n, t)
    if data is None and n > WIDE_ELEMS:  # halves (aligned: n and the start are powers of 2 apart)
        _wide_store(cg, slots, s, n // 2, ptr, t)
        _wide_store(cg, slots, s + n // 2, n // 2, cg.gep(ptr, mem_type(t), ll.Constant(I64, n // 2)), t)
        return
    if data is None:
        ints = [_as_int(cg, v, t) for v in slots[s:s + n]]
        per = min(n, 32 // t.bits)
        words = [_join(cg, ints[i:i + per], t.bits) if per > 1 else ints[i] for i in range(0, n, per)]
        data = words[0] if isinstance(wt, ll.IntType) else ll.Constant(wt, None)
        for i, w in enumerate(words if not isinstance(wt, ll.IntType) else []):
            data = cg.b.insert_element(data, w, cg.i32(i))
    cg.b.store(data, ptr, align=n * t.itemsize)


@rule(ir.LoadMatrixOp)
def _load_matrix(cg: CodeGen, op: ir.LoadMatrixOp):
    m: SlmMatrix = cg.get(op.operands[0])
    offsets = [cg.to_i32(cg.get(v)) for v in op.operands[1:]]
    if len(op.results) > 1:  # blocking's tiles side by side, one message (DPAS operands)
        return slm_read.load(cg, op, m, offsets)
    tiles = op.attrs.get("tiles") or ()
    tile = tiles[0] if tiles else None
    runs = _block_io_runs(cg, op, m.type, op.operands[1:], tile)
    if runs is not None:
        t = m.type.elem
        vals = [None] * sum(len(slots) for slots, _, _ in runs)
        for slots, rel, g in runs:
            ints = block_io.read(cg, _block_io_base(cg, m, offsets, rel, g), t.bits * g, len(slots) // g, LOCAL)
            for i, s in enumerate(slots):
                x = ints[i // g]
                if g > 1:
                    x = cg.b.trunc(cg.b.lshr(x, ll.Constant(x.type, (i % g) * t.bits)) if i % g else x,
                                   ll.IntType(t.bits))
                vals[s] = _from_int(cg, x, t)
        return [vals]
    ptrs = _matrix_addresses(cg, m, op, offsets, tile)
    t = m.type.elem
    whole = _wide_groups(cg, m.type, op.operands[1:], tile, WIDE_BYTES)
    count = len(lane_slot_offsets(tile.layout, tile.shape)) if tile is not None else 1
    if whole == [(0, count)] and count * t.bits % 32 == 0 and count * t.bits > 32 and not t.is_bool:
        # the lane's slots are one access: its dwords as they are, the slots read out of them only
        # where something asks (a DPAS takes the dwords: dg2's B^T fragments, 32 bytes of int8)
        v = cg.b.load(ptrs[0], typ=ll.VectorType(I32, count * t.bits // 32), align=count * t.itemsize)
        return [unpacked(cg, v, count, t)]
    groups = _wide_groups(cg, m.type, op.operands[1:], tile, min(WIDE_BYTES, WIDE_ELEMS * m.type.elem.itemsize))
    if groups is not None:
        return [[v for s, n in groups for v in (_wide_load(cg, ptrs[s], m.type.elem, n) if n > 1
                                                  else [load_elem(cg, ptrs[s], m.type.elem)])]]
    vals = [load_elem(cg, p, m.type.elem) for p in ptrs]
    return [vals if tile is not None else vals[0]]


@rule(ir.StoreMatrixOp)
def _store_matrix(cg: CodeGen, op: ir.StoreMatrixOp):
    m: SlmMatrix = cg.get(op.operands[1])
    offsets = [cg.to_i32(cg.get(v)) for v in op.operands[2:]]
    tiles = op.attrs.get("tiles") or ()
    tile = tiles[0] if tiles else None
    vals = cg.slots(op.operands[0])
    runs = _block_io_runs(cg, op, m.type, op.operands[2:], tile)
    if runs is not None:
        t = m.type.elem
        for slots, rel, g in runs:
            ints = [_as_int(cg, vals[s], t) for s in slots]
            if g > 1:
                ints = [_join(cg, ints[i:i + g], t.bits) for i in range(0, len(ints), g)]
            block_io.write(cg, _block_io_base(cg, m, offsets, rel, g), ints, t.bits * g, LOCAL)
        return []
    ptrs = _matrix_addresses(cg, m, op, offsets, tile)
    t = m.type.elem
    whole_dwords = isinstance(vals, VecSlots) and vals.per * t.bits == 32  # (see _packed_words)
    groups = _wide_groups(cg, m.type, op.operands[2:], tile,
                          WIDE_BYTES if whole_dwords else min(WIDE_BYTES, WIDE_ELEMS * t.itemsize))
    for s, n in groups or [(i, 1) for i in range(len(ptrs))]:
        if n > 1:
            _wide_store(cg, vals, s, n, ptrs[s], m.type.elem)
        else:
            store_elem(cg, vals[s], ptrs[s], m.type.elem)
    return []
