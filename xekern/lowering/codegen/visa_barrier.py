"""A workgroup barrier over SLM as inline vISA (emitters with ``visa_barriers``: visa, and
igc-builtins on dg2; workgroup-level kernels).

IGC 12504 spends 6 instructions on ``barrier(CLK_LOCAL_MEM_FENCE)`` for pvc: an SLM fence, a
``mov`` that waits for its answer, two ``mov``s that build the gateway message in a scratch
register, the signal, and the wait. In a K loop that passes a transposed A tile through SLM
(``slm-transpose``) the scratch register is the one the next loads land in, which costs further
waits. Here the message is built once per kernel in a named register and the fence answers into a
temporary of its own: 4 instructions per barrier, 2 for one that needs no fence (``no_fence``).

The message (IGC's own, read back from its pvc ISA, and the same in its dg2 ISA): dword 2 holds
barrier 0 in its low half and the workgroup's thread count (``r0.2`` bits 31:24) as producer and
consumer counts in bytes 2 and 3. The fence's descriptor is IGC 12504's for pvc and dg2 alike;
IGC 2.40 writes 0x0210001F for pvc, bmg and dg2, which differs in bit 8 only (bits 8:7, the address
size, which a fence has none of) and disassembles the same: ``fence.slm.none.group``.
"""
from __future__ import annotations

from llvmlite import ir as ll

from .core import CodeGen

_SFID_SLM, _SFID_GATEWAY = 14, 3
_FENCE_SLM_GROUP = 0x0210011F   # fence.slm.none.group: one payload register (r0), one answer register
_SIGNAL_BARRIER = 0x02000004    # gateway: signal barrier, one payload register


def applies(cg: CodeGen, op) -> bool:
    """Whether ``op`` (a ``gpu.barrier``) is written here: pass ``emitter-decisions`` marked it
    (``flavour = "visa"``: it orders SLM only, in a counted loop, where the saving repeats;
    elsewhere IGC's own barrier stays)."""
    return op.attrs.get("flavour") == "visa"


def barrier(cg: CodeGen, fence: bool = True) -> None:
    """The message built once in the entry block (``XKBARMSG``), then: the fence, its answer read
    into the null register (the wait), the signal, and the wait for the other threads. Without
    ``fence`` (a barrier marked ``no_fence``: slm_barriers.fenceless) only the last two: the
    subgroup has only read SLM since the previous barrier, and its DPAS, which IGC does not move
    across a gateway message, have already waited for what it read."""
    cg.cached("visa barrier message", lambda: cg.asm(ll.VoidType(), "\n".join([
        f".decl XKBARMSG v_type=G type=ud num_elts={cg.target.grf_bytes // 4} align=GRF",
        "shr (M1_NM, 1) XKBARMSG(0,2)<1> %r0(0,2)<0;1,0> 0x18:ud",
        "mul (M1_NM, 1) XKBARMSG(0,2)<1> XKBARMSG(0,2)<0;1,0> 0x1010000:ud"]), "", []))
    sync = [f"raw_sends.{_SFID_GATEWAY}.1.0.0 (M1_NM, 1) 0x0:ud 0x{_SIGNAL_BARRIER:x}:ud XKBARMSG.0 %null.0 %null.0",
            "sbarrier.wait"]
    if not fence:
        cg.asm(ll.VoidType(), "\n".join(sync), "", [])
        return
    cg.asm(ll.IntType(32), "\n".join([
        f"raw_sends.{_SFID_SLM}.1.0.1 (M1_NM, 1) 0x0:ud 0x{_FENCE_SLM_GROUP:x}:ud %r0.0 %null.0 $0.0",
        "mov (M1_NM, 8) %null(0,0)<1> $0(0,0)<1;1,0>", *sync]), "=rw", [])
