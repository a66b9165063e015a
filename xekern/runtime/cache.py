"""The on-disk kernel cache (``~/.cache/xekern`` or ``XEKERN_CACHE_DIR``).

One file per specialization, ``<dir>/<key[:2]>/<key>.xkc``: a magic line, the length of a JSON
header, a SHA-256 of header and payload, the header, then the SPIR-V. Writes go to a temporary
file in the same directory and are renamed into place, so a reader sees a whole entry or none,
and two processes compiling the same kernel both succeed and leave one valid entry. A
truncated or corrupted entry is detected, reported with a warning and rebuilt; a cache
directory that cannot be written falls back to memory with a warning.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
import warnings
from typing import Optional, Tuple

from .. import knobs
from ..errors import CacheWarning

MAGIC = b"XEKERN-CACHE-1\n"
_HDR = struct.Struct("<Q32s")

stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "disk_writes": 0, "corrupt": 0, "evictions": 0,
         "driver_builds": 0, "driver_binaries": 0, "binaries_refused": 0, "binary_writes": 0,
         "compile_s": 0.0, "driver_build_s": 0.0}  # seconds in xekern's compiles and in the driver's builds


class DiskCache:
    """The entries of one kind (file ``suffix``; ``writes``: the ``stats`` counter of their writes)."""

    def __init__(self, root: Optional[str] = None, suffix: str = ".xkc", writes: str = "disk_writes"):
        self.root = root or knobs.cache_dir()
        self.suffix, self.writes = suffix, writes
        self.enabled_by_knob = knobs.disk_cache()
        self.disabled = not self.enabled_by_knob
        self._warned = False

    def path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + self.suffix)

    def get(self, key: str) -> Optional[Tuple[dict, bytes]]:
        if self.disabled:
            return None
        p = self.path(key)
        try:
            with open(p, "rb") as f:
                data = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            self._warn(f"cannot read the kernel cache entry {p} ({e}); compiling instead")
            return None
        entry = self._decode(data)
        if entry is None:
            stats["corrupt"] += 1
            warnings.warn(f"xekern: the kernel cache entry {p} is truncated or corrupted; it is rebuilt",
                          CacheWarning, stacklevel=4)
            try:
                os.unlink(p)
            except OSError:
                pass
            return None
        return entry

    @staticmethod
    def _decode(data: bytes) -> Optional[Tuple[dict, bytes]]:
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HDR.size:
            return None
        n, digest = _HDR.unpack_from(data, len(MAGIC))
        body = data[len(MAGIC) + _HDR.size:]
        if n > len(body) or hashlib.sha256(body).digest() != digest:
            return None
        try:
            meta = json.loads(body[:n].decode())
        except (ValueError, UnicodeDecodeError):
            return None
        return meta, body[n:]

    def put(self, key: str, meta: dict, payload: bytes) -> None:
        if self.disabled:
            return
        header = json.dumps(meta, sort_keys=True).encode()
        body = header + payload
        data = MAGIC + _HDR.pack(len(header), hashlib.sha256(body).digest()) + body
        p = self.path(key)
        try:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(p))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, p)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            stats[self.writes] += 1
        except OSError as e:
            self.disabled = True
            self._warn(f"the kernel cache directory {self.root} is not writable ({e}); kernels are kept in "
                       f"memory only for this process (set XEKERN_CACHE_DIR to a writable directory)")

    def _warn(self, msg: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn("xekern: " + msg, CacheWarning, stacklevel=4)

    def info(self) -> dict:
        n, size = 0, 0
        for dirpath, _, files in os.walk(self.root):
            for f in files:
                if f.endswith(self.suffix):
                    n += 1
                    try:
                        size += os.path.getsize(os.path.join(dirpath, f))
                    except OSError:
                        pass
        return {"dir": self.root, "entries": n, "bytes": size, "enabled": not self.disabled}

    def clear(self) -> int:
        n = self.info()["entries"]
        if os.path.isdir(self.root):
            for name in os.listdir(self.root):
                p = os.path.join(self.root, name)
                if os.path.isdir(p) and len(name) == 2:
                    shutil.rmtree(p, ignore_errors=True)
        return n


_caches = {}


def disk_cache(suffix: str = ".xkc", writes: str = "disk_writes") -> DiskCache:
    """The process's disk cache of compiled kernels, or of the entries of another ``suffix`` in the
    same directories (the OpenCL driver's binaries, ``.xkb``: ``program_binaries``); re-created when
    ``XEKERN_CACHE_DIR`` or ``XEKERN_CACHE`` changes. ``clear`` removes every kind."""
    root = knobs.cache_dir()
    c = _caches.get(suffix)
    if c is None or c.root != root or c.enabled_by_knob != knobs.disk_cache():
        c = _caches[suffix] = DiskCache(root, suffix, writes)
    return c


_fingerprint: Optional[str] = None


def compiler_fingerprint() -> str:
    """A hash of xekern's own source files (name, size, modification time) and of llvmlite's
    version, part of every disk key: a development checkout whose compiler changed (same version
    number) must not be served kernels the old compiler built. Stat only, no reading: computed
    once per process in well under a millisecond, so a warm first call stays cheap."""
    global _fingerprint
    if _fingerprint is None:
        import llvmlite
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256(llvmlite.__version__.encode())
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(d, name))
                    h.update(f"{os.path.relpath(os.path.join(d, name), root)}:{st.st_size}:{st.st_mtime_ns};".encode())
        _fingerprint = h.hexdigest()
    return _fingerprint
