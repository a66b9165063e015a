"""Inline vISA through placeholder calls: SPIR-V's ``OpAsmCallINTEL`` without LLVM's inline-asm limits.

LLVM 22's SPIR-V backend lowers an inline-asm call through GlobalISel, which refuses any operand
wider than 128 bits ("unable to translate instruction: call"), and aborts on an asm with several
results. A 2D block read of a 16 x 16 bf16 DPAS operand returns 256 bits per lane, a 32 x 16 one
512 bits. So codegen never hands LLVM an inline asm: it calls a declared function whose name
carries the asm (``asm_name``), LLVM treats the call as an opaque side-effecting call (it is never
merged, hoisted, or dropped), and ``lower_asm_calls`` then rewrites the SPIR-V module:

* each placeholder declaration (``OpFunction`` with ``Import`` linkage) becomes an ``OpAsmINTEL``
  of the same function type, decorated ``SideEffectsINTEL``;
* each ``OpFunctionCall`` of it becomes an ``OpAsmCallINTEL`` with the same operands;
* the module gains the ``AsmINTEL`` capability, the ``SPV_INTEL_inline_assembly`` extension, and
  one ``OpAsmTargetINTEL``.

This is the form LLVM itself emits for the inline asm it does accept (same opcodes, operand order
and target string), only without the width limit; spirv-val checks the result in the tests.
"""
from __future__ import annotations

from array import array
from typing import Dict, List, Optional, Tuple

from ..tools.spirv import string_words, words_string

PREFIX = "xk.asm|"

# opcodes, capability and decorations (SPIR-V 1.x core and SPV_INTEL_inline_assembly)
_OP_CAPABILITY, _OP_EXTENSION, _OP_NAME, _OP_DECORATE = 17, 10, 5, 71
_OP_FUNCTION, _OP_FUNCTION_PARAMETER, _OP_FUNCTION_END, _OP_FUNCTION_CALL = 54, 55, 56, 57
_OP_ASM_TARGET, _OP_ASM, _OP_ASM_CALL = 5609, 5610, 5611
_CAP_ASM = 5606
_DEC_LINKAGE, _DEC_SIDE_EFFECTS = 41, 5608
# the sections before the types (capabilities .. execution modes, debug, annotations): decorations
# go after the last of them
_BEFORE_TYPES = {17, 10, 11, 14, 15, 16, 331, 3, 4, 5, 6, 7, 330, 71, 72, 73, 74, 75, 332}
_EXTENSION = "SPV_INTEL_inline_assembly"
_DIALECT = "spirv64-unknown-unknown"  # what LLVM writes in OpAsmTargetINTEL


def asm_name(index: int, text: str, constraints: str) -> str:
    """The placeholder function's name: ``xk.asm|<index>|<constraints>|<vISA text>``. ``index``
    keeps declarations of the same text with different operand types apart."""
    if "|" in constraints:
        raise ValueError(f"asm constraints may not contain '|': {constraints!r}")
    return f"{PREFIX}{index}|{constraints}|{text}"


def is_asm(value) -> bool:
    """Whether an LLVM value is the result of a placeholder call (a vISA variable of its own)."""
    callee = getattr(value, "callee", None)
    return getattr(callee, "name", "").startswith(PREFIX)


def parse_name(name: str) -> Tuple[str, str]:
    """(vISA text, constraints) from a placeholder name."""
    _, _, constraints, text = name.split("|", 3)
    return text, constraints


