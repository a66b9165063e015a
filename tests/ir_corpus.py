"""The kernels a test session compiles, and the check every one of them gets: each IR stage prints,
parses and prints again to the same text, and the parsed function verifies.

``RECORDER`` (installed by conftest.py) notes each distinct (kernel, signature, options) the session
compiles, or loads from the on-disk cache instead of compiling; after each test, conftest.py has it
round-trip the stages of the compilations that test added (up to ``PER_KERNEL_AND_TARGET`` per kernel
and target), so the check covers the whole session in every pytest process (``pytest -n``: each worker
checks what it compiled) and a failure is reported at the test that compiled the kernel.
``examples()`` is a corpus of its own (test_ir_roundtrip.py): every ``@xk.jit`` kernel of examples/ at
the signature its example launches it with. ``ir_stages`` compiles one record to its IR stages only
(no codegen)::

    for rec in RECORDER.records():
        stages = ir_stages(rec)      # {"xegpu": text, "surface-rules": text, ..., "lane": text}
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List

import xekern as xk
import xekern.language as xl
import xekern.runtime.jit as jitmod
from xekern import ir
from xekern.compiler import compile_kernel
from xekern.errors import XekernError
from xekern.lowering import pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


@dataclass
class Record:
    """One compilation: enough to compile it again."""

    jit: Any
    signature: Dict[str, Any]
    options: pipeline.Options
    test: str                     # the test that compiled it first ("" outside a test)

    @property
    def kernel(self) -> str:
        return self.jit.__name__

    @property
    def identity(self) -> str:
        """The kernel's source, the functions it calls and the constants it reads (not its signature)."""
        return self.jit.dependencies_hash()

    def describe(self) -> str:
        consts = {k: getattr(v, "value", v) for k, v in self.signature.items()
                  if isinstance(v, jitmod.ConstArg)}
        where = f", first compiled by {self.test}" if self.test else ""
        return (f"kernel {self.kernel} ({self.jit.fn.__code__.co_filename}:{self.jit.fn.__code__.co_firstlineno}) "
                f"for {self.options.target.name}, num_subgroups={self.options.num_subgroups}, "
                f"emitter {self.options.emitter.name}, {consts}{where}")


# compilations round-tripped per (kernel, target): the first signatures and options recorded (a fuzzing
# test may compile one kernel at hundreds of shapes)
PER_KERNEL_AND_TARGET = 4


class Recorder:
    """A pytest plugin that records the session's compilations (compiled or loaded from the disk
    cache) by wrapping ``JITFunction._load_or_compile`` and the jit module's ``compile_kernel``, and
    round-trips their IR stages (``check_pending``)."""

    def __init__(self):
        self.seen: Dict[tuple, Record] = {}
        self.test = ""
        self._saved = None
        self.pending: List[Record] = []        # recorded, not yet round-tripped
        self._per_target: Dict[tuple, int] = {}
        self.checked = dict(kernels=set(), compilations=0, stages=0, seconds=0.0)

    def records(self) -> List[Record]:
        return list(self.seen.values())

    def note(self, jit, signature, options) -> None:
        try:
            key = (jit.dependencies_hash(), repr(sorted((n, repr(v)) for n, v in signature.items())), options.key)
        except Exception:   # (a kernel this recorder cannot tell apart is not recorded, not an error of the test)
            return
        if key not in self.seen:
            rec = self.seen[key] = Record(jit, dict(signature), options, self.test)
            per = (key[0], options.target.name)
            self._per_target[per] = self._per_target.get(per, 0) + 1
            if self._per_target[per] <= PER_KERNEL_AND_TARGET:
                self.pending.append(rec)

    def check_pending(self) -> List[str]:
        """Round-trip the pending records' stages (``check``); what went wrong, one line each."""
        todo, self.pending = self.pending, []
        failures, stages, seconds = check(todo)
        self.checked["kernels"].update(r.identity for r in todo)
        self.checked["compilations"] += len(todo)
        self.checked["stages"] += stages
        self.checked["seconds"] += seconds
        return failures

    def summary(self) -> str:
        c = self.checked
        return (f"IR round trip in this process: {len(c['kernels'])} kernels, {c['compilations']} of "
                f"{len(self.seen)} compilations, {c['stages']} stages, {c['seconds']:.1f} s")

    def pytest_runtest_setup(self, item):
        self.test = item.nodeid

    def pytest_runtest_teardown(self, item):
        self.test = ""

    def install(self) -> None:
        load, compile_kernel = jitmod.JITFunction._load_or_compile, jitmod.compile_kernel
        self._saved = (load, compile_kernel)
        rec = self

        def recording_load(jit, key, sig, options):
            out = load(jit, key, sig, options)
            rec.note(jit, sig, options)
            return out

        def recording_compile(jit, signature, options, dump=None):
            out = compile_kernel(jit, signature, options, dump)
            rec.note(jit, signature, options)
            return out
        jitmod.JITFunction._load_or_compile = recording_load
        jitmod.compile_kernel = recording_compile

    def uninstall(self) -> None:
        if self._saved is not None:
            jitmod.JITFunction._load_or_compile, jitmod.compile_kernel = self._saved
            self._saved = None


