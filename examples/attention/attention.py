"""Flash attention, forward and backward, the second flagship: O = softmax(Q K^T * sm_scale) V.

    python examples/attention/attention.py                 # a correct default run and a short table
    python examples/attention/attention.py --check         # every dtype x causal x head dim, ragged lengths
    python examples/attention/attention.py --dtype bf16 --causal --d 128 --n-ctx 1000 --check
    python examples/attention/attention.py --bench         # forward f32 against NumPy's BLAS attention
    python examples/attention/attention.py --isa           # pvc / bmg ISA of the K/V loops (offline IGC)

Q, K, V, O are (Z, H, N_CTX, D) arrays (contiguous), bf16 / f16 with float32 accumulation or f32
(tf32 DPAS on GPUs). The forward keeps, per row, the running maximum and sum of the online softmax
in registers and returns the log-sum-exp; the backward (tutorial 06's split: dK and dV per key
block, dQ per query block) recomputes P from it. Any N_CTX: the last blocks are masked.

Layouts: each ``xl.dot`` here feeds the next through row statistics only, so pass propagate-layout
gives both the same whole-row subgroup grid (``sg_layout = [S, 1]``): a subgroup owns rows of S, P
and O, the row max and sum are reductions across its lanes, and P is the next product's A operand
in the registers it was computed in. docs/attention.md walks through it.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

import xekern as xk
import xekern.language as xl

try:
    import ml_dtypes
except ImportError:  # bf16 needs it; the rest does not
    ml_dtypes = None

LOG2E = 1.4426950408889634   # scores in base 2: exp(x) = exp2(x * LOG2E)


@xk.jit
def _rows(X, base, N_CTX, D: xl.constexpr, R: xl.constexpr):
    """Blocks of ``R`` rows of one head's (N_CTX, D) matrix at ``X + base`` (a contiguous head)."""
    return xl.make_tensor_descriptor(X + base, shape=[N_CTX, D], strides=[D, 1], block_shape=[R, D])


@xk.jit
def _fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, lo, hi, offs_m, qk_scale, N_CTX,
                BN: xl.constexpr, MASK: xl.constexpr, CAUSAL: xl.constexpr):
    """The online softmax over key blocks [lo, hi): ``acc``, the row sums ``l_i`` and maxima ``m_i``
    updated. ``MASK``: blocks that cross N_CTX or the diagonal; the others need no mask."""
    offs_n = xl.arange(0, BN)
    for start_n in range(lo, hi, BN):
        k = k_desc.load([start_n, 0])
        qk = xl.dot(q, k.T)
        if MASK:
            keep = (start_n + offs_n)[None, :] < N_CTX
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= (start_n + offs_n)[None, :])
            qk = xl.where(keep, qk * qk_scale, -1.0e30)
            m_ij = xl.maximum(m_i, xl.max(qk, 1))
            p = xl.math.exp2(qk - m_ij[:, None])
        else:
            m_ij = xl.maximum(m_i, xl.max(qk, 1) * qk_scale)
            p = xl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = xl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + xl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([start_n, 0])
        acc = xl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@xk.jit
