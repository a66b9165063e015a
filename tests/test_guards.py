"""Guarded arguments: a kernel that writes past a NumPy argument's end (or before its start) is a
LaunchError naming the argument, how far it wrote and the stores that can write it; the NumPy
array is left unchanged and nothing else is touched. With XEKERN_DEBUG=1 device arrays from
xk.empty / xk.to_device are guarded the same way. Crashes are possible if the guards were missing,
so the launches run in child processes."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import xekern as xk
import xekern.language as xl
from conftest import poisoned

_KERNEL = '''
import numpy as np
import xekern as xk
import xekern.language as xl


@xk.jit
def shifted_copy(x_ptr, o_ptr, shift, BLOCK: xl.constexpr):
    offs = xl.arange(0, BLOCK)
    v = xl.load(x_ptr + offs)
    xl.store(o_ptr + offs + shift, v)
'''


def _run(tmp_path, body: str, env=None) -> subprocess.CompletedProcess:
    (tmp_path / "k.py").write_text(_KERNEL + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(tmp_path / "k.py")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


def test_overrun_of_a_numpy_argument_is_an_error_and_the_array_is_intact(tmp_path):
    out = _run(tmp_path, '''
        rng = np.random.default_rng(7)
        x = rng.standard_normal(512).astype(np.float32)
        out = np.full(256, np.nan, np.float32)
        before = out.copy()
        try:
            shifted_copy[(1,)](x, out, 0, BLOCK=512)
        except xk.LaunchError as e:
            print("ERROR", e)
        print("INTACT", np.array_equal(out, before, equal_nan=True))
        shifted_copy[(1,)](x, out, 0, BLOCK=256)
        print("RIGHT", np.array_equal(out, x[:256]))
    ''')
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    err = next(ln for ln in lines if ln.startswith("ERROR"))
    assert ("argument 'o_ptr' (256 float32, a NumPy array) was written out of bounds: 256 element(s) (1024 bytes) "
            "past its end") in err, err
    assert "The stores that can write it: " in err and "k.py:11" in err, err
    assert "The array was not changed." in err, err
    assert "INTACT True" in lines and "RIGHT True" in lines, out.stdout


def test_write_before_the_start_is_caught(tmp_path):
    out = _run(tmp_path, '''
        x = np.arange(64, dtype=np.float32)
        out = np.zeros(64, np.float32)
        try:
            shifted_copy[(1,)](x, out, -3, BLOCK=64)
        except xk.LaunchError as e:
            print("ERROR", e)
        print("INTACT", not out.any())
    ''')
    assert out.returncode == 0, out.stderr[-3000:]
    assert "3 element(s) (12 bytes) before its start" in out.stdout, out.stdout
    assert "INTACT True" in out.stdout, out.stdout


def test_debug_guards_device_arrays(tmp_path):
    body = '''
        x = xk.to_device(np.arange(128, dtype=np.float32))
        out = xk.empty(100, np.float32)
        try:
            shifted_copy[(1,)](x, out, 0, BLOCK=128)
            print("NO ERROR")
        except xk.LaunchError as e:
            print("ERROR", e)
        shifted_copy[(1,)](x, out, 0, BLOCK=64)
        print("RIGHT", np.array_equal(out.numpy()[:64], np.arange(64, dtype=np.float32)))
    '''
    debug = _run(tmp_path, body, {"XEKERN_DEBUG": "1"})
    assert debug.returncode == 0, debug.stderr[-3000:]
    assert "argument 'o_ptr' (100 float32, a device array) was written out of bounds: 28 element(s) (112 bytes) " \
           "past its end" in debug.stdout, debug.stdout
    assert "RIGHT True" in debug.stdout, debug.stdout


@xk.jit
def fill_rows(o_ptr, n, stride, BLOCK: xl.constexpr):
    r = xl.program_id(0)
    offs = xl.arange(0, BLOCK)
    xl.store(o_ptr + r * stride + offs, (r * 1000 + offs).to(xl.float32), mask=offs < n)


def test_guards_do_not_change_correct_results(rng):
    """Ragged, strided, odd-sized writes that stay inside: same results as NumPy, no error."""
    rows, n, stride = 37, 101, 113
    out = poisoned((rows, stride), np.float32)
    fill_rows[(rows,)](out, n, stride, BLOCK=128)
    want = np.arange(rows)[:, None] * 1000.0 + np.arange(n)[None, :]
    np.testing.assert_array_equal(out[:, :n], want)
    assert np.isnan(out[:, n:]).all()


@xk.jit
def _scale_into(x_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


def test_only_written_numpy_arguments_get_guards_and_come_back(monkeypatch):
    """A NumPy argument the kernel only reads (not in ``CompiledKernel.writes``) goes to the device
    without guards and is not copied back; a written one keeps both. The same array passed as the
    read and the written argument is one guarded copy, copied back."""
    from xekern.runtime import guards
    asked = []
    real = guards.acquire
    monkeypatch.setattr(guards, "acquire", lambda nbytes, queue, guarded=True: asked.append(guarded)
                        or real(nbytes, queue, guarded))
    rng = np.random.default_rng()
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    x0 = x.copy()
    o = poisoned(n, np.float32)
    _scale_into[(4,)](x, o, n, BLOCK=256, target="cpu")
    assert asked == [False, True], asked
    np.testing.assert_allclose(o, 3.0 * x0.astype(np.float64), rtol=1e-6)
    assert x.tobytes() == x0.tobytes()
    asked.clear()
    _scale_into[(4,)](x, x, n, BLOCK=256, target="cpu")     # in place: one copy, guarded, copied back
    assert asked == [True], asked
    np.testing.assert_allclose(x, 3.0 * x0.astype(np.float64), rtol=1e-6)
