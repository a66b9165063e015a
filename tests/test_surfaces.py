"""2D block messages only on surfaces the hardware takes (lowering/surface_rules.py, runtime/surfaces.py).

A GPU reads and writes garbage, silently, through a 2D block message whose surface breaks its rules
(base, width, pitch: HARDWARE.md); the CPU device, which emulates the messages, would not notice.
So each descriptor's surface is proved at compile time or checked at launch, and one that breaks a
rule goes element by element, correctly, on every backend; the CPU emulation applies the same rules,
so a wrong decision fails a CPU test as it would fail on the GPU."""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import BACKENDS, poisoned
from xekern.lowering.surface_rules import surface_checks
from xekern.runtime import surfaces

P, I32 = xk.pointer, xl.int32
CPU = BACKENDS["cpu"]


@xk.jit(num_subgroups=2)
def shifted_copy(x_ptr, o_ptr, off, M, N, LD, BM: xl.constexpr, BN: xl.constexpr):
    """o[i, j] = x[off + i * LD + j] + 1 through 2D block descriptors; blocks hang over the edges."""
    m0 = xl.program_id(0) * BM - BM // 2
    n0 = xl.program_id(1) * BN - BN // 2
    x = xl.make_tensor_descriptor(x_ptr + off, shape=(M, N), strides=(LD, 1), block_shape=(BM, BN))
    o = xl.make_tensor_descriptor(o_ptr, shape=(M, N), strides=(N, 1), block_shape=(BM, BN))
    o.store((m0, n0), x.load((m0, n0)) + 1)


def sig(dtype):
    return dict(x_ptr=P(dtype), o_ptr=P(dtype), off=I32, M=I32, N=I32, LD=I32, BM=16, BN=16)


# (name, dtype, off, N, LD): what each one breaks
CASES = [
    ("fine", xl.float32, 0, 48, 48),             # 192-byte rows and pitch: 2D block messages
    ("misaligned base", xl.bfloat16, 1, 48, 48),  # x_ptr + 1 bf16: the base is not 4-byte aligned
    ("narrow width", xl.float32, 0, 13, 16),     # 52-byte rows, < 64
    ("odd pitch", xl.float32, 0, 40, 41),        # pitch 164 bytes: not a multiple of 16
    ("unaligned width", xl.bfloat16, 0, 37, 48),  # 74-byte rows: not a multiple of 4
]


def np_dtype(d):
    import ml_dtypes
    return ml_dtypes.bfloat16 if d is xl.bfloat16 else np.dtype(d.user_name)


def run(backend, dtype, off, N, LD, rng, M=37):
    dt = np_dtype(dtype)
    x = rng.standard_normal(off + M * LD + 8).astype(dt)
    o = poisoned((M, N), dt)
    grid = (xk.cdiv(M + 8, 16), xk.cdiv(N + 8, 16))
    launch = backend.launch(shifted_copy, grid, x, o, off, M, N, LD, BM=16, BN=16)
    want = x[off:off + M * LD].reshape(M, LD)[:, :N].astype(np.float64) + 1
    np.testing.assert_allclose(o.astype(np.float64), want, rtol=1e-2 if dt != np.float32 else 1e-6)
    return launch


@pytest.mark.parametrize("name,dtype,off,N,LD", CASES, ids=[c[0] for c in CASES])
def test_every_surface_gives_the_right_result(backend, name, dtype, off, N, LD, rng):
    launch = run(backend, dtype, off, N, LD, rng)
    if backend.name == "cpu":  # (cpu8 models dg2: no 2D block IO; the interpreter has no messages)
        ir = launch.asm["surface-rules"]
        x_desc = [ln for ln in ir.splitlines() if "create_nd_tdesc" in ln][0]
        assert ("block_io = true" in x_desc) == (name == "fine"), x_desc


@pytest.mark.parametrize("name,dtype,off,N,LD", CASES, ids=[c[0] for c in CASES])
def test_no_2d_block_message_for_a_surface_the_rules_forbid(name, dtype, off, N, LD):
    """pvc's code for each case as a launch with these arguments gets it: x's loads are 2D block
    reads only when its surface is fine (o's stores keep theirs: its surface is N wide, N x 4 or 2
    bytes, fine but where N is narrow)."""
    s = sig(dtype)
    x = np.zeros(off + 37 * LD + 8, np_dtype(dtype))
    values = dict(x_ptr=x, o_ptr=np.zeros((37, N), np_dtype(dtype)), off=off, M=37, N=N, LD=LD)
    multiples = {k: 16 for k in ("off", "M", "N", "LD") if values[k] % 16 == 0}
    answers = surfaces.answers(surface_checks(_frontend(s, multiples), xk.targets["pvc"])[0], values)
    c = shifted_copy.compile_offline(s, target="pvc", multiple_of=multiples, surfaces=answers)
    ir = c.asm["surface-rules"]
    x_desc, o_desc = [ln for ln in ir.splitlines() if "create_nd_tdesc" in ln]
    assert ("block_io = true" in x_desc) == (name == "fine"), x_desc
    llir = c.asm["llir_unoptimized"]
    reads = llir.count("raw_sends") + llir.count("LSC2DBlockRead")
    assert (reads > 0) == (name == "fine"), (name, reads)
    o_fine = N * dtype.itemsize >= 64 and N * dtype.itemsize % 16 == 0
    assert ("lsc_store_block2d" in llir) == o_fine, name


