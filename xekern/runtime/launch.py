"""What every launch shares, compiled or interpreted: the ``Launch`` it returns, and the grid check.

``kernel[grid](...)`` returns a ``Launch``: the SYCL ``event`` (None when the interpreter ran the
kernel on the host) and the ``kernel`` that ran, whose ``asm`` has its stages. The grid is a tuple
of 1 to 3 positive ints, or a function of the launch's arguments returning one (Triton's
``grid=lambda meta: (cdiv(n, meta["BLOCK"]),)``).

    >>> check_grid(lambda meta: (cdiv(meta["n"], 256),), {"n": 1000})
    (4,)
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..errors import LaunchError

I32_MAX = (1 << 31) - 1  # the most workgroups along one grid dimension


def cdiv(x: int, y: int) -> int:
    """Ceiling division: ``xk.cdiv(n, BLOCK)`` workgroups cover ``n`` elements."""
    return -(-x // y)


def next_power_of_2(n: int) -> int:
    """The smallest power of 2 >= ``n`` (1 for ``n <= 1``), like ``triton.next_power_of_2``:
    ``BLOCK_SIZE = xk.next_power_of_2(n_cols)``."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class Launch:
    """What ``kernel[grid](...)`` returns: the SYCL ``event`` and the compiled ``kernel``."""

    __slots__ = ("kernel", "event")

    def __init__(self, kernel, event):
        self.kernel = kernel  # a CompiledKernel, or the interpreter's InterpretedKernel (event None)
        self.event = event

    @property
    def asm(self):
        return self.kernel.asm

    def wait(self) -> "Launch":
        if self.event is not None:
            self.event.wait()
        return self

    @property
    def elapsed_ns(self) -> int:
        """Device time of the kernel from SYCL event profiling."""
        self.wait()
        p = self.event.profiling_info_end - self.event.profiling_info_start
        return int(p)


def check_grid(grid, meta) -> Tuple[int, ...]:
    """The launch's grid as a tuple of 1 to 3 ints in 1..2^31-1; ``grid`` may be a function of
    ``meta`` (the arguments by parameter name). Raises LaunchError naming what is wrong."""
    if type(grid) is tuple and all(type(g) is int and 0 < g <= I32_MAX for g in grid) and 1 <= len(grid) <= 3:
        return grid
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"the grid must be a tuple of 1 to 3 positive integers (or a function of the meta-"
                          f"parameters returning one), got {grid!r}")
    out = []
    for g in grid:
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise LaunchError(f"grid dimensions must be integers, got {g!r} in {tuple(grid)!r}")
        g = int(g)
        if g <= 0:
            raise LaunchError(f"grid {tuple(grid)!r} is empty or negative: every dimension must be >= 1 "
                              f"(skip the launch when there is no work)")
        if g > I32_MAX:
            raise LaunchError(f"grid dimension {g} exceeds the limit of {I32_MAX} workgroups")
        out.append(g)
    return tuple(out)