def attn_fwd(Q, K, V, O, M, sm_scale, N_CTX,
             D: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr, CAUSAL: xl.constexpr):
    """One block of BM query rows of one (batch, head): O and M (the base-2 log-sum-exp of the scaled
    scores, per row). Key blocks that need no mask (before the diagonal, or before N_CTX's ragged
    end) run in a loop of their own, the rest in a masked one."""
    xl.static_assert(BM % BN == 0, "BM must be a multiple of BN")
    start_m = xl.program_id(0) * BM
    off_hz = xl.program_id(1)
    base = off_hz.to(xl.int64) * N_CTX * D
    q_desc = _rows(Q, base, N_CTX, D, BM)
    k_desc = _rows(K, base, N_CTX, D, BN)
    v_desc = _rows(V, base, N_CTX, D, BN)
    o_desc = _rows(O, base, N_CTX, D, BM)
    offs_m = start_m + xl.arange(0, BM)
    m_i = xl.zeros([BM], dtype=xl.float32) - float("inf")
    l_i = xl.zeros([BM], dtype=xl.float32)
    acc = xl.zeros([BM, D], dtype=xl.float32)
    qk_scale = sm_scale * LOG2E
    q = q_desc.load([start_m, 0])
    full = (N_CTX // BN) * BN                  # key blocks [0, full) lie inside N_CTX
    hi = N_CTX
    if CAUSAL:
        full = start_m                         # (a multiple of BN, at most N_CTX's full blocks)
        hi = xl.minimum(start_m + BM, N_CTX)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, 0, full, offs_m, qk_scale, N_CTX, BN, False,
                                CAUSAL)
    acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_desc, v_desc, full, hi, offs_m, qk_scale, N_CTX, BN, True,
                                CAUSAL)
    xl.store(M + off_hz * N_CTX + offs_m, m_i + xl.math.log2(l_i), mask=offs_m < N_CTX)
    o_desc.store([start_m, 0], (acc / l_i[:, None]).to(O.dtype.element_ty))


@xk.jit
def attn_bwd_preprocess(O, DO, DELTA, N_CTX, D: xl.constexpr, BM: xl.constexpr):
    """DELTA = rowsum(O * dO), the term dS subtracts from dP."""
    offs_m = xl.program_id(0) * BM + xl.arange(0, BM)
    off_hz = xl.program_id(1)
    offs_d = xl.arange(0, D)
    at = off_hz.to(xl.int64) * N_CTX * D + offs_m[:, None] * D + offs_d[None, :]
    rows = offs_m[:, None] < N_CTX
    o = xl.load(O + at, mask=rows, other=0.0).to(xl.float32)
    do = xl.load(DO + at, mask=rows, other=0.0).to(xl.float32)
    xl.store(DELTA + off_hz * N_CTX + offs_m, xl.sum(o * do, axis=1), mask=offs_m < N_CTX)


