import functools
import os

import numpy as np
import pytest

import xekern as xk
from xekern.tools import toolchain

SEED = int(os.environ.get("XEKERN_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))

# the offline GPU toolchain stays where it was installed when a test points XEKERN_CACHE_DIR elsewhere
os.environ.setdefault("XEKERN_TOOLCHAIN_DIR", toolchain.root_dir())


def pytest_report_header(config):
    return f"xekern test seed: {SEED} (rerun with XEKERN_TEST_SEED={SEED})"


def pytest_configure(config):
    """Record every kernel the session compiles, for the IR round trip after each test (ir_corpus.py)."""
    from ir_corpus import RECORDER
    RECORDER.install()
    config.pluginmanager.register(RECORDER, "xekern-kernel-recorder")


def pytest_unconfigure(config):
    from ir_corpus import RECORDER
    RECORDER.uninstall()


@pytest.fixture(autouse=True)
def ir_round_trip():
    """After each test: every IR stage of the kernels it compiled prints, parses and prints back to the
    same text (ir_corpus.Recorder.check_pending); a failure names kernel, stage and line."""
    yield
    from ir_corpus import RECORDER
    failures = RECORDER.check_pending()
    if failures:
        pytest.fail(f"{len(failures)} compilations of this test do not round-trip their IR:\n" +
                    "\n".join(failures[:20]), pytrace=False)


@pytest.fixture
def rng(request):
    """Fresh random data every run; the seed is in the report header and in failure messages."""
    seed = (SEED + hash(request.node.nodeid)) % (1 << 32)
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


def poisoned(shape, dtype):
    """An output buffer filled with a value no kernel writes by accident (NaN, or 0x5A bytes)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.full(shape, np.nan, dtype)
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0x5A
    return out


CPU_TARGETS = ["cpu", "cpu8"]
GPU_TARGETS = ["pvc", "dg2"]


def close(a, b, rtol, atol=0.0):
    """``assert_allclose`` in float64 (bfloat16 and float16 arrays compare too)."""
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


@functools.lru_cache(maxsize=None)
def interpreted(kernel):
    """The same kernel (same source, same ``num_subgroups``), decorated with ``interpret=True``."""
    return xk.jit(kernel.fn, num_subgroups=kernel.num_subgroups, interpret=True)


class Backend:
    """One way to run a kernel: the CPU device compiling for its 16-wide GPU model (``cpu``) or its
    8-wide one (``cpu8``, dg2's subgroups and no tf32 DPAS), or the NumPy interpreter
    (``interpret``, with the ``target`` record's numbers: ``cpu`` unless ``on`` says otherwise).
    A test that takes the ``backend`` fixture runs its one body on each::

        def test_add(backend, rng):
            out = backend.run(add_kernel, grid, [x, y, poisoned(n, np.float32), n], BLOCK=1024)[2]
    """

    def __init__(self, name: str, target: str, interpret: bool = False):
        self.name, self.target, self.interpret = name, target, interpret

    def __repr__(self) -> str:
        return self.name

    @property
    def sg_size(self) -> int:
        return xk.get_target(self.target).sg_size

    def on(self, target: str) -> "Backend":
        """The interpreter with another target record's numbers (its sub-group size, ...)."""
        assert self.interpret, "a device backend compiles for its own target"
        return Backend(f"interpret-{target}", target, interpret=True)

    def kernel(self, kernel):
        """``kernel`` as this backend launches it: itself, or on the interpreter ``interpreted(kernel)``."""
        return interpreted(kernel) if self.interpret else kernel

    def launch(self, kernel, grid, *args, **kwargs):
        """``kernel[grid](*args, **kwargs)`` here; returns the ``Launch`` (an interpreted one has no event)."""
        launch = self.kernel(kernel)[grid](*args, target=self.target, **kwargs)
        assert (launch.event is None) == self.interpret, f"{self.name} launched {launch.kernel!r}"
        return launch

    def run(self, kernel, grid, args, same=None, **meta) -> list:
        """Launch ``kernel`` on copies of ``args`` (arrays copied) and return the copies. ``same``
        ({argument index: (rtol, atol), or 0 for bit for bit}): on the interpreter, those outputs are
        also compared with the CPU device's from the same inputs, the two oracles against each other."""
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        self.launch(kernel, grid, *got, **meta)
        if self.interpret and same:
            dev = BACKENDS["cpu"].run(kernel, grid, args, **meta)
            for i, tol in same.items():
                if tol == 0:
                    np.testing.assert_array_equal(got[i], dev[i])
                else:
                    close(got[i], dev[i], *tol)
        return got


BACKENDS = {b.name: b for b in (Backend("cpu", "cpu"), Backend("cpu8", "cpu8"), Backend("interpret", "cpu", True))}


@pytest.fixture(params=list(BACKENDS))
def backend(request) -> Backend:
    """Each backend in turn (``cpu``, ``cpu8``, ``interpret``): one test body, run on every one."""
    return BACKENDS[request.param]


def c_div(a, b):
    """C's truncating division and remainder, exactly (Python ints), wrapped to the dtype."""
    bits = a.dtype.itemsize * 8

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    q = [wrap(abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1)) for x, y in zip(a, b)]
    r = [wrap(int(x) - int(y) * qq) for x, y, qq in zip(a, b, q)]
    return np.array(q, a.dtype), np.array(r, a.dtype)
