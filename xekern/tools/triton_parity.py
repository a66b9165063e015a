"""``xekern.language`` against ``triton.language``: every public name of Triton's (the ``__all__`` of
``triton/language/__init__.py``, Triton 3.5), whether ``xl`` has it, and why not or how it differs.

Whether a name is there is read from ``xl`` itself; the reasons are the notes below. The table in
docs/coming_from_triton.md is this module's output (between its markers), and
tests/test_parity.py checks that the page is current, that every missing name has a reason, that
no note calls a name missing that ``xl`` has, and that the docs' "not there" lists agree::

    python -m xekern.tools.triton_parity            # print the table
    python -m xekern.tools.triton_parity --write    # rewrite it in docs/coming_from_triton.md
"""
from __future__ import annotations

import os
import sys
from typing import List, Tuple

TRITON_NAMES = (
    "PropagateNan", "TRITON_MAX_TENSOR_NUMEL", "load_tensor_descriptor", "store_tensor_descriptor",
    "make_tensor_descriptor", "tensor_descriptor", "abs", "add", "advance", "arange", "argmax", "argmin",
    "associative_scan", "assume", "async_task", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
    "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bfloat16", "bitonic_merge", "block_type",
    "broadcast", "broadcast_to", "cat", "cast", "cdiv", "ceil", "clamp", "condition", "const", "constexpr",
    "constexpr_type", "cos", "cumprod", "cumsum", "debug_barrier", "device_assert", "device_print", "div_rn",
    "dot", "dot_scaled", "dtype", "erf", "exp", "exp2", "expand_dims", "extra", "fdiv", "flip", "float16",
    "float32", "float64", "float8e4b15", "float8e4nv", "float8e4b8", "float8e5", "float8e5b16", "floor", "fma",
    "full", "gather", "histogram", "inline_asm_elementwise", "interleave", "int1", "int16", "int32", "int64",
    "int8", "join", "load", "log", "log2", "make_block_ptr", "map_elementwise", "math", "max", "max_constancy",
    "max_contiguous", "maximum", "min", "minimum", "multiple_of", "num_programs", "pair_uniform_to_normal",
    "permute", "philox", "philox_impl", "pi32_t", "pointer_type", "program_id", "rand", "rand4x", "randint",
    "randint4x", "randn", "randn4x", "range", "ravel", "reduce", "reduce_or", "reshape", "rsqrt", "slice",
    "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "static_assert", "static_print",
    "static_range", "store", "sum", "swizzle2d", "target_info", "tensor", "topk", "trans", "tuple", "uint16",
    "uint32", "uint64", "uint8", "uint_to_uniform_float", "umulhi", "view", "void", "where", "xor_sum",
    "zeros", "zeros_like",
)

# names xl does not have, and why
MISSING = {
}