@xk.jit
def attn_bwd_dkdv(Q, K, V, DO, M, DELTA, DK, DV, sm_scale, N_CTX,
                  D: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr, CAUSAL: xl.constexpr):
    """dK and dV of one block of BN keys: a loop over the query blocks that see them."""
    start_n = xl.program_id(0) * BN
    off_hz = xl.program_id(1)
    base = off_hz.to(xl.int64) * N_CTX * D
    q_desc = _rows(Q, base, N_CTX, D, BM)
    do_desc = _rows(DO, base, N_CTX, D, BM)
    k_desc = _rows(K, base, N_CTX, D, BN)
    v_desc = _rows(V, base, N_CTX, D, BN)
    dk_desc = _rows(DK, base, N_CTX, D, BN)
    dv_desc = _rows(DV, base, N_CTX, D, BN)
    k = k_desc.load([start_n, 0])
    v = v_desc.load([start_n, 0])
    offs_n = start_n + xl.arange(0, BN)
    dk = xl.zeros([BN, D], dtype=xl.float32)
    dv = xl.zeros([BN, D], dtype=xl.float32)
    qk_scale = sm_scale * LOG2E
    lo = 0
    if CAUSAL:
        lo = (start_n // BM) * BM   # the first query block with a row at or below these keys
    for start_m in range(lo, N_CTX, BM):
        q = q_desc.load([start_m, 0])
        do = do_desc.load([start_m, 0])
        offs_m = start_m + xl.arange(0, BM)
        inside = offs_m < N_CTX
        m = xl.load(M + off_hz * N_CTX + offs_m, mask=inside, other=0.0)
        delta = xl.load(DELTA + off_hz * N_CTX + offs_m, mask=inside, other=0.0)
        p_t = xl.math.exp2(xl.dot(k, q.T) * qk_scale - m[None, :])
        keep = inside[None, :] & (offs_n < N_CTX)[:, None]
        if CAUSAL:
            keep = keep & (offs_m[None, :] >= offs_n[:, None])
        p_t = xl.where(keep, p_t, 0.0)
        dv = xl.dot(p_t.to(DO.dtype.element_ty), do, dv)
        ds_t = p_t * (xl.dot(v, do.T) - delta[None, :])
        dk = xl.dot(ds_t.to(Q.dtype.element_ty), q, dk)
    dk_desc.store([start_n, 0], (dk * sm_scale).to(DK.dtype.element_ty))
    dv_desc.store([start_n, 0], dv.to(DV.dtype.element_ty))


@xk.jit
def attn_bwd_dq(Q, K, V, DO, M, DELTA, DQ, sm_scale, N_CTX,
                D: xl.constexpr, BM: xl.constexpr, BN: xl.constexpr, CAUSAL: xl.constexpr):
    """dQ of one block of BM queries: a loop over the key blocks they see."""
    start_m = xl.program_id(0) * BM
    off_hz = xl.program_id(1)
    base = off_hz.to(xl.int64) * N_CTX * D
    q_desc = _rows(Q, base, N_CTX, D, BM)
    do_desc = _rows(DO, base, N_CTX, D, BM)
    k_desc = _rows(K, base, N_CTX, D, BN)
    v_desc = _rows(V, base, N_CTX, D, BN)
    dq_desc = _rows(DQ, base, N_CTX, D, BM)
    offs_m = start_m + xl.arange(0, BM)
    inside = offs_m < N_CTX
    q = q_desc.load([start_m, 0])
    do = do_desc.load([start_m, 0])
    m = xl.load(M + off_hz * N_CTX + offs_m, mask=inside, other=0.0)
    delta = xl.load(DELTA + off_hz * N_CTX + offs_m, mask=inside, other=0.0)
    dq = xl.zeros([BM, D], dtype=xl.float32)
    qk_scale = sm_scale * LOG2E
    hi = N_CTX
    if CAUSAL:
        hi = xl.minimum(start_m + BM, N_CTX)
    for start_n in range(0, hi, BN):
        k = k_desc.load([start_n, 0])
        v = v_desc.load([start_n, 0])
        offs_n = start_n + xl.arange(0, BN)
        p = xl.math.exp2(xl.dot(q, k.T) * qk_scale - m[:, None])
        keep = (offs_n < N_CTX)[None, :] & inside[:, None]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = xl.where(keep, p, 0.0)
        ds = p * (xl.dot(do, v.T) - delta[:, None])
        dq = xl.dot(ds.to(K.dtype.element_ty), k, dq)
    dq_desc.store([start_m, 0], (dq * sm_scale).to(DQ.dtype.element_ty))


# ---- configurations -------------------------------------------------------------------------------

def configs_for(target: str, kernel: str):
    """Autotuning candidates per target family and kernel (kept on disk by ``xk.autotune``, keyed on
    N_CTX, D and CAUSAL); ``--isa`` shows what each compiles to. GPUs: the forward at tutorial 06's
    blocks (BM 128, BN 64) on 16 subgroups of 8 whole rows each or, as the tutorial, 8 of 16 rows
    (neither spills on pvc or bmg), the backward at the tutorial's (dK dV: 32 queries per step for
    128 keys; dQ: 128 queries, 32 keys per step). The CPU device: small tiles on one or two
    subgroups, which its compiler builds in seconds."""
    if target in ("pvc", "bmg", "lnl", "ptl", "arl"):
        return {"attn_fwd": [xk.Config(dict(BM=128, BN=64), num_subgroups=16),
                             xk.Config(dict(BM=128, BN=64), num_subgroups=8),
                             xk.Config(dict(BM=128, BN=32), num_subgroups=16),
                             xk.Config(dict(BM=64, BN=32), num_subgroups=8)],
                "attn_bwd_dkdv": [xk.Config(dict(BM=32, BN=128), num_subgroups=16),
                                  xk.Config(dict(BM=32, BN=64), num_subgroups=8)],
                "attn_bwd_dq": [xk.Config(dict(BM=128, BN=32), num_subgroups=16),
                                xk.Config(dict(BM=64, BN=32), num_subgroups=8)]}[kernel]
    if target == "dg2":
        return [xk.Config(dict(BM=64, BN=32), num_subgroups=8)]
    return [xk.Config(dict(BM=32, BN=32), num_subgroups=2), xk.Config(dict(BM=16, BN=16), num_subgroups=1)]


_TUNERS = {}


def _tuned(kernel, target: str):
    key = (kernel.__name__, target)
    if key not in _TUNERS:
        _TUNERS[key] = xk.autotune(configs=configs_for(target, kernel.__name__), key=["N_CTX", "D", "CAUSAL"],
                                   verbose=os.environ.get("XEKERN_AUTOTUNE_VERBOSE", "1") != "0")(kernel)
    return _TUNERS[key]


def _launch(kernel, args, consts, config, target, queue, rows):
    """``kernel`` over (blocks of ``rows``, Z * H) with ``config`` or autotuned."""
    z_h, n_ctx = consts.pop("Z_H"), consts["N_CTX"]
    opts = {k: v for k, v in (("target", target), ("queue", queue)) if v is not None}
    kw = {k: v for k, v in consts.items() if k != "N_CTX"}

    def grid(meta):
        return (xk.cdiv(n_ctx, meta[rows]), z_h)
    if config is not None:
        return kernel[grid](*args, n_ctx, **kw, **config.launch_kwargs(), **opts)
    t = target or xk.target_for(queue.sycl_device if queue is not None else None).name
    return _tuned(kernel, t)[grid](*args, n_ctx, **kw, **opts)


def _shape(q):
    z, h, n, d = q.shape
    if d not in (16, 32, 64, 128):
        raise ValueError(f"head dim {d}: 16, 32, 64 or 128 expected")
    return z * h, n, d


def forward(q, k, v, o, lse2, sm_scale, causal=False, config=None, target=None, queue=None):
    """O = softmax(Q K^T sm_scale) V into ``o`` (Z, H, N, D) and ``lse2`` (Z, H, N): the base-2
    log-sum-exp of the scaled scores (the natural one is ``lse2 * ln 2``), which backward takes."""
    z_h, n, d = _shape(q)
    return _launch(attn_fwd, (q, k, v, o, lse2, float(sm_scale)), dict(Z_H=z_h, N_CTX=n, D=d, CAUSAL=bool(causal)),
                   config, target, queue, "BM")


def backward(q, k, v, o, do, lse2, delta, dq, dk, dv, sm_scale, causal=False, config=None, target=None,
             queue=None):
    """dQ, dK, dV into ``dq``, ``dk``, ``dv`` from dO and forward's O and ``lse2``; ``delta`` (Z, H, N,
    float32) is scratch."""
    z_h, n, d = _shape(q)
    opts = {k_: v_ for k_, v_ in (("target", target), ("queue", queue)) if v_ is not None}
    attn_bwd_preprocess[(xk.cdiv(n, 32), z_h)](o, do, delta, n, D=d, BM=32, **opts)
    consts = dict(N_CTX=n, D=d, CAUSAL=bool(causal))
    _launch(attn_bwd_dkdv, (q, k, v, do, lse2, delta, dk, dv, float(sm_scale)), dict(consts, Z_H=z_h), config,
            target, queue, "BN")
    return _launch(attn_bwd_dq, (q, k, v, do, lse2, delta, dq, float(sm_scale)), dict(consts, Z_H=z_h), config,
                   target, queue, "BM")


# ---- references -----------------------------------------------------------------------------------

def reference(q, k, v, do, sm_scale, causal):
    """O, the natural log-sum-exp, dQ, dK, dV in float64 (NumPy)."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = np.einsum("zhmd,zhnd->zhmn", q, k) * sm_scale
    n = q.shape[2]
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    e = np.exp(s - mx)
    lse = np.log(e.sum(-1, keepdims=True)) + mx
    p = np.exp(s - lse)
    o = p @ v
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    dq = ds @ k * sm_scale
    dk = np.swapaxes(ds, -1, -2) @ q * sm_scale
    return o, lse[..., 0], dq, dk, dv


def numpy_attention(q, k, v, sm_scale):
    """The forward as NumPy users write it (BLAS matmuls in float32): the CPU benchmark's baseline."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(sm_scale)
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return np.matmul(s, v)


DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def np_dtype(name):
    if DTYPES[name] == "bfloat16":
        if ml_dtypes is None:
            raise SystemExit("bf16 needs ml_dtypes: pip install ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(DTYPES[name])


def tolerance(dtype: str) -> float:
    """Largest error, relative to the largest magnitude of the reference, that passes."""
    return {"f32": 2e-4, "f16": 4e-3, "bf16": 3e-2}[dtype]


def run_case(rng, dtype, causal, d, n_ctx, z=1, h=2, config=None, target=None, queue=None, bwd=True):
    """One forward (and backward) on fresh random data with poisoned outputs; returns the errors
    (max |got - ref| / max |ref|) of O, LSE, dQ, dK, dV and the seconds of the first forward call."""
    dt = np_dtype(dtype)
    shape = (z, h, n_ctx, d)
    q, k, v, do = (rng.standard_normal(shape).astype(dt) for _ in range(4))
    sm_scale = 1.0 / math.sqrt(d)
    dev = lambda a: xk.to_device(a, queue=queue)  # noqa: E731

    def poisoned(shp, npdt):
        a = xk.empty(shp, npdt, queue=queue)
        a.fill_bytes(0xFF)
        return a
    dq_, dk_, dv_, ddo = dev(q), dev(k), dev(v), dev(do)
    o, lse2 = poisoned(shape, dt), poisoned(shape[:3], np.float32)
    t0 = time.perf_counter()
    forward(dq_, dk_, dv_, o, lse2, sm_scale, causal, config=config, target=target, queue=queue).wait()
    first = time.perf_counter() - t0
    ro, rlse, rdq, rdk, rdv = reference(q, k, v, do, sm_scale, causal)
    err = lambda got, ref: float(np.abs(got.astype(np.float64) - ref).max() / max(1.0, np.abs(ref).max()))  # noqa
    errs = dict(o=err(o.numpy(), ro), lse=err(lse2.numpy() * math.log(2), rlse))
    if bwd:
        dq, dk, dv = (poisoned(shape, dt) for _ in range(3))
        delta = poisoned(shape[:3], np.float32)
        # the backward takes O as the kernel computed it (rounded to the input dtype)
        backward(dq_, dk_, dv_, o, ddo, lse2, delta, dq, dk, dv, sm_scale, causal, config=config,
                 target=target, queue=queue).wait()
        _, _, rdq, rdk, rdv = reference(q, k, v, do, sm_scale, causal)
        errs.update(dq=err(dq.numpy(), rdq), dk=err(dk.numpy(), rdk), dv=err(dv.numpy(), rdv))
    return errs, first


# ---- command line ---------------------------------------------------------------------------------

def bench(args) -> int:
    """Forward f32 at 1024 tokens against NumPy's BLAS-based attention, in the same process."""
    q_ = xk.runtime.device.queue_for(args.device)
    rng = np.random.default_rng(0)
    z, h, n, d = 1, 4, args.n_ctx or 1024, args.d or 64
    q, k, v = (rng.standard_normal((z, h, n, d)).astype(np.float32) for _ in range(3))
    sm = 1.0 / math.sqrt(d)
    dq, dk, dv = (xk.to_device(a, queue=q_) for a in (q, k, v))
    o, lse2 = xk.empty((z, h, n, d), np.float32, queue=q_), xk.empty((z, h, n), np.float32, queue=q_)
    t0 = time.perf_counter()
    run = lambda: forward(dq, dk, dv, o, lse2, sm, args.causal, target=args.target, queue=q_)  # noqa: E731
    run().wait()
    first = time.perf_counter() - t0
    ms = xk.testing.do_bench(run, warmup=1, rep=args.rep)
    t0 = time.perf_counter()
    for _ in range(args.rep):
        ref = numpy_attention(q, k, v, sm)
    np_ms = (time.perf_counter() - t0) * 1e3 / args.rep
    flops = 4.0 * z * h * n * n * d * (0.5 if args.causal else 1.0)
    err = float(np.abs(o.numpy() - ref).max())
    print(f"forward f32, Z={z} H={h} N_CTX={n} D={d}{' causal' if args.causal else ''} on {q_.sycl_device.name}")
    print(f"  xekern {ms:8.2f} ms  {flops / ms / 1e6:8.1f} GFLOP/s   (first call {first:.1f} s)")
    print(f"  NumPy  {np_ms:8.2f} ms  {4.0 * z * h * n * n * d / np_ms / 1e6:8.1f} GFLOP/s   "
          f"(BLAS matmuls, full scores{'; not causal' if args.causal else ''})")
    print(f"  xekern / NumPy speed: {np_ms / ms:.2f}x   max |err| {err:.1e}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default=None, choices=sorted(DTYPES), help="default f32; with --check: every dtype")
    p.add_argument("--causal", action="store_true", help="causal mask (with --check: both unless given)")
    p.add_argument("--d", type=int, default=None, help="head dim, 64 or 128 (default 64; --check: both)")
    p.add_argument("--n-ctx", type=int, default=None, help="sequence length (default 77, --bench 1024)")
    p.add_argument("--device", default=None, help="dpctl filter string, e.g. opencl:cpu")
    p.add_argument("--target", default=None, help="xekern target (default: the device's)")
    p.add_argument("--check", action="store_true", help="forward and backward against float64 NumPy")
    p.add_argument("--bench", action="store_true", help="forward f32 against NumPy's BLAS attention")
    p.add_argument("--isa", action="store_true", help="compile for pvc and bmg offline and report the K/V loops")
    p.add_argument("--compiler", default=None, choices=["current", "12504"], help="with --isa: the offline compiler")
    p.add_argument("--rep", type=int, default=5)
    args = p.parse_args(argv)
    if args.isa:
        from isa_report import report
        report(args.compiler)
        return 0
    if args.bench:
        return bench(args)
    queue = xk.runtime.device.queue_for(args.device)
    rng = np.random.default_rng()
    n_ctx = args.n_ctx or 77
    if args.check:
        cases = [(dt, c, d) for dt in ([args.dtype] if args.dtype else ("f32", "bf16", "f16"))
                 for c in ([True] if args.causal else (False, True)) for d in ([args.d] if args.d else (64, 128))]
    else:
        cases = [(args.dtype or "f32", args.causal, args.d or 64)]
    print(f"{'dtype':>5} {'causal':>6} {'D':>4} {'N_CTX':>6} {'O':>9} {'LSE':>9} {'dQ':>9} {'dK':>9} {'dV':>9}"
          f"  first fwd call  device")
    bad = []
    for dtype, causal, d in cases:
        errs, first = run_case(rng, dtype, causal, d, n_ctx, target=args.target, queue=queue)
        print(f"{dtype:>5} {str(causal):>6} {d:>4} {n_ctx:>6} " + " ".join(f"{errs[k]:9.1e}" for k in
              ("o", "lse", "dq", "dk", "dv")) + f"  {first:12.1f} s  {queue.sycl_device.name}", flush=True)
        if not max(errs.values()) <= tolerance(dtype):
            bad.append((dtype, causal, d, errs))
    if bad:
        raise SystemExit(f"wrong results: {bad}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
