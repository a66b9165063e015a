import os

import numpy as np
import pytest

from xekern.tools import toolchain

SEED = int(os.environ.get("XEKERN_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))

# the offline GPU toolchain stays where it was installed when a test points XEKERN_CACHE_DIR elsewhere
os.environ.setdefault("XEKERN_TOOLCHAIN_DIR", toolchain.root_dir())


def pytest_report_header(config):
    return f"xekern test seed: {SEED} (rerun with XEKERN_TEST_SEED={SEED})"


def pytest_configure(config):
    """Record every kernel the session compiles, for test_ir_roundtrip.py (ir_corpus.py)."""
    from ir_corpus import RECORDER
    RECORDER.install()
    config.pluginmanager.register(RECORDER, "xekern-kernel-recorder")


def pytest_unconfigure(config):
    from ir_corpus import RECORDER
    RECORDER.uninstall()


def pytest_collection_modifyitems(session, config, items):
    """test_ir_roundtrip.py runs last: it checks every kernel the tests before it compiled."""
    items.sort(key=lambda item: item.path.name == "test_ir_roundtrip.py")


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


def c_div(a, b):
    """C's truncating division and remainder, exactly (Python ints), wrapped to the dtype."""
    bits = a.dtype.itemsize * 8

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    q = [wrap(abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1)) for x, y in zip(a, b)]
    r = [wrap(int(x) - int(y) * qq) for x, y, qq in zip(a, b, q)]
    return np.array(q, a.dtype), np.array(r, a.dtype)
