"""The emitter decision (lowering/emitters.py): one per kernel, from the target and what the
driver's compiler accepts (runtime/driver_probe.py), with a fallback when a driver rejects a module.

The probe module is checked against the two real compilers of the offline toolchain: the current
IGC builds it and Debian 12's IGC 12504 refuses it, which is the distinction the probe draws."""
import dataclasses
import json
import os
import warnings

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import poisoned
from xekern.lowering import emitters
from xekern.lowering.emitters import DRIVERS, OFFLINE, EmitterError
from xekern.runtime import device as dev, driver_probe
from xekern.tools import spirv as sp
from xekern.tools.isa import IsaError, compile_isa

T = xk.targets


def names(target, driver):
    return [e.name for e in emitters.candidates(T[target], DRIVERS[driver])]


def test_candidates_follow_target_and_driver():
    assert names("pvc", "igc2") == names("bmg", "igc2") == ["visa", "spirv-ext", "igc-builtins"]
    assert names("pvc", "igc1") == ["visa", "igc-builtins"]     # IGC 12504 has no SPIR-V 2D block ops
    assert names("dg2", "igc2") == ["igc-builtins"]   # no 2D block IO: no raw messages, no SPIR-V block ops
    assert names("cpu", "cpu") == names("cpu8", "cpu") == ["cpu"]
    assert emitters.choose(T["pvc"], OFFLINE["current"]).name == "visa"
    assert emitters.choose(T["dg2"], OFFLINE["12504"]).name == "igc-builtins"
    visa = emitters.choose(T["pvc"], DRIVERS["igc2"])
    assert emitters.fallback(visa, T["pvc"]).name == "spirv-ext"
    assert emitters.fallback(emitters.get("igc-builtins", T["pvc"], DRIVERS["igc2"]), T["pvc"]) is None


def test_policy_is_the_emitters_not_the_targets():
    visa, ext = (emitters.get(n, T["bmg"], DRIVERS["igc2"]) for n in ("visa", "spirv-ext"))
    assert emitters.named_read_bits(visa, T["pvc"]) == 1024 and emitters.named_read_bits(ext, T["pvc"]) == 0
    assert emitters.slm_read_bytes(visa, T["bmg"]) == 512 and not ext.narrow_block_reads
    cpu, cpu8 = (emitters.choose(T[n], DRIVERS["cpu"]) for n in ("cpu", "cpu8"))
    assert cpu.fma_dot == ("f32",) and cpu8.fma_dot == ()   # cpu8 models dg2, which has no tf32
    for field in ("raw_block2d_bits", "raw_slm_read_bytes", "merge_block2d", "spirv_block_io", "fma_dot"):
        assert not hasattr(T["pvc"], field), field


@pytest.mark.parametrize("name,target,driver,why", [
    ("spirv-ext", "bmg", "igc1", "needs a driver that takes SPV_INTEL_2d_block_io"),
    ("visa", "dg2", "igc2", "it has no 2D block IO and DPAS"),
    ("spirv-ext", "dg2", "igc2", "for GPUs with 2D block IO"),
    ("cpu", "pvc", "igc2", "the cpu emitter is for the CPU device"),
    ("visa", "cpu", "cpu", "the visa emitter is for GPUs"),
    ("fast", "pvc", "igc2", "there is no emitter 'fast'"),
])
def test_an_emitter_the_target_or_driver_cannot_take_says_why(name, target, driver, why):
    with pytest.raises(EmitterError, match=why):
        emitters.get(name, T[target], DRIVERS[driver])


class FakeDevice:
    is_cpu, backend, name = False, "backend_type.level_zero", "Intel(R) Data Center GPU Max 1550"

    def __init__(self, version="1.6.31294"):
        self.driver_version = version
        self.filter_string = "level_zero:gpu:0"


