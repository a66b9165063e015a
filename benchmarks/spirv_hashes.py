"""Hashes of the code xekern generates for a fixed set of kernels: a compile-time optimization must
leave them unchanged.

    python benchmarks/spirv_hashes.py > before.txt      # on the old code
    python benchmarks/spirv_hashes.py > after.txt       # on the new code
    diff before.txt after.txt                           # no output: the same SPIR-V and LLVM IR

One line per kernel: the SHA-256 (first 16 hex digits) of the SPIR-V bytes and of the
unoptimized LLVM IR text codegen produced, and their sizes. The set: the flagship GEMM on pvc
(every 16-bit layout, int8, SPIR-V extension ops, bias + gelu), dg2 and bmg, the CPU GEMMs
(f32 and bf16, 16- and 8-wide targets), and the tests' foundation kernels on cpu and pvc.
"""
from __future__ import annotations

import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "examples", "gemm")]

import xekern as xk  # noqa: E402
import xekern.language as xl  # noqa: E402
from gemm import gemm_kernel  # noqa: E402
import kernels as K  # noqa: E402

P = xk.pointer
F32, I32 = xl.float32, xl.int32


def gemm_sig(ab, layout="nn", BM=256, BN=256, BK=32, pf=2, bias=False, act=None):
    acc = I32 if ab.is_int else F32
    return dict(a_ptr=P(ab), b_ptr=P(ab), c_ptr=P(acc), bias_ptr=P(acc), M=I32, N=I32, K=I32,
                stride_ab=I32, stride_bb=I32, stride_cb=I32, BM=BM, BN=BN, BK=BK, GROUP_M=8,
                TRANS_A=layout[0] == "t", TRANS_B=layout[1] == "t", PREFETCH=pf, ACC=acc, HAS_BIAS=bias, ACT=act)


def cases():
    for lay in ("nn", "nt", "tn", "tt"):
        yield f"pvc gemm bf16 {lay}", gemm_kernel, gemm_sig(xl.bfloat16, lay), dict(target="pvc", num_subgroups=32)
    yield "pvc gemm f16 nn", gemm_kernel, gemm_sig(xl.float16), dict(target="pvc", num_subgroups=32)
    yield "pvc gemm int8 nn", gemm_kernel, gemm_sig(xl.int8, BK=64), dict(target="pvc", num_subgroups=32)
    yield "pvc gemm f32 nn", gemm_kernel, gemm_sig(F32, BM=128, BN=128, BK=16), dict(target="pvc", num_subgroups=16)
    yield "pvc gemm bf16 bias gelu", gemm_kernel, gemm_sig(xl.bfloat16, BM=128, bias=True, act="gelu"), \
        dict(target="pvc", num_subgroups=16)
    yield "pvc gemm bf16 spirv-ext", gemm_kernel, gemm_sig(xl.bfloat16), dict(target="pvc", num_subgroups=32,
                                                                              emitter="spirv-ext")
    yield "dg2 gemm bf16", gemm_kernel, gemm_sig(xl.bfloat16, BM=64, BN=64), dict(target="dg2", num_subgroups=8)
    yield "bmg gemm bf16", gemm_kernel, gemm_sig(xl.bfloat16, BM=128, BN=128), dict(target="bmg", num_subgroups=16)
    yield "cpu gemm f32", gemm_kernel, gemm_sig(F32, BM=128, BN=128, BK=16, pf=0), dict(target="cpu", num_subgroups=8)
    yield "cpu gemm bf16 nt", gemm_kernel, gemm_sig(xl.bfloat16, "nt", BM=128, BN=128, BK=32, pf=0, bias=True,
                                                     act="relu"), dict(target="cpu", num_subgroups=8)
    yield "cpu8 gemm bf16 tn", gemm_kernel, gemm_sig(xl.bfloat16, "tn", BM=64, BN=64, BK=32, pf=0), \
        dict(target="cpu8", num_subgroups=4)
    vec = dict(x_ptr=P(F32), y_ptr=P(F32), out_ptr=P(F32), n=I32, BLOCK=1024)
    soft = dict(out_ptr=P(F32), in_ptr=P(F32), in_stride=I32, out_stride=I32, n_cols=I32, BLOCK=1024)
    ln = dict(X=P(F32), Y=P(F32), W=P(F32), B=P(F32), Mean=P(F32), Rstd=P(F32), stride=I32, N=I32, eps=F32,
              BLOCK_SIZE=256)
    rows = dict(x_ptr=P(F32), sum_ptr=P(F32), max_ptr=P(F32), arg_ptr=P(I32), M=I32, N=I32, BM=8, BN=64)
    collatz = dict(x_ptr=P(I32), out_ptr=P(I32), limit=I32)
    call = dict(x_ptr=P(F32), out_ptr=P(F32), n=I32, alpha=F32, BLOCK=256)
    ints = dict(a_ptr=P(I32), b_ptr=P(I32), out_ptr=P(I32), n=I32, BLOCK=256)
    for t in ("cpu", "pvc"):
        for name, k, sig in (("vector_add", K.add_kernel, vec), ("softmax", K.softmax_kernel, soft),
                             ("layer_norm", K.layer_norm_fwd, ln), ("masked_rows", K.masked_rows_kernel, rows),
                             ("collatz", K.collatz_steps, collatz), ("call", K.call_kernel, call),
                             ("int_ops", K.int_ops_kernel, ints)):
            yield f"{t} {name}", k, sig, dict(target=t)


def main():
    for name, kernel, sig, opts in cases():
        c = kernel.compile_offline(sig, **opts)
        llir = c.asm["llir_unoptimized"].encode()
        print(f"{name:26} spirv {hashlib.sha256(c.spirv).hexdigest()[:16]} {len(c.spirv):7d} B   "
              f"llir {hashlib.sha256(llir).hexdigest()[:16]} {len(llir):8d} B", flush=True)


if __name__ == "__main__":
    main()
