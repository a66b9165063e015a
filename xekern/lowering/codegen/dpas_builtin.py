"""DPAS through the OpenCL builtins of IGC (``intel_sub_group_*_matrix_mad_k*``; HARDWARE.md: names
and operand types per sub-group size), and the packing of a tile's slots into the vector operands
every GPU emitter's DPAS takes."""
from __future__ import annotations

from typing import List

from llvmlite import ir as ll

from ... import ir
from ...ir.layout import lane_slot_offsets
from .core import CodeGen, VecSlots, lazy_slots
from .memory import zero
from .ocl import F32, I16, I32, mangle_args


# the builtins' names by A's dtype (HARDWARE.md); tf32's differs between IGC versions: ``_tf32``
_DPAS_NAMES = {"bf16": "bf16_bf16_matrix_mad_k16", "f16": "f16_f16_matrix_mad_k16",
               "i8": "i8_i8_matrix_mad_k32", "ui8": "u8_u8_matrix_mad_k32"}


def pack(cg: CodeGen, slots: List, per: int, bits: int, as_float=False):
    """Pack ``per`` consecutive slots (low bits first) into each component of a vector (reusing
    the vector the slots came from when it already is that vector)."""
    b = cg.b
    if isinstance(slots, VecSlots) and slots.per == per and (as_float or per > 1 or
                                                             isinstance(slots.vec.type.element, ll.IntType)):
        vec = slots.vec
        want = ll.IntType(bits * per) if not as_float else vec.type.element
        if vec.type.element != want and not as_float:
            vec = b.bitcast(vec, ll.VectorType(want, vec.type.count))
        return vec
    comps = []
    for c in range(len(slots) // per):
        group = slots[c * per:(c + 1) * per]
        if as_float:
            comps.append(group[0])
            continue
        wide = ll.IntType(bits * per)
        acc = None
        for j, v in enumerate(group):
            if not isinstance(v.type, ll.IntType):
                v = b.bitcast(v, ll.IntType(bits))
            x = b.zext(v, wide) if per > 1 else v
            if j:
                x = b.shl(x, ll.Constant(wide, j * bits))
            acc = x if acc is None else b.or_(acc, x)
        comps.append(acc)
    vt = ll.VectorType(comps[0].type, len(comps))
    vec = ll.Constant(vt, None)
    for i, c in enumerate(comps):
        vec = b.insert_element(vec, c, cg.i32(i))
    return vec


def dpas_builtin(cg: CodeGen, op: ir.DpasOp):
    """One DPAS through the target's OpenCL builtin (HARDWARE.md: names and operand types per
    sub-group size): A one value per row (the lane's K elements packed), B the lane's column in
    VNNI dwords, C one value per row; tf32 takes A as pairs of rows per float (``_tf32``)."""
    tiles = op.attrs["tiles"]
    ta, tc = tiles[0], tiles[-1]
    ea = ta.elem
    a, bslots = cg.slots(op.operands[0]), cg.slots(op.operands[1])
    c = cg.slots(op.operands[2]) if len(op.operands) > 2 else \
        [zero(tc.elem)] * len(lane_slot_offsets(tc.layout, tc.shape))
    M = ta.shape[0]
    cvec = pack(cg, c, 1, 32, as_float=True) if len(c) > 1 else c[0]
    unsigned = ()
    if ea.name == "f32":
        name, av, bvec = _tf32(cg, a, bslots)
    else:
        name = _DPAS_NAMES[ea.name]
        avec = pack(cg, a, len(a) // M, ea.bits)
        av = avec if len(c) > 1 else cg.b.extract_element(avec, cg.i32(0))
        bvec = pack(cg, bslots, max(1, 32 // ea.bits), ea.bits)
        unsigned = (0, 1) if ea.name == "ui8" else ()
    base = f"intel_sub_group_{name}"
    mangled = "_Z" + str(len(base)) + base + mangle_args([av.type, bvec.type, cvec.type], unsigned=unsigned)
    r = cg.call(mangled, cvec.type, [av, bvec, cvec], convergent=True)
    if isinstance(cvec.type, ll.VectorType):
        return [lazy_slots(cg, r, cvec.type.count, 1, lambda i: cg.b.extract_element(r, cg.i32(i)))]
    return [[r]]


def _tf32(cg: CodeGen, a, bslots):
    """(builtin name, A, B) of a tf32 DPAS: A comes as row pairs per float (ceil(M / 2) components),
    B as the lane's 8 floats. IGC 2.x takes them as floats (``tf32_tf32_matrix_mad_k8``), IGC 12504
    as raw bits, A as shorts (two per float) and B as ints (``..._k8_f32``): ``Driver.tf32_float_builtin``."""
    avec = pack(cg, a, 1, 32, as_float=True)
    bvec = pack(cg, bslots, 1, 32, as_float=True)
    if cg.emitter.driver.tf32_float_builtin:
        as_f32 = lambda v: v if v.type.element == F32 else cg.b.bitcast(v, ll.VectorType(F32, v.type.count))  # noqa: E731
        avec, bvec = as_f32(avec), as_f32(bvec)
        av = avec if avec.type.count > 1 else cg.b.extract_element(avec, cg.i32(0))
        return "tf32_tf32_matrix_mad_k8", av, bvec
    avec = cg.b.bitcast(avec, ll.VectorType(I16, 2 * avec.type.count))
    return "tf32_tf32_matrix_mad_k8_f32", avec, cg.b.bitcast(bvec, ll.VectorType(I32, bvec.type.count))
