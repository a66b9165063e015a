"""Targets as data (issue 7, seed 002): the records check themselves, a device maps to its record
by its architecture (IP version, PCI device id) or else by name, and a new GPU is one record that
the whole pipeline compiles for (offline ISA included). What each GPU record claims is checked
against the current offline compiler in test_targets_isa.py."""
import dataclasses
import importlib
import warnings

import pytest

import xekern as xk
import xekern.language as xl
from xekern.targets import DpasShape, IpVersion, TargetError, TargetWarning, identify, match_device, register_target

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
        assert t.xe_cores > 0 and t.ocloc_device and t.iga_platform
        assert not t.has_dpas or t.dpas_shape(xl.bfloat16).n == t.sg_size
        # every GPU record is reachable from what a driver reports: a row of the architecture table
        assert any(r.target == name for r in tg.ARCHITECTURES), name


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


# (name, sub-group sizes, IP version, PCI device id) -> record and how it was found. The names are the
# ones compute-runtime gives these devices (dll/devices/devices_base.inl): Lunar Lake, Arrow Lake H and
# Meteor Lake H are all "Intel(R) Arc(TM) Graphics", so only the architecture tells them apart.
ARC_GRAPHICS = "Intel(R) Arc(TM) Graphics"
DEVICES = [
    ((ARC_GRAPHICS, (16, 32), 0x05010004, 0x64A0), "lnl", "device id"),
    ((ARC_GRAPHICS, (16, 32), "20.4.4", None), "lnl", "ip version"),
    ((ARC_GRAPHICS, (8, 16, 32), (12, 74, 4), None), "arl", "ip version"),
    ((ARC_GRAPHICS, (8, 16, 32), "12.71.4", 0x7D55), "mtl", "device id"),
    (("Intel(R) Graphics", (8, 16, 32), "12.70.4", None), "mtl", "ip version"),      # Arrow Lake S / U
    (("Intel(R) Graphics", (8, 16, 32), None, 0x7D67), "mtl", "device id"),          # Arrow Lake S
    (("Intel(R) Graphics", (8, 16, 32), None, 0x7DD1), "arl", "device id"),          # Arrow Lake H
    (("Intel(R) Arc(TM) B390 GPU", (16, 32), "30.0.4", 0xB080), "ptl", "device id"),
    (("Intel(R) Graphics", (16, 32), "30.1.0", None), "ptl", "ip version"),          # Panther Lake U
    (("Intel(R) Arc(TM) B580 Graphics", (16, 32), "20.1.4", 0xE20B), "bmg", "device id"),
    (("Intel(R) Arc(TM) Pro B70 Graphics", (16, 32), "20.2.0", None), "bmg", "ip version"),
    (("Intel(R) Data Center GPU Max 1550", (16, 32), 0x030F0007, 0x0BD5), "pvc", "device id"),
    (("Intel(R) Data Center GPU Max 1100", (16, 32), 0x030F0007, 0x0BDA), "max1100", "device id"),
    (("Intel(R) Data Center GPU Max 1100", (16, 32), 0x030F0007, None), "pvc", "ip version"),
    (("Intel(R) Arc(TM) A770 Graphics", (8, 16, 32), "12.55.8", 0x56A0), "dg2", "device id"),
    (("Intel(R) Data Center GPU Flex 170", (8, 16, 32), "12.55.8", None), "dg2", "ip version"),
    # a driver that reports nothing: the default name carries the device id, else the name decides
    (("Intel(R) Graphics [0x64b0]", (16, 32), None, None), "lnl", "device id"),
    (("Intel(R) Arc(TM) B390 GPU", (16, 32), None, None), "ptl", "name"),
    (("Intel(R) Arc(TM) B580 Graphics", (16, 32), None, None), "bmg", "name"),
    (("Intel(R) Arc(TM) 140V GPU (16GB)", (16, 32), None, None), "lnl", "name"),
    (("Intel(R) Data Center GPU Max 1100", (16, 32), None, None), "max1100", "name"),
    (("Intel(R) Data Center GPU Max 1550", (16, 32), None, None), "pvc", "name"),
]


