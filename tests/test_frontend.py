"""Frontend: Python source -> printed workgroup IR, construct by construct, and the errors a
kernel author meets (file, line, caret and the rule broken)."""
import re

import pytest

import xekern as xk
import xekern.language as xl
from irchecks import check

P, F32, I32 = xk.pointer, xl.float32, xl.int32
LIMIT = 4


def wg_ir(kernel, **sig) -> str:
    return kernel.compile_offline(sig, target="cpu").asm["xegpu"]


@xk.jit
def k_load_store(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=1.5)
    xl.store(o_ptr + offs, x * 2, mask=offs < n)


def test_pointer_tiles_become_scattered_ops():
    check(wg_ir(k_load_store, x_ptr=P(F32), o_ptr=P(F32), n=I32, BLOCK=64),
          r"gpu.block_id \{dim = 0\} : i32", r"arith.constant 64 : i32", r"arith.muli", r"vector.step : vector<64xi32>",
          r"arith.cmpi <slt>", r"arith.constant 1.5 : f32",
          r"xegpu.create_tdesc %x_ptr, .* -> !xegpu.tensor_desc<64xf32, #xegpu.scatter_tdesc_attr<chunk_size = 1>>",
          r"xegpu.load_gather", r"arith.mulf", r"xegpu.create_tdesc %o_ptr", r"xegpu.store_scatter", r"func.return")