RECORDER = Recorder()


class _Enough(Exception):
    """Raised from the stage dump after the last IR pass: codegen and LLVM are not needed."""


def ir_stages(rec: Record) -> Dict[str, str]:
    """The text of every IR stage of ``rec``'s kernel (``kernel.asm``'s xegpu ... lane), compiled
    through ``compile_kernel`` and stopped after its last pass."""
    out: Dict[str, str] = {}
    last = None

    def dump(stage, what):
        nonlocal last
        if stage == "xegpu":   # (the frontend's function, before the passes of its level)
            last = pipeline.passes_for(what.attrs.get("level", "wg"))[-1].name
        out[stage] = what if isinstance(what, str) else ir.print_func(what)
        if stage == last:
            raise _Enough
    try:
        compile_kernel(rec.jit, rec.signature, rec.options, dump=dump)
    except _Enough:
        pass
    return out


def first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "(end of text)"
        y = lb[i] if i < len(lb) else "(end of text)"
        if x != y:
            return f"line {i + 1}:\n    printed:   {x}\n    reprinted: {y}"
    return "(no difference)"


def round_trip(text: str, where: str) -> str:
    """'' when ``text`` parses, verifies and prints back to itself; else what went wrong."""
    try:
        f = ir.parse_func(text, where)
        ir.verify_func(f)
    except (ir.ParseError, ir.IRError, ir.LayoutError) as e:
        return f"{type(e).__name__}: {e}"
    again = ir.print_func(f)
    return "" if again == text else "does not print back the same: " + first_difference(text, again)


def check(records: List[Record], stages_of=None):
    """Round-trip every stage of each record (``stages_of``: ``ir_stages`` unless given): (one line
    per compilation that does not, naming kernel and stage; stages checked; seconds)."""
    stages_of = stages_of or ir_stages
    failures, stages, t0 = [], 0, time.perf_counter()
    for rec in records:
        try:
            texts = stages_of(rec)
        except XekernError as e:  # compiled when it was recorded: it must compile now
            failures.append(f"{rec.describe()}: no longer compiles: {e}")
            continue
        for stage, text in texts.items():
            stages += 1
            problem = round_trip(text, f"{rec.kernel}:{stage}")
            if problem:
                failures.append(f"{rec.describe()}: stage '{stage}': {problem}")
                break
    return failures, stages, time.perf_counter() - t0


# ---- the examples' own corpus ------------------------------------------------------------------------

def load_example(relpath: str):
    """Import examples/<relpath> (names may start with digits) with its folder on sys.path."""
    path = os.path.join(EXAMPLES, relpath)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "xekern_example_" + relpath.replace("/", "_").replace(".py", "")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules[name]


