"""Targets as data (issue 7, seed 002): the records check themselves, a device maps to its record
by name, and a new GPU is one record that the whole pipeline compiles for (offline ISA included)."""
import dataclasses
import importlib

import pytest

import xekern as xk
import xekern.language as xl
from xekern.targets import DpasShape, TargetError, match_device, register_target

tg = importlib.import_module("xekern.targets")   # the module (xk.targets is its TARGETS dict)

FIELDS = ("arch", "sub_group_sizes", "dpas", "block2d", "max_workgroup_size", "slm_bytes", "grf_modes",
          "named_barriers", "xe_cores", "private_bytes")


@pytest.mark.parametrize("name", list(xk.targets))
def test_every_record_has_every_field_and_passes_its_checks(name):
    t = xk.targets[name]
    for f in FIELDS:
        assert getattr(t, f) is not None, f
    assert list(t.problems()) == []
    if t.kind == "gpu":
        assert t.xe_cores > 0 and t.device_names and t.ocloc_device and t.iga_platform
        assert not t.has_dpas or t.dpas_shape(xl.bfloat16).n == t.sg_size


@pytest.mark.parametrize("change,rule", [
    (dict(dpas={"bf16": DpasShape(8, 8, 16)}), "DPAS N"),
    (dict(dpas={"bf16": DpasShape(9, 16, 16)}), "repeat count"),
    (dict(dpas={"bf16": DpasShape(8, 16, 32)}), "256 bits"),
    (dict(sg_size=8), "sub_group_sizes"),
    (dict(grf_modes=(192,)), "GRF"),
    (dict(named_barriers=64), "named barriers"),
    (dict(max_workgroup_size=1000), "power of 2"),
    (dict(ocloc_device=None), "ocloc_device"),
    (dict(private_bytes=0), "private memory per work item"),
    (dict(private_bytes=32 * 1024), "256 KiB of scratch per hardware thread"),
])
def test_a_record_that_breaks_a_hardware_rule_is_refused(change, rule):
    with pytest.raises(TargetError, match=rule):
        dataclasses.replace(xk.targets["pvc"], name="broken", **change)


@pytest.mark.parametrize("change,rule", [
    (dict(dpas=dict(tg._dpas8(), tf32=DpasShape(8, 8, 8))), "tf32 DPAS exists only 16 wide"),
    (dict(block2d=tg._PVC_BLOCK2D), "2D block IO"),
])
def test_an_8_wide_record_has_no_tf32_and_no_2d_block_io(change, rule):
    """The rules the 8-wide families (dg2, arl) brought: tf32 DPAS and 2D block messages came with
    Xe-HPC (for arl-h IGC 2.40 leaves the tf32 builtin unresolved and rejects SPV_INTEL_2d_block_io)."""
    with pytest.raises(TargetError, match=rule):
        dataclasses.replace(xk.targets["arl"], name="broken", **change)


def test_devices_map_to_records_by_name():
    cases = {"Intel(R) Data Center GPU Max 1550": "pvc", "Intel(R) Arc(TM) A770 Graphics": "dg2",
             "Intel(R) Arc(TM) B580 Graphics": "bmg", "Intel(R) Data Center GPU Flex 170": "dg2",
             "Intel(R) Arc(TM) B390 GPU": "ptl", "Intel(R) Arc(TM) 140V GPU (16GB)": "lnl",
             "Intel(R) Arc(TM) 140T GPU (16GB)": "arl", "Intel(R) Data Center GPU Max 1100": "max1100"}
    for name, want in cases.items():
        assert match_device(name, False).name == want, name
    assert match_device("Intel(R) Xeon(R) Platinum", True).name == "cpu"
    assert match_device("Some future GPU", False, (16, 32)) is None
    assert match_device("Some 8-wide GPU", False, (8,)).name == "dg2"
    assert xk.target_for().name in xk.targets  # the device this machine has


@xk.jit
def gemm_tile(a_ptr, b_ptr, c_ptr, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
    rm, rn, rk = xl.arange(0, BM), xl.arange(0, BN), xl.arange(0, BK)
    a = xl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = xl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    xl.store(c_ptr + rm[:, None] * BN + rn[None, :], xl.dot(a, b))


def test_a_new_gpu_is_one_record(monkeypatch):
    # a hypothetical PVC part: PVC's ISA (ocloc "pvc"), fewer Xe cores, smaller workgroups, known by
    # its name
    new = dataclasses.replace(xk.targets["pvc"], name="pvc-half-test", arch="Xe-HPC (half part, test record)",
                              xe_cores=32, max_workgroup_size=512,
                              device_names=("data center gpu max 1050",))
    monkeypatch.setitem(xk.targets, "pvc-half-test", None)   # restored (removed) after the test
    register_target(new, replace=True)
    assert match_device("Intel(R) Data Center GPU Max 1050", False) is new   # the most specific name wins
    assert match_device("Intel(R) Data Center GPU Max 1550", False).name == "pvc"
    with pytest.raises(TargetError, match="already exists"):
        register_target(new)
    P = xk.pointer
    sig = dict(a_ptr=P(xl.bfloat16), b_ptr=P(xl.bfloat16), c_ptr=P(xl.float32), BM=32, BN=32, BK=32)
    c = gemm_tile.compile_offline(sig, target="pvc-half-test")
    assert "xegpu.dpas" in c.asm["inst"]
    from xekern.tools.isa import compile_isa
    r = compile_isa(c.spirv, c.name, "pvc-half-test")
    assert r.counts.calls == 0 and r.counts.dpas >= 1, r.summary()
    # and its limits are the ones the compiler enforces
    with pytest.raises(xk.LaunchError, match="pvc-half-test allows at most 512"):
        gemm_tile.compile_offline(sig, target="pvc-half-test", num_subgroups=64)