def lower_asm_calls(spirv: bytes) -> bytes:
    """The module with every placeholder call turned into ``OpAsmCallINTEL`` (the module itself
    when it has none). One scan of the instruction boundaries; only the instructions it changes
    are decoded (a GEMM module is ~5000 instructions, and this runs in every compile)."""
    if PREFIX.encode() not in spirv:
        return spirv
    w = array("I")
    w.frombytes(spirv)
    starts, i = [], 5
    while i < len(w):
        starts.append(i)
        n = w[i] >> 16
        if n == 0:
            raise ValueError(f"malformed SPIR-V: instruction at word {i} has length 0")
        i += n
    ends = starts[1:] + [len(w)]
    op_of = [w[s] & 0xFFFF for s in starts]

    placeholders: Dict[int, str] = {}  # function id -> name
    fn_types: Dict[int, Tuple[int, int]] = {}  # function id -> (result type, function type)
    gone = set()  # ids of the declarations and their parameters, whose names and decorations go too
    current = None
    for k, op in enumerate(op_of):
        s = starts[k]
        if op == _OP_DECORATE and w[s + 2] == _DEC_LINKAGE:
            name = words_string(w[s + 3:ends[k] - 1])
            if name.startswith(PREFIX):
                placeholders[w[s + 1]] = name
        elif op == _OP_FUNCTION:
            current = w[s + 2] if w[s + 2] in placeholders else None
            if current is not None:
                fn_types[current] = (w[s + 1], w[s + 4])
                gone.add(current)
        elif op == _OP_FUNCTION_PARAMETER and current is not None:
            gone.add(w[s + 2])
    if not placeholders:
        return spirv
    header = list(w[:5])
    bound = header[3]
    asm_ids = {f: bound + j for j, f in enumerate(placeholders)}
    bound += len(asm_ids)
    target: Optional[int] = next((w[starts[k] + 1] for k, op in enumerate(op_of) if op == _OP_ASM_TARGET), None)
    new_target = target is None
    if new_target:
        target, bound = bound, bound + 1
    header[3] = bound

    def words(op: int, operands: List[int]) -> bytes:
        return array("I", [(len(operands) + 1) << 16 | op] + operands).tobytes()

    first_function = next(k for k, op in enumerate(op_of) if op == _OP_FUNCTION)
    last_capability = max(k for k, op in enumerate(op_of) if op == _OP_CAPABILITY)
    last_annotation = max(k for k, op in enumerate(op_of[:first_function]) if op in _BEFORE_TYPES)
    caps = {w[starts[k] + 1] for k, op in enumerate(op_of[:first_function]) if op == _OP_CAPABILITY}
    exts = {words_string(w[starts[k] + 1:ends[k]]) for k, op in enumerate(op_of[:first_function])
            if op == _OP_EXTENSION}
    out = [array("I", header).tobytes()]
    skipping = False
    for k, op in enumerate(op_of):
        s, e = starts[k], ends[k]
        if k == first_function:  # the end of the types, constants and global variables
            if new_target:
                out.append(words(_OP_ASM_TARGET, [target] + string_words(_DIALECT)))
            for f, a in asm_ids.items():
                text, constraints = parse_name(placeholders[f])
                rtype, ftype = fn_types[f]
                out.append(words(_OP_ASM, [rtype, a, ftype, target] + string_words(text) + string_words(constraints)))
        if skipping:  # a placeholder's declaration: OpFunction, its parameters, OpFunctionEnd
            skipping = op != _OP_FUNCTION_END
        elif op == _OP_FUNCTION and w[s + 2] in placeholders:
            skipping = True
        elif op in (_OP_DECORATE, _OP_NAME) and w[s + 1] in gone:
            pass
        elif op == _OP_FUNCTION_CALL and w[s + 3] in placeholders:
            out.append(words(_OP_ASM_CALL, [w[s + 1], w[s + 2], asm_ids[w[s + 3]]] + list(w[s + 4:e])))
        else:
            out.append(w[s:e].tobytes())
        if k == last_capability:
            if _CAP_ASM not in caps:
                out.append(words(_OP_CAPABILITY, [_CAP_ASM]))
            if _EXTENSION not in exts:
                out.append(words(_OP_EXTENSION, string_words(_EXTENSION)))
        if k == last_annotation:
            out += [words(_OP_DECORATE, [a, _DEC_SIDE_EFFECTS]) for a in asm_ids.values()]
    return b"".join(out)