@xk.jit
def k_loop(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    acc = xl.zeros((BLOCK,), xl.float32)
    total = 0.0
    for i in range(0, n, BLOCK):
        v = xl.load(x_ptr + i + xl.arange(0, BLOCK))
        acc += v
        total += xl.sum(v, axis=0)
    xl.store(o_ptr + xl.arange(0, BLOCK), acc + total)


def test_for_loop_carries_reassigned_names():
    check(wg_ir(k_loop, x_ptr=P(F32), o_ptr=P(F32), n=I32, BLOCK=32),
          r"arith.constant 0.0 : vector<32xf32>",
          r"%\d+:2 = scf.for %\d+ = %\d+ to %n step %\d+ iter_args\(%\d+ = %\d+, %\d+ = %\d+\) : i32 -> "
          r"\(vector<32xf32>, f32\)",
          r"xegpu.addptr", r"vector.multi_reduction <add> .* \{axis = 0\}", r"scf.yield .* : vector<32xf32>, f32")


@xk.jit
def k_if_while(x_ptr, o_ptr):
    v = xl.load(x_ptr)
    if v > 0:
        w = v * 2
    else:
        w = -v
    k = 0
    while k < LIMIT:
        k += 1
    xl.store(o_ptr, w + k)


def test_if_and_while_on_scalars():
    check(wg_ir(k_if_while, x_ptr=P(F32), o_ptr=P(F32)),
          r"xegpu.load_gather", r"vector.shape_cast .* -> f32", r"arith.cmpf <ogt>",
          r"scf.if %\d+ -> \(f32\) \{", r"arith.mulf", r"scf.yield", r"\} else \{", r"arith.negf", r"scf.yield",
          r"scf.while \(%\d+ = %\d+\) -> \(i32\)", r"arith.constant 4 : i32", r"scf.condition", r"do \{",
          r"arith.addi", r"scf.yield", r"arith.sitofp")


@xk.jit
def k_static(x_ptr, o_ptr, BLOCK: xl.constexpr, UNROLL: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    acc = xl.load(x_ptr + offs)
    for i in xl.static_range(UNROLL):
        acc = acc * (i + 2)
    if BLOCK > 16:
        acc = acc + 1.0
    xl.store(o_ptr + offs, acc)


def test_static_range_unrolls_and_constexpr_if_folds():
    big = wg_ir(k_static, x_ptr=P(F32), o_ptr=P(F32), BLOCK=32, UNROLL=3)
    check(big, "!scf.for", r"arith.constant 2.0", r"arith.mulf", r"arith.constant 3.0", r"arith.mulf",
          r"arith.constant 4.0", r"arith.mulf", r"arith.addf", "!scf.if")
    small = wg_ir(k_static, x_ptr=P(F32), o_ptr=P(F32), BLOCK=16, UNROLL=1)
    assert "arith.addf" not in small and small.count("arith.mulf") == 1


@xk.jit
def helper(a, b):
    return xl.maximum(a, b) - LIMIT


@xk.jit
def k_shapes(x_ptr, y_ptr, o_ptr, BM: xl.constexpr, BN: xl.constexpr):
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    x = xl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    y = xl.load(y_ptr + rn).to(xl.float16)
    z = helper(x, y[None, :].to(xl.float32))
    m = xl.where((z > 0) & ~(z > 5), z, 0.0)
    xl.store(o_ptr + rm, xl.argmax(m, axis=1).to(xl.float32))


def test_broadcasting_casts_calls_and_argmax():
    check(wg_ir(k_shapes, x_ptr=P(F32), y_ptr=P(F32), o_ptr=P(F32), BM=16, BN=32),
          r"vector.shape_cast .* -> vector<16x1xi32>", r"vector.shape_cast .* -> vector<1x32xi32>",
          r"vector.broadcast .* -> vector<16x32xi32>", r"xegpu.load_gather .* -> vector<16x32xf32>",
          r"arith.truncf .* -> vector<32xf16>", r"arith.extf .* -> vector<1x32xf32>", r"arith.maxnumf",
          r"arith.constant 4.0", r"arith.subf", r"arith.xori", r"arith.andi", r"arith.select",
          r"vector.multi_reduction <maxnumf> .* \{axis = 1\}", r"arith.cmpf <oeq>", r"arith.select",
          r"vector.multi_reduction <minsi> .* \{axis = 1\}", r"arith.sitofp")


@xk.jit
def k_ints(a_ptr, o_ptr):
    a = xl.load(a_ptr + xl.arange(0, 16))
    xl.store(o_ptr + xl.arange(0, 16), (a // 3) + (a % 3) + (a >> 1) + a / 2)


def test_integer_operators_are_c_like():
    check(wg_ir(k_ints, a_ptr=P(xl.int32), o_ptr=P(F32)),
          r"arith.divsi", r"arith.remsi", r"arith.shrsi", r"arith.sitofp .* -> vector<16xf32>", r"arith.divf")
    check(wg_ir(k_ints, a_ptr=P(xl.uint32), o_ptr=P(F32)), r"arith.divui", r"arith.remui", r"arith.shrui")


# ---- errors -----------------------------------------------------------------------------------

@xk.jit
def e_lambda(x_ptr):
    f = lambda v: v + 1  # noqa: E731
    xl.store(x_ptr, f(1.0))


@xk.jit
def e_listcomp(x_ptr):
    vals = [i for i in range(4)]
    xl.store(x_ptr, vals[0])


@xk.jit
def e_try(x_ptr):
    try:
        xl.store(x_ptr, 1.0)
    except Exception:
        pass


@xk.jit
def e_undefined(x_ptr):
    xl.store(x_ptr, undefined_name)  # noqa: F821


@xk.jit
def e_tile_condition(x_ptr):
    v = xl.load(x_ptr + xl.arange(0, 16))
    if v > 0:
        v = v + 1
    xl.store(x_ptr + xl.arange(0, 16), v)


@xk.jit
def e_type_change(x_ptr, n):
    acc = xl.zeros((16,), xl.float32)
    for i in range(n):
        acc = acc.to(xl.float16)
    xl.store(x_ptr + xl.arange(0, 16), acc)


@xk.jit
def e_return_in_loop(x_ptr, n):
    for i in range(n):
        if i > 3:
            return
    xl.store(x_ptr, 1.0)


@xk.jit
def e_return_value(x_ptr, n):
    xl.store(x_ptr, 1.0)
    return n + 3


@xk.jit
def e_gemv_dot(x_ptr, n):
    rows = xl.arange(0, 32)
    a = xl.load(x_ptr + rows[:, None] * 64 + xl.arange(0, 64)[None, :])
    v = xl.load(x_ptr + xl.arange(0, 64)[:, None] + xl.arange(0, 1)[None, :])
    xl.store(x_ptr + rows[:, None] + xl.arange(0, 1)[None, :], xl.dot(a, v))


@xk.jit
def e_arange_runtime(x_ptr, n):
    xl.store(x_ptr + xl.arange(0, n), 1.0)


@xk.jit
def e_shapes(x_ptr):
    a = xl.zeros((16,), xl.float32)
    b = xl.zeros((32,), xl.float32)
    xl.store(x_ptr + xl.arange(0, 16), a + b)


@xk.jit
def e_python_call(x_ptr):
    xl.store(x_ptr, len_of_something(3))  # noqa: F821


def plain_python(v):
    return v


@xk.jit
def e_plain_function(x_ptr):
    xl.store(x_ptr, plain_python(1.0))


@xk.jit
def e_item_assign(x_ptr):
    v = xl.zeros((16,), xl.float32)
    v[0] = 1.0
    xl.store(x_ptr + xl.arange(0, 16), v)


@xk.jit
def e_mask_dtype(x_ptr):
    offs = xl.arange(0, 16)
    xl.store(x_ptr + offs, 1.0, mask=offs)


GLOBAL_LIST = [1, 2]


@xk.jit
def e_global_list(x_ptr):
    xl.store(x_ptr, GLOBAL_LIST[0])


@xk.jit
def e_global_stmt(x_ptr):
    global GLOBAL_LIST
    xl.store(x_ptr, 1.0)


@xk.jit
def e_min_tensor(x_ptr):
    v = xl.load(x_ptr + xl.arange(0, 16))
    xl.store(x_ptr, min(v))


@xk.jit
def e_assume_tile(x_ptr):
    offs = xl.arange(0, 16)
    xl.assume(offs < 16)
    xl.store(x_ptr + offs, 1.0)


@xk.jit
def e_not_pow2(x_ptr):
    xl.store(x_ptr + xl.arange(0, 12), 1.0)


@xk.jit
def e_bad_cast(x_ptr):
    xl.store(x_ptr, xl.load(x_ptr).to("float32"))


@xk.jit
def e_bitwise_float(x_ptr):
    xl.store(x_ptr, xl.load(x_ptr) & 1)


@xk.jit
def e_store_broadcasts_pointers(x_ptr):
    rows = xl.arange(0, 16)
    xl.store(x_ptr + rows, xl.zeros((16, 16), xl.float32))


@xk.jit
def e_atomic_broadcasts_pointers(x_ptr):
    offs = xl.arange(0, 16)
    xl.atomic_add(x_ptr + offs, 1.0, mask=(offs[:, None] < offs[None, :]))


@xk.jit
def k_python_min_max(x_ptr, o_ptr, n, LIMIT: xl.constexpr):
    offs = xl.arange(0, 16)
    x = xl.load(x_ptr + offs)
    xl.store(o_ptr + offs, max(x, 0.5, LIMIT))    # a tile and two constants: one maxnumf
    xl.store(o_ptr, min(n, LIMIT, 7, n * 2).to(xl.float32))  # scalars: constants fold to 3
    xl.store(o_ptr + 1, min(LIMIT, 9) * 1.0)      # all constexpr: Python's min


def test_python_min_max_on_runtime_values_are_minimum_and_maximum():
    text = wg_ir(k_python_min_max, x_ptr=P(F32), o_ptr=P(F32), n=I32, LIMIT=3)
    check(text, r"arith.constant 3.0 : f32", r"arith.maxnumf %\d+, %\d+ : vector<16xf32>",
          r"arith.muli %n", r"arith.constant 3 : i32", r"arith.minsi %\d+, %n", r"arith.minsi")
    assert text.count("arith.maxnumf") == 1 and text.count("arith.minsi") == 2


@xk.jit
def k_assume(x_ptr, n, stride):
    xl.assume(n > 0)
    xl.assume(stride >= 1)
    xl.assume(True)
    xl.store(x_ptr + stride, n)


@xk.jit
def k_no_assume(x_ptr, n, stride):
    xl.store(x_ptr + stride, n)


def test_assume_is_checked_and_emits_nothing():
    sig = dict(x_ptr=P(I32), n=I32, stride=I32)
    ops = lambda k: [ln.split("=")[-1].split()[0] for ln in wg_ir(k, **sig).splitlines() if " = " in ln]  # noqa
    extra = list(ops(k_assume))
    for op in ops(k_no_assume):
        extra.remove(op)
    assert sorted(extra) == ["arith.cmpi"] * 2 + ["arith.constant"] * 2  # only the (dead) conditions


ERRORS = [
    (e_lambda, "lambda", "lambdas are not supported"),
    (e_listcomp, "vals = [i for i", "list comprehensions are not supported"),
    (e_try, "try:", "try/except is not supported"),
    (e_undefined, "undefined_name", "name 'undefined_name' is not defined"),
    (e_tile_condition, "v > 0", "a condition must be a scalar, not a tile of shape [16]"),
    (e_type_change, "for i in range(n)", "loop-carried 'acc' changes type"),
    (e_return_in_loop, "return", "return inside for/while is not supported"),
    (e_return_value, "return n + 3", "a kernel cannot return a value"),
    (e_gemv_dot, "xl.dot(a, v)", "dot: N = 1 (the columns of [32, 64] x [64, 1]) is below 16, the N of one DPAS "
                                 "instruction on a 16-lane subgroup (cpu)"),
    (e_arange_runtime, "xl.arange(0, n)", "arange bounds must be compile-time integers"),
    (e_shapes, "a + b", "incompatible shapes [16] and [32]"),
    (e_python_call, "len_of_something", "name 'len_of_something' is not defined"),
    (e_plain_function, "plain_python(1.0)", "'plain_python' is not an @xk.jit function or an xl builtin"),
    (e_item_assign, "v[0] = 1.0", "item assignment is not supported"),
    (e_mask_dtype, "mask=offs", "mask must be a boolean tile"),
    (e_global_list, "GLOBAL_LIST", "global 'GLOBAL_LIST' is a list"),
    (e_global_stmt, "global GLOBAL_LIST", "global statements are not supported"),
    (e_min_tensor, "min(v)", "min() of one runtime value: use xl.min(x, axis) to reduce a tile"),
    (e_assume_tile, "xl.assume(offs < 16)", "xl.assume needs a scalar boolean condition"),
    (e_not_pow2, "xl.arange(0, 12)", "must be a positive power of 2"),
    (e_bad_cast, ".to(\"float32\")", "to() needs an xl dtype"),
    (e_bitwise_float, "& 1", "bitwise 'and' needs integer operands"),
    (e_store_broadcasts_pointers, "xl.store(x_ptr + rows", "xl.store writes each pointer once: the value of shape "
                                                           "[16, 16] must broadcast to the pointers' shape [16]"),
    (e_atomic_broadcasts_pointers, "xl.atomic_add", "xl.atomic_add writes each pointer once: the mask of shape "
                                                    "[16, 16] must broadcast"),
]


@pytest.mark.parametrize("kernel,snippet,message", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_compilation_errors_point_at_the_source(kernel, snippet, message):
    sig = {p.name: P(F32) if p.name.endswith("ptr") else I32 for p in kernel.params}
    with pytest.raises(xk.CompilationError) as info:
        kernel.compile_offline(sig, target="cpu")
    e = info.value
    text = str(e)
    assert message in text, text
    assert e.file == __file__
    assert snippet in e.source_line, (snippet, e.source_line)
    lines = text.splitlines()
    assert lines[0] == f"at {__file__}:{e.line}:{e.col} in {kernel.__name__}:"
    # the caret sits under the column the error names
    src, caret = lines[1], lines[2]
    stripped = e.source_line.lstrip()
    indent = len(e.source_line) - len(stripped)
    assert caret.index("^") - 4 == e.col - indent
    assert src.strip() == stripped.strip()


def test_error_inside_an_inlined_callee_names_the_call_chain():
    @xk.jit
    def bad_helper(x):
        return x & 1.5

    @xk.jit
    def caller(x_ptr):
        xl.store(x_ptr, bad_helper(xl.load(x_ptr)))

    with pytest.raises(xk.CompilationError) as info:
        caller.compile_offline({"x_ptr": P(xl.int32)}, target="cpu")
    text = str(info.value)
    assert "in bad_helper" in text and "called from" in text and "in caller" in text, text
