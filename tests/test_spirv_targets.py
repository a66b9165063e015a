"""Every foundation kernel compiles for every target, and each module passes spirv-val."""
import subprocess

import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, GPU_TARGETS
from xekern.tools import toolchain
from kernels import (add_kernel, call_kernel, collatz_steps, int_ops_kernel, layer_norm_fwd, masked_rows_kernel,
                     softmax_kernel)

P = xk.pointer
F32 = xl.float32
SIGNATURES = {
    "add": (add_kernel, dict(x_ptr=P(F32), y_ptr=P(F32), out_ptr=P(F32), n=xl.int32, BLOCK=1024)),
    "add_bf16": (add_kernel, dict(x_ptr=P(xl.bfloat16), y_ptr=P(xl.bfloat16), out_ptr=P(xl.bfloat16), n=xl.int32,
                                  BLOCK=256)),
    "softmax": (softmax_kernel, dict(out_ptr=P(F32), in_ptr=P(F32), in_stride=xl.int32, out_stride=xl.int32,
                                     n_cols=xl.int32, BLOCK=1024)),
    "layer_norm": (layer_norm_fwd, dict(X=P(F32), Y=P(F32), W=P(F32), B=P(F32), Mean=P(F32), Rstd=P(F32),
                                        stride=xl.int32, N=xl.int32, eps=F32, BLOCK_SIZE=256)),
    "masked_rows": (masked_rows_kernel, dict(x_ptr=P(F32), sum_ptr=P(F32), max_ptr=P(F32), arg_ptr=P(xl.int32),
                                             M=xl.int32, N=xl.int32, BM=16, BN=32)),
    "collatz": (collatz_steps, dict(x_ptr=P(xl.int32), out_ptr=P(xl.int32), limit=xl.int32)),
    "call": (call_kernel, dict(x_ptr=P(F32), out_ptr=P(F32), n=xl.int32, alpha=F32, BLOCK=256)),
    "int_ops": (int_ops_kernel, dict(a_ptr=P(xl.int64), b_ptr=P(xl.int64), out_ptr=P(xl.int64), n=xl.int32,
                                     BLOCK=64)),
}


@pytest.mark.parametrize("target", CPU_TARGETS + GPU_TARGETS)
@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_spirv_validates(tmp_path, name, target):
    kernel, sig = SIGNATURES[name]
    c = kernel.compile_offline(sig, target=target)
    assert c.spirv[:4] == b"\x03\x02\x23\x07", "not a SPIR-V module"
    path = tmp_path / "k.spv"
    path.write_bytes(c.spirv)
    tool = toolchain.spirv_tool("spirv-val")
    assert tool, f"spirv-val is missing: {toolchain.INSTALL_COMMAND}"
    r = subprocess.run(tool + [str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    sg = 8 if target in ("cpu8", "dg2") else 16
    assert f"SubgroupSize {sg}" in c.asm["spirv"] or f"SubgroupSize {sg}" in c.asm["spirv"].replace("\n", " ")
