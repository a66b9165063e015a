"""Fuzzing the compiler with hypothesis: random kernel sources from a small grammar of the language.

Valid kernels (element-wise expressions over two loaded tiles: ``+ - * /``, ``xl.where`` over
comparisons, ``xl.maximum``/``xl.minimum``, ``xl.exp``, ``xl.abs``, negation, constants, casts
through float16 and int32) must compile and match the interpreter on every element and NumPy
wherever the expression is well conditioned; invalid ones (a construct the language rejects
spliced into a valid kernel) must raise ``xekern.CompilationError`` — never any other exception.

Each source is written to a real file and imported (xekern reads a kernel from its file).
CI runs a few examples; a longer run::

    XEKERN_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py -q -p no:cacheprovider
"""
import importlib.util
import itertools
import os
import shutil
import tempfile
import textwrap

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import xekern as xk  # noqa: E402

EXAMPLES = int(os.environ.get("XEKERN_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="XEKERN_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
N = 300  # elements: a ragged last block
BLOCK = 128


# ---- the grammar: a node is (source text, NumPy function of (a, b, float type), is it a tile) --------------

def _const(c):
    return (repr(c), lambda a, b, f: f(c), False)


LEAVES = st.sampled_from([("a", lambda a, b, f: a, True), ("b", lambda a, b, f: b, True)]) | \
    st.sampled_from([0.5, 2.0, -1.5, 3.0]).map(_const)

CMPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
        "!=": np.not_equal}
BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def _binary(op, x, y):
    (sx, fx, tx), (sy, fy, ty) = x, y
    return f"({sx} {op} {sy})", lambda a, b, f: BINARY[op](fx(a, b, f), fy(a, b, f)), tx or ty


def _tile(x):
    """A constant expression (Python floats, folded by the frontend) made a float32 tile, since
    ``.to`` and the math builtins take tiles."""
    sx, fx, tx = x
    return x if tx else (f"xl.full((BLOCK,), {sx}, xl.float32)", fx, True)


def _call(name, x, y=None):
    sx, fx, _ = _tile(x)
    if name == "exp":
        return f"xl.exp({sx})", lambda a, b, f: np.exp(fx(a, b, f)), True
    if name == "abs":
        return f"xl.abs({sx})", lambda a, b, f: np.abs(fx(a, b, f)), True
    if name == "neg":
        return f"(-{sx})", lambda a, b, f: -fx(a, b, f), True
    if name == "f16":  # a round trip through float16 (saturates to inf like a device conversion)
        return (f"{sx}.to(xl.float16).to(xl.float32)",
                lambda a, b, f: fx(a, b, f).astype(np.float16).astype(f) if f is np.float32 else fx(a, b, f), True)
    if name == "i32":  # clamped first: float -> int conversion out of range is undefined
        return (f"xl.minimum(xl.maximum({sx}, -1000.0), 1000.0).to(xl.int32).to(xl.float32)",
                lambda a, b, f: np.trunc(np.fmin(np.fmax(fx(a, b, f), -1000), 1000)), True)  # NaN -> -1000
    sy, fy, _ = _tile(y)
    if name in ("maximum", "minimum"):  # NaNs ignored (fmax/fmin), as xl documents
        npf = np.fmax if name == "maximum" else np.fmin
        return f"xl.{name}({sx}, {sy})", lambda a, b, f: npf(fx(a, b, f), fy(a, b, f)), True
    raise AssertionError(name)


def _where(c, x, y):
    (op, (sl, fl, tl), (sr, fr, tr)), (sx, fx, tx), (sy, fy, ty) = c, x, y
    return (f"xl.where({sl} {op} {sr}, {sx}, {sy})",
            lambda a, b, f: np.where(CMPS[op](fl(a, b, f), fr(a, b, f)), fx(a, b, f), fy(a, b, f)),
            tl or tr or tx or ty)


def _extend(children):
    return st.one_of(
        st.builds(_binary, st.sampled_from(sorted(BINARY)), children, children),
        st.builds(_call, st.sampled_from(["exp", "abs", "neg", "f16", "i32"]), children),
        st.builds(_call, st.sampled_from(["maximum", "minimum"]), children, children),
        st.builds(_where, st.tuples(st.sampled_from(sorted(CMPS)), children, children), children, children),
    )


EXPRS = st.recursive(LEAVES, _extend, max_leaves=8)

TEMPLATE = '''
import xekern as xk
import xekern.language as xl


def body(x_ptr, y_ptr, o_ptr, n, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    m = offs < n
    a = xl.load(x_ptr + offs, mask=m, other=1.0)
    b = xl.load(y_ptr + offs, mask=m, other=1.0)
{extra}    r = {expr}
    xl.store(o_ptr + offs, r, mask=m)


kernel = xk.jit(body)
interpreted = xk.jit(body, interpret=True)
'''

# constructs the language rejects, spliced before the result; each must be a CompilationError
INVALID = [
    "    q = undefined_name + a\n",
    "    q = xl.no_such_builtin(a)\n",
    "    q = a + xl.arange(0, 2 * BLOCK)\n",
    "    q = {'k': a}\n",
    "    q = lambda t: t\n",
    "    q = a + 'text'\n",
    "    try:\n        q = a\n    except Exception:\n        q = b\n",
    "    with open('f') as fh:\n        q = a\n",
    "    q = xl.load(x_ptr + offs, mask=1.5)\n",
    "    q = xl.arange(0, 3)\n",
    "    q = xl.arange(0, BLOCK, 2.5)\n",
    "    xl.store(o_ptr + offs, xl.zeros((2 * BLOCK,), xl.float32))\n",
    "    q = xl.sum(a, axis=3)\n",
    "    q = a.to(xl.complex64)\n",
    "    q = xl.program_id(5)\n",
    "    global G\n",
    "    q = yield a\n",
    "    q = a if b else a\n",
    "    import os\n",
    "    class C:\n        pass\n",
    "    q = xl.exp(a, b)\n",
    "    q = xl.maximum(a)\n",
    "    q = xl.load(o_ptr)\n    xl.atomic_add(q, a)\n",
    "    q = a @ b\n",
    "    del a\n",
    "    q = x_ptr * 2\n",
]

_counter = itertools.count()


@pytest.fixture(scope="module")
def workdir():
    d = tempfile.mkdtemp(prefix="xekern-fuzz-")
    old = os.environ.get("XEKERN_CACHE_DIR")
    os.environ["XEKERN_CACHE_DIR"] = os.path.join(d, "cache")  # keep fuzz kernels out of the user's cache
    yield d
    if old is None:
        os.environ.pop("XEKERN_CACHE_DIR", None)
    else:
        os.environ["XEKERN_CACHE_DIR"] = old
    shutil.rmtree(d, ignore_errors=True)


def load_module(workdir, source):
    name = f"fuzz_kernel_{os.getpid()}_{next(_counter)}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def _inputs(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, N).astype(np.float32)
    b = rng.uniform(-3, 3, N).astype(np.float32)
    eq = rng.random(N) < 0.1
    b[eq] = a[eq]  # ties, for == and the where branches
    a[:4] = [0.0, -0.0, 1.0, -1.0]  # the interesting points of exp/abs/comparisons
    b[:4] = [0.0, 1.0, 1.0, 0.0]
    return a, b


@pytest.mark.parametrize("target", ["cpu", "cpu8"])
@FUZZ
@given(expr=EXPRS, seed=st.integers(0, 2**32 - 1))
def test_random_expressions_compile_and_match(workdir, target, expr, seed):
    src, ref, _ = expr
    source = TEMPLATE.format(extra="", expr=src)
    mod, path = load_module(workdir, source)
    a, b = _inputs(seed)
    out = np.full(N, np.nan, np.float32)
    grid = (xk.cdiv(N, BLOCK),)
    try:
        mod.kernel[grid](a, b, out, N, BLOCK=BLOCK, target=target)
    except xk.CompilationError as e:
        if "ZeroDivisionError" in str(e) and path in str(e):
            return  # a constant sub-expression divided by zero, folded at compile time: a fine error
        pytest.fail(f"a valid kernel did not compile:\n{src}\n{e}")
    want_i = np.full(N, np.nan, np.float32)
    mod.interpreted[grid](a, b, want_i, N, BLOCK=BLOCK, target=target)
    note = f"\nexpression: {src}\nfile: {path}"
    # the interpreter runs the same IR with device numerics: equal but for exp, which OpenCL allows
    # 3 ulp off NumPy's; nested, that grows, and a where comparing it may flip on a few elements
    same = np.isclose(out, want_i, rtol=2e-6, atol=1e-30, equal_nan=True)
    if "xl.exp" in src:
        same |= np.isclose(out, want_i, rtol=1e-4, atol=1e-30, equal_nan=True)
        if (~same).sum() <= N // 100:
            same[:] = True
    np.testing.assert_array_equal(np.where(same, want_i, out), want_i, err_msg=note)
    with np.errstate(all="ignore"):
        r32 = np.broadcast_to(ref(a, b, np.float32), (N,)).astype(np.float32)
        r64 = np.broadcast_to(ref(a.astype(np.float64), b.astype(np.float64), np.float64), (N,))
        # NumPy: where float32 and float64 agree (the expression is well conditioned there)
        good = np.isfinite(r64) & np.isfinite(r32) & (np.abs(r32 - r64) <= 1e-4 * np.maximum(1.0, np.abs(r64)))
    np.testing.assert_allclose(out[good], r64[good], rtol=1e-3, atol=1e-3, err_msg=note)


@FUZZ
@given(expr=EXPRS, bad=st.sampled_from(INVALID))
def test_invalid_constructs_raise_compilation_error(workdir, expr, bad):
    source = TEMPLATE.format(extra=bad, expr=expr[0])
    mod, path = load_module(workdir, source)
    a = b = np.ones(N, np.float32)
    out = np.zeros(N, np.float32)
    try:
        mod.kernel[(xk.cdiv(N, BLOCK),)](a, b, out, N, BLOCK=BLOCK, target="cpu")
    except xk.CompilationError as e:
        assert path in str(e), f"the error does not point at the kernel's file:\n{e}"
        return
    except Exception as e:  # noqa: BLE001 -- the property: nothing but CompilationError
        raise AssertionError(f"{type(e).__name__} instead of CompilationError for\n{bad}{e}") from e
    raise AssertionError(f"no error for an invalid construct:\n{textwrap.indent(bad, '  ')}")


@pytest.mark.parametrize("bad", INVALID, ids=range(len(INVALID)))
def test_every_invalid_construct_is_a_compilation_error(workdir, bad):
    """Each invalid construct once, so a gap shows by name rather than by chance."""
    source = TEMPLATE.format(extra=bad, expr="a + b")
    mod, path = load_module(workdir, source)
    a = np.ones(N, np.float32)
    with pytest.raises(xk.CompilationError) as info:
        mod.kernel[(xk.cdiv(N, BLOCK),)](a, a, np.zeros(N, np.float32), N, BLOCK=BLOCK, target="cpu")
    assert path in str(info.value), str(info.value)
