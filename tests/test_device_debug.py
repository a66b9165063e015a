"""xl.device_print / xl.device_assert: OpenCL printf on the CPU device (captured at the file-descriptor
level: printf writes to the process's C stdout), the same lines from the interpreter, nothing at all
with debug off, valid SPIR-V for every target and a pvc build with ocloc."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from xekern.tools.isa import compile_isa, spirv_validate

P, I32 = xk.pointer, xl.int32


@xk.jit
def print_tile(x_ptr, n, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=-1.0)
    xl.device_print("x =", x, offs)
    print("n is", n, pid)


@xk.jit
def check_positive(x_ptr, n, BLOCK: xl.constexpr):
    pid = xl.program_id(0)
    offs = pid * BLOCK + xl.arange(0, BLOCK)
    x = xl.load(x_ptr + offs, mask=offs < n, other=0)
    xl.device_assert(x >= 0, "x must not be negative")
    assert pid < 2, "at most two programs"
    xl.store(x_ptr + offs, x + 1, mask=offs < n)


def _lines(text):
    return sorted(s for s in text.splitlines() if s.startswith(("pid", "/", "\\")) or "Assertion" in s)


def _expected_print(x, n, block, programs):
    out = []
    for p in range(programs):
        for i in range(block):
            o = p * block + i
            v = x[o] if o < n else -1.0
            out.append("pid (%d, 0, 0) idx (%d) x = %f %d" % (p, i, v, o))
        out.append("pid (%d, 0, 0) n is %d %d" % (p, n, p))
    return sorted(out)


def test_device_print_prints_each_element_once(backend, rng, capfd):
    """The same lines on the device (64 elements on 4 subgroups of 16 or 8 lanes: one or two
    elements per work item, none replicated) and in the interpreter (which prints with or
    without debug=True)."""
    x = rng.standard_normal(100).astype(np.float32)
    capfd.readouterr()
    backend.launch(print_tile, (2,), x, 100, BLOCK=64, debug=True)
    xk.synchronize()
    got = _lines(capfd.readouterr().out)
    assert got == _expected_print(x, 100, 64, 2)
    if backend.interpret:
        backend.launch(print_tile, (2,), x, 100, BLOCK=64)
        assert _lines(capfd.readouterr().out) == _expected_print(x, 100, 64, 2)


def test_device_assert_reports_file_line_program_and_element(capfd):
    x = np.arange(160, dtype=np.int32)
    x[[5, 133]] = -3
    capfd.readouterr()
    check_positive[(3,)](x, 160, BLOCK=64, debug=True)  # 3 programs: the scalar assert fails in program 2
    xk.synchronize()
    got = _lines(capfd.readouterr().out)
    line = check_positive.fn.__code__.co_firstlineno + 5
    where = f"{__file__}:{line}"
    assert f"{where}: pid (0, 0, 0) idx (5): Assertion failed: x must not be negative" in got
    assert f"{where}: pid (2, 0, 0) idx (5): Assertion failed: x must not be negative" in got
    assert f"{__file__}:{line + 1}: pid (2, 0, 0): Assertion failed: at most two programs" in got
    assert len(got) == 3, got
    # OpenCL cannot abort a kernel: it runs on, and its stores happen
    expect = np.arange(160, dtype=np.int32)
    expect[[5, 133]] = -3
    np.testing.assert_array_equal(x, expect + 1)


def test_debug_off_leaves_no_trace(capfd):
    x = np.arange(-8, 8, dtype=np.int32)
    capfd.readouterr()
    check_positive[(1,)](x, 16, BLOCK=16, debug=False)
    print_tile[(1,)](x.astype(np.float32), 16, BLOCK=16, debug=False)
    xk.synchronize()
    assert capfd.readouterr().out == ""
    for k in (check_positive, print_tile):
        c = k.compile_offline({"x_ptr": P(xl.float32), "n": I32, "BLOCK": 16}, target="cpu", debug=False)
        assert "debug." not in c.asm["xegpu"] and "printf" not in c.asm["llir"]
        assert "printf" not in c.asm["spirv"] and b"printf" not in c.spirv
        d = k.compile_offline({"x_ptr": P(xl.float32), "n": I32, "BLOCK": 16}, target="cpu", debug=True)
        assert "printf" in d.asm["spirv"] or "spirv-dis" in d.asm["spirv"]


def test_debug_knob_turns_them_on(monkeypatch):
    monkeypatch.setenv("XEKERN_DEBUG", "1")

    @xk.jit
    def k(x_ptr, n, BLOCK: xl.constexpr):
        offs = xl.arange(0, BLOCK)
        xl.device_assert(xl.load(x_ptr + offs, mask=offs < n) >= 0)

    c = k.compile_offline({"x_ptr": P(xl.float32), "n": I32, "BLOCK": 16}, target="cpu")
    assert "debug.assert" in c.asm["xegpu"] and "@printf" in c.asm["llir"]


@pytest.mark.parametrize("target", ["cpu", "cpu8", "pvc", "dg2", "bmg"])
def test_debug_spirv_is_valid_for_every_target(target):
    for k in (print_tile, check_positive):
        c = k.compile_offline({"x_ptr": P(xl.float32), "n": I32, "BLOCK": 64}, target=target, debug=True)
        ok, msg = spirv_validate(c.spirv)
        assert ok, msg


def test_debug_kernels_compile_for_pvc_with_ocloc():
    for k in (print_tile, check_positive):
        c = k.compile_offline({"x_ptr": P(xl.float32), "n": I32, "BLOCK": 64}, target="pvc", debug=True)
        r = compile_isa(c.spirv, c.name, "pvc")
        # IGC inlines printf as writes to its printf buffer: an atomic to reserve space, then stores
        assert r.counts.total > 0 and r.counts.calls == 0, r.summary()
        assert r.counts.atomics > 0 or any("atomic" in s for s in r.counts.sends), r.summary()
