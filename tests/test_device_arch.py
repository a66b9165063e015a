"""runtime/device_arch.py: the IP version and PCI device id a driver reports, read with ctypes. This
machine has no Intel GPU (and no Level Zero loader), so the Level Zero and GPU OpenCL answers come
from stand-ins that write what a driver writes into the caller's structures; the OpenCL CPU device
answers for real. Every failure falls back to matching by name."""
import ctypes

import pytest

import xekern as xk
from xekern.runtime import device, device_arch, loaded_libs
from xekern.runtime.device_arch import (CL_DEVICE_ID_INTEL, CL_DEVICE_IP_VERSION_INTEL, DeviceArch,
                                        ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES,
                                        ZeDeviceIpVersionExt, ZeDeviceProperties)
from xekern.targets import IpVersion, match_device


class FakeLevelZero:
    """``zeDeviceGetProperties`` as a driver answers it: fills the properties and, if it knows the IP
    version extension, the ``ze_device_ip_version_ext_t`` found in ``pNext``."""

    def __init__(self, device_id, ip_version, name=b"Intel(R) Arc(TM) Graphics", knows_ip=True, result=0):
        self.device_id, self.ip, self.name, self.knows_ip, self.result = device_id, ip_version, name, knows_ip, result
        self.seen = []

    def zeDeviceGetProperties(self, handle, address):
        props = ZeDeviceProperties.from_address(address)
        self.seen.append((handle, props.stype))
        if self.result:
            return self.result
        props.vendorId, props.deviceId, props.name = 0x8086, self.device_id, self.name
        ext = props.pNext
        while ext and self.knows_ip:
            head = ZeDeviceIpVersionExt.from_address(ext)
            if head.stype == ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT:
                head.ipVersion = self.ip
            ext = head.pNext
        return 0


class FakeOpenCL:
    """``clGetDeviceInfo`` for the two ``cl_intel_device_attribute_query`` queries (a cl_uint each);
    ``answers`` maps a query to its value, a missing query is CL_INVALID_VALUE (-30)."""

    def __init__(self, answers):
        self.answers = answers

    def clGetDeviceInfo(self, handle, param, size, address, size_ret):
        if param not in self.answers:
            return -30
        assert size >= 4
        ctypes.c_uint32.from_address(address).value = self.answers[param]
        return 0


def test_level_zero_properties_carry_the_ip_version_in_pnext():
    ze = FakeLevelZero(0x64A0, 0x05010004)
    a = device_arch.read_level_zero(ze, 0x1234)
    assert a == DeviceArch(0x05010004, 0x64A0, "level_zero") and str(a.ip) == "20.4.4"
    assert ze.seen == [(0x1234, ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES)]
    assert match_device("Intel(R) Arc(TM) Graphics", False, (16, 32), a.ip_version, a.device_id).name == "lnl"


def test_level_zero_without_the_extension_or_with_an_error():
    a = device_arch.read_level_zero(FakeLevelZero(0x7D51, 0x03128004, knows_ip=False), 1)
    assert (a.ip_version, a.device_id) == (None, 0x7D51)        # the device id alone still decides (arl)
    assert match_device("Intel(R) Arc(TM) Graphics", False, (8, 16, 32), a.ip_version, a.device_id).name == "arl"
    a = device_arch.read_level_zero(FakeLevelZero(0, 0, result=0x78000001), 1)
    assert (a.ip_version, a.device_id) == (None, None) and "0x78000001" in a.source


def test_the_structures_have_level_zeros_layout():
    # ze_api.h: stype, pNext, type, vendorId, deviceId, ..., timerResolution (uint64 at 80),
    # timestampValidBits, kernelTimestampValidBits, uuid[16], name[256], naturally aligned (x86-64)
    assert ZeDeviceProperties.deviceId.offset == 24 and ZeDeviceProperties.timerResolution.offset == 80
    assert ZeDeviceProperties.uuid.offset == 96 and ZeDeviceProperties.name.offset == 112
    assert ctypes.sizeof(ZeDeviceProperties) == 368
    assert ZeDeviceIpVersionExt.ipVersion.offset == 16


def test_opencl_device_attribute_queries():
    cl = FakeOpenCL({CL_DEVICE_IP_VERSION_INTEL: 0x07800004, CL_DEVICE_ID_INTEL: 0xB080})
    a = device_arch.read_opencl(cl, 7)
    assert a == DeviceArch(0x07800004, 0xB080, "opencl") and a.ip == IpVersion(30, 0, 4)
    a = device_arch.read_opencl(FakeOpenCL({}), 7)                     # not an Intel device
    assert (a.ip_version, a.device_id) == (None, None) and "neither" in a.source


def test_the_opencl_cpu_device_answers_for_real():
    """The real path (getNative from libsycl, clGetDeviceInfo from the ICD loader, the reference given
    back) on the one device this machine has; the CPU runtime reports an IP version of its own."""
    cpu = device.dpctl().SyclDevice("opencl:cpu")
    a = device_arch.query(cpu)
    assert a.source == "opencl" and a.ip_version and a.device_id, a
    assert device_arch.query(cpu) is a                          # kept per device
    assert device.architecture(cpu).source == "cpu device"      # target_for does not ask a CPU
    assert xk.target_for(cpu).name == "cpu"


class NoSuchDevice:
    """A device whose backend xekern cannot reach (the query must not raise)."""

    backend = "backend_type.level_zero"
    name = "Intel(R) Arc(TM) Graphics"
    is_cpu = False
    sub_group_sizes = [16, 32]

    def addressof_ref(self):
        raise AssertionError("not reached: there is no Level Zero loader in this process")


def test_without_the_level_zero_loader_the_query_fails_soft(monkeypatch):
    monkeypatch.setattr(loaded_libs, "mapped", lambda prefix: None)   # no libze_loader mapped
    d = NoSuchDevice()
    a = device_arch.query(d)
    assert (a.ip_version, a.device_id) == (None, None) and "libze_loader" in a.source
    monkeypatch.setattr(device, "as_device", lambda dev: dev)
    # then the name decides, and this one (Lunar Lake, Arrow Lake H or Meteor Lake) names no record
    with pytest.raises(xk.LaunchError, match="no target record .* libze_loader"):
        device.target_for(d)


def test_target_for_matches_what_the_driver_reports(monkeypatch):
    d = NoSuchDevice()
    monkeypatch.setattr(device, "as_device", lambda dev: dev)
    monkeypatch.setattr(device_arch, "_known", {d: DeviceArch(0x03128004, None, "level_zero")})
    assert device.target_for(d).name == "arl"
    monkeypatch.setenv("XEKERN_TARGET", "mtl")
    assert device.target_for(d).name == "mtl"                  # the override wins
