"""The IR parser (xekern/ir/parser.py) against the printer: what the printer writes reads back as the
same ops, types and attribute values, and text that does not read is an error at its line and column.
(conftest.py reads back every stage of every kernel the suite compiles, test_ir_roundtrip.py the
examples'; this file covers what kernels rarely hold.)"""
import math
import re

import pytest

import xekern as xk
import xekern.language as xl
from xekern import ir
from xekern.ir import types as T
from xekern.ir.parser import op_classes
from xekern.ir.printer import attr_text

F32, I32, I1 = xl.float32, xl.int32, xl.int1
L16 = ir.Layout(sg_layout=[1], sg_data=[16], lane_layout=[16], lane_data=[1], order=[0])


def hand_built() -> ir.FuncOp:
    """A function with what kernels rarely hold: odd strings and floats, dicts, none, types and layouts as
    attribute values, multi-result ops, and every structured op with results and attributes."""
    f = ir.FuncOp("k", [xk.pointer(F32), I32], ["x_ptr", "n"],
                  attrs={"level": "wg", "num_subgroups": 1, "sg_size": 16, "target": "cpu",
                         # (a dict-valued attribute, holding what attribute values can be)
                         "multiple_of": {"n": 16, "a key": (1, None, -2.5),
                                         "types": (F32, T.VectorType((2, 4), xl.bfloat16, L16))}})
    b = ir.Builder(f.body)
    n = f.args[1]
    one = b(ir.ConstantOp, 1, I32)
    consts = [b(ir.ConstantOp, v, F32) for v in (0.1, 1e-05, -0.0, math.inf, -math.inf, math.nan, 3e+300)]
    b(ir.ConstantOp, True, I1)
    tile_t = T.VectorType((16,), F32, L16)
    dense = b(ir.ConstantOp, tuple(float(i) / 3 for i in range(16)), tile_t)
    b.create(ir.PrintOp, 'say "hi"\\ \n\tü // not a comment', [consts[0]], hex=False)
    s = b(ir.BinaryOp, "addi", n, one)
    c = b(ir.CmpOp, "slt", s, n)
    x = b(ir.CastOp, "sitofp", s, F32)
    y = b(ir.UnaryOp, "negf", b(ir.UnaryOp, "exp", x))
    b(ir.SelectOp, c, x, y)
    b(ir.FmaOp, x, y, consts[1])
    prod = b(ir.ReduceOp, "mul", dense, 0, F32)   # (the old printer dropped <mul>: 'mul' is in 'multi_reduction')
    conv = b.create(ir.ConvertLayoutOp, dense, tile_t)
    conv.attrs.update(slm_block=(8, 16), layout=ir.SliceLayout(ir.Layout(
        sg_layout=[1, 1], sg_data=[16, 1], lane_layout=[16, 1], lane_data=[1, 1], order=[0, 1]), [1]))
    b.create(ir.BarrierOp).attrs.update(no_fence=False, flavour=None)
    pair = b.create(ir.ValueBarrierOp, [prod, x])
    loop = b.create(ir.ForOp, one, n, one, [pair.results[1], conv.result])
    loop.attrs["num_stages"] = 2
    with b.at(loop.body):
        it, acc = loop.iter_args
        cond = b(ir.CmpOp, "olt", it, pair.results[0])
        branch = b.create(ir.IfOp, cond, [F32])
        with b.at(branch.then_block):
            b.create(ir.YieldOp, [b(ir.BinaryOp, "mulf", it, it)])
        with b.at(branch.else_block):
            b.create(ir.YieldOp, [it])
        b.create(ir.YieldOp, [branch.result, b(ir.BinaryOp, "addf", acc, dense)])
    w = b.create(ir.WhileOp, [n])
    with b.at(w.before):
        b.create(ir.ConditionOp, b(ir.CmpOp, "sgt", w.before.args[0], one), [w.before.args[0]])
    with b.at(w.after):
        b.create(ir.YieldOp, [b(ir.BinaryOp, "subi", w.after.args[0], one)])
    b.create(ir.ReturnOp)
    ir.verify_func(f)
    return f


