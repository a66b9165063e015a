"""LLVM IR -> SPIR-V, behind one module (llvmlite's API churns; its LLVM can abort the process).

By default the work runs in a long-lived worker process (``llvm_worker.py``) started in the
background when a compile begins (``prestart``, called by the compile driver before the
frontend): loading LLVM costs ~150 ms, which then overlaps the frontend and the passes, and an
LLVM crash kills the worker, not the user's interpreter. The worker exits with the process that
started it (``llvm_worker.py``). The crash
becomes a CompilationError and the next compile starts a fresh worker.
``XEKERN_LLVM_ISOLATION=0`` runs LLVM in-process instead (for debugging LLVM itself).
"""
from __future__ import annotations

import atexit
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Optional, Tuple

from .. import knobs

_WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llvm_worker.py")


class LLVMError(RuntimeError):
    """LLVM rejected a module, or crashed on it."""


class _Worker:
    def __init__(self):
        self.proc: Optional[subprocess.Popen] = None
        self.ready = False
        self.lock = threading.Lock()
        self.log = None

    def start(self) -> None:
        self._release()   # (a worker that died: its pipes and log)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, _WORKER_SCRIPT],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     close_fds=True)
        self.ready = False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _read(self, n: int, timeout: float) -> bytes:
        out = self.proc.stdout
        data = b""
        while len(data) < n:
            r, _, _ = select.select([out], [], [], timeout)
            if not r:
                raise TimeoutError
            chunk = os.read(out.fileno(), n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def crash_report(self) -> str:
        try:
            self.log.seek(0)
            text = self.log.read().decode("utf-8", "replace").strip()
        except Exception:
            text = ""
        code = self.proc.poll() if self.proc is not None else None
        lines = text.splitlines()[-12:]
        why = f"exit status {code}" if code is not None and code >= 0 else f"signal {-code}" if code else "no reply"
        return f"the LLVM worker died ({why})" + ("; it said:\n  " + "\n  ".join(lines) if lines else "")

    def compile(self, text: str, opt_level: int, want_llir: bool, timeout: float,
                want_spirv: bool = True) -> Tuple[bytes, str]:
        with self.lock:
            if not self.alive():
                self.start()
            try:
                if not self.ready:
                    self._read(8, timeout)
                    self.ready = True
                data = pickle.dumps((text, opt_level, want_llir, want_spirv))
                self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
                self.proc.stdin.flush()
                n = struct.unpack("<Q", self._read(8, timeout))[0]
                reply = pickle.loads(self._read(n, timeout))
            except (EOFError, BrokenPipeError, OSError, TimeoutError) as e:
                if isinstance(e, TimeoutError):
                    self.proc.kill()
                    self.proc.wait()
                    msg = f"LLVM took longer than {timeout:.0f} s and was stopped"
                else:
                    self.proc.wait()
                    msg = self.crash_report()
                self._release()
                self.proc = None
                raise LLVMError(msg) from None
        if reply[0] != "ok":
            raise LLVMError(reply[1])
        return reply[1], reply[2]

    def close(self) -> None:
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self._release()

    def _release(self) -> None:
        for f in (self.proc.stdin if self.proc else None, self.proc.stdout if self.proc else None, self.log):
            if f is not None and not f.closed:
                try:
                    f.close()
                except OSError:   # (a pipe to a dead worker cannot flush)
                    pass


_worker = _Worker()
atexit.register(_worker.close)


def prestart() -> None:
    """Start the LLVM worker in the background (called when a compile begins)."""
    if knobs.llvm_isolation() and not _worker.alive():
        with _worker.lock:
            if not _worker.alive():
                _worker.start()


def wait_ready(timeout: float = 60.0) -> None:
    """Block until the LLVM worker has loaded LLVM (benchmarks use it to separate start-up from compile)."""
    if not knobs.llvm_isolation():
        return
    with _worker.lock:
        if not _worker.alive():
            _worker.start()
        if not _worker.ready:
            _worker._read(8, timeout)
            _worker.ready = True


def to_spirv(llir: str, opt_level: int = 2, want_llir: bool = True, timeout: float = 300.0,
             want_spirv: bool = True) -> Tuple[bytes, str]:
    """Optimize LLVM IR text and emit SPIR-V with llvmlite's backend. Returns (spirv, optimized IR)."""
    if knobs.llvm_isolation():
        return _worker.compile(llir, opt_level, want_llir, timeout, want_spirv)
    from . import llvm_worker
    try:
        return llvm_worker.compile_llir(llir, opt_level, want_llir, want_spirv)
    except RuntimeError as e:
        raise LLVMError(str(e)) from None


def optimized_llir(llir: str, opt_level: int) -> str:
    """The LLVM IR that ``to_spirv`` gives the SPIR-V backend (for ``kernel.asm["llir"]``, printed
    on demand: a compile does not print it)."""
    try:
        return to_spirv(llir, opt_level, want_llir=True, want_spirv=False)[1]
    except LLVMError as e:  # the compile of the same text succeeded, so this is unexpected
        return f"; LLVM failed to print the optimized IR: {e}\n"
