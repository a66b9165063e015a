"""The LLVM worker's lifetime: importing xekern starts no process; the worker starts with the first
compile; when the user's process dies (even by SIGKILL, mid-compile), the worker and its compiling
child are gone within a second."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _descendants(pid: int) -> list:
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_import_starts_no_process():
    p = _python("import time, xekern, xekern.language\nprint('ready', flush=True)\ntime.sleep(30)\n")
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        assert _descendants(p.pid) == []
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


# a module LLVM takes seconds on (~8 s on an idle machine here): a chain of 60,000 loads and stores
_BIG = '''
lines = ['target triple = "spirv64-unknown-unknown"', 'define spir_kernel void @big(ptr addrspace(1) %p) {',
         '  %v0 = load float, ptr addrspace(1) %p']
for i in range(1, 60000):
    lines += [f'  %q{i} = getelementptr float, ptr addrspace(1) %p, i64 {i}',
              f'  %l{i} = load float, ptr addrspace(1) %q{i}',
              f'  %v{i} = fmul float %v{i-1}, %l{i}', f'  store float %v{i}, ptr addrspace(1) %q{i}']
text = "\\n".join(lines + ['  ret void', '}']) + "\\n"
'''


def test_sigkill_mid_compile_leaves_no_worker_behind():
    p = _python("import xekern\nfrom xekern.lowering import llvm\n" + _BIG +
                "llvm.wait_ready()\nprint('compiling', flush=True)\nllvm.to_spirv(text, 2)\nprint('done')\n")
    try:
        assert p.stdout.readline().strip() == "compiling"
        deadline = time.monotonic() + 10
        while len(_descendants(p.pid)) < 2 and time.monotonic() < deadline:   # the worker and its child
            time.sleep(0.05)
        time.sleep(1.0)   # the child is inside LLVM now
        left = _descendants(p.pid)
        assert len(left) >= 2, "the LLVM worker and its compiling child should be running"
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        t0 = time.monotonic()
        while any(_running(q) for q in left) and time.monotonic() - t0 < 1.0:
            time.sleep(0.02)
        assert [q for q in left if _running(q)] == [], "xekern processes outlived the killed process"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()


def test_worker_starts_with_the_first_compile(tmp_path):
    code = ("import os, xekern as xk, xekern.language as xl\n"
            "from xekern.lowering import llvm\n"
            "@xk.jit\n"
            "def k(x_ptr, BLOCK: xl.constexpr):\n"
            "    xl.store(x_ptr + xl.arange(0, BLOCK), 1.0)\n"
            "print(llvm._worker.alive(), flush=True)\n"
            "k.compile_offline({'x_ptr': xk.pointer(xl.float32), 'BLOCK': 16}, 'cpu')\n"
            "print(llvm._worker.alive(), flush=True)\n")
    (tmp_path / "k.py").write_text(code)
    out = subprocess.run([sys.executable, str(tmp_path / "k.py")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