def example_files() -> List[str]:
    out = []
    for folder, _, files in os.walk(EXAMPLES):
        out += [os.path.relpath(os.path.join(folder, f), EXAMPLES) for f in files if f.endswith(".py")]
    return sorted(out)


def jit_kernels(mod) -> Dict[str, Any]:
    """name -> the ``@xk.jit`` function of each kernel a module defines (through ``@xk.autotune`` too)."""
    out = {}
    for name, v in vars(mod).items():
        for o in (v, getattr(v, "fn", None)):
            if isinstance(o, xk.JITFunction) and o.fn.__module__ == mod.__name__:
                out[name] = o
    return out


def _record(jit, target: str, num_subgroups: int, **signature) -> Record:
    t = xk.get_target(target)
    options = jit.options({"num_subgroups": num_subgroups}, t)
    sig = {}
    for p in jit.params:
        if p.name in signature:
            v = signature[p.name]
            sig[p.name] = jitmod.ConstArg(v) if p.is_constexpr else v
        elif p.has_default:
            sig[p.name] = jitmod.ConstArg(p.default)
    sig[jitmod.MULTIPLES] = {n: 16 for n, v in sig.items() if isinstance(v, xl.dtype) and v.is_int}
    return Record(jit, sig, options, "")


# helpers that examples' kernels call (inlined, so they are in their callers' IR)
INLINED = {"gemm/gemm.py": {"gelu"}, "triton_ports/03_matrix_multiplication.py": {"leaky_relu"},
           "triton_ports/03a_matrix_multiplication_descriptor.py": {"_compute_pid"},
           "attention/attention.py": {"_fwd_blocks", "_rows"}, "triton_ports/06_fused_attention.py": {"_attn_fwd_inner"}}


