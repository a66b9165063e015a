"""``python -m xekern``: every subcommand run in a subprocess against a kernel file written here.

The ISA tests need ocloc and iga64 (.ci/run installs them); like tests/test_isa_tool.py they fail
rather than skip when the tools are missing.
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNELS = textwrap.dedent('''
    import xekern as xk
    import xekern.language as xl


    @xk.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: xl.constexpr):
        offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
        mask = offs < n
        xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=mask) + xl.load(y_ptr + offs, mask=mask), mask=mask)


    @xk.jit
    def gemm_desc(a_ptr, b_ptr, c_ptr, M, N, K, BM: xl.constexpr, BN: xl.constexpr, BK: xl.constexpr):
        m0 = xl.program_id(0) * BM
        n0 = xl.program_id(1) * BN
        a_desc = xl.make_tensor_descriptor(a_ptr, shape=(M, K), strides=(K, 1), block_shape=(BM, BK))
        b_desc = xl.make_tensor_descriptor(b_ptr, shape=(K, N), strides=(N, 1), block_shape=(BK, BN))
        c_desc = xl.make_tensor_descriptor(c_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
        acc = xl.zeros((BM, BN), c_ptr.dtype.elem)
        for k0 in range(0, K, BK):
            acc = xl.dot(a_desc.load((m0, k0)), b_desc.load((k0, n0)), acc)
        c_desc.store((m0, n0), acc)


    @xk.jit
    def broken(x_ptr, n):
        v = xl.load(x_ptr + xl.arange(0, 100))
        xl.store(x_ptr, v)


    def helper(x):
        return x
''')

ADD_SIG = "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32"
GEMM = ["kern.py:gemm_desc", "-s", "a_ptr=*bf16,b_ptr=*bf16,c_ptr=*fp32,M=i32,N=i32,K=i32", "BM=64", "BN=64",
        "BK=32"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "kern.py").write_text(KERNELS)
    (d / "cache").mkdir()
    return d


def xekern(work, *args, env=None, ok=True, input=None):
    """Run ``python -m xekern *args`` in ``work`` (``input``: its stdin); check the exit status (0, or 2
    when ``ok`` is False)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("XEKERN_")}  # only the knobs a test sets
    e.update(XEKERN_CACHE_DIR=str(work / "cache"), XEKERN_TOOLCHAIN_DIR=os.environ["XEKERN_TOOLCHAIN_DIR"],
             PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p), **(env or {}))
    r = subprocess.run([sys.executable, "-m", "xekern", *map(str, args)], cwd=work, capture_output=True, text=True,
                       env=e, timeout=600, input=input)
    want = 0 if ok else 2
    assert r.returncode == want, f"exit {r.returncode}, expected {want}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr
    return r


# ---- compile -----------------------------------------------------------------------------------------

def test_compile_xegpu_is_the_default_stage(work):
    out = xekern(work, "compile", "kern.py:add_kernel", "--signature", ADD_SIG, "BLOCK=1024", "--target", "cpu").stdout
    assert out.startswith("func.func @add_kernel(%x_ptr: !xegpu.ptr<f32>")
    assert "xegpu.load_gather" in out and "xegpu.store_scatter" in out
    assert 'level = "wg"' in out and "arith.constant 1024" in out


@pytest.mark.parametrize("stage,expect", [("layout", 'level = "wg"'), ("sg", 'level = "sg"'),
                                          ("lane", 'level = "lane"'), ("llir", "define spir_kernel void @add_kernel"),
                                          ("spirv", "OpEntryPoint Kernel")])
def test_compile_every_stage(work, stage, expect):
    out = xekern(work, "compile", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=256", "--target", "pvc",
                 "--emit", stage).stdout
    assert expect in out
    if stage == "lane":
        assert "gpu.lane_id" in out and 'target = "pvc"' in out and "sg_size = 16" in out


