"""USM array arguments at raw launch speed: what a launch needs of an array, computed once.

A launch needs, per array argument, its key part and IR type (``("p", "f32", True)``: the dtype and
whether the address is 16-byte aligned), its queue, a dpctl memory object to pass, and a check that
the array lives in the launch queue's context.
Reading ``__sycl_usm_array_interface__`` (dpnp builds a new dict each time) and making a dpctl
memory object from it cost ~25 us per array; done at every launch, a dpnp launch took 8-9x a
raw dpctl submit. Here they are computed once per array and looked up:

- a dpnp array or a ``usm_ndarray`` (dpnp.tensor / dpctl.tensor): keyed on its ``usm_ndarray``,
  held by a weak reference (the entry goes when the array goes); the memory passed is the
  array's own allocation (``usm_data``), or a view of it at the array's offset: never an object
  that keeps the array itself alive;
- any other object with ``__sycl_usm_array_interface__``: one read of the interface per launch,
  keyed on what it says (pointer, type, shape, strides, queue), which is all a launch uses.

The queue-context check is done once per (entry, queue).
"""
from __future__ import annotations

import weakref
from typing import Dict, Optional, Tuple

from ..errors import LaunchError
from ..ir.types import PointerType
from . import arrays, device as dev, surfaces


class Entry:
    __slots__ = ("ref", "part", "irt", "queue", "mem", "ctx", "checked", "__weakref__")

    def __init__(self, part, irt, queue, mem, ctx):
        self.ref = None
        self.part, self.irt, self.queue, self.mem, self.ctx = part, irt, queue, mem, ctx
        self.checked = None   # the last launch queue found to share the array's context

    def check_queue(self, queue, name: str) -> None:
        if queue is self.checked:
            return
        if self.ctx is not None and self.ctx != queue.sycl_context:
            raise LaunchError(f"argument '{name}' lives in another SYCL context than the launch queue "
                              f"({queue.sycl_device.name!r}); move it with .to_device() or pass queue=")
        self.checked = queue


_by_array: Dict[int, Entry] = {}                 # id(usm_ndarray) -> entry
_by_interface: Dict[tuple, Entry] = {}           # interface fingerprint -> entry
_MAX_INTERFACES = 1024
_POINTERS: Dict[str, PointerType] = {}


def _usm_ndarray(v):
    """The ``usm_ndarray`` behind ``v`` (itself, or a dpnp array's), else None."""
    if hasattr(v, "usm_data") and hasattr(v, "_element_offset"):
        return v
    get = getattr(v, "get_array", None)
    if get is not None:
        u = get()
        if hasattr(u, "usm_data") and hasattr(u, "_element_offset"):
            return u
    return None


def _make(v, name: str) -> Tuple[Entry, int]:
    """A new entry (without its memory) and the array's data pointer."""
    ptr, d, syclobj, shape, strides = arrays.usm_info(v, name)
    irt = _POINTERS.get(d.name)
    if irt is None:
        irt = _POINTERS[d.name] = PointerType(d)
    queue = syclobj if hasattr(syclobj, "submit_async") else None
    ctx = arrays.context_of(syclobj)
    return Entry(("p", d.name, ptr % surfaces.POINTER_ALIGN == 0), irt, queue, None, ctx), ptr


def lookup(v, name: str) -> Entry:
    """The launch facts of a USM array argument (LaunchError if its interface is malformed)."""
    u = _usm_ndarray(v)
    if u is not None:
        e = _by_array.get(id(u))
        if e is not None and e.ref() is u:
            return e
        e, ptr = _make(v, name)
        alloc = u.usm_data
        base = alloc._pointer
        if e.queue is None:
            e.queue = u.sycl_queue
        e.mem = alloc if ptr == base else dev.memory_view(alloc, ptr - base, max(alloc.nbytes - (ptr - base), 1),
                                                             e.queue)
        key = id(u)
        e.ref = weakref.ref(u, lambda r, key=key, e=e: _by_array.pop(key) if _by_array.get(key) is e else None)
        _by_array[key] = e
        return e
    iface, fp = fingerprint(v, name)
    e = _by_interface.get(fp)
    if e is not None:
        return e
    e, ptr = _make(v, name)
    e.mem = dev.dpctl().memory.as_usm_memory(_Interface(iface))
    if len(_by_interface) >= _MAX_INTERFACES:
        _by_interface.clear()
    _by_interface[fp] = e
    return e


def fingerprint(v, name: str) -> Tuple[dict, tuple]:
    """(interface, what of it a launch uses, hashable) of an interface object; LaunchError if malformed."""
    try:
        iface = v.__sycl_usm_array_interface__
        strides = iface.get("strides")
        fp = (iface["data"][0], iface["typestr"], tuple(iface.get("shape") or ()),
              tuple(strides) if strides is not None else None, id(iface.get("syclobj")), type(v))
        hash(fp)
    except Exception as ex:
        raise LaunchError(f"argument '{name}': its __sycl_usm_array_interface__ is malformed ({ex})") from None
    return iface, fp


class _Interface:
    """An interface dict, on its own: a dpctl memory object made from it holds this, not the
    array (whose producer owns the memory, as for any USM array argument)."""

    __slots__ = ("__sycl_usm_array_interface__",)

    def __init__(self, iface: dict):
        self.__sycl_usm_array_interface__ = dict(iface)


def queue_of(v) -> Optional[object]:
    try:
        return lookup(v, "?").queue
    except LaunchError:
        return None


def classify(v, name: str) -> Tuple[tuple, PointerType, object]:
    e = lookup(v, name)
    return e.part, e.irt, argument


def argument(v, name: str, queue, copies):
    """The dpctl kernel argument of a USM array."""
    e = lookup(v, name)
    e.check_queue(queue, name)
    return e.mem
