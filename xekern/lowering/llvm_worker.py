"""The LLVM worker: a separate process that turns LLVM IR text into optimized SPIR-V.

LLVM aborts the whole process on some inputs (this llvmlite's LLVM is built with assertions),
so xekern never runs it in the user's process by default: ``llvm.py`` talks to this worker
over its stdin/stdout. Requests and replies are length-prefixed pickles:
``(llir_text, opt_level, want_optimized_llir)`` -> ``("ok", spirv_bytes, llir) | ("error", message)``.

Run by ``python -m xekern.lowering.llvm_worker``; it exits when its stdin closes.
"""
from __future__ import annotations

import os
import pickle
import struct
import sys

# the SPIR-V extensions codegen may use; set once (LLVM's option is process-wide and cumulative).
# The backend declares in a module only those the module needs. Never "all": that adds
# FPFastMathDefault execution modes IGC 12504 rejects (HARDWARE.md).
SPIRV_EXTENSIONS = (
    "SPV_INTEL_subgroups", "SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max",
    "SPV_INTEL_inline_assembly", "SPV_INTEL_split_barrier", "SPV_KHR_expect_assume",
    "SPV_INTEL_function_pointers",
    # the spirv_ext table (rules_spirv_block.py): current drivers only, IGC 12504 rejects them
    "SPV_INTEL_2d_block_io", "SPV_INTEL_subgroup_matrix_multiply_accumulate",
)

_READY = False


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


def compile_llir(text: str, opt_level: int = 2, want_llir: bool = True):
    """LLVM IR text -> (SPIR-V bytes, optimized LLVM IR text). Raises RuntimeError on bad IR."""
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
    llir = str(mod) if want_llir else ""
    spirv = tm.emit_object(mod)
    return spirv, llir


def _read(f, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _compile_in_child(req) -> tuple:
    """Compile one module in a fork of this process and return its reply.

    LLVM's SPIR-V backend keeps process-wide state from one module to the next: after a few
    modules it emits malformed SPIR-V (duplicate ids) or crashes (seen with llvmlite 0.50).
    A fresh fork per module starts from the clean state this process had after ``init``.
    """
    rd, wr = os.pipe()
    erd, ewr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compile, write the reply, exit without cleanup
        os.close(rd)
        os.close(erd)
        os.dup2(ewr, 2)
        try:
            spirv, llir = compile_llir(*req)
            reply = ("ok", spirv, llir)
        except Exception as e:  # a malformed module: report it
            reply = ("error", f"{type(e).__name__}: {e}")
        data = pickle.dumps(reply)
        view = memoryview(struct.pack("<Q", len(data)) + data)
        while view:
            view = view[os.write(wr, view):]
        os._exit(0)
    os.close(wr)
    os.close(ewr)
    chunks, errs = [], []
    for fd, sink in ((rd, chunks), (erd, errs)):
        while True:
            c = os.read(fd, 1 << 20)
            if not c:
                break
            sink.append(c)
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if len(data) >= 8 and len(data) == 8 + struct.unpack("<Q", data[:8])[0]:
        return pickle.loads(data[8:])
    why = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
    text = b"".join(errs).decode("utf-8", "replace").strip().splitlines()[-12:]
    return ("error", f"LLVM crashed ({why})" + (":\n  " + "\n  ".join(text) if text else ""))


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
    _compile_in_child((_WARMUP, 2, False))  # bring LLVM's code into memory before the first real kernel
    out.write(struct.pack("<Q", 0))  # ready
    out.flush()
    while True:
        try:
            n = struct.unpack("<Q", _read(inp, 8))[0]
            req = pickle.loads(_read(inp, n))
        except EOFError:
            return
        reply = _compile_in_child(req)
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


if __name__ == "__main__":
    # keep stdout for replies only: anything LLVM prints goes to stderr
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, out)