def test_compile_the_one_kernel_of_a_file_positional_signature_values_after_options(work):
    (work / "sub").mkdir(exist_ok=True)
    (work / "sub" / "one.py").write_text("import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname("
                                          "__file__)))\nfrom kern import add_kernel\n")
    r = xekern(work, "compile", "sub/one.py", "-s", "*float32,*fp32,*f32,int32", "--target", "dg2", "--emit",
               "lane,llir", "-o", "out.txt", "BLOCK=128", "--num-subgroups", "2")
    text = (work / "out.txt").read_text()
    assert "// ----- add_kernel: lane (dg2) -----" in text and "// ----- add_kernel: llir (dg2) -----" in text
    assert "num_subgroups = 2" in text and "sg_size = 8" in text and "spir_kernel" in text
    assert r.stdout == "" and "wrote out.txt" in r.stderr


def test_compile_an_integer_argument_specialized_for_1(work):
    """``n=1`` is the specialization a launch with 1 gets: no parameter, the constant in its place."""
    out = xekern(work, "compile", "kern.py:add_kernel", "-s", "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32", "n=1",
                 "BLOCK=256", "--target", "cpu").stdout
    assert "%n:" not in out.splitlines()[0] and "arith.constant 1 :" in out, out
    r = xekern(work, "compile", "kern.py:add_kernel", "-s", "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32", "n=2",
               "BLOCK=256", "--target", "cpu", ok=False)
    assert "unknown type '2' for parameter 'n'" in r.stderr, r.stderr


