"""Checking SPIR-V that uses the Intel 2D block IO / matrix-multiply ops with an older spirv-val.

SPIRV-Tools learned ``SPV_INTEL_2d_block_io`` and ``SPV_INTEL_subgroup_matrix_multiply_accumulate``
in 2025; Debian 12's ``spirv-val`` (v2023.1) stops at their first capability ("Invalid capability
operand: 6228"), and its ``spirv-dis`` with it. ``validate`` therefore:

1. reads the module's instructions (the binary form: a 5-word header, then instructions whose first
   word is ``word_count << 16 | opcode``) and checks each of those ops against the extension specs
   (SPIRV-Registry): word count, the Element Size / Block Width / Height / Count operands being 32-bit
   integer constants, the base pointer in CrossWorkgroup and the payload pointer in Function
   storage, a two-component coordinate, MMA's K constant and its result's component count (M, 1..8),
   and that the module declares the capabilities and the extension the ops need;
2. runs ``spirv-val`` on the module with those ops taken out (an MMA's result becomes ``OpUndef``
   of its type; the capabilities and extension strings go too): everything else is validated as usual.

``ops(spirv)`` lists the Intel ops with their operand ids, for tests and for ``kernel.asm["spirv"]``
when ``spirv-dis`` cannot print the module.

    >>> problems = validate(compiled.spirv)      # doctest: +SKIP
    >>> assert not problems, problems
"""
from __future__ import annotations

import struct
import subprocess
import tempfile
from typing import Dict, List, NamedTuple, Tuple

MAGIC = 0x07230203
EXTENSIONS = ("SPV_INTEL_2d_block_io", "SPV_INTEL_subgroup_matrix_multiply_accumulate")
OP_NAMES = {6231: "OpSubgroup2DBlockLoadINTEL", 6232: "OpSubgroup2DBlockLoadTransformINTEL",
            6233: "OpSubgroup2DBlockLoadTransposeINTEL", 6234: "OpSubgroup2DBlockPrefetchINTEL",
            6235: "OpSubgroup2DBlockStoreINTEL", 6237: "OpSubgroupMatrixMultiplyAccumulateINTEL"}
CAPABILITIES = {6228: "Subgroup2DBlockIOINTEL", 6229: "Subgroup2DBlockTransformINTEL",
                6230: "Subgroup2DBlockTransposeINTEL", 6236: "SubgroupMatrixMultiplyAccumulateINTEL"}
# the capability each op needs, and its extension
_NEEDS = {6231: 6228, 6232: 6229, 6233: 6230, 6234: 6228, 6235: 6228, 6237: 6236}
_EXTENSION = {6228: "SPV_INTEL_2d_block_io", 6229: "SPV_INTEL_2d_block_io", 6230: "SPV_INTEL_2d_block_io",
              6236: "SPV_INTEL_subgroup_matrix_multiply_accumulate"}
# opcodes of the core instructions read here
_OP_EXTENSION, _OP_TYPE_INT, _OP_TYPE_FLOAT, _OP_TYPE_VECTOR, _OP_TYPE_POINTER = 10, 21, 22, 23, 32
_OP_CONSTANT, _OP_CAPABILITY, _OP_UNDEF = 43, 17, 1
_STORAGE_FUNCTION, _STORAGE_CROSS_WORKGROUP = 7, 5


class Inst(NamedTuple):
    opcode: int
    words: Tuple[int, ...]     # operands after the first word
    offset: int                # word offset in the module


class IntelOp(NamedTuple):
    name: str
    operands: Tuple[int, ...]  # ids (and MMA's trailing literal)


def _words(spirv: bytes) -> List[int]:
    if len(spirv) % 4 or len(spirv) < 20:
        raise ValueError("not a SPIR-V module (size)")
    w = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if w[0] != MAGIC:
        raise ValueError("not a SPIR-V module (magic number)")
    return w


def instructions(spirv: bytes) -> List[Inst]:
    w = _words(spirv)
    out, i = [], 5
    while i < len(w):
        n, op = w[i] >> 16, w[i] & 0xFFFF
        if n == 0 or i + n > len(w):
            raise ValueError(f"malformed instruction at word {i}")
        out.append(Inst(op, tuple(w[i + 1:i + n]), i))
        i += n
    return out


def words_string(words) -> str:
    """A literal string operand (UTF-8, NUL-terminated, padded to whole words)."""
    b = b"".join(struct.pack("<I", x) for x in words)
    return b.split(b"\0", 1)[0].decode()


