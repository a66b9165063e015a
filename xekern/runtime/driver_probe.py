"""What a device's driver compiler accepts, found out once per device and driver version.

A kernel's emitter (``lowering/emitters.py``) depends on the compiler inside the user's driver,
not on the GPU alone: IGC 2.x takes the ``SPV_INTEL_2d_block_io`` and subgroup matrix-multiply
ops, IGC 1.0 (Debian 12's 12504) rejects them. So a GPU's driver is asked, not guessed from the
device's name: a tiny module using those ops (a 2D block load, store and one DPAS, emitted by the
spirv-ext emitter for the device's target) is built for the device. Accepted: ``igc2``; rejected:
``igc1``. The build runs in a child process, so a driver that crashes on it cannot take the
user's process down (that also reads as ``igc1``), and the answer is kept in memory and on disk
(``<cache dir>/drivers/``, keyed by backend, device name and driver version): a process pays
the probe once per device, later processes not at all. ``XEKERN_DRIVER`` names the driver
instead (``igc2``, ``igc1``). The CPU device needs no probe.

    >>> from xekern.runtime import device, driver_probe
    >>> driver_probe.driver_for(device.default_device(), device.target_for(None)).name   # doctest: +SKIP
    'igc2'
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from typing import Dict, Optional

from .. import knobs
from ..errors import LaunchError
from ..lowering.emitters import DRIVERS, Driver
from ..targets import Target

PROBE_TIMEOUT = 120.0  # seconds for the child's build (a driver's first build initializes its compiler)
PROBE_VERSION = 2  # part of the cache key: a changed probe module is asked again
_lock = threading.Lock()
_known: Dict[str, Driver] = {}


def _key(device) -> str:
    backend = str(device.backend).split(".")[-1]
    return f"{backend}|{device.name}|{device.driver_version}|probe {PROBE_VERSION}"


def _disk_path(key: str) -> str:
    return os.path.join(knobs.cache_dir(), "drivers", hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def _read_disk(key: str) -> Optional[Driver]:
    try:
        with open(_disk_path(key)) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    return DRIVERS.get(entry.get("driver")) if entry.get("key") == key else None


def _write_disk(key: str, driver: Driver, detail: str) -> None:
    path = _disk_path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "driver": driver.name, "detail": detail[-2000:]}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache costs a probe per process, nothing else


def driver_for(device, target: Target) -> Driver:
    """The driver behind ``device`` (a dpctl SyclDevice), whose target record is ``target``."""
    if device.is_cpu:
        return DRIVERS["cpu"]
    forced = knobs.driver()
    if forced is not None:
        if forced not in DRIVERS or DRIVERS[forced].kind != "gpu":
            raise LaunchError(f"XEKERN_DRIVER={forced!r} is not a GPU driver; known: "
                              f"{', '.join(n for n, d in DRIVERS.items() if d.kind == 'gpu')}")
        return DRIVERS[forced]
    from ..lowering import emitters
    if emitters.unavailable("spirv-ext", target, DRIVERS["igc2"]) is not None:
        return DRIVERS["igc2"]  # no choice depends on the answer there (the builtins serve every IGC)
    key = _key(device)
    hit = _known.get(key)
    if hit is not None:
        return hit
    with _lock:
        hit = _known.get(key) or _read_disk(key)
        if hit is None:
            ok, detail = probe(device, target)
            hit = DRIVERS["igc2" if ok else "igc1"]
            _write_disk(key, hit, detail)
        _known[key] = hit
    return hit


def probe_spirv(target: Target) -> bytes:
    """The probe module for ``target``: a block-descriptor copy with one DPAS, as the spirv-ext
    emitter writes it (``SPV_INTEL_2d_block_io`` and ``SPV_INTEL_subgroup_matrix_multiply_accumulate``
    where the target has 2D block IO and DPAS)."""
    from .. import language as xl
    from ..ir.types import PointerType as pointer
    from ..lowering import emitters
    from .jit import JITFunction

    def driver_probe(a_ptr, b_ptr, c_ptr):
        # f16 surfaces 32 wide: 64 bytes, the narrowest a 2D block message takes
        a = xl.make_tensor_descriptor(a_ptr, shape=(8, 32), strides=(32, 1), block_shape=(8, 16))
        b = xl.make_tensor_descriptor(b_ptr, shape=(16, 32), strides=(32, 1), block_shape=(16, 16))
        c = xl.make_tensor_descriptor(c_ptr, shape=(8, 16), strides=(16, 1), block_shape=(8, 16))
        c.store((0, 0), xl.dot(a.load((0, 0)), b.load((0, 0))))
    kernel = JITFunction(driver_probe, num_subgroups=1, debug=False)
    f16 = xl.float16
    sig = dict(a_ptr=pointer(f16), b_ptr=pointer(f16), c_ptr=pointer(xl.float32))
    emitter = emitters.get("spirv-ext", target, DRIVERS["igc2"])
    return kernel.compile_offline(sig, target=target.name, num_subgroups=1, emitter=emitter.name).spirv


def probe(device, target: Target):
    """(whether the driver builds the probe module, its message) — in a child process."""
    spirv = probe_spirv(target)
    code = ("import sys, json\n"
            "from xekern.runtime import device as dev\n"
            "spirv = sys.stdin.buffer.read()\n"
            "try:\n"
            "    dev.build_kernel(dev.queue_for(sys.argv[1]), spirv, 'driver_probe')\n"
            "    print(json.dumps({'ok': True, 'detail': ''}))\n"
            "except Exception as e:\n"
            "    print(json.dumps({'ok': False, 'detail': str(e)}))\n")
    try:
        r = subprocess.run([sys.executable, "-c", code, device.filter_string], input=spirv, capture_output=True,
                           timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"the probe did not run: {e}"
    for line in reversed(r.stdout.decode(errors="replace").splitlines()):
        try:
            out = json.loads(line)
        except ValueError:
            continue
        return bool(out.get("ok")), str(out.get("detail", ""))
    return False, f"the probe ended with status {r.returncode}: {r.stderr.decode(errors='replace')[-1000:]}"
