"""The OpenCL driver's build of a kernel kept in the disk cache (``runtime/program_binaries.py``): a
new process loads the binary instead of building from SPIR-V, with correct results; a binary the
driver refuses, a damaged entry or ``XEKERN_DRIVER_BINARIES=0`` mean a SPIR-V build as before."""
import json
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    sys.path.insert(0, {here!r})
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    from kernels import add_kernel
    x = np.random.default_rng().standard_normal(1000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        add_kernel[(8,)](x, x, out, 1000, BLOCK=128)
    np.testing.assert_array_equal(out, 2 * x)
    print(json.dumps(dict(stats, warnings=[str(m.message) for m in w])))
""")


def run(cache_dir, **env_extra):
    env = dict(os.environ, XEKERN_CACHE_DIR=str(cache_dir), XEKERN_DEVICE="opencl:cpu", **env_extra)
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(here=HERE)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


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
