"""The OpenCL driver's build of a kernel kept in the disk cache (``runtime/program_binaries.py``): a
new process loads the binary instead of building from SPIR-V, with correct results; a binary the
driver refuses, a damaged entry or ``XEKERN_DRIVER_BINARIES=0`` mean a SPIR-V build as before."""
import os

from test_cache import run as run_add   # (tutorial 01's add in a new process; its stats)


def run(cache_dir, **env_extra):
    return run_add(cache_dir, env_extra)


def binaries(cache_dir):
    return [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs if f.endswith(".xkb")]


def test_a_new_process_loads_the_drivers_binary(tmp_path):
    first = run(tmp_path)
    assert first["driver_builds"] == 1 and first["binary_writes"] == 1 and first["driver_binaries"] == 0, first
    assert len(binaries(tmp_path)) == 1
    second = run(tmp_path)
    assert second["driver_builds"] == 0 and second["driver_binaries"] == 1 and second["compiles"] == 0, second


def test_a_binary_the_driver_refuses_is_built_from_spirv(tmp_path):
    from xekern.runtime.cache import DiskCache
    run(tmp_path)
    (path,) = binaries(tmp_path)
    key = os.path.basename(path)[:-len(".xkb")]
    DiskCache(str(tmp_path), ".xkb").put(key, {"kind": "driver binary"}, b"\x7fELF no program at all")
    again = run(tmp_path)
    assert again["binaries_refused"] == 1 and again["driver_builds"] == 1 and again["driver_binaries"] == 0, again


def test_a_damaged_binary_entry_is_rebuilt_with_a_warning(tmp_path):
    run(tmp_path)
    (path,) = binaries(tmp_path)
    data = bytearray(open(path, "rb").read())
    data[-10] ^= 0xFF
    open(path, "wb").write(bytes(data))
    again = run(tmp_path)
    assert again["corrupt"] == 1 and again["driver_builds"] == 1 and again["binary_writes"] == 1, again
    assert any("corrupted" in w for w in again["warnings"]), again["warnings"]
    assert run(tmp_path)["driver_binaries"] == 1   # the entry written again is good


def test_the_knob_turns_it_off(tmp_path):
    r = run(tmp_path, XEKERN_DRIVER_BINARIES="0")
    assert r["binary_writes"] == 0 and binaries(tmp_path) == []
    assert run(tmp_path, XEKERN_DRIVER_BINARIES="0")["driver_builds"] == 1