def examples() -> Dict[str, List[Record]]:
    """examples/<file> -> its kernels at the signatures its launches use (main()'s dtypes, the first
    autotuning config; the GEMM at the first config of each target, as its ``--isa`` report does)."""
    P, f16, f32, i32 = xk.pointer, xl.float16, xl.float32, xl.int32
    out: Dict[str, List[Record]] = {}
    m = load_example("triton_ports/01_vector_add.py")
    out["triton_ports/01_vector_add.py"] = [
        _record(m.add_kernel, t, 4, x_ptr=P(f32), y_ptr=P(f32), output_ptr=P(f32), n_elements=i32, BLOCK_SIZE=1024)
        for t in ("cpu", "pvc")]
    m = load_example("triton_ports/02_fused_softmax.py")
    out["triton_ports/02_fused_softmax.py"] = [
        _record(m.softmax_kernel, t, 8, output_ptr=P(f32), input_ptr=P(f32), input_row_stride=i32,
                output_row_stride=i32, n_rows=i32, n_cols=i32, BLOCK_SIZE=1024, num_stages=2) for t in ("cpu", "pvc")]
    m = load_example("triton_ports/03_matrix_multiplication.py")
    cfg = m.get_autotune_config()[0]
    out["triton_ports/03_matrix_multiplication.py"] = [
        _record(m.matmul_kernel.fn, t, cfg.num_subgroups, a_ptr=P(f16), b_ptr=P(f16), c_ptr=P(f16), M=i32, N=i32,
                K=i32, stride_am=i32, stride_ak=i32, stride_bk=i32, stride_bn=i32, stride_cm=i32, stride_cn=i32,
                ACTIVATION="", **cfg.kwargs) for t in ("cpu", "pvc")]
    m = load_example("triton_ports/03a_matrix_multiplication_descriptor.py")
    cfg = m.matmul_tma_persistent_get_configs()[0]
    out["triton_ports/03a_matrix_multiplication_descriptor.py"] = [
        _record(m.matmul_kernel_descriptor_persistent.fn, t, cfg.num_subgroups, a_ptr=P(f16), b_ptr=P(f16),
                c_ptr=P(f16), M=i32, N=i32, K=i32, NUM_SMS=64, WARP_SPECIALIZE=False, **cfg.kwargs)
        for t in ("cpu", "pvc")]
    m = load_example("triton_ports/04_low_memory_dropout.py")
    out["triton_ports/04_low_memory_dropout.py"] = [
        _record(m._dropout, t, 4, x_ptr=P(f32), x_keep_ptr=P(xl.int1), output_ptr=P(f32), n_elements=i32, p=f32,
                BLOCK_SIZE=1024) for t in ("cpu", "pvc")] + [
        _record(m._seeded_dropout, t, 4, x_ptr=P(f32), output_ptr=P(f32), n_elements=i32, p=f32, seed=i32,
                BLOCK_SIZE=1024) for t in ("cpu", "pvc")]
    m = load_example("triton_ports/05_layer_norm.py")
    out["triton_ports/05_layer_norm.py"] = [
        _record(m._layer_norm_fwd_fused, t, 8, X=P(f16), Y=P(f16), W=P(f16), B=P(f16), Mean=P(f32), Rstd=P(f32),
                stride=i32, N=i32, eps=f32, BLOCK_SIZE=8192) for t in ("cpu", "pvc")]
    ONE = jitmod.ConstArg(1)   # (launches compile an int argument equal to 1 as the constant)
    m = load_example("triton_ports/06_fused_attention.py")
    out["triton_ports/06_fused_attention.py"] = [
        _record(m._attn_fwd, t, 2, Q=P(f16), K=P(f16), V=P(f16), sm_scale=f32, M=P(f32), Out=P(f16),
                **{f"stride_{x}{d}": i32 for x in "qkvo" for d in "zh"},
                stride_qm=i32, stride_qk=ONE, stride_kn=i32, stride_kk=ONE, stride_vk=i32, stride_vn=ONE, stride_om=i32,
                stride_on=ONE, Z=i32, H=i32, N_CTX=i32, HEAD_DIM=64, BLOCK_M=32, BLOCK_N=16, CAUSAL=causal)
        for t in ("cpu", "pvc") for causal in (False, True)]
    m = load_example("gemm/gemm.py")
    report = load_example("gemm/isa_report.py")
    recs = []
    for target, dtype, layout in (("pvc", "bf16", "nn"), ("pvc", "bf16", "tn"), ("bmg", "f16", "tt"),
                                  ("dg2", "bf16", "nt"), ("cpu", "f32", "nn"), ("cpu", "int8", "nt")):
        cfg = m.configs_for(dtype, target)[0]
        ab = {"bf16": xl.bfloat16, "f16": f16, "f32": f32, "int8": xl.int8}[dtype]
        k = cfg.kwargs
        sig = report.signature(ab, i32 if ab.is_int else f32, layout, k["BM"], k["BN"], k["BK"], k.get("PREFETCH", 0),
                               k.get("K_UNROLL", 1))
        recs.append(_record(m.gemm_kernel, target, cfg.num_subgroups, **sig))
    out["gemm/gemm.py"] = recs
    m = load_example("attention/attention.py")
    report = load_example("attention/isa_report.py")
    recs = []
    for target, dt in (("pvc", xl.bfloat16), ("cpu", f32)):
        for kernel in (m.attn_fwd, m.attn_bwd_dkdv, m.attn_bwd_dq):
            cfg = m.configs_for(target, kernel.__name__)[0]
            for causal in (False, True):
                sig = report.signature(kernel, dt, 64, cfg.kwargs["BM"], cfg.kwargs["BN"], causal)
                recs.append(_record(kernel, target, cfg.num_subgroups, **sig))
        recs.append(_record(m.attn_bwd_preprocess, target, 4, O=P(dt), DO=P(dt), DELTA=P(f32), N_CTX=i32, D=64,
                            BM=32))
    out["attention/attention.py"] = recs
    return out
