"""The SPIR-V-ops table: 2D block IO and DPAS as the Khronos-registered Intel SPIR-V instructions.

Current Intel drivers (and Triton's XPU backend) take 2D block loads, stores and prefetches as
``OpSubgroup2DBlock{Load,LoadTransform,LoadTranspose,Prefetch,Store}INTEL``
(``SPV_INTEL_2d_block_io``) and DPAS as ``OpSubgroupMatrixMultiplyAccumulateINTEL``
(``SPV_INTEL_subgroup_matrix_multiply_accumulate``). LLVM's SPIR-V backend emits them from calls
to the ``__spirv_*`` builtins below (Itanium-mangled) when the extensions are enabled
(``llvm_worker.SPIRV_EXTENSIONS``). IGC 2.x takes them; IGC 12504 rejects them (opcodes 6231/6237,
HARDWARE.md), so the ``spirv-ext`` emitter is only chosen for drivers that have them
(``emitters.Driver.spirv_block_io``): its table is layered over ``igc-builtins``, replacing the rules
of ``load_nd``, ``store_nd``, ``prefetch_nd`` and ``dpas``.

Operands (SPV_INTEL_2d_block_io, SPIRV-Registry): element size in bytes; block width (elements),
height (rows) and count as constants; the base pointer (CrossWorkgroup); memory width and pitch in
**bytes** and height in rows, as they are (IGC's own builtins take them minus 1); the coordinate
``<x elements, y rows>``; and a Function-storage pointer the loaded payload is written to (or the
stored payload read from). The payload is the same register block as IGC's ``LSC2DBlockRead``
(row-major per lane, VNNI-packed for Transform), so the slot unpacking is shared (``block2d``).

DPAS (SPV_INTEL_subgroup_matrix_multiply_accumulate): ``(K, A, B, C, operands)`` where the result
type's component count is M, A is one value per row (the lane's K/N columns packed, low column in
the low bits), B the lane's column packed VNNI-style into 32-bit words, and ``operands`` the flags
that say how to read the packed bits (table ``MMA_OPERANDS``).
"""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from ..emitters import SPIRV_OPS_EXTENSIONS as EXTENSIONS
from ..rewrite import PassError
from .block2d import aligned_region, block2d_enabled, block_fits, load_nd, prefetch_shape, region, store_shape
from .core import CodeGen, NdDesc, lazy_slots, rule
from .dpas_builtin import pack
from .dpas_cpu import dpas_emulated
from .memory import zero
from .nd_elementwise import nd_origin, store_elementwise
from .ocl import F32, I32, mangle_args

TABLE = "spirv-ext"

LOAD = "_Z32__spirv_Subgroup2DBlockLoadINTELiiiiPU3AS1KviiiDv2_iPv"
LOAD_TRANSFORM = "_Z41__spirv_Subgroup2DBlockLoadTransformINTELiiiiPU3AS1KviiiDv2_iPv"
LOAD_TRANSPOSE = "_Z41__spirv_Subgroup2DBlockLoadTransposeINTELiiiiPU3AS1KviiiDv2_iPv"
PREFETCH = "_Z36__spirv_Subgroup2DBlockPrefetchINTELiiiiPU3AS1KviiiDv2_i"
STORE = "_Z33__spirv_Subgroup2DBlockStoreINTELiiiiPKvPU3AS1viiiDv2_i"
MMA = "__spirv_SubgroupMatrixMultiplyAccumulateINTEL"

# Matrix Multiply Accumulate Operands (SPV_INTEL_subgroup_matrix_multiply_accumulate): how A's and
# B's packed bits are read. Signed int8 = A signed (0x1) | B signed (0x2) | A, B packed int8 (0x10 | 0x20).
MMA_OPERANDS = {"bf16": 0x1000 | 0x2000, "f16": 0x400 | 0x800, "i8": 0x1 | 0x2 | 0x10 | 0x20, "ui8": 0x10 | 0x20,
                "f32": 0x100 | 0x200}


def _private(cg: CodeGen, t: ll.Type):
    """A Function-storage slot for one message payload (in the entry block: one per message site)."""
    with cg.b.goto_block(cg.entry):
        return cg.b.alloca(t)


def _void_ptr(cg: CodeGen, p):
    """``p`` as the builtins' ``void *`` (i8*): payloads of different sizes share one declaration."""
    return cg.b.bitcast(p, ll.PointerType(ll.IntType(8)))


def _args(cg: CodeGen, d: NdDesc, x, y, ebytes: int, w: int, h: int, n: int) -> List:
    """The operands common to every 2D block instruction, Element Size through Coordinate (the
    store puts its payload pointer before the base pointer): the surface with its base aligned
    down as the hardware takes it (``block2d.aligned_region``)."""
    b = cg.b
    base, width, height, pitch, x, y = aligned_region(cg, d, [y, x] if len(d.shape) == 2 else [x], ebytes)
    coord = b.insert_element(b.insert_element(ll.Constant(ll.VectorType(I32, 2), None), x, cg.i32(0)), y, cg.i32(1))
    return [cg.i32(ebytes), cg.i32(w), cg.i32(h), cg.i32(n), b.inttoptr(base, d.base.type), width, height, pitch,
            coord]


