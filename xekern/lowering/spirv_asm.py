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

from typing import Dict, List, Optional, Tuple

from ..tools.spirv import _string, _words, assemble, instructions, string_words

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
    when it has none)."""
    if PREFIX.encode() not in spirv:
        return spirv
    insts = [(i.opcode, list(i.words)) for i in instructions(spirv)]
    placeholders: Dict[int, str] = {}  # function id -> name
    for op, w in insts:
        if op == _OP_DECORATE and w[1] == _DEC_LINKAGE and _string(w[2:-1]).startswith(PREFIX):
            placeholders[w[0]] = _string(w[2:-1])
    if not placeholders:
        return spirv
    header = _words(spirv)[:5]
    bound = header[3]
    asm_ids = {f: bound + i for i, f in enumerate(placeholders)}
    bound += len(asm_ids)
    target: Optional[int] = next((w[0] for op, w in insts if op == _OP_ASM_TARGET), None)
    new_target = target is None
    if new_target:
        target, bound = bound, bound + 1

    fn_types: Dict[int, Tuple[int, int]] = {}  # function id -> (result type, function type)
    gone = set(placeholders)  # ids of the declarations and their parameters, whose names go too
    current = None
    for op, w in insts:
        if op == _OP_FUNCTION:
            current = w[1]
        elif op == _OP_FUNCTION_PARAMETER and current in placeholders:
            gone.add(w[1])
    kept: List[Tuple[int, List[int]]] = []
    skipping = False
    for op, w in insts:
        if skipping:  # a placeholder's declaration: OpFunction, its parameters, OpFunctionEnd
            skipping = op != _OP_FUNCTION_END
            continue
        if op == _OP_FUNCTION and w[1] in placeholders:
            fn_types[w[1]] = (w[0], w[3])
            skipping = True
        elif op in (_OP_DECORATE, _OP_NAME) and w[0] in gone:
            pass
        elif op == _OP_FUNCTION_CALL and w[2] in placeholders:
            kept.append((_OP_ASM_CALL, [w[0], w[1], asm_ids[w[2]]] + w[3:]))
        else:
            kept.append((op, w))

    caps = {w[0] for op, w in kept if op == _OP_CAPABILITY}
    exts = {_string(w) for op, w in kept if op == _OP_EXTENSION}
    first_function = next(i for i, (op, _) in enumerate(kept) if op == _OP_FUNCTION)
    last_capability = max(i for i, (op, _) in enumerate(kept) if op == _OP_CAPABILITY)
    last_annotation = max(i for i, (op, _) in enumerate(kept[:first_function]) if op in _BEFORE_TYPES)
    out: List[Tuple[int, List[int]]] = []
    for i, inst in enumerate(kept):
        if i == first_function:  # the end of the types, constants and global variables
            if new_target:
                out.append((_OP_ASM_TARGET, [target] + string_words(_DIALECT)))
            for f, a in asm_ids.items():
                text, constraints = parse_name(placeholders[f])
                rtype, ftype = fn_types[f]
                out.append((_OP_ASM, [rtype, a, ftype, target] + string_words(text) + string_words(constraints)))
        out.append(inst)
        if i == last_capability:
            if _CAP_ASM not in caps:
                out.append((_OP_CAPABILITY, [_CAP_ASM]))
            if _EXTENSION not in exts:
                out.append((_OP_EXTENSION, string_words(_EXTENSION)))
        if i == last_annotation:
            out += [(_OP_DECORATE, [a, _DEC_SIDE_EFFECTS]) for a in asm_ids.values()]
    header[3] = bound
    return assemble(header, out)