def string_words(s: str) -> List[int]:
    """The words of a literal string operand (inverse of ``words_string``)."""
    data = s.encode("utf-8") + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def ops(spirv: bytes) -> List[IntelOp]:
    """The module's Intel 2D block / MMA instructions, in order (operands as ids; an MMA's result
    type and id come first)."""
    return [IntelOp(OP_NAMES[i.opcode], i.words) for i in instructions(spirv) if i.opcode in OP_NAMES]


def shapes(spirv: bytes) -> List[tuple]:
    """Each Intel op with its constant operands: ``(name, element_bytes, block_width, block_height,
    block_count)`` for the 2D block ops, ``(name, K, M, operands_flags)`` for the MMA."""
    insts = instructions(spirv)
    consts = {i.words[1]: i.words[2] for i in insts if i.opcode == _OP_CONSTANT and len(i.words) == 3}
    vectors = {i.words[0]: i.words[2] for i in insts if i.opcode == _OP_TYPE_VECTOR}
    out = []
    for i in insts:
        if i.opcode == 6237:
            out.append((OP_NAMES[i.opcode], consts.get(i.words[2]), vectors.get(i.words[0], 1),
                        i.words[6] if len(i.words) > 6 else 0))
        elif i.opcode in OP_NAMES:
            out.append((OP_NAMES[i.opcode], *(consts.get(v) for v in i.words[:4])))
    return out


def capabilities(spirv: bytes) -> List[str]:
    return [CAPABILITIES.get(i.words[0], str(i.words[0])) for i in instructions(spirv) if i.opcode == _OP_CAPABILITY]


def extensions(spirv: bytes) -> List[str]:
    return [words_string(i.words) for i in instructions(spirv) if i.opcode == _OP_EXTENSION]


def check_ops(spirv: bytes) -> List[str]:
    """Problems of the Intel ops against their specs (empty: none found)."""
    insts = instructions(spirv)
    defs: Dict[int, Inst] = {}
    for i in insts:
        rid = _result_id(i)
        if rid is not None:
            defs[rid] = i
    caps = {i.words[0] for i in insts if i.opcode == _OP_CAPABILITY}
    exts = {words_string(i.words) for i in insts if i.opcode == _OP_EXTENSION}
    problems = []

    def type_of(vid):
        d = defs.get(vid)
        return defs.get(d.words[0]) if d is not None and d.opcode not in _TYPE_OPS else None

    def const32(vid, what, where):
        d = defs.get(vid)
        t = type_of(vid)
        if d is None or d.opcode != _OP_CONSTANT or t is None or t.opcode != _OP_TYPE_INT or t.words[1] != 32:
            problems.append(f"{where}: {what} must be a 32-bit integer constant")
            return None
        return d.words[2]

    def storage(vid):
        t = type_of(vid)
        return t.words[1] if t is not None and t.opcode == _OP_TYPE_POINTER else None

    for i in insts:
        if i.opcode not in OP_NAMES:
            continue
        name = OP_NAMES[i.opcode]
        where = f"{name} at word {i.offset}"
        need = _NEEDS[i.opcode]
        if need not in caps:
            problems.append(f"{where}: capability {CAPABILITIES[need]} is not declared")
        if _EXTENSION[need] not in exts:
            problems.append(f"{where}: extension {_EXTENSION[need]} is not declared")
        if i.opcode == 6237:
            if len(i.words) not in (6, 7):
                problems.append(f"{where}: {len(i.words) + 1} words, the spec says 7 or 8")
                continue
            rt = defs.get(i.words[0])
            m = rt.words[2] if rt is not None and rt.opcode == _OP_TYPE_VECTOR else 1
            if not 1 <= m <= 8:
                problems.append(f"{where}: M (result components) is {m}, not 1..8")
            k = const32(i.words[2], "K Dim", where)
            if k is not None and k not in (8, 16, 32, 64):
                problems.append(f"{where}: K Dim {k} is not 8, 16, 32 or 64")
            continue
        want = 10 if i.opcode == 6234 else 11
        if len(i.words) + 1 != want:
            problems.append(f"{where}: {len(i.words) + 1} words, the spec says {want}")
            continue
        es, bw, bh, bc = (const32(v, n, where) for v, n in zip(i.words[:4], ("Element Size", "Block Width",
                                                                               "Block Height", "Block Count")))
        if es is not None and es not in (1, 2, 4, 8):
            problems.append(f"{where}: Element Size {es} is not 1, 2, 4 or 8 bytes")
        if bh is not None and not 1 <= bh <= 32 or bc is not None and bc not in (1, 2, 4):
            problems.append(f"{where}: block height {bh} / count {bc} out of range")
        if es is not None and bw is not None and bc is not None and es * bw * bc > 64:
            problems.append(f"{where}: a block row of {es * bw * bc} bytes exceeds 64")
        if i.opcode == 6235:
            payload, base, rest = i.words[4], i.words[5], i.words[6:]
        else:
            base, rest, payload = i.words[4], i.words[5:9], (i.words[9] if i.opcode != 6234 else None)
        if storage(base) != _STORAGE_CROSS_WORKGROUP:
            problems.append(f"{where}: the base pointer is not a CrossWorkgroup pointer")
        if payload is not None and storage(payload) != _STORAGE_FUNCTION:
            problems.append(f"{where}: the payload pointer is not a Function pointer")
        ct = type_of(rest[3])
        if ct is None or ct.opcode != _OP_TYPE_VECTOR or ct.words[2] != 2:
            problems.append(f"{where}: Coordinate is not a two-component vector")
    return problems


