"""The kernel cache: a second process compiles nothing; corrupted entries are detected and rebuilt."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    sys.path.insert(0, {here!r})
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    from kernels import add_kernel
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    assert (out == 2 * x).all()
    print(json.dumps(dict(stats, warnings=[str(m.message) for m in w])))
""")


def run(cache_dir, env_extra=None):
    env = dict(os.environ, XEKERN_CACHE_DIR=str(cache_dir), **(env_extra or {}))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(here=HERE)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    return [os.path.join(d, f) for d, _, fs in os.walk(cache_dir) for f in fs if f.endswith(".xkc")]


def test_second_process_hits_the_disk_cache(tmp_path):
    first = run(tmp_path)
    assert first["compiles"] == 1 and first["disk_hits"] == 0 and first["disk_writes"] == 1
    second = run(tmp_path)
    assert second["compiles"] == 0 and second["disk_hits"] == 1, second
    assert len(entries(tmp_path)) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupted_entry_is_rebuilt_with_a_warning(tmp_path, damage):
    run(tmp_path)
    (path,) = entries(tmp_path)
    data = bytearray(open(path, "rb").read())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-10] ^= 0xFF
    else:
        data = bytearray(b"not a cache entry at all")
    open(path, "wb").write(bytes(data))
    again = run(tmp_path)
    assert again["compiles"] == 1 and again["corrupt"] == 1, again
    assert any("corrupted" in w for w in again["warnings"]), again["warnings"]
    assert run(tmp_path)["disk_hits"] == 1  # the rebuilt entry is good


def test_unwritable_cache_dir_falls_back_to_memory(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    r = run(blocked / "cache")
    assert r["compiles"] == 1 and r["disk_writes"] == 0
    assert any("not writable" in w for w in r["warnings"]), r["warnings"]
