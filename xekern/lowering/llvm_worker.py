"""The LLVM worker: a separate process that turns LLVM IR text into optimized SPIR-V.

LLVM aborts the whole process on some inputs (this llvmlite's LLVM is built with assertions),
so xekern never runs it in the user's process by default: ``llvm.py`` talks to this worker
over its stdin/stdout. Requests and replies are length-prefixed pickles:
``(llir_text, opt_level, want_optimized_llir[, want_spirv])`` -> ``("ok", spirv_bytes, llir) | ("error", message)``.

Run by ``python -m xekern.lowering.llvm_worker``. It never outlives the process that started it:
it exits when its stdin closes or its parent changes (the user's process died, even by SIGKILL),
checked every 0.2 s while it waits and while a compile runs, and it kills the compiling child
first; each child also asks the kernel to kill it when the worker dies (``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import ctypes
import os
import pickle
import re
import select
import signal
import struct
import sys
import tempfile

# the SPIR-V extensions codegen may use; set once (LLVM's option is process-wide and cumulative).
# The backend declares in a module only those the module needs. Never "all": that adds
# FPFastMathDefault execution modes IGC 12504 rejects (HARDWARE.md).
SPIRV_EXTENSIONS = (
    "SPV_INTEL_subgroups", "SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max",
    "SPV_INTEL_inline_assembly", "SPV_INTEL_split_barrier", "SPV_KHR_expect_assume",
    "SPV_INTEL_function_pointers", "SPV_INTEL_bfloat16_conversion",
    # the spirv-ext emitter (codegen/rules_spirv_ext.py): IGC 2.x drivers only, IGC 12504 rejects them
    "SPV_INTEL_2d_block_io", "SPV_INTEL_subgroup_matrix_multiply_accumulate",
)

_READY = False
_PARENT = os.getppid()   # the user's process
_POLL = 0.2              # seconds between checks that it is still there


def init() -> None:
    global _READY
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.set_option("", "--spirv-ext=" + ",".join("+" + e for e in SPIRV_EXTENSIONS))
    _READY = True


def _target_machine():
    # a fresh one per module: the SPIR-V backend keeps state about the last module it emitted,
    # and a second emission through the same target machine crashes LLVM 22 (seen here)
    import llvmlite.binding as llvm
    return llvm.Target.from_triple("spirv64-unknown-unknown").create_target_machine(opt=2)


def compile_llir(text: str, opt_level: int = 2, want_llir: bool = True, want_spirv: bool = True):
    """LLVM IR text -> (SPIR-V bytes, optimized LLVM IR text); each is empty when not wanted.
    Raises RuntimeError on bad IR."""
    import llvmlite.binding as llvm
    if not _READY:
        init()
    tm = _target_machine()
    mod = llvm.parse_assembly(text)
    mod.verify()
    if opt_level > 0:
        pto = llvm.PipelineTuningOptions(speed_level=opt_level)
        pb = llvm.PassBuilder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        if any(f.name.startswith("llvm.bitreverse.") for f in mod.functions):
            mod = llvm.parse_assembly(expand_bitreverse(str(mod)))
            mod.verify()
    llir = str(mod) if want_llir else ""
    spirv = tm.emit_object(mod) if want_spirv else b""
    return spirv, llir


_BITREVERSE = re.compile(r"^(\s*)(%[-\w.$]+) = (?:tail )?call i(\d+) @llvm\.bitreverse\.i\d+\(i\d+ (%[-\w.$]+|-?\d+)\)$",
                         re.M)


def expand_bitreverse(text: str) -> str:
    """``llvm.bitreverse.iN`` calls, as shifts and masks.

    InstCombine recognizes bit-reversal idioms in index arithmetic (``(s & 1) << 5 | (s & 2) << 3``,
    an SLM offset of a subgroup coordinate) and writes ``llvm.bitreverse.i6``; the SPIR-V backend
    cannot express that (OpBitReverse is for shaders) and aborts ("Unable to meet SPIR-V
    requirements"). Each call becomes N shift-mask-or steps in i32 (no other pass runs after).
    """
    def one(m):
        pad, res, n, x = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        name, w = res[1:].strip('"'), 32 if n <= 32 else 64
        out = [f"{pad}%{name}.z = " + (f"zext i{n} {x} to i{w}" if n < w else f"or i{w} {x}, 0")]
        acc = None
        for k in range(n):
            out.append(f"{pad}%{name}.s{k} = lshr i{w} %{name}.z, {k}")
            out.append(f"{pad}%{name}.b{k} = and i{w} %{name}.s{k}, 1")
            out.append(f"{pad}%{name}.t{k} = shl i{w} %{name}.b{k}, {n - 1 - k}")
            if acc is None:
                acc = f"%{name}.t{k}"
            else:
                out.append(f"{pad}%{name}.o{k} = or i{w} {acc}, %{name}.t{k}")
                acc = f"%{name}.o{k}"
        out.append(f"{pad}{res} = " + (f"trunc i{w} {acc} to i{n}" if n < w else f"or i{w} {acc}, 0"))
        return "\n".join(out)
    return _BITREVERSE.sub(one, text)


def _read(f, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


class _Child:
    """A fork of this process, made ahead of time, waiting for one request.

    LLVM's SPIR-V backend keeps process-wide state from one module to the next: after a few
    modules it emits malformed SPIR-V (duplicate ids) or crashes (seen with llvmlite 0.50).
    A fresh fork per module starts from the clean state this process had after ``init``.
    The next child is forked right after a reply is sent, and compiles a tiny module at once:
    the copy-on-write faults of a fresh fork (~1,000 pages LLVM writes, ~4 ms of the ~25 ms a
    pvc GEMM takes) then happen while the user's program does something else, not at the next
    request. The warm-up module does not change what the real one emits (benchmarks/spirv_hashes.py).
    The child writes its stderr to a temporary file, read only if it crashes.
    """

    def __init__(self):
        req_rd, self.req_wr = os.pipe()
        self.reply_rd, reply_wr = os.pipe()
        self.err = tempfile.TemporaryFile()
        worker = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the child: wait for the request, compile, write the reply, exit without cleanup
            try:
                _die_with_parent(worker)
                os.close(self.req_wr)
                os.close(self.reply_rd)
                os.dup2(self.err.fileno(), 2)
                compile_llir(_WARMUP, 0, False)  # touch (copy) the pages LLVM writes before the request comes
                req = pickle.loads(_read_fd(req_rd))
                try:
                    spirv, llir = compile_llir(*req)
                    reply = ("ok", spirv, llir)
                except Exception as e:  # a malformed module: report it
                    reply = ("error", f"{type(e).__name__}: {e}")
                _write_fd(reply_wr, pickle.dumps(reply))
            finally:  # never return into the worker's loop (EOF: the worker is shutting down)
                os._exit(0)
        os.close(req_rd)
        os.close(reply_wr)

    def run(self, req_bytes: bytes, watch: int) -> tuple:
        """Send one request (a pickle) and return the reply; a crash becomes an error reply.
        The caller then calls ``close`` (after passing the reply on: reaping waits for the exit).
        While the child compiles, ``watch`` (the worker's stdin) and the parent are watched: if the
        user's process is gone, the child is killed and the worker exits."""
        try:
            _write_fd(self.req_wr, req_bytes)
            while not _wait_readable(self.reply_rd, watch):
                pass
            return pickle.loads(_read_fd(self.reply_rd))
        except (EOFError, BrokenPipeError, OSError):
            _, status = os.waitpid(self.pid, 0)
            self.pid = None
            why = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit status {os.WEXITSTATUS(status)}")
            self.err.seek(0)
            text = self.err.read().decode("utf-8", "replace").strip().splitlines()[-12:]
            return ("error", f"LLVM crashed ({why})" + (":\n  " + "\n  ".join(text) if text else ""))

    def close(self) -> None:
        for fd in (self.req_wr, self.reply_rd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.err.close()
        if self.pid is not None:
            os.waitpid(self.pid, 0)  # it has replied (or sees EOF): it is exiting
            self.pid = None


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when ``parent`` exits (PR_SET_PDEATHSIG), and exit at once
    if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)   # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):   # (not Linux: the worker's own watch still ends it)
        pass
    if os.getppid() != parent:
        os._exit(0)


def _orphaned() -> bool:
    return os.getppid() != _PARENT


def _wait_readable(fd: int, watch: int) -> bool:
    """Wait up to one poll interval for ``fd``; exit the worker (and its children, by their
    PR_SET_PDEATHSIG) if the user's process is gone: ``watch`` at EOF or a new parent."""
    ready, _, _ = select.select([fd, watch], [], [], _POLL)
    if fd in ready:
        return True
    if watch in ready or _orphaned():   # (stdin is idle during a compile: readable means EOF)
        os._exit(0)
    return False


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_fd(fd: int) -> bytes:
    """One length-prefixed message from a pipe."""
    def exactly(n):
        chunks, got = [], 0
        while got < n:
            c = os.read(fd, min(n - got, 1 << 20))
            if not c:
                raise EOFError
            chunks.append(c)
            got += len(c)
        return b"".join(chunks)
    return exactly(struct.unpack("<Q", exactly(8))[0])


def _compile_in_child(req) -> tuple:
    """Compile one module in a fresh fork of this process and return its reply (tests use it)."""
    r, w = os.pipe()   # (nothing to watch: a pipe this process holds both ends of, idle)
    child = _Child()
    try:
        return child.run(pickle.dumps(req), r)
    finally:
        child.close()
        os.close(r)
        os.close(w)


_WARMUP = """target triple = "spirv64-unknown-unknown"
declare spir_func i32 @_Z22get_sub_group_local_idv()
define spir_kernel void @warmup(ptr addrspace(1) %p) !intel_reqd_sub_group_size !0 {
  %l = call spir_func i32 @_Z22get_sub_group_local_idv()
  %f = sitofp i32 %l to float
  store float %f, ptr addrspace(1) %p
  ret void
}
!0 = !{i32 16}
"""


def serve(inp, out) -> None:
    init()
    child = _Child()  # its warm-up compile brings LLVM's code into memory before the first real kernel
    out.write(struct.pack("<Q", 0))  # ready
    out.flush()
    fd = inp.fileno()
    while True:
        try:
            while not select.select([fd], [], [], _POLL)[0]:
                if _orphaned():
                    raise EOFError
            n = struct.unpack("<Q", _read(inp, 8))[0]
            req = _read(inp, n)
        except EOFError:
            child.close()
            return
        data = pickle.dumps(child.run(req, fd))
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()
        child.close()
        child = _Child()


if __name__ == "__main__":
    # keep stdout for replies only: anything LLVM prints goes to stderr
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, out)