@pytest.mark.parametrize("desc,want,how", DEVICES, ids=[f"{w}-{h}-{i}" for i, (_, w, h) in enumerate(DEVICES)])
def test_a_gpu_is_matched_by_its_architecture(desc, want, how):
    name, sizes, ip, dev = desc
    with warnings.catch_warnings():
        warnings.simplefilter("error", TargetWarning)
        m = identify(name, False, sizes, ip_version=ip, device_id=dev)
        assert (m.target.name, m.how, m.warning) == (want, how, "")
        assert match_device(name, False, sizes, ip_version=ip, device_id=dev).name == want


def test_ip_versions_decode_as_the_driver_encodes_them():
    # ocloc's own example: DG1 is 12.10.0 = 50495488; intel/llvm's architecture table: 0x030f0007 is PVC
    assert IpVersion.decode(50495488) == (12, 10, 0)
    assert str(IpVersion.decode(0x030F0007)) == "12.60.7" and str(IpVersion.decode(0x07800004)) == "30.0.4"
    assert IpVersion.of("20.4.4") == IpVersion.of((20, 4, 4)) == IpVersion.of(0x05010004)
    assert IpVersion.of(0) is None and IpVersion.of(None) is None


@pytest.mark.parametrize("ip,dev,want", [
    ("30.3.1", 0xFD80, "ptl"),     # Wildcat Lake (Xe3, no record of its own)
    ("30.4.4", None, "ptl"),       # Nova Lake S graphics (Xe3)
    ("35.11.0", 0x674C, "ptl"),    # Crescent Island (Xe3P): nearest older is still Xe3
    ("20.3.0", None, "bmg"),       # a Xe2 release between Battlemage and Lunar Lake
    ("12.61.7", 0x0BD4, "pvc"),    # Max 1550VG (compute-runtime: no DPAS; the warning says so)
])
def test_an_unknown_gpu_gets_the_nearest_older_family_with_a_warning(ip, dev, want):
    name = "Intel(R) Graphics"
    with pytest.warns(TargetWarning) as caught:
        t = match_device(name, False, (16, 32), ip_version=ip, device_id=dev)
    assert t.name == want
    text = str(caught[0].message)
    assert name in text and f"IP version {IpVersion.of(ip)}" in text and f"{want!r}" in text
    assert "nearest older" in text and "XEKERN_TARGET" in text


def test_gpus_older_than_every_record_and_cpus():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TargetWarning)
        assert match_device("Intel(R) UHD Graphics 770", False, (8, 16, 32), ip_version="12.0.0") is None  # Xe-LP
        assert identify("Some future GPU", False, (16, 32)).how == "none"
    assert match_device("Intel(R) Xeon(R) Platinum", True, ip_version=3, device_id=0xA00F11).name == "cpu"


def test_a_registered_record_brings_its_own_architecture_rows(monkeypatch):
    monkeypatch.setattr(tg, "ARCHITECTURES", list(tg.ARCHITECTURES))
    monkeypatch.setitem(xk.targets, "wcl-test", None)
    t = register_target(dataclasses.replace(xk.targets["ptl"], name="wcl-test", xe_cores=2, device_names=()),
                        replace=True, releases=((30, 3),), device_ids=(0xFD81,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TargetWarning)
        assert match_device("Intel(R) Graphics", False, (16, 32), ip_version="30.3.1") is t
        assert match_device("Intel(R) Graphics", False, (16, 32), device_id=0xFD81) is t


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
    # its own PCI device id and name
    new = dataclasses.replace(xk.targets["pvc"], name="pvc-half-test", arch="Xe-HPC (half part, test record)",
                              xe_cores=32, max_workgroup_size=512,
                              device_names=("data center gpu max 1050",))
    monkeypatch.setitem(xk.targets, "pvc-half-test", None)   # restored (removed) after the test
    monkeypatch.setattr(tg, "ARCHITECTURES", list(tg.ARCHITECTURES))
    register_target(new, replace=True, device_ids=(0x0BFF,))
    assert match_device("Intel(R) Data Center GPU Max 1050", False) is new   # the most specific name wins
    assert match_device("Intel(R) Graphics", False, (16, 32), ip_version="12.60.7", device_id=0x0BFF) is new
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
