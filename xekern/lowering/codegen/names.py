"""Value names in a kernel function: llvmlite's NameScope rules, in fewer Python steps.

Every instruction llvmlite builds registers its name (mostly "", which becomes ".1", ".2", ...)
through ``NameScope.register`` -> ``deduplicate`` -> ``is_used``: three calls per instruction.
``FastScope`` gives the same names with one. tests/test_compile_speed.py compares the text.
"""
from __future__ import annotations

from llvmlite.ir._utils import DuplicatedNameError, NameScope


class FastScope(NameScope):
    def register(self, name, deduplicate=False):
        used = self._useset
        if name in used:
            if not deduplicate:
                raise DuplicatedNameError(name)
            counts = self._basenamemap
            base = name
            while name in used:
                ident = counts[base] + 1
                counts[base] = ident
                name = f"{base}.{ident}"
        used.add(name)
        return name


def adopt(fn) -> None:
    """Give llvmlite function ``fn`` a FastScope with its current names (before it has blocks)."""
    fast = FastScope()
    fast._useset = fn.scope._useset
    fast._basenamemap = fn.scope._basenamemap
    fn.scope = fast