def test_probe_answer_is_kept_in_memory_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("XEKERN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("XEKERN_DRIVER", raising=False)
    monkeypatch.setattr(driver_probe, "_known", {})
    calls = []
    monkeypatch.setattr(driver_probe, "probe", lambda d, t: calls.append(d.driver_version) or (False, "opcode 6231"))
    assert driver_probe.driver_for(FakeDevice(), T["pvc"]).name == "igc1"
    assert driver_probe.driver_for(FakeDevice(), T["pvc"]).name == "igc1" and len(calls) == 1   # memory
    monkeypatch.setattr(driver_probe, "_known", {})
    assert driver_probe.driver_for(FakeDevice(), T["pvc"]).name == "igc1" and len(calls) == 1   # disk
    entry = json.load(open(next(os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "drivers") for f in fs)))
    assert entry["driver"] == "igc1" and "6231" in entry["detail"]
    monkeypatch.setattr(driver_probe, "probe", lambda d, t: calls.append(d.driver_version) or (True, ""))
    assert driver_probe.driver_for(FakeDevice("1.6.32000"), T["pvc"]).name == "igc2"   # a new driver: probed
    assert calls == ["1.6.31294", "1.6.32000"]
    monkeypatch.setenv("XEKERN_DRIVER", "igc1")
    assert driver_probe.driver_for(FakeDevice("1.6.32000"), T["pvc"]).name == "igc1"
    monkeypatch.setenv("XEKERN_DRIVER", "cpu")
    with pytest.raises(xk.LaunchError, match="XEKERN_DRIVER='cpu' is not a GPU driver"):
        driver_probe.driver_for(FakeDevice(), T["pvc"])
    cpu = dev.default_device()
    assert cpu.is_cpu and driver_probe.driver_for(cpu, T["cpu"]).name == "cpu"


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_probe_module_tells_the_two_compilers_apart(target):
    """The current IGC builds the probe module with a DPAS and 2D block messages; IGC 12504 rejects it."""
    spirv = driver_probe.probe_spirv(T[target])
    assert set(sp.extensions(spirv)) >= set(emitters.SPIRV_OPS_EXTENSIONS)
    r = compile_isa(spirv, "driver_probe", target, compiler="current")
    assert r.counts.dpas >= 1 and r.counts.load_block2d >= 1, r.summary()
    if target == "pvc":  # (IGC 12504 does not know bmg at all)
        with pytest.raises(IsaError, match="could not compile"):
            compile_isa(spirv, "driver_probe", target, compiler="12504")


@xk.jit(num_subgroups=1)
def add_one(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


def test_a_rejected_module_is_rebuilt_with_the_next_emitter(monkeypatch, rng):
    """The driver refuses the first emitter's module: a warning, then the kernel runs as the next
    emitter wrote it, and later launches go straight to that one. (The CPU device has one emitter:
    a second one is made here, with the same tables under another name.)"""
    cpu = emitters.choose(T["cpu"], DRIVERS["cpu"])
    other = dataclasses.replace(cpu, name="cpu-other")
    monkeypatch.setattr(emitters, "fallback", lambda e, t: other if e.name == "cpu" else None)
    real = dev.build_kernel
    built = []

    def build(queue, spirv, name, grf_mode=None):
        built.append(name)
        if len(built) == 1:
            raise dev.DriverRejected("the device driver rejected kernel 'add_one': no (a test's driver)")
        return real(queue, spirv, name, grf_mode)
    monkeypatch.setattr(dev, "build_kernel", build)
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    for launch_no in range(2):
        out = poisoned(n, np.float32)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            launch = add_one[(xk.cdiv(n, 64),)](x, out, n, BLOCK=64)
        np.testing.assert_allclose(out, x.astype(np.float64) + 1.0, rtol=1e-6)
        assert launch.asm["emitter"].startswith("cpu-other")
        rebuilt = [str(x.message) for x in w if issubclass(x.category, xk.errors.EmitterWarning)]
        assert len(rebuilt) == (1 if launch_no == 0 else 0) and all("rebuilt with cpu-other" in m for m in rebuilt)
    assert len(built) == 2, built   # the second launch reuses the fallback's kernel
