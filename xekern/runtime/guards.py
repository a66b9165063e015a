"""Guard regions around device buffers: a kernel that writes past an argument's ends is an error
that names the argument, how far it wrote, and the stores that can write it.

A NumPy argument the kernel may write (``launch_facts.written_params``) is copied into a device
buffer with a guard region on each side, filled with ``PATTERN``; after the kernel, the guards are
read back and any changed byte is an overrun. (An argument it only reads is copied in without
guards and not copied back: nothing the kernel does can change it.) The
NumPy array is then left as it was (nothing is copied back), and no memory outside the device
buffer was touched, as long as the kernel strayed no further than the guard (``size``: the
array's own size, at least 256 bytes and at most 64 MiB). ``XEKERN_DEBUG=1`` gives device arrays made by
``xk.empty`` / ``xk.to_device`` the same guards, checked after every launch that passes them.
(Triton reports an illegal address on a GPU; numba-dpex corrupts memory.)

Example error::

    kernel 'copy': argument 'out_ptr' (256 float32, a NumPy array) was written out of bounds: 256
    elements (1024 bytes) past its end. The stores that can write it: k.py:9. The array was not changed.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import LaunchError
from . import device as dev

PATTERN = 0xA5
_MIN, _MAX = 256, 64 << 20
_patterns: Dict[int, np.ndarray] = {}


def size(nbytes: int) -> int:
    """The bytes of guard on each side of a buffer of ``nbytes`` (a multiple of 64: the data keeps
    the 64-byte alignment 2D block messages want)."""
    return min(max(_MIN, -(-nbytes // 64) * 64), _MAX)


def _pattern(n: int) -> np.ndarray:
    p = _patterns.get(n)
    if p is None:
        p = _patterns[n] = np.full(n, PATTERN, np.uint8)
        p.flags.writeable = False
    return p


_pattern_bytes_cache: Dict[int, bytes] = {}


def _pattern_bytes(n: int) -> bytes:
    b = _pattern_bytes_cache.get(n)
    if b is None:
        b = _pattern_bytes_cache[n] = bytes([PATTERN]) * n
    return b


def allocate(nbytes: int, queue) -> Tuple[object, int]:
    """Device memory for ``nbytes`` between two filled guards: (memory, offset of the data)."""
    g = size(nbytes)
    mem = dev.dpctl().memory.MemoryUSMDevice(g + max(nbytes, 1) + g, alignment=64, queue=queue)
    refill(mem, g, nbytes, queue)
    return mem, g


def refill(mem, g: int, nbytes: int, queue) -> None:
    """(Re)write both guards (after an overrun was reported, the array stays usable)."""
    pat = _pattern(g)
    queue.memcpy(dev.memory_view(mem, 0, g, queue), pat, g)
    queue.memcpy(dev.memory_view(mem, g + nbytes, g, queue), pat, g)


class Buffer:
    """A device buffer for a NumPy argument: ``mem`` (guard, data, guard), ``g`` the guard's size (0:
    none, for an argument the kernel does not write) and ``arg`` the dpctl memory object of the data
    (what the kernel gets)."""

    __slots__ = ("mem", "g", "nbytes", "arg", "queue")

    def __init__(self, nbytes: int, queue, guarded: bool = True):
        self.g, self.nbytes, self.queue = size(nbytes) if guarded else 0, nbytes, queue
        self.mem = dev.dpctl().memory.MemoryUSMDevice(self.g + max(nbytes, 1) + self.g, alignment=64, queue=queue)
        self.arg = dev.memory_view(self.mem, self.g, max(nbytes, 1), queue)


# buffers of finished launches, reused by the next launch of the same size on the same queue (making
# the kernel's view of one costs ~14 us); at most _POOL_BYTES in all
_pool: Dict[Tuple[int, int], List[Buffer]] = {}
_pool_bytes = 0
_POOL_BYTES = 64 << 20
_pool_lock = threading.Lock()


def acquire(nbytes: int, queue, guarded: bool = True) -> Buffer:
    global _pool_bytes
    with _pool_lock:
        free = _pool.get((nbytes, id(queue), guarded))
        while free:
            b = free.pop()
            _pool_bytes -= b.mem.nbytes
            if b.queue is queue:
                return b
    return Buffer(nbytes, queue, guarded)


def release(b: Buffer) -> None:
    """Give a buffer back once its launch is over (its contents are rewritten by the next user)."""
    global _pool_bytes
    with _pool_lock:
        if _pool_bytes + b.mem.nbytes <= _POOL_BYTES:
            _pool.setdefault((b.nbytes, id(b.queue), b.g > 0), []).append(b)
            _pool_bytes += b.mem.nbytes


def fill(b: "Buffer", host_bytes: np.ndarray, queue) -> None:
    """``b``'s guards written and ``host_bytes`` copied between them, straight to the device: no
    staging copy of the data on the host (a large argument's first call pays each copy in time)."""
    refill(b.mem, b.g, host_bytes.nbytes, queue)
    if host_bytes.nbytes:
        queue.memcpy(b.arg, host_bytes, host_bytes.nbytes)


def overrun(mem, g: int, nbytes: int, queue) -> Optional[Tuple[int, int]]:
    """None if both guards are intact, else (bytes written before the start, bytes past the end):
    how far from the data the furthest changed byte on each side is."""
    head, tail = np.empty(g, np.uint8), np.empty(g, np.uint8)
    queue.memcpy(head, dev.memory_view(mem, 0, g, queue), g)
    queue.memcpy(tail, dev.memory_view(mem, g + nbytes, g, queue), g)
    pat = _pattern_bytes(g)
    if head.tobytes() == pat and tail.tobytes() == pat:   # (memcmp: the common case, fast)
        return None
    bad_head, bad_tail = np.flatnonzero(head != PATTERN), np.flatnonzero(tail != PATTERN)
    return (g - int(bad_head[0]) if len(bad_head) else 0), (int(bad_tail[-1]) + 1 if len(bad_tail) else 0)


def error(kernel: str, name: str, what: str, dtype: np.dtype, count: int, before: int, after: int,
          where: str, unchanged: bool) -> LaunchError:
    item = dtype.itemsize
    sides = []
    if before:
        sides.append(f"{-(-before // item)} element(s) ({before} bytes) before its start")
    if after:
        sides.append(f"{-(-after // item)} element(s) ({after} bytes) past its end")
    return LaunchError(f"kernel '{kernel}': argument '{name}' ({count} {dtype.name}, {what}) was written out "
                       f"of bounds: {' and '.join(sides)}. The stores that can write it: {where or 'none found'}. "
                       + ("The array was not changed." if unchanged else
                          "(Found by XEKERN_DEBUG=1's guards around device arrays.)"))