def _spirv_read(cg: CodeGen, d: NdDesc, x, y, bits: int, w: int, h: int, n: int, transpose: bool, vnni: bool,
                vt: ll.VectorType):
    """One 2D block read as ``OpSubgroup2DBlockLoad[Transform|Transpose]INTEL`` into a private
    slot, then loaded as ``vt`` (``block2d.load_block2d``'s ``read``)."""
    name = LOAD_TRANSPOSE if transpose else LOAD_TRANSFORM if vnni else LOAD
    dst = _private(cg, vt)
    cg.call(name, ll.VoidType(), _args(cg, d, x, y, bits // 8, w, h, n) + [_void_ptr(cg, dst)], convergent=True)
    cg.extensions.add(EXTENSIONS[0])
    return cg.b.load(dst)


@rule(ir.LoadNdOp, table=TABLE)
def _load_nd(cg: CodeGen, op: ir.LoadNdOp):
    return load_nd(cg, op, _spirv_read)


@rule(ir.StoreNdOp, table=TABLE)
def _store_nd(cg: CodeGen, op: ir.StoreNdOp):
    """One ``OpSubgroup2DBlockStoreINTEL`` of the whole block: lane ``l`` holds column ``l`` of each
    row, row ``r`` in component ``r`` (blocks are sub-group wide, 1..8 rows)."""
    d: NdDesc = cg.get(op.tdesc)
    if not (block2d_enabled(cg, d) and block_fits(cg, op, store=True)):
        store_elementwise(cg, op, d)
        return []
    t = d.type.elem
    h, w = store_shape(cg, op, d)
    b = cg.b
    it = ll.IntType(t.bits)
    vals = [v if v.type == it else b.bitcast(v, it) for v in cg.slots(op.operands[0])]
    vt = ll.VectorType(it, h)
    data = ll.Constant(vt, None)
    for i, v in enumerate(vals):
        data = b.insert_element(data, v, cg.i32(i))
    src = _private(cg, vt)
    b.store(data, src)
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    args = _args(cg, d, x, y, t.itemsize, w, h, 1)
    cg.call(STORE, ll.VoidType(), args[:4] + [_void_ptr(cg, src)] + args[4:], convergent=True)
    cg.extensions.add(EXTENSIONS[0])
    return []


@rule(ir.PrefetchNdOp, table=TABLE)
def _prefetch_nd(cg: CodeGen, op: ir.PrefetchNdOp):
    d: NdDesc = cg.get(op.tdesc)
    if not block2d_enabled(cg, d):
        return []
    hw = prefetch_shape(cg, op, d)
    if hw is None:
        return []
    h, w = hw
    _, _, _, x, y = region(cg, d, nd_origin(cg, d, op))
    cg.call(PREFETCH, ll.VoidType(), _args(cg, d, x, y, d.type.elem.itemsize, w, h, 1), convergent=True)
    cg.extensions.add(EXTENSIONS[0])
    return []


@rule(ir.DpasOp, table=TABLE)
def _dpas(cg: CodeGen, op: ir.DpasOp):
    """``OpSubgroupMatrixMultiplyAccumulateINTEL``: the operand types IGC's resolver of the op
    takes (A ``short``/``int`` per row for 16- and 8-bit data, ``float`` row pairs for tf32; B
    ``int8`` VNNI words, ``float8`` for tf32), with the ``MMA_OPERANDS`` flags of the dtype."""
    if not cg.target.has_dpas:
        return dpas_emulated(cg, op)
    tiles = op.attrs["tiles"]
    ta, tc = tiles[0], tiles[-1]
    ea = ta.elem
    (M, K) = ta.shape
    b = cg.b
    a, bslots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    c = cg.slots(op.operands[2]) if len(op.operands) > 2 else \
        [zero(tc.elem)] * len(lane_slot_offsets(tc.layout, tc.shape))
    tf32 = ea.name == "f32"
    if tf32:  # A: rows in pairs per float (ceil(M/2) components), B: the lane's column as floats
        avec = pack(cg, a, 1, 32, as_float=True)
        bvec = pack(cg, bslots, 1, 32, as_float=True)
        avec, bvec = (v if v.type.element == F32 else b.bitcast(v, ll.VectorType(F32, v.type.count))
                      for v in (avec, bvec))
    else:
        avec = pack(cg, a, len(a) // M, ea.bits)
        bvec = pack(cg, bslots, 32 // ea.bits, ea.bits)
        if avec.type.element.width not in (16, 32):
            raise PassError(f"codegen: a {M}x{K} {ea.user_name} DPAS A operand packs into {avec.type.element} "
                            f"per row; OpSubgroupMatrixMultiplyAccumulateINTEL takes 16- or 32-bit values", op)
    cvec = pack(cg, c, 1, 32, as_float=True) if len(c) > 1 else c[0]
    av = avec if avec.type.count > 1 else b.extract_element(avec, cg.i32(0))
    name = "_Z" + str(len(MMA)) + MMA + mangle_args([I32, av.type, bvec.type, cvec.type, I32])
    r = cg.call(name, cvec.type, [cg.i32(K), av, bvec, cvec, cg.i32(MMA_OPERANDS[ea.name])], convergent=True)
    cg.extensions.add(EXTENSIONS[1])
    if isinstance(cvec.type, ll.VectorType):
        return [lazy_slots(cg, r, cvec.type.count, 1, lambda i: cg.b.extract_element(r, cg.i32(i)))]
    return [[r]]

