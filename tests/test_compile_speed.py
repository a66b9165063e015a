"""The compile-time shortcuts produce exactly what the slow paths produce (benchmarks/compile_time.py
measures the time, benchmarks/spirv_hashes.py hashes the output of a larger kernel set):

* codegen/text.py's instruction printer writes the same LLVM IR text as llvmlite's;
* a kernel parsed from its own lines has the same AST (with positions) as in the whole file's;
* the LLVM worker's pre-forked, warmed-up child emits the same SPIR-V as a fresh process, and a
  crash or a bad module in it becomes an error, after which the next module compiles.
"""
import ast
import faulthandler
import hashlib
import importlib.util
import os
import pickle
import signal
import sys

import pytest

import xekern as xk
import xekern.language as xl
from xekern.frontend import source as S
from xekern.lowering import llvm as L
from xekern.lowering import llvm_worker as W
from xekern import compiler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "examples", "gemm")]
import kernels as K  # noqa: E402
from gemm import gemm_kernel, gelu  # noqa: E402

P = xk.pointer
F32, I32 = xl.float32, xl.int32


def gemm_sig(ab, BM, BN, BK, pf):
    return dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(F32), bias_ptr=P(F32), M=I32, N=I32, K=I32, stride_ab=I32,
                stride_bb=I32, stride_cb=I32, BM=BM, BN=BN, BK=BK, GROUP_M=4, TRANS_A=False, TRANS_B=True,
                PREFETCH=pf, ACC=F32, HAS_BIAS=True, ACT="gelu")


CASES = {
    "pvc-gemm": (gemm_kernel, gemm_sig(xl.bfloat16, 64, 64, 32, 2), dict(target="pvc", num_subgroups=8)),
    "cpu-gemm": (gemm_kernel, gemm_sig(xl.bfloat16, 32, 32, 32, 0), dict(target="cpu", num_subgroups=2)),
    "cpu-masked-rows": (K.masked_rows_kernel, dict(x_ptr=P(F32), sum_ptr=P(F32), max_ptr=P(F32), arg_ptr=P(I32),
                                                   M=I32, N=I32, BM=8, BN=64), dict(target="cpu")),
    "pvc-collatz": (K.collatz_steps, dict(x_ptr=P(I32), out_ptr=P(I32), limit=I32), dict(target="pvc")),
}


def _clear_text_caches(module):
    for fn in module.functions:
        for block in fn.blocks:
            for i in block.instructions:
                i._clear_string_cache()
                i.__dict__.pop("_StringReferenceCaching__cached_refstr", None)


@pytest.mark.parametrize("case", list(CASES))
def test_fast_llvm_ir_text_is_llvmlites(case, monkeypatch):
    kernel, sig, opts = CASES[case]
    seen = []
    real = compiler.generate
    monkeypatch.setattr(compiler, "generate", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    c = kernel.compile_offline(sig, **opts)
    module = seen[0].module
    _clear_text_caches(module)
    slow = str(module).replace(", !reqd_work_group_size", " !reqd_work_group_size")
    assert c.asm["llir_unoptimized"] == slow
    assert slow.count("\n") > 30


def _whole_file(fn):
    S._MODULES.pop(fn.__code__.co_filename, None)
    S._module_ast(fn.__code__.co_filename)  # now cached: KernelSource takes the whole-file path
    try:
        return S.KernelSource(fn)
    finally:
        S._MODULES.pop(fn.__code__.co_filename, None)


TRAILING = '''import xekern as xk
import xekern.language as xl


@xk.jit
def spread(x_ptr, out_ptr, n,
           BLOCK: xl.constexpr):
    """A docstring."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(out_ptr + offs,
             xl.load(x_ptr + offs, mask=offs < n) * 2.0,
             mask=(offs
                   < n)
             )  # the statement closes on a line without bytecode
# a comment


def helper():
    return 1
'''


def test_kernel_parsed_from_its_own_lines_is_the_whole_files(tmp_path):
    path = tmp_path / "trailing_kernel.py"
    path.write_text(TRAILING)
    spec = importlib.util.spec_from_file_location("trailing_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for jit in (gemm_kernel, gelu, K.softmax_kernel, K.layer_norm_fwd, K.collatz_steps, mod.spread):
        fn = jit.fn
        S._MODULES.pop(fn.__code__.co_filename, None)
        with open(fn.__code__.co_filename) as f:
            lines = f.readlines()
        assert S._function_ast(fn.__code__, lines) is not None, fn.__name__
        fast = S.KernelSource(fn)
        slow = _whole_file(fn)
        assert fast.text == slow.text and fast.start_line == slow.start_line, fn.__name__
        assert ast.dump(fast.tree, include_attributes=True) == ast.dump(slow.tree, include_attributes=True)
    assert mod.spread.source.text.rstrip().endswith("# the statement closes on a line without bytecode")


def _fresh_fork_spirv(text: str) -> bytes:
    """SPIR-V from a fork that compiled nothing before (the reference for the worker's warm child)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rd)
            W._write_fd(wr, pickle.dumps(W.compile_llir(text, 0, False)[0]))
        finally:
            os._exit(0)
    os.close(wr)
    data = pickle.loads(W._read_fd(rd))
    os.close(rd)
    os.waitpid(pid, 0)
    return data


def test_worker_spirv_is_a_fresh_processes_and_survives_crashes(monkeypatch):
    kernel, sig, opts = CASES["pvc-gemm"]
    llir = kernel.compile_offline(sig, **opts).asm["llir_unoptimized"]
    via_worker = L.to_spirv(llir, 0, want_llir=False)[0]
    W.init()
    assert hashlib.sha256(via_worker).digest() == hashlib.sha256(_fresh_fork_spirv(llir)).digest()

    real = W.compile_llir

    def crash(text, *a):
        if text == W._WARMUP:
            return real(text, *a)
        os.write(2, b"about to crash\n")  # what LLVM prints before an abort goes to fd 2
        faulthandler.disable()  # (in the child only) no Python traceback on pytest's terminal
        os.kill(os.getpid(), signal.SIGSEGV)
    monkeypatch.setattr(W, "compile_llir", crash)
    status, msg = W._compile_in_child((llir, 0, False))
    assert status == "error" and "signal 11" in msg and "about to crash" in msg, msg
    monkeypatch.setattr(W, "compile_llir", real)
    status, msg = W._compile_in_child(("not LLVM IR", 0, False))
    assert status == "error" and "parsing error" in msg, msg
    with pytest.raises(L.LLVMError, match="parsing error"):
        L.to_spirv("not LLVM IR", 0, want_llir=False)
    assert L.to_spirv(llir, 0, want_llir=False)[0] == via_worker  # the worker's next child is fine
    assert "define spir_kernel" in L.optimized_llir(llir, 0)


def test_fast_name_scope_gives_llvmlites_names():
    from llvmlite.ir._utils import DuplicatedNameError, NameScope
    from xekern.lowering.codegen.names import FastScope
    seq = ["", "", "a", "a", "", "a.1", "a", ".3", "", "x.1", "x", "x", ""]
    slow, fast = NameScope(), FastScope()
    assert [slow.register(n, deduplicate=True) for n in seq] == [fast.register(n, deduplicate=True) for n in seq]
    for scope in (slow, fast):
        with pytest.raises(DuplicatedNameError):
            scope.register("a", deduplicate=False)
        assert scope.register("fresh", deduplicate=False) == "fresh"