def _frontend(s, multiple_of):
    """The workgroup IR a launch's compile starts from (what surface_checks reads)."""
    from xekern.frontend.compile import MULTIPLES, ConstArg, compile_to_ir
    from xekern.lowering.pipeline import Options
    s = {k: ConstArg(v) if isinstance(v, int) else v for k, v in s.items()}
    return compile_to_ir(shifted_copy, dict(s, **{MULTIPLES: multiple_of}), Options(target=xk.targets["pvc"],
                                                                                    num_subgroups=2))


def test_checks_name_what_they_need():
    """bf16 x's descriptor at x_ptr + off: the base must be 4-byte aligned (x_ptr's address, checked at
    launch; off proved a multiple of 16 elements), its width N at least 32 elements, its pitch LD at
    least 32 elements (and multiples: proved by their 16-divisibility)."""
    checks, _ = surface_checks(_frontend(sig(xl.bfloat16), {"off": 16, "N": 16, "LD": 16}), xk.targets["pvc"])
    (where, x_conds), (_, o_conds) = checks
    line = next(n for n, text in enumerate(open(__file__), 1) if "x = xl.make_tensor_descriptor(x_ptr + off" in text)
    assert where.endswith(f"test_surfaces.py:{line}"), where
    assert x_conds == [["align", "x_ptr", 4], ["ge", ["arg", "N", None], 32], ["ge", ["arg", "LD", None], 32]]
    assert o_conds == [["align", "o_ptr", 4], ["ge", ["arg", "N", None], 32], ["ge", ["arg", "N", None], 32]]
    # without the divisibility, the multiples are checked too; off is then unknown: x goes element-wise
    checks, decided = surface_checks(_frontend(sig(xl.bfloat16), {}), xk.targets["pvc"])
    assert len(checks) == 1 and ["mod", ["arg", "N", None], 2] in checks[0][1]
    assert sorted(ok for ok, _ in decided.values()) == [False, True]


def test_a_launch_compiles_once_per_answer(rng):
    """bf16 N = 48 and N = 16 specialize alike (multiples of 16), but 16 bf16 are 32 bytes: too narrow."""
    first = run(CPU, xl.bfloat16, 0, 48, 48, rng).kernel
    again = run(CPU, xl.bfloat16, 0, 48, 48, rng).kernel
    assert again is first and first.meta["surface_answers"] is None
    narrow = run(CPU, xl.bfloat16, 0, 16, 48, rng).kernel
    assert narrow is not first and narrow.meta["surface_answers"] == [False, False]
    assert run(CPU, xl.bfloat16, 0, 16, 48, rng).kernel is narrow


def test_the_cpu_emulation_fails_where_a_gpu_would_compute_garbage(monkeypatch, rng):
    """Were xekern to send a 2D block message on a forbidden surface, the GPU would compute garbage:
    the CPU's emulation of that descriptor reads zeros and writes nothing, so the test fails."""
    monkeypatch.setattr(surfaces, "answers", lambda checks, values: tuple(True for _ in checks))
    with pytest.raises(AssertionError):
        run(CPU, xl.float32, 0, 40, 41, rng)   # odd pitch, launched as if it were fine


def test_a_warmed_kernel_refuses_arguments_its_surfaces_do_not_take(rng):
    bf16 = np_dtype(xl.bfloat16)
    x = rng.standard_normal(37 * 48).astype(bf16)
    k = shifted_copy.warmup(x, np.empty((37, 48), bf16), 0, 37, 48, 48, BM=16, BN=16, grid=(1,), target="cpu")
    with pytest.raises(xk.LaunchError, match="tensor surfaces take 2D block messages"):
        k[(3, 2)](x, np.empty((37, 16), bf16), 0, 37, 16, 48, 16, 16)   # 16 bf16: 32-byte rows


@pytest.mark.parametrize("target,compiler", [("pvc", "current"), ("pvc", "12504"), ("bmg", "current")])
def test_an_aligned_down_base_builds_with_every_emitter(target, compiler):
    """The base aligned down to 64 bytes moves x by its low bits; a K loop advancing a descriptor
    around it once made both IGCs narrow that x into a 32-bit add3 with a 64-bit source, which
    their vISA verifier rejects: every emitter the compiler takes builds, with its block reads (IGC
    12504 does not know bmg)."""
    from test_tiles_device import row_sums_advance
    from xekern.lowering import emitters
    from xekern.tools.isa import compile_isa
    s = dict(x_ptr=P(xl.float16), o_ptr=P(xl.float32), M=I32, K=I32, BM=16, BK=32)
    t = xk.targets[target]
    names = [e.name for e in emitters.candidates(t, emitters.OFFLINE[compiler])]
    assert names
    for name in names:
        c = row_sums_advance.compile_offline(s, target=target, emitter=name, compiler=compiler)
        r = compile_isa(c.spirv, c.name, target, compiler=compiler)
        assert r.counts.load_block2d >= 1 and not r.spills, (name, r.summary())