def test_compile_emit_spv_writes_the_binary_module(work):
    xekern(work, "compile", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--target", "cpu", "--emit", "spv",
           "-o", "k.spv")
    data = (work / "k.spv").read_bytes()
    assert data[:4] == bytes.fromhex("03022307")  # the SPIR-V magic number, little-endian
    r = xekern(work, "compile", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--emit", "spv", ok=False)
    assert "give it alone, with -o FILE.spv" in r.stderr


def test_compile_emit_isa_prints_the_isa_then_its_summary(work):
    out = xekern(work, "compile", *GEMM, "--target", "pvc", "--emit", "isa", "--grf", "256").stdout
    isa_text, _, summary = out.partition("gemm_desc on pvc (ocloc -device pvc")
    assert re.search(r"^\s*dpas\.8x8", isa_text, re.M), isa_text[:2000]
    assert "256 GRF" in summary and re.search(r"^\s+dpas\s+[1-9]\d*\s+[1-9]", summary, re.M), summary


# ---- isa ---------------------------------------------------------------------------------------------

def test_isa_summary_of_a_gemm_shows_dpas_in_its_k_loop(work):
    out = xekern(work, "isa", "--target", "pvc", *GEMM, "--grf", "256").stdout
    assert out.startswith("gemm_desc on pvc")
    assert "SIMD16, 256 GRF, no spill, scratch 0 B/thread" in out
    m = re.search(r"^\s+dpas\s+(\d+)\s+(\d+)\s+dpas\.8x8 x\d+", out, re.M)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, out
    assert re.search(r"innermost loop at \S+: \d+ instructions, dpas share \d+\.\d%", out), out
    assert "load_block2d" in out and "store_block2d" in out
    assert "\n  dpas.8x8" not in out  # the ISA text only with --full


def test_isa_full_a_kernel_without_loop_and_the_target_from_xekern_target(work):
    # (one slot per lane: no block run, so no loop that takes a run slot by slot at an edge)
    out = xekern(work, "isa", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=16", "--num-subgroups", "1",
                 "--full").stdout
    isa_text, _, summary = out.partition("add_kernel on pvc")
    assert re.search(r"^\s*send\.ugm", isa_text, re.M) and summary
    assert "no loop in this kernel" in summary and "dpas share" not in summary
    out = xekern(work, "isa", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=256", env={"XEKERN_TARGET": "dg2"}).stdout
    assert out.startswith("add_kernel on dg2 (ocloc -device dg2-g10)") and "SIMD8" in out


# ---- opt ---------------------------------------------------------------------------------------------

def test_opt_runs_passes_on_a_printed_stage(work):
    """compile --emit layout, then opt with the passes after it gives compile --emit lane; stdin, -o,
    --list."""
    layout = xekern(work, "compile", *GEMM, "--target", "pvc", "--emit", "layout").stdout
    lane = xekern(work, "compile", *GEMM, "--target", "pvc", "--emit", "lane").stdout
    (work / "gemm.ir").write_text(layout)
    assert xekern(work, "opt", "-p", "sg,slm-barriers,inst,merge-block-messages,lane", "gemm.ir").stdout == lane
    r = xekern(work, "opt", "-p", "sg,inst", "-", "-o", "inst.ir", input=layout)
    assert (work / "inst.ir").read_text().startswith("func.func @gemm_desc(") and 'level = "inst"' in \
        (work / "inst.ir").read_text() and r.stdout == ""
    from xekern.lowering.pipeline import PASSES
    assert xekern(work, "opt", "--list").stdout.split() == [p.name for p in PASSES]


def test_opt_errors_are_one_line_with_their_place(work):
    xegpu = xekern(work, "compile", "kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--target", "pvc").stdout
    (work / "add.ir").write_text(xegpu)
    r = xekern(work, "opt", "-p", "sg", "add.ir", ok=False)   # wg-to-sg before layout propagation
    assert r.stderr.startswith("xekern opt: error: add.ir:") and "pass 'sg': wg-to-sg: " in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stdout == ""
    (work / "bad.ir").write_text(xegpu.replace(" = arith.muli ", " = arith.mul ", 1))
    line = next(i for i, ln in enumerate(xegpu.splitlines(), 1) if " = arith.muli " in ln)
    r = xekern(work, "opt", "-p", "layout", "bad.ir", ok=False)
    assert r.stderr == f"xekern opt: error: bad.ir:{line}:8: unknown op 'arith.mul'\n"


@pytest.mark.parametrize("args,message", [
    (["-p", "layout,nope", "x.ir"], "-p layout,nope: unknown pass 'nope'; passes: drop-breakpoints, fp-fusion, block-pointers, "),
    (["x.ir"], "give the passes to run: -p PASS[,PASS] (python -m xekern opt --list names them)"),
    (["-p", "sg", "missing.ir"], "cannot read missing.ir: No such file or directory"),
    (["-p", "sg", "x.ir"], "x.ir: pass 'sg' runs on wg-level IR, but @k is at level 'sg' (its 'level' attribute)"),
    (["-p", "inst", "x.ir", "--target", "dg2"], "x.ir:2:3: the input does not verify: 'vector.step': invalid layout "
                                               "for vector<16xi32, #xegpu.layout<lane_layout = [16], "),
    (["-p", "inst", "nolevel.ir"], "@k has no 'target' attribute: give one (--target; targets: "),
])
def test_opt_errors_in_process(tmp_path, monkeypatch, capsys, args, message):
    from xekern.__main__ import main
    ir_text = ('func.func @k() attributes {level = "sg", num_subgroups = 1, sg_size = 16, target = "pvc"} {\n'
               '  %0 = vector.step : vector<16xi32, #xegpu.layout<lane_layout = [16], lane_data = [1]>>\n'
               '  func.return\n}\n')
    (tmp_path / "x.ir").write_text(ir_text)
    (tmp_path / "nolevel.ir").write_text(ir_text.replace(', target = "pvc"', ""))
    monkeypatch.chdir(tmp_path)
    assert main(["opt", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xekern opt: error: " + message) and err.count("\n") == 1, err


# ---- devices, cache, knobs ---------------------------------------------------------------------------

def test_devices_lists_the_cpu_device_targets_and_the_default(work):
    out = xekern(work, "devices", env={"XEKERN_DEVICE": "opencl:cpu"}).stdout
    assert re.search(r"^ \* opencl:cpu:\d", out, re.M), out
    assert "-> xekern target cpu" in out
    for name in ("pvc", "bmg", "dg2", "cpu", "cpu8"):
        assert re.search(rf"^  {name}\s", out, re.M), name
    assert re.search(r"^default device: opencl:cpu:\d -> xekern target cpu \(from XEKERN_DEVICE=opencl:cpu\)",
                     out, re.M)


def test_devices_with_a_bad_default_device_is_an_error(work):
    r = xekern(work, "devices", env={"XEKERN_DEVICE": "nosuchbackend:gpu"}, ok=False)
    assert "XEKERN_DEVICE='nosuchbackend:gpu' names no device" in r.stderr
    assert "opencl:cpu" in r.stdout  # the listing is still printed


def test_cache_info_after_a_launch_and_clear(work):
    launch = ("import sys, numpy as np; sys.path.insert(0, '.'); from kern import add_kernel; "
              "x = np.arange(300, dtype=np.float32); o = np.zeros_like(x); "
              "add_kernel[(3,)](x, x, o, 300, BLOCK=128, device='opencl:cpu'); assert (o == 2 * x).all()")
    env = dict(os.environ, XEKERN_CACHE_DIR=str(work / "cache"), PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", launch], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    out = xekern(work, "cache", "info").stdout
    assert f"dir:     {work / 'cache'}" in out
    n = int(re.search(r"^entries: (\d+)$", out, re.M).group(1))
    assert n >= 1 and int(re.search(r"^bytes:   (\d+) ", out, re.M).group(1)) > 0
    out = xekern(work, "cache", "clear").stdout
    assert out.strip() == f"removed {n} entr{'y' if n == 1 else 'ies'} from {work / 'cache'}"
    assert re.search(r"^entries: 0$", xekern(work, "cache", "info").stdout, re.M)


def test_knobs_lists_every_variable_with_its_value_and_doc(work):
    from xekern import knobs
    out = xekern(work, "knobs", env={"XEKERN_TARGET": "dg2", "XEKERN_DUMP": "", "XEKERN_CACHE": ""}).stdout
    names = re.findall(r"``(XEKERN_\w+)``", knobs.__doc__)
    assert len(names) >= 10
    for name in names:
        assert re.search(rf"^{name}\s", out, re.M), name
    assert re.search(r"^XEKERN_TARGET\s+= dg2$", out, re.M)
    assert re.search(r"^XEKERN_DUMP\s+unset$", out, re.M)
    assert re.search(r"^XEKERN_CACHE\s+unset \(default: 1\)$", out, re.M)
    assert "0 disables the on-disk cache" in out


@pytest.mark.parametrize("command", ["devices", "compile", "isa", "opt", "cache", "knobs"])
def test_every_command_has_help_with_examples(work, command):
    out = xekern(work, command, "--help").stdout
    assert "example" in out and f"python -m xekern {command}" in out


# ---- errors: one paragraph on stderr, exit status 2 ----------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["kern.py:nope", "-s", ADD_SIG], "kern.py has no kernel 'nope'; its @xk.jit kernels: add_kernel, broken, "
                                      "gemm_desc"),
    (["kern.py:helper"], "'helper' in kern.py is a function, not an @xk.jit kernel"),
    (["kern.py"], "kern.py defines 3 @xk.jit kernels (add_kernel, broken, gemm_desc); name one as kern.py:KERNEL"),
    (["missing.py:k"], "no such file: missing.py"),
    (["kern.py:add_kernel", "-s", "x_ptr=*fp33,y_ptr=*fp32,out_ptr=*fp32,n=i32", "BLOCK=64"],
     "unknown type '*fp33' for parameter 'x_ptr'"),
    (["kern.py:add_kernel", "BLOCK=64"], 'types for x_ptr, y_ptr, out_ptr, n (as --signature "x_ptr=*fp32,'),
    (["kern.py:add_kernel", "-s", ADD_SIG], "needs values for the constexprs BLOCK (as arguments: BLOCK=...)"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=big"], "cannot read the value 'big' of constexpr 'BLOCK'"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "Q=1"], "kernel 'add_kernel' has no parameter 'Q'"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--target", "dg2", "--grf", "256"],
     "--grf 256: target dg2 has GRF modes 128"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--num-subgroups", "3"],
     "num_subgroups must be a power of 2"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--target", "cpu", "--emit", "isa"],
     "IsaError: target cpu is not an Intel GPU"),
    (["kern.py:add_kernel", "-s", ADD_SIG, "BLOCK=64", "--emit", "ptx"], "--emit ptx: unknown stage ptx"),
])
def test_compile_errors_name_the_problem(work, args, message):
    extra = [] if "--target" in args else ["--target", "cpu"]
    r = xekern(work, "compile", *args, *extra, ok=False)
    assert r.stderr.startswith("xekern compile: error: ") and message in r.stderr, r.stderr
    assert r.stdout == ""


def test_a_compile_error_in_the_kernel_shows_its_file_and_line(work):
    r = xekern(work, "compile", "kern.py:broken", "-s", "*fp32,i32", "--target", "cpu", ok=False)
    line = KERNELS.splitlines().index("    v = xl.load(x_ptr + xl.arange(0, 100))") + 1
    assert f"CompilationError: at {work / 'kern.py'}:{line}:" in r.stderr, r.stderr
    assert "v = xl.load(x_ptr + xl.arange(0, 100))" in r.stderr and "power of 2" in r.stderr


def test_errors_in_the_file_itself_and_debug_tracebacks(work):
    (work / "bad.py").write_text("import xekern as xk\n\ndef f(:\n    pass\n")
    r = xekern(work, "compile", "bad.py:f", ok=False)
    assert f"{work / 'bad.py'}:3: syntax error" in r.stderr
    (work / "raises.py").write_text("import xekern as xk\n\nraise RuntimeError('no GPU here')\n")
    r = xekern(work, "isa", "raises.py:k", ok=False)
    assert f"importing raises.py failed: {work / 'raises.py'}:3: RuntimeError: no GPU here" in r.stderr
    env = dict(os.environ, XEKERN_CACHE_DIR=str(work / "cache"), PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-m", "xekern", "--debug", "compile", "kern.py:nope"], cwd=work,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 2 and "Traceback" in r.stderr and "has no kernel 'nope'" in r.stderr


def test_unknown_option_is_a_usage_error(work):
    r = xekern(work, "compile", "kern.py:add_kernel", "BLOCK=64", "--bogus", ok=False)
    assert "usage: python -m xekern compile" in r.stderr and "unrecognized arguments: --bogus" in r.stderr


# ---- the parsers, in process -------------------------------------------------------------------------

def test_type_and_value_spellings():
    import xekern as xk
    import xekern.language as xl
    from xekern.__main__ import UsageError, parse_type, parse_value
    P = xk.pointer
    for text, t in [("*fp32", P(xl.float32)), ("*bf16", P(xl.bfloat16)), ("*fp16", P(xl.float16)), ("*i8", P(xl.int8)),
                    ("*u8", P(xl.uint8)), ("*i32", P(xl.int32)), ("i32", xl.int32), ("i64", xl.int64),
                    ("fp32", xl.float32), ("fp64", xl.float64), ("i1", xl.int1), ("*float32", P(xl.float32)),
                    ("bfloat16", xl.bfloat16), ("*xl.uint8", P(xl.uint8)), ("ui16", xl.uint16)]:
        assert parse_type(text, "p") == t, text
    for text, v in [("256", 256), ("0x100", 256), ("-3", -3), ("0.5", 0.5), ("true", True), ("False", False),
                    ("xl.bfloat16", xl.bfloat16), ("bfloat16", xl.bfloat16), ("fp16", xl.float16), ("'relu'", "relu")]:
        got = parse_value(text, "C")
        assert got == v and type(got) is type(v), text
    for bad in ("*fp33", "float8", "**fp32", ""):
        with pytest.raises(UsageError, match="types are spelled like Triton's"):
            parse_type(bad, "p")
