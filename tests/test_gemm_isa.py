"""The flagship GEMM (examples/gemm) compiled offline for pvc at the issue's configuration (256x256
tile, 32 subgroups, 256-GRF mode) and for dg2: what the production compiler makes of it. Nothing
runs on a GPU; the ISA is the judge. The dpas-density goal (>= 60% of the K-loop) is a benchmark
figure (``python examples/gemm/gemm.py --isa``), not a test."""
import os
import sys

import pytest

import xekern.language as xl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm"))
from isa_report import DG2, one  # noqa: E402

DTYPES = {"bf16": xl.bfloat16, "f16": xl.float16, "int8": xl.int8}
INT8_AT = "int8 A^T has no 2D block load (d8 transpose does not exist): it falls back to gathers and spills"
CASES = [(d, lay) for d in DTYPES for lay in ("nn", "nt", "tn", "tt")]


def marks(dtype, layout):
    return [pytest.mark.xfail(strict=True, reason=INT8_AT)] if dtype == "int8" and layout[0] == "t" else []


@pytest.mark.parametrize("dtype,layout", [pytest.param(d, lay, marks=marks(d, lay)) for d, lay in CASES],
                         ids=[f"{d}-{lay}" for d, lay in CASES])
def test_pvc_k_loop_is_dpas_block_loads_and_prefetches(dtype, layout):
    ab = DTYPES[dtype]
    r = one("pvc", ab, layout, 256, 256, 64 if dtype == "int8" else 32, 32, 256)
    assert r["grf"] == 256 and r["spill"] == 0 and r["scratch"] == 0, r
    # 32x64 per subgroup, BK 32 (16-bit) / 64 (int8): 4 x 4 x 2 DPAS 8x16 per K step
    assert r["dpas"] == 32, r
    assert r["loads"] > 0 and r["other_sends"] == 0, f"a K-loop load is not a 2D block load: {r}"
    assert r["prefetch"] == 2, f"one prefetch of A and one of B per K step expected: {r}"
    assert r["stores"] > 0, f"the C tile is never stored: {r}"


@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_dg2_has_8_wide_dpas_and_no_spills(dtype):
    """At gemm.py's dg2 configuration (isa_report.DG2); the K-loop still gathers its operands."""
    r = one("dg2", DTYPES[dtype], "nn", *DG2[DTYPES[dtype].user_name], 128)
    assert r["dpas"] > 0, r
    assert r["spill"] == 0 and r["scratch"] == 0, r
