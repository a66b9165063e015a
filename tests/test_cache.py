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


# ---- two processes at once ------------------------------------------------------------------------------

RACE = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, {here!r})
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    from kernels import softmax_kernel
    go = {go!r}
    while not os.path.exists(go):  # both processes start compiling at the same moment
        time.sleep(0.001)
    x = np.arange(8 * 100, dtype=np.float32).reshape(8, 100) / 100
    out = np.zeros_like(x)
    softmax_kernel[(8,)](out, x, 100, 100, 100, BLOCK=128)
    e = np.exp(x - x.max(1, keepdims=True))
    assert np.allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
    print(json.dumps(stats))
""")


def test_two_processes_compiling_at_once_leave_one_valid_entry(tmp_path):
    from xekern.runtime.cache import DiskCache
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    env = dict(os.environ, XEKERN_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", RACE.format(here=HERE, go=str(go))], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    go.write_text("")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["compiles"] + r["disk_hits"] == 1 and r["corrupt"] == 0 for r in results), results
    (entry,) = entries(cache)
    # (kernels, and the OpenCL driver's binaries: runtime/program_binaries.py)
    leftovers = [f for _, _, fs in os.walk(cache) for f in fs if not f.endswith((".xkc", ".xkb"))]
    assert leftovers == [], leftovers  # no temporary files left behind
    assert DiskCache._decode(open(entry, "rb").read()) is not None
    assert run_softmax_stats(cache)["disk_hits"] == 1  # and a third process uses it


def run_softmax_stats(cache_dir):
    go = os.path.join(str(cache_dir), "..", "go-now")
    open(go, "w").close()
    env = dict(os.environ, XEKERN_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", RACE.format(here=HERE, go=go)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- what the cache key depends on -------------------------------------------------------------------------

MODULE = '''
import xekern as xk
import xekern.language as xl

SCALE = {scale}


def unrelated():
    return {unrelated}


@xk.jit
def helper(x):
    return x * {factor}


@xk.jit
def kern(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, helper(xl.load(x_ptr + offs, mask=offs < n)) + SCALE, mask=offs < n)
'''


def _module(tmp_path, name, **fields):
    import importlib.util
    text = MODULE.format(**dict(dict(scale=3, unrelated=1, factor=2.0), **fields))
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def disk_key(kernel, *args, target="cpu", num_subgroups=None, **constexprs):
    import xekern as xk
    t = xk.get_target(target)
    opts = kernel.options({} if num_subgroups is None else {"num_subgroups": num_subgroups}, t)
    key, _ = kernel.specialize(kernel.bind(args, constexprs), opts)
    return kernel._disk_key(key)


def test_cache_key_follows_exactly_what_changes_the_code(tmp_path, monkeypatch):
    import numpy as np
    f32, f16 = np.zeros(4, np.float32), np.zeros(4, np.float16)
    base = _module(tmp_path, "k_base").kern
    k0 = disk_key(base, f32, f32, 5, BLOCK=64)
    same = {
        "an identical module in another file": disk_key(_module(tmp_path, "k_copy").kern, f32, f32, 5, BLOCK=64),
        "another int of the same class": disk_key(base, f32, f32, 7, BLOCK=64),
        "an unrelated function of the module": disk_key(_module(tmp_path, "k_unrel", unrelated=2).kern, f32, f32,
                                                        5, BLOCK=64),
    }
    for why, k in same.items():
        assert k == k0, why
    changed = {
        "a called jit function": disk_key(_module(tmp_path, "k_helper", factor=3.0).kern, f32, f32, 5, BLOCK=64),
        "a global constant it reads": disk_key(_module(tmp_path, "k_scale", scale=4).kern, f32, f32, 5, BLOCK=64),
        "a constexpr": disk_key(base, f32, f32, 5, BLOCK=128),
        "a dtype": disk_key(base, f16, f32, 5, BLOCK=64),
        "an int divisible by 16": disk_key(base, f32, f32, 32, BLOCK=64),
        "a 64-bit int": disk_key(base, f32, f32, 1 << 40, BLOCK=64),
        "the target": disk_key(base, f32, f32, 5, BLOCK=64, target="cpu8"),
        "num_subgroups": disk_key(base, f32, f32, 5, BLOCK=64, num_subgroups=8),
    }
    import xekern.runtime.jit as jitmod
    monkeypatch.setattr(jitmod, "__version__", jitmod.__version__ + ".post1")
    changed["the xekern version"] = disk_key(base, f32, f32, 5, BLOCK=64)
    monkeypatch.undo()
    monkeypatch.setattr(jitmod, "compiler_fingerprint", lambda: "a changed compiler")
    changed["xekern's own sources"] = disk_key(base, f32, f32, 5, BLOCK=64)
    monkeypatch.undo()
    import xekern.runtime.cache as cachemod  # a development checkout whose compiler source changed
    monkeypatch.setattr(cachemod, "_fingerprint", "0" * 64)
    changed["the compiler's own source"] = disk_key(base, f32, f32, 5, BLOCK=64)
    monkeypatch.undo()
    for why, k in changed.items():
        assert k != k0, why
    assert len(set(changed.values())) == len(changed)


def test_cache_key_is_stable_across_processes(tmp_path):
    import numpy as np
    f32 = np.zeros(4, np.float32)
    _module(tmp_path, "k_proc")
    here = disk_key(_module(tmp_path, "k_proc").kern, f32, f32, 5, BLOCK=64)
    code = (f"import sys; sys.path[:0] = [{HERE!r}, {str(tmp_path)!r}]; import numpy as np; import k_proc; "
            f"from test_cache import disk_key; f = np.zeros(4, np.float32); "
            f"print(disk_key(k_proc.kern, f, f, 5, BLOCK=64))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONHASHSEED="123"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == here


def test_memory_cache_keeps_the_most_recently_used_specializations(monkeypatch, rng):
    """XEKERN_KERNEL_CACHE_SIZE bounds each kernel's in-memory cache; the least recently used
    specialization is dropped (with its driver kernels) and comes back from the disk cache."""
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    sys.path.insert(0, HERE)
    from kernels import add_kernel
    monkeypatch.setenv("XEKERN_KERNEL_CACHE_SIZE", "2")
    k = xk.jit(add_kernel.fn)  # a fresh cache
    n = 77
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)

    def launch(block):
        out = np.full(n, np.nan, np.float32)
        k[(xk.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
        return k.last

    a = launch(16)
    launch(32)
    assert launch(16) is a  # a hit, and 16 is now the most recent
    e0 = stats["evictions"]
    launch(64)  # evicts 32, the least recently used
    assert [key[0][-1] for key in k.cache] == [(int, 16), (int, 64)]
    assert stats["evictions"] == e0 + 1
    launch(32)  # back (from disk), evicting 16
    assert [key[0][-1] for key in k.cache] == [(int, 64), (int, 32)] and not a._kernels
    monkeypatch.setenv("XEKERN_KERNEL_CACHE_SIZE", "0")
    with pytest.raises(xk.LaunchError, match="XEKERN_KERNEL_CACHE_SIZE must be a positive integer"):
        launch(128)
