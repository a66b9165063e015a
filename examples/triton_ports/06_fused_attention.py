"""Triton tutorial 06, fused attention (Flash Attention v2), forward, ported to xekern.

The kernels are the tutorial's block-pointer forward (``_attn_fwd_inner``, ``_attn_fwd``) with
``tl`` spelled ``xl``; the host code is NumPy instead of torch, and the tutorial's autotuning
configs (``num_warps``, ``num_stages``) become xekern configs (``num_subgroups``). As in the
tutorial, N_CTX must be a multiple of BLOCK_M (its loads and stores have no masks).
examples/attention/attention.py is xekern's own version, with ragged lengths, the backward, and
the GPU figures.

    python examples/triton_ports/06_fused_attention.py
"""
import math

import numpy as np

import xekern as xk
import xekern.language as xl


@xk.jit
def _attn_fwd_inner(acc, l_i, m_i, q,  #
                    K_block_ptr, V_block_ptr,  #
                    start_m, qk_scale,  #
                    BLOCK_M: xl.constexpr, HEAD_DIM: xl.constexpr, BLOCK_N: xl.constexpr,  #
                    CAUSAL: xl.constexpr, offs_m: xl.constexpr, offs_n: xl.constexpr,  #
                    N_CTX: xl.constexpr, fp8_v: xl.constexpr):
    # range of values handled by this stage
    if CAUSAL:
        causal_start = start_m * BLOCK_M
    else:
        causal_start = N_CTX
    lo, hi = 0, N_CTX
    K_block_ptr = xl.advance(K_block_ptr, (0, lo))
    V_block_ptr = xl.advance(V_block_ptr, (lo, 0))
    # loop over k, v and update accumulator
    for start_n in range(lo, hi, BLOCK_N):
        start_n = xl.multiple_of(start_n, BLOCK_N)
        # -- compute qk ----
        k = xl.load(K_block_ptr)
        qk = xl.dot(q, k)
        if start_n >= causal_start:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + xl.where(mask, 0, -1.0e6)
            m_ij = xl.maximum(m_i, xl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = xl.maximum(m_i, xl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = xl.math.exp2(qk)
        l_ij = xl.sum(p, 1)
        # -- update m_i and l_i
        alpha = xl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        # -- update output accumulator --
        acc = acc * alpha[:, None]
        # update acc
        v = xl.load(V_block_ptr)
        if fp8_v:
            p = p.to(xl.float8e5)
        else:
            p = p.to(xl.float16)
        acc = xl.dot(p, v, acc)
        # update m_i and l_i
        m_i = m_ij
        V_block_ptr = xl.advance(V_block_ptr, (BLOCK_N, 0))
        K_block_ptr = xl.advance(K_block_ptr, (0, BLOCK_N))
    return acc, l_i, m_i


@xk.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out,  #
              stride_qz, stride_qh, stride_qm, stride_qk,  #
              stride_kz, stride_kh, stride_kn, stride_kk,  #
              stride_vz, stride_vh, stride_vk, stride_vn,  #
              stride_oz, stride_oh, stride_om, stride_on,  #
              Z, H, N_CTX,  #
              HEAD_DIM: xl.constexpr,  #
              BLOCK_M: xl.constexpr,  #
              BLOCK_N: xl.constexpr,  #
              CAUSAL: xl.constexpr  #
              ):
    xl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = xl.program_id(0)
    off_hz = xl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(xl.int64) * stride_qz + off_h.to(xl.int64) * stride_qh

    # block pointers
    Q_block_ptr = xl.make_block_ptr(
        base=Q + qvk_offset,
        shape=(N_CTX, HEAD_DIM),
        strides=(stride_qm, stride_qk),
        offsets=(start_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, HEAD_DIM),
        order=(1, 0),
    )
    v_order: xl.constexpr = (0, 1) if V.dtype.element_ty == xl.float8e5 else (1, 0)
    V_block_ptr = xl.make_block_ptr(
        base=V + qvk_offset,
        shape=(N_CTX, HEAD_DIM),
        strides=(stride_vk, stride_vn),
        offsets=(0, 0),
        block_shape=(BLOCK_N, HEAD_DIM),
        order=v_order,
    )
    K_block_ptr = xl.make_block_ptr(
        base=K + qvk_offset,
        shape=(HEAD_DIM, N_CTX),
        strides=(stride_kk, stride_kn),
        offsets=(0, 0),
        block_shape=(HEAD_DIM, BLOCK_N),
        order=(0, 1),
    )
    O_block_ptr = xl.make_block_ptr(
        base=Out + qvk_offset,
        shape=(N_CTX, HEAD_DIM),
        strides=(stride_om, stride_on),
        offsets=(start_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, HEAD_DIM),
        order=(1, 0),
    )
    # initialize offsets
    offs_m = start_m * BLOCK_M + xl.arange(0, BLOCK_M)
    offs_n = xl.arange(0, BLOCK_N)
    # initialize pointer to m and l
    m_i = xl.zeros([BLOCK_M], dtype=xl.float32) - float("inf")
    l_i = xl.zeros([BLOCK_M], dtype=xl.float32) + 1.0
    acc = xl.zeros([BLOCK_M, HEAD_DIM], dtype=xl.float32)
    # load scales
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/log(2)
    # load q: it will stay in SRAM throughout
    q = xl.load(Q_block_ptr)

    # Rely on causal condition to split loop into off-band, on-band
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr,  #
                                    start_m, qk_scale,  #
                                    BLOCK_M, HEAD_DIM, BLOCK_N,  #
                                    CAUSAL, offs_m, offs_n, N_CTX, V.dtype.element_ty == xl.float8e5  #
                                    )
    # epilogue
    m_i += xl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    xl.store(m_ptrs, m_i)
    xl.store(O_block_ptr, acc.to(Out.type.element_ty))