# names xl has, with a difference worth knowing
DIFFERENT = {
    "associative_scan": "Hillis-Steele, `log2 n` steps, in registers and sub-group shuffles where each subgroup holds "
                        "the axis (the layout xekern picks when nothing else decides), through SLM between subgroups",
    "reduce": "with a combine function: the last element of the SLM scan (built-in reductions stay in "
              "registers within a subgroup)",
    "reshape": "any shape with as many elements; beyond adding or removing size-1 dimensions, through SLM "
               "(a store, a load, two barriers)",
    "ravel": "as `reshape`: through SLM",
    "view": "as `reshape`",
    "make_block_ptr": "a tensor descriptor: one stride must be 1; always bounds-checked; `padding_option='nan'` "
                      "refused",
    "dot": "operands bf16, f16, tf32 (f32), int8, uint8, fp8 (multiplied as f16); `input_precision` 'tf32' or "
           "'ieee'; N at least the subgroup width",
    "float8e5": "storage type, computed in f32; conversions saturate (Triton's satfinite)",
    "inline_asm_elementwise": "Intel vISA text instead of PTX (`$0` the result, `$1`... the arguments as vISA "
                              "variables of the subgroup's lanes), on GPU targets only; one result, `pack=1`",
    "float8e4b15": "storage type computed in f32; no host array has it (NumPy and ml_dtypes lack it): its bits "
                   "come as uint8 and the kernel bitcasts them; conversions to it from any float go through f16 "
                   "as Triton's (which takes f16 and f32 only)",
    "float8e4nv": "storage type, computed in f32; conversions saturate (Triton's satfinite)",
    "float8e4b8": "storage type (e4m3fnuz), computed in f32; conversions saturate",
    "float8e5b16": "storage type (e5m2fnuz), computed in f32; conversions saturate",
    "rand": "32-bit offsets (64-bit ones are refused)",
    "randn": "32-bit offsets (64-bit ones are refused)",
    "randint": "32-bit offsets (64-bit ones are refused)",
    "load": "`eviction_policy` accepted and ignored; `volatile` honoured",
    "extra": "`xl.extra.libdevice` is `xl.math`",
    "make_tensor_descriptor": "1 to 5 dimensions; 3 to 5 without `layout=` or `array_length=`, as one 2-D "
                              "descriptor per block position along the leading dimensions; loads pad with zero",
    "target_info": "no target is CUDA or HIP; `current_target()` is xekern's target name, `is_xpu()` added",
    "pointer_type": "global memory only (`address_space` 1); a tile of pointers casts to an element no wider "
                    "(its offsets count elements), a scalar pointer to any; its `const=` is ignored (annotate the parameter "
                    "`xl.const`)",
    "sort": "a bitonic sort along any dimension, in registers and sub-group shuffles within a subgroup, through "
            "SLM between subgroups (moves of more than a subgroup's piece)",
    "bitonic_merge": "along any dimension (Triton: the last), as `sort`",
    "async_task": "`with xl.async_task(...):` runs its block in every subgroup (no warp specialization: the "
                  "same results)",
    "condition": "`while xl.condition(c, disable_licm=...)`: `disable_licm` is accepted and has no effect",
    "block_type": "a tile's IR type (`VectorType`, which `x.type` is); a layout the user gave is part of it",
    "map_elementwise": "the function is called on whole tiles, so an `if` in it must test compile-time values "
                       "(`xl.where` on data); `pack` > 1 regroups the elements through SLM",
    "slice": "on a tile only the whole axis (`:`); on a tuple, compile-time bounds",
    "dot_scaled": "no matrix engine for the mx formats on these GPUs: computed as Triton's reference computes "
                  "it (decoded, scaled, rounded to bf16 or fp16, then `xl.dot`); 2-D operands; `fast_math` ignored",
    "tuple": "a Python tuple of kernel values at compile time; tuple kernel arguments are flattened into "
             "arguments of their own at launch (nested; `None` and `xl.constexpr` leaves are constants)",
}

BEGIN = "<!-- triton-parity: generated by `python -m xekern.tools.triton_parity --write`; do not edit -->"
END = "<!-- triton-parity: end -->"
DOC = os.path.join("docs", "coming_from_triton.md")


def rows() -> List[Tuple[str, str, str]]:
    """(name, status, note) for every Triton name: status ``same``, ``different`` or ``missing``."""
    import xekern.language as xl
    out = []
    for name in TRITON_NAMES:
        if not hasattr(xl, name):
            out.append((name, "missing", MISSING.get(name, "")))
        elif name in DIFFERENT:
            out.append((name, "different", DIFFERENT[name]))
        else:
            out.append((name, "same", ""))
    return out


def table() -> str:
    """The markdown section: a summary line and one row per name."""
    rs = rows()
    n = {s: sum(1 for _, st, _ in rs if st == s) for s in ("same", "different", "missing")}
    lines = [BEGIN, "",
             f"Of Triton's {len(rs)} public `triton.language` names, `xekern.language` has {n['same']} as Triton "
             f"has them, {n['different']} with a difference, and lacks {n['missing']}.", "",
             "| `tl.` name | in `xl` | note |", "| --- | --- | --- |"]
    for name, status, note in rs:
        mark = {"same": "yes", "different": "yes, differs", "missing": "**no**"}[status]
        lines.append(f"| `{name}` | {mark} | {note} |")
    lines += ["", END]
    return "\n".join(lines)


def doc_section(text: str) -> str:
    """The generated section of a page's text (markers included), or '' when it has none."""
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def write(root: str) -> None:
    path = os.path.join(root, DOC)
    text = open(path).read()
    old = doc_section(text)
    if not old:
        raise SystemExit(f"{path}: no section between the markers\n{BEGIN}\n{END}")
    with open(path, "w") as f:
        f.write(text.replace(old, table()))


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write(os.getcwd())
    else:
        print(table())