def same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def test_what_the_printer_writes_reads_back_as_the_same_ir():
    f = hand_built()
    text = ir.print_func(f)
    g = ir.parse_func(text, "hand.ir")
    ir.verify_func(g)
    assert ir.print_func(g) == text
    assert [a.hint for a in g.args] == ["x_ptr", "n"] and [a.type for a in g.args] == [a.type for a in f.args]
    assert same_value(g.attrs, f.attrs)
    old, new = list(f.walk()), list(g.walk())
    assert [type(o) for o in old] == [type(o) for o in new]
    for o, p in zip(old, new):
        assert [r.type for r in o.results] == [r.type for r in p.results], o
        assert [len(r.args) for r in o.regions] == [len(r.args) for r in p.regions], o
        assert same_value({k: v for k, v in o.attrs.items() if v is not None}, p.attrs), (o, p.attrs)
        assert p.loc.file == "hand.ir" and text.splitlines()[p.loc.line - 1].lstrip().startswith(
            ("func.func", "%", o.op_name.split(".")[0])), p.loc
    # operands are wired as in the original: the same positions in walk order
    index = {}
    for ops in (old, new):
        vals = [v for o in ops for v in list(o.results) + [a for r in o.regions for a in r.args]]
        index[id(ops)] = {v: i for i, v in enumerate(list(ops[0].regions[0].args) + vals)}
    wiring = lambda ops: [[index[id(ops)][v] for v in o.operands] for o in ops]  # noqa: E731
    assert wiring(old) == wiring(new)


def test_the_text_is_complete_and_unambiguous():
    text = ir.print_func(hand_built())
    assert 'multiple_of = {n = 16, "a key" = [1, none, -2.5], types = [f32, vector<2x4xbf16, ' \
        '#xegpu.layout<sg_layout = [1], sg_data = [16], lane_layout = [16], lane_data = [1], order = [0]>>]}' in text
    for v in ("0.1", "1e-05", "-0.0", "inf", "-inf", "nan", "3e+300"):
        assert f"arith.constant {v} : f32" in text
    assert ('debug.print %1 {count = 1, hex = false, prefix = "say \\"hi\\"\\\\ \\n\\tü // not a comment"} '
            ': f32') in text
    assert "vector.multi_reduction <mul> " in text and "arith.cmpi <slt> " in text and "arith.cmpf <olt> " in text
    assert "gpu.barrier {no_fence = false}" in text and "flavour" not in text   # False is a value; None is none
    assert "slm_block = [8, 16]" in text and "#xegpu.slice<#xegpu.layout<" in text
    assert "} {num_stages = 2}" in text                       # a structured op's attributes follow its regions
    assert re.search(r"%(\d+):2 = iree_gpu.value_barrier .*\n.* iter_args\(%\d+ = %\1#1, ", text)


def test_attribute_values_read_back_as_python_values():
    sc = lambda t: ir.parse_func(  # noqa: E731
        'func.func @f() attributes {v = ' + t + '} {\n  func.return\n}\n').attrs["v"]
    for v in (0, -7, 2.5, 1e-05, math.inf, -math.inf, True, False, "a\"b\\c\nd", (1, (2, 3), ()), {"k": None},
              {"not an identifier": 1, "true": 2}, F32, T.PointerType(xl.int8, "slm"), T.NBarrierType(),
              T.TensorDescType((8, 16), F32, array_length=2, boundary_check=False),
              T.TensorDescType((16,), F32, scattered=True, chunk_size=4, layout=L16),
              T.MemDescType((32, 64), xl.int8, block=(8, 32)), T.PrivateArrayType((4, 4), I32),
              ir.SliceLayout(ir.SliceLayout(ir.Layout(lane_layout=[1, 4, 4], lane_data=[1, 1, 1]), [0]), [0])):
        assert same_value(sc(attr_text(v)), v), v
    assert math.isnan(sc("nan"))


