"""The one semantic object builtins talk to: arithmetic, tiles and memory rules together."""
from __future__ import annotations

import copy

from .semantic import ArithSemantic
from .semantic_debug import DebugSemantic
from .semantic_memory import MemorySemantic
from .semantic_nd import NdDescriptorSemantic
from .semantic_private import PrivateSemantic
from .semantic_tile import TileSemantic


class Semantic(ArithSemantic, TileSemantic, MemorySemantic, NdDescriptorSemantic, PrivateSemantic, DebugSemantic):
    """Checks and builds the IR of every ``xl`` builtin (see the rule sets it combines)."""

    STATE = ("slm_bytes", "nbarrier_count", "private_bytes")

    def snapshot(self):
        """Counters a dry run of a loop body must not leave behind."""
        return {k: copy.copy(getattr(self, k, None)) for k in self.STATE}

    def restore(self, snap):
        for k, v in snap.items():
            if v is None:
                self.__dict__.pop(k, None)
            else:
                setattr(self, k, v)