_TYPE_OPS = set(range(19, 40))  # OpTypeVoid .. OpTypeForwardPointer and friends


def _result_id(i: Inst):
    """The result id an instruction defines (types: their first word; values: result type, then
    id), or None."""
    if i.opcode in _TYPE_OPS:
        return i.words[0] if i.words else None
    if (i.opcode >= 41 or i.opcode == _OP_UNDEF) and i.opcode not in _NO_RESULT and len(i.words) > 1:
        return i.words[1]
    return None


# instructions at or past OpConstantTrue (41) that define no (type, id) pair
_NO_RESULT = {56, 62, 63, 64, 71, 72, 73, 74, 75, 224, 225, 228, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255,
              256, 257, 330, 331, 332, 6231, 6232, 6233, 6234, 6235}


# SPV_INTEL_inline_assembly, which Debian's spirv-val 2023.1 misreads (it wants a result type on
# OpAsmTargetINTEL, which neither LLVM nor the extension's spec gives it)
_ASM_TARGET, _ASM, _ASM_CALL, _ASM_CAPABILITY, _ASM_SIDE_EFFECTS = 5609, 5610, 5611, 5606, 5608
_OP_DECORATE, _OP_TYPE_VOID, _OP_NAME = 71, 19, 5


def without_intel_ops(spirv: bytes) -> bytes:
    """The module with the Intel ops (2D block IO, MMA, inline assembly), their capabilities,
    extensions and decorations removed (a result id becomes ``OpUndef`` of its result type), for
    an older ``spirv-val``."""
    w = _words(spirv)
    insts = instructions(spirv)
    void = {i.words[0] for i in insts if i.opcode == _OP_TYPE_VOID}
    gone = {i.words[1] for i in insts if i.opcode == _ASM_CALL and i.words[0] in void}
    out = w[:5]
    for i in insts:
        if i.opcode in OP_NAMES or i.opcode in (_ASM_TARGET, _ASM, _ASM_CALL):
            if i.opcode in (6237, _ASM_CALL) and i.words[0] not in void:
                out += [(3 << 16) | _OP_UNDEF, i.words[0], i.words[1]]
            continue
        if i.opcode in (_OP_NAME, _OP_DECORATE) and i.words[0] in gone:
            continue
        if i.opcode == _OP_CAPABILITY and (i.words[0] in CAPABILITIES or i.words[0] == _ASM_CAPABILITY):
            continue
        if i.opcode == _OP_EXTENSION and \
                words_string(i.words) in set(_EXTENSION.values()) | {"SPV_INTEL_inline_assembly"}:
            continue
        if i.opcode == _OP_DECORATE and i.words[1] == _ASM_SIDE_EFFECTS:
            continue
        out += w[i.offset:i.offset + len(i.words) + 1]
    return struct.pack(f"<{len(out)}I", *out)


def spirv_val(spirv: bytes) -> str:
    """``spirv-val``'s complaint about a module ('' when it accepts it)."""
    from .toolchain import INSTALL_COMMAND, spirv_tool
    tool = spirv_tool("spirv-val")
    if tool is None:
        raise FileNotFoundError(f"spirv-val is not installed ({INSTALL_COMMAND})")
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        r = subprocess.run(tool + [f.name], capture_output=True, text=True)
    return "" if r.returncode == 0 else (r.stdout + r.stderr).strip()


def validate(spirv: bytes) -> List[str]:
    """Every problem found: the Intel ops against their specs, the rest of the module by
    ``spirv-val`` (the whole module when this spirv-val knows the ops, else the module without them)."""
    problems = check_ops(spirv)
    whole = spirv_val(spirv)
    if whole and "6228" not in whole and "6236" not in whole and "Invalid capability" not in whole and \
            "AsmTargetINTEL" not in whole:
        problems.append(f"spirv-val: {whole}")
    elif whole:
        rest = spirv_val(without_intel_ops(spirv))
        if rest:
            problems.append(f"spirv-val (module without the Intel ops): {rest}")
    return problems
