"""Declared op attributes: each op class lists the attributes it may carry (``Op.ATTRS``), with the
type of their values and the stage that adds them, and the verifier rejects any other key.

A stage is ``frontend`` (the attribute comes with the op when the kernel is built) or the name of
the pass that adds it (``slm-barriers``, ``emitter-decisions``, ...: ``lowering/pipeline.PASSES``).
``verify_func(func, ran=...)`` also checks that an attribute only appears once a stage that adds it
has run, so a pass cannot set a mark that belongs to another.

    >>> from xekern.ir.ops_gpu import BarrierOp
    >>> BarrierOp.declared()["no_fence"].added_by
    ('slm-barriers',)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple, Union

from .layout import Layout, SliceLayout

NONE = type(None)
LAYOUT = (Layout, SliceLayout)
FRONTEND = "frontend"


@dataclass(frozen=True)
class Attr:
    """One declared attribute: its ``name``, the Python type(s) of its value, the stages that may
    add it, and what it means. ``None`` is always allowed: it reads as the attribute's absence (the
    printer leaves it out)."""

    name: str
    kind: Union[type, Tuple[type, ...]]
    added_by: Tuple[str, ...] = (FRONTEND,)
    doc: str = ""

    def check(self, value) -> str:
        """'' when ``value`` has a declared type (or is None), else why not."""
        if value is None:
            return ""
        if isinstance(value, self.kind) and not (isinstance(value, bool) and bool not in _kinds(self.kind)
                                                 and int in _kinds(self.kind)):
            return ""
        names = ", ".join(k.__name__ if k is not NONE else "None" for k in _kinds(self.kind))
        return f"attribute '{self.name}' = {value!r} is a {type(value).__name__}, not one of: {names}"


def _kinds(kind) -> Tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


# cache hints of the RFC's memory ops (``l1_hint`` ... ``l3_hint``)
HINTS = tuple(Attr(k, (str, NONE), doc="the RFC's cache hint") for k in ("l1_hint", "l2_hint", "l3_hint"))
# the lane tiles a lane-level memory or DPAS op was cut from (``sg-to-lane``: which slot holds which element)
TILES = Attr("tiles", tuple, ("lane",), "the subgroup tiles of the operands and results, for codegen")
# a frontend-given layout on an op whose result the user laid out (anchors of ``propagate-layout``)
USER_LAYOUT = Attr("layout", LAYOUT, (FRONTEND,), "the layout the user gave")
# where an instruction block lies in the tile it was cut from (``inst``), and how many blocks one
# message reads (``merge-block-messages``)
BLOCKS = (Attr("block_index", tuple, ("inst",), "the block's place in its tile's grid of blocks"),
          Attr("block_count", tuple, ("inst",), "the tile's grid of blocks"),
          Attr("block_grid", tuple, ("merge-block-messages",), "blocks (rows, cols) read by this one message"))
# the slots of a pointer tile's access that one sub-group block message each moves (``coalesce``)
BLOCK_RUNS = (Attr("block_runs", tuple, ("coalesce",), "[first slot, count] of each run one block message moves"),
              Attr("runs_aligned", bool, ("coalesce",), "every run's first element is 16-byte aligned (proved)"))
