"""Tuple kernel arguments, as Triton takes them: ``k[grid]((x, y), (n, 1), BLOCK=64)``.

A parameter given a tuple (nested ones too) is flattened at launch into its leaves, depth first;
each leaf is an argument of its own to the specialization, the cache key and the driver kernel,
named ``<param>__<i>`` (``__<j>`` for each deeper level: ``t__1__0``), while the kernel body sees
the tuple again (``t[0]``, ``len(t)``, ``a, b = t``). A leaf that is ``None``, an
``xl.constexpr(...)``, a string or a dtype is a compile-time constant of the tuple (as Triton's
constexpr leaves), and an integer equal to 1 is specialized like any integer argument.

    >>> leaf_names("t", ((1, 2), 3))
    ['t__0__0', 't__0__1', 't__1']
"""
from __future__ import annotations

from typing import Any, List, Tuple

from ..ir.types import DType
from ..language.core import constexpr

SEP = "__"


def is_tuple(v) -> bool:
    return isinstance(v, tuple)


def leaves(v) -> List[Any]:
    """The leaves of tuple ``v``, depth first."""
    out: List[Any] = []
    for x in v:
        out.extend(leaves(x) if is_tuple(x) else [x])
    return out


def leaf_names(name: str, v) -> List[str]:
    """The argument names of the leaves of ``v`` (parameter ``name``), depth first."""
    out: List[str] = []
    for i, x in enumerate(v):
        sub = f"{name}{SEP}{i}"
        out.extend(leaf_names(sub, x) if is_tuple(x) else [sub])
    return out


def shape(v) -> Tuple:
    """The nesting of ``v`` (``None`` for a leaf): part of the cache key."""
    return tuple(shape(x) if is_tuple(x) else None for x in v)


def is_constant(v) -> bool:
    """Whether a leaf is a compile-time constant of its tuple rather than an argument."""
    return v is None or isinstance(v, (constexpr, str, DType))


def constant_value(v):
    return v.value if isinstance(v, constexpr) else v


def rebuild(v, make_leaf):
    """``v``'s nesting with each leaf ``make_leaf(index, leaf)`` (index: depth-first order)."""
    count = [0]

    def walk(x):
        out = []
        for y in x:
            if is_tuple(y):
                out.append(walk(y))
            else:
                out.append(make_leaf(count[0], y))
                count[0] += 1
        return tuple(out)
    return walk(v)
