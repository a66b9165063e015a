"""Declared op attributes (xekern/ir/attrs.py): the verifier takes only the keys an op declares, with
values of the declared type, and, given the stages that ran, only those a stage that ran adds."""
import pytest

import xekern.ir as ir
from xekern.ir.core import IRError


def barrier_func(**attrs):
    f = ir.FuncOp("k", [], [], attrs={"level": "sg", "sg_size": 16, "num_subgroups": 1, "target": "cpu"})
    b = ir.Builder(f.body)
    bar = b.create(ir.BarrierOp)
    bar.attrs.update(attrs)
    b.create(ir.ReturnOp)
    return f


def test_a_declared_attribute_of_its_type_verifies():
    ir.verify_func(barrier_func(memory="local", no_fence=True))


def test_an_undeclared_attribute_is_an_error_naming_the_declared_ones():
    with pytest.raises(IRError, match=r"attribute 'fence' is not declared by gpu.barrier \(it declares: "
                                      r"exchange, flavour, memory, no_fence"):
        ir.verify_func(barrier_func(fence=False))


def test_a_value_of_another_type_is_an_error():
    with pytest.raises(IRError, match=r"attribute 'no_fence' = 'yes' is a str, not one of: bool"):
        ir.verify_func(barrier_func(no_fence="yes"))
    with pytest.raises(IRError, match=r"attribute 'dim' = True is a bool, not one of: int"):
        f = ir.FuncOp("k", [], [], attrs={"level": "wg"})
        b = ir.Builder(f.body)
        b(ir.BlockIdOp, True)
        b.create(ir.ReturnOp)
        ir.verify_func(f)


def test_an_attribute_appears_only_once_a_stage_that_adds_it_has_run():
    f = barrier_func(memory="local", no_fence=True)
    with pytest.raises(IRError, match=r"attribute 'no_fence' is added by slm-barriers, which has not run"):
        ir.verify_func(f, ["frontend", "layout", "sg"])
    ir.verify_func(f, ["frontend", "layout", "sg", "slm-barriers"])
    with pytest.raises(IRError, match=r"attribute 'memory' is added by sg or slm-barriers"):
        ir.verify_func(barrier_func(memory="local"), ["frontend"])


def test_every_op_declares_its_constructor_attributes():
    """What an op's own constructor puts in ``attrs`` is declared (the frontend builds ops this way)."""
    from xekern.ir import types as T
    i32 = T.int32
    c = ir.ConstantOp(1, i32)
    ops = [c, ir.BinaryOp("addi", c.result, c.result), ir.CmpOp("slt", c.result, c.result),
           ir.CastOp("sitofp", c.result, T.float32), ir.UnaryOp("exp", ir.ConstantOp(1.0, T.float32).result),
           ir.BlockIdOp(0), ir.GridDimOp(1), ir.FenceOp("gpu", "global"), ir.CompileHintOp(),
           ir.AllocNBarrierOp(2)]
    for op in ops:
        for k in op.attrs:
            assert k in op.declared(), f"{op.op_name} sets '{k}' without declaring it"