def attention(q, k, v, causal, sm_scale, BLOCK_M=32, BLOCK_N=16, num_subgroups=2):
    """The tutorial's ``_attention.forward`` on NumPy arrays (Z, H, N_CTX, HEAD_DIM): O and M."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    assert N_CTX % BLOCK_M == 0, "the tutorial's forward needs N_CTX to be a multiple of BLOCK_M"
    o = np.empty_like(q)
    M = np.empty((Z, H, N_CTX), dtype=np.float32)
    s = lambda x: tuple(st // x.itemsize for st in x.strides)  # noqa: E731  (strides in elements)
    grid = (xk.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    _attn_fwd[grid](q, k, v, sm_scale, M, o,  #
                    *s(q), *s(k), *s(v), *s(o),  #
                    Z, H, N_CTX,  #
                    HEAD_DIM=HEAD_DIM, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                    num_subgroups=num_subgroups)
    return o, M


def reference(q, k, v, causal, sm_scale):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    p = np.einsum("zhmd,zhnd->zhmn", q, k) * sm_scale
    if causal:
        n = q.shape[2]
        p = np.where(np.tril(np.ones((n, n), bool)), p, -np.inf)
    p = np.exp(p - p.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v


def main():
    rng = np.random.default_rng(0)
    Z, H, N_CTX, HEAD_DIM = 1, 2, 128, 64
    q, k, v = ((rng.standard_normal((Z, H, N_CTX, HEAD_DIM)) * 0.5).astype(np.float16) for _ in range(3))
    sm_scale = 1.0 / math.sqrt(HEAD_DIM)
    for causal in (False, True):
        o, _ = attention(q, k, v, causal, sm_scale)
        err = float(np.abs(o.astype(np.float64) - reference(q, k, v, causal, sm_scale)).max())
        print(f"causal={causal}: max |err| vs NumPy float64 = {err:.2e}")
        assert err < 1e-2, err


if __name__ == "__main__":
    main()