def test_every_op_class_of_the_ir_has_a_printed_name():
    names = op_classes()
    classes = {cls for cls, _ in names.values()}
    for name in ("arith.addf", "math.powf", "arith.negf", "math.exp", "arith.extsi", "arith.cmpf", "arith.cmpi",
                 "scf.for", "func.func", "xegpu.load_nd", "iree_gpu.shuffle_tensor", "memref.load", "debug.assert"):
        assert name in names, name
    assert names["arith.addf"] == (ir.BinaryOp, {"kind": "addf"}) and names["arith.cmpf"] == (ir.CmpOp, {})
    everything = {v for v in vars(ir).values() if isinstance(v, type) and issubclass(v, ir.Op) and v is not ir.Op}
    assert everything <= classes, everything - classes


BASE = """\
func.func @k(%x: !xegpu.ptr<f32>, %n: i32) attributes {level = "wg", num_subgroups = 1, sg_size = 16} {
  %0 = arith.constant 1 : i32
  %1 = arith.addi %n, %0 : i32
  %2 = vector.step : vector<16xi32, #xegpu.layout<sg_layout = [1], sg_data = [16], lane_layout = [16], lane_data = [1]>>
  func.return
}
"""


def test_the_base_of_the_error_cases_reads():
    ir.verify_func(ir.parse_func(BASE))


@pytest.mark.parametrize("old,new,message", [
    ("arith.addi %n", "arith.frobnicate %n", "k.ir:3:8: unknown op 'arith.frobnicate'"),
    ("%n, %0 :", "%n, %7 :", "k.ir:3:23: use of undefined value %7"),
    ("%n, %0 :", "%n %0 :", "k.ir:3:22: expected ':' and the types of 'arith.addi', got '%0'"),
    ("%0 : i32\n  %2", "%0 : f32\n  %2", "k.ir:3:28: operand 0 has type i32, but the op's types say f32"),
    ("sg_data = [16]", "sg_data = [16}", "k.ir:4:81: expected ',' or ']' in 'sg_data', got '},'"),
    ("lane_data = [1]", "lane_dat = [1]", "k.ir:4:104: unknown field 'lane_dat' of #xegpu.layout (fields: "
                                            "sg_layout, sg_data, inst_data, lane_layout, lane_data, order)"),
    ("vector<16xi32", "vector<16xi33", "k.ir:4:32: unknown element type 'i33'"),
    ("%1 = arith.addi", "%0 = arith.addi", "k.ir:3:3: %0 is defined twice"),
    ("arith.addi %n, %0 : i32", "arith.cmpi <olt> %n, %0 : (i32, i32) -> i1",
     "k.ir:3:8: 'arith.cmpi' with pred = 'olt' is 'arith.cmpf'"),
    ("arith.addi %n, %0 : i32", "arith.addi %n, %0 : (i32, i32, i32) -> i32",
     "k.ir:3:28: 'arith.addi' has 2 operand(s) and 1 result(s), but its types give 3 and 1"),
    ('level = "wg"', 'level = "w\\g"', "k.ir:1:64: bad escape in string \"w\\g\""),
    ("  func.return\n}\n", "  func.return\n", "k.ir:6:1: expected an op or '}' closing the block, got end of input"),
    ("}\n", "}\nfunc.func @again() {\n}\n", "k.ir:7:1: expected the end of the text after the function, "
                                              "got 'func.func'"),
])
def test_errors_name_the_place_and_what_was_expected(old, new, message):
    assert old in BASE
    with pytest.raises(ir.ParseError) as e:
        ir.parse_func(BASE.replace(old, new, 1), "k.ir")
    assert str(e.value).startswith(message), str(e.value)
    assert (e.value.file, e.value.line) == ("k.ir", int(message.split(":")[1]))
