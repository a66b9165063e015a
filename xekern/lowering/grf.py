"""The GRF mode a GPU kernel is built in: 128 registers per thread, or 256 (large-GRF mode) when
its lane-level IR needs more than the smaller file holds. One decision, recorded with the compiled
kernel; the runtime's driver build (``runtime/device.py``) and the offline ISA tool (``python -m
xekern isa``) pass it on as IGC's build options (``tools/grf_options.py``).

The estimate is the register bytes live at once in the hottest loop, per thread (a sub-group):
the values the loop carries (the accumulators) plus the tiles its body loads (the DPAS operands),
each ``elements per lane x element bytes x sub-group size``. Above ``FILL`` of the 128-register
file (IGC needs the rest for addresses, payload copies and temporaries) the kernel gets 256, on
targets that have that mode. Kernels without loops count every loaded tile and DPAS result.

    >>> grf_bytes_needed(lane_func, target)            # doctest: +SKIP
    14336                                              # flagship GEMM: 8 KiB of C + 6 KiB of A, B
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..ir.types import VectorType

# share of the 128-GRF file the estimate may take before 256-GRF mode is chosen: IGC keeps the rest
# for addresses, 2D block payload copies and temporaries (the flagship GEMM's 14 KiB spills at 128)
FILL = 0.75

_LOADS = (ir.LoadNdOp, ir.DpasOp)


def _bytes(t, sg: int) -> int:
    if isinstance(t, VectorType):
        n = 1
        for s in t.shape:
            n *= s
        return n * t.elem.itemsize * sg
    return 0


def grf_bytes_needed(func: ir.FuncOp, target) -> int:
    """Estimated register bytes per thread of a lane-level function (see the module docstring)."""
    sg = target.sg_size
    best = 0
    loops = [o for o in func.walk() if isinstance(o, ir.ForOp)]
    for loop in loops:
        live = sum(_bytes(a.type, sg) for a in loop.iter_args)
        live += sum(_bytes(r.type, sg) for o in loop.body.ops for x in o.walk() if isinstance(x, ir.LoadNdOp)
                    for r in x.results)
        best = max(best, live)
    if not loops:
        best = sum(_bytes(r.type, sg) for o in func.walk() if isinstance(o, _LOADS) for r in o.results)
    return best


def choose_grf_mode(func: ir.FuncOp, options) -> Optional[int]:
    """Registers per thread for ``func`` (lane level): the user's ``options.grf_mode`` if given, else
    256 when the estimate exceeds ``FILL`` of the 128-register file and the target has 256-GRF
    mode, else 128. None when there is nothing to ask the driver: targets without a GRF (the CPU
    device) or with one mode only (dg2)."""
    t = options.target
    if t.is_cpu or len(t.grf_modes) < 2:
        return None
    if options.grf_mode is not None:
        return options.grf_mode
    small = min(t.grf_modes)
    if max(t.grf_modes) > small and grf_bytes_needed(func, t) > FILL * small * t.grf_bytes:
        return max(t.grf_modes)
    return small

