"""Polynomials over uniform scalars, the arithmetic of the axis analyses (``lane_affine``, ``tile_affine``).

A polynomial is a sorted tuple of (monomial, integer coefficient); a monomial is a sorted tuple of
the ``id``s of the scalar values multiplied (``()`` is the constant term). Equal polynomials are
equal tuples, so ``a - b`` is a constant exactly when two offsets differ by a known amount.

    >>> padd(poly({(7,): 2, (): 3}), poly({(): -3}))       # (2*v7 + 3) + (-3)
    (((7,), 2),)
"""
from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Tuple

Poly = Tuple[Tuple[Tuple[int, ...], int], ...]


def poly(items: Dict[Tuple[int, ...], int]) -> Poly:
    return tuple(sorted((m, c) for m, c in items.items() if c))


def padd(p: Poly, q: Poly, sign: int = 1) -> Poly:
    """``p + sign * q``."""
    out = dict(p)
    for m, c in q:
        out[m] = out.get(m, 0) + sign * c
    return poly(out)


def pmul(p: Poly, q: Poly) -> Poly:
    out: Dict[Tuple[int, ...], int] = {}
    for m1, c1 in p:
        for m2, c2 in q:
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return poly(out)


def const(c: int) -> Poly:
    return poly({(): c})


def constant_of(p: Poly) -> Optional[int]:
    """The polynomial's value when it is a constant, else None."""
    if not p:
        return 0
    return p[0][1] if len(p) == 1 and p[0][0] == () else None


def pmultiple(p: Poly, atom_multiple: Callable[[int], int]) -> int:
    """A number every value of ``p`` is a multiple of (0: ``p`` is zero), given one for each atom
    (``atom_multiple(id)``): the gcd over its monomials of coefficient times the atoms' numbers."""
    out = 0
    for m, c in p:
        term = abs(c)
        for a in m:
            term *= atom_multiple(a)
        out = math.gcd(out, term)
    return out
