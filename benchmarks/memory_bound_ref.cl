// Hand-written OpenCL C references for benchmarks/memory_bound.py: the same work as xekern's
// Triton-style kernels, each written twice as an expert would for an Intel GPU:
//   *_blk  sub-group block reads and writes (intel_sub_group_block_read/write), a uniform in-bounds
//          test per chunk choosing them, per-lane accesses only for a ragged tail;
//   *_vec  per-lane vector loads and stores (vload4 / vstore4), the same uniform test.
// T is the element type in memory: float (T_F32) or bfloat16 (ushort bits, converted to float).
// Edge loops (a chunk cut by the end of the data) are not unrolled (#pragma unroll 1), like
// xekern's loop that takes such a run slot by slot. The loops over a work-group's chunks, rows and
// elements are counted loops of a compile-time trip count, fully unrolled (#pragma unroll): the
// ISA's static instruction and message counts are then what a thread executes, as for xekern's
// straight-line code (a loop left rolled would count its body once however often it runs).
// Work-group: WG work items in sub-groups of SG (the xekern kernels use the same counts). Each kernel
// is compiled alone, with its section's defines (-DADD_BLOCK=1024 ...) and -cl-std=CL2.0.

#ifdef T_BF16
typedef ushort T;
typedef ushort4 T4;
typedef ushort8 T8;
#define LD(x) as_float((uint)(x) << 16)
#define ST(f) intel_convert_bfloat16_as_ushort(f)
#define LD4(v) (float4)(LD((v).s0), LD((v).s1), LD((v).s2), LD((v).s3))
#define ST4(f) (ushort4)(ST((f).s0), ST((f).s1), ST((f).s2), ST((f).s3))
#define BLOCK_READ8(p) as_ushort8(intel_sub_group_block_read_us8((__global const ushort *)(p)))
#define BLOCK_WRITE8(p, v) intel_sub_group_block_write_us8((__global ushort *)(p), (v))
#define LD8(v) (float8)(LD((v).s0), LD((v).s1), LD((v).s2), LD((v).s3), LD((v).s4), LD((v).s5), LD((v).s6), LD((v).s7))
#define ST8(f) (ushort8)(ST((f).s0), ST((f).s1), ST((f).s2), ST((f).s3), ST((f).s4), ST((f).s5), ST((f).s6), ST((f).s7))
#else
typedef float T;
typedef float4 T4;
typedef float8 T8;
#define LD(x) (x)
#define ST(f) (f)
#define LD4(v) (v)
#define ST4(f) (f)
#define BLOCK_READ8(p) as_float8(intel_sub_group_block_read8((__global const uint *)(p)))
#define BLOCK_WRITE8(p, v) intel_sub_group_block_write8((__global uint *)(p), as_uint8(v))
#define LD8(v) (v)
#define ST8(f) (f)
#endif

#ifndef SG
#define SG 16
#endif
#define CH (SG * 8)                   // elements of one sub-group block read of 8 per lane
#define REQD __attribute__((intel_reqd_sub_group_size(SG))) __attribute__((reqd_work_group_size(WG, 1, 1)))
#define LANE get_sub_group_local_id()
#define SGID get_sub_group_id()

// one chunk of a row: a block read when it is whole, else per lane with zeros past n
float8 ln_chunk(__global const T *p, int c, int n) {
    if (c + CH <= n) return LD8(BLOCK_READ8(p + c));
    float8 v;
    #pragma unroll 1
    for (int j = 0; j < 8; j++) { int i = c + j * SG + LANE; v[j] = i < n ? LD(p[i]) : 0.0f; }
    return v;
}

// the vload4 counterpart
float4 ln_vec(__global const T *p, int c, int n) {
    if (c + 4 <= n) return LD4(vload4(0, p + c));
    float4 v;
    #pragma unroll 1
    for (int j = 0; j < 4; j++) v[j] = c + j < n ? LD(p[c + j]) : 0.0f;
    return v;
}

#ifdef ADD_BLOCK
// ---- vector add: BLOCK elements per work-group ------------------------------------------------------
// block: each sub-group CH-element chunks (one block_read8 of 8 elements per lane)
REQD __kernel void add_blk(__global const T *x, __global const T *y, __global T *out, int n) {
    int base = get_group_id(0) * ADD_BLOCK;
    #pragma unroll
    for (int t = 0; t < ADD_BLOCK / (WG / SG * CH); t++) {
        int c = base + SGID * CH + t * (WG / SG * CH);
        if (c + CH <= n) {
            BLOCK_WRITE8(out + c, ST8(LD8(BLOCK_READ8(x + c)) + LD8(BLOCK_READ8(y + c))));
        } else {
            #pragma unroll 1
            for (int i = c + LANE; i < n && i < c + CH; i += SG) out[i] = ST(LD(x[i]) + LD(y[i]));
        }
    }
}

REQD __kernel void add_vec(__global const T *x, __global const T *y, __global T *out, int n) {
    int base = get_group_id(0) * ADD_BLOCK;
    #pragma unroll
    for (int t = 0; t < ADD_BLOCK / (WG * 4); t++) {
        int c = base + get_local_id(0) * 4 + t * (WG * 4);
        if (c + 4 <= n) {
            vstore4(ST4(LD4(vload4(0, x + c)) + LD4(vload4(0, y + c))), 0, out + c);
        } else {
            #pragma unroll 1
            for (int i = c; i < n; i++) out[i] = ST(LD(x[i]) + LD(y[i]));
        }
    }
}
#endif  // ADD_BLOCK

#ifdef SM_BLOCK
// ---- row softmax: one row of n_cols <= SM_BLOCK per work-group -----------------------------------------
#define SM_PER_SG (SM_BLOCK / (WG / SG))            // a sub-group's contiguous part of the row
#define SM_CHUNKS (SM_PER_SG / CH)
REQD __kernel void softmax_blk(__global T *out, __global const T *in, int in_stride, int out_stride, int n_cols) {
    __global const T *row = in + get_group_id(0) * in_stride;
    __global T *orow = out + get_group_id(0) * out_stride;
    int first = SGID * SM_PER_SG;
    float8 v[SM_CHUNKS];
    float m = -INFINITY;
    for (int k = 0; k < SM_CHUNKS; k++) {
        int c = first + k * CH;
        if (c + CH <= n_cols) {
            v[k] = LD8(BLOCK_READ8(row + c));
        } else {
            #pragma unroll 1
            for (int j = 0; j < 8; j++) {
                int i = c + j * SG + LANE;
                v[k][j] = i < n_cols ? LD(row[i]) : -INFINITY;
            }
        }
        for (int j = 0; j < 8; j++) m = fmax(m, v[k][j]);
    }
    m = work_group_reduce_max(m);
    float s = 0.0f;
    for (int k = 0; k < SM_CHUNKS; k++) {
        v[k] = exp(v[k] - m);
        for (int j = 0; j < 8; j++) s += v[k][j];
    }
    s = work_group_reduce_add(s);
    for (int k = 0; k < SM_CHUNKS; k++) {
        int c = first + k * CH;
        float8 y = v[k] / s;
        if (c + CH <= n_cols) {
            BLOCK_WRITE8(orow + c, ST8(y));
        } else {
            #pragma unroll 1
            for (int j = 0; j < 8; j++) {
                int i = c + j * SG + LANE;
                if (i < n_cols) orow[i] = ST(y[j]);
            }
        }
    }
}

#define SM_VECS (SM_BLOCK / (WG * 4))
REQD __kernel void softmax_vec(__global T *out, __global const T *in, int in_stride, int out_stride, int n_cols) {
    __global const T *row = in + get_group_id(0) * in_stride;
    __global T *orow = out + get_group_id(0) * out_stride;
    float4 v[SM_VECS];
    float m = -INFINITY;
    for (int k = 0; k < SM_VECS; k++) {
        int c = (k * WG + get_local_id(0)) * 4;
        if (c + 4 <= n_cols) {
            v[k] = LD4(vload4(0, row + c));
        } else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) v[k][j] = c + j < n_cols ? LD(row[c + j]) : -INFINITY;
        }
        m = fmax(m, fmax(fmax(v[k].s0, v[k].s1), fmax(v[k].s2, v[k].s3)));
    }
    m = work_group_reduce_max(m);
    float s = 0.0f;
    for (int k = 0; k < SM_VECS; k++) {
        v[k] = exp(v[k] - m);
        s += v[k].s0 + v[k].s1 + v[k].s2 + v[k].s3;
    }
    s = work_group_reduce_add(s);
    for (int k = 0; k < SM_VECS; k++) {
        int c = (k * WG + get_local_id(0)) * 4;
        float4 y = v[k] / s;
        if (c + 4 <= n_cols) {
            vstore4(ST4(y), 0, orow + c);
        } else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) if (c + j < n_cols) orow[c + j] = ST(y[j]);
        }
    }
}
#endif  // SM_BLOCK

#ifdef LN_BLOCK
// ---- layer norm forward (tutorial 05): one row per work-group, three passes over LN_BLOCK chunks ------
#define LN_PER_SG (LN_BLOCK / (WG / SG))
#define LN_CHUNKS (LN_PER_SG / CH)
REQD __kernel void layer_norm_blk(__global const T *X, __global T *Y, __global const T *W, __global const T *B,
                                  __global float *Mean, __global float *Rstd, int stride, int N, float eps) {
    int row = get_group_id(0);
    X += row * stride;
    Y += row * stride;
    float sum = 0.0f;
    for (int off = 0; off < N; off += LN_BLOCK)
        for (int k = 0; k < LN_CHUNKS; k++) {
            float8 a = ln_chunk(X, off + SGID * LN_PER_SG + k * CH, N);
            for (int j = 0; j < 8; j++) sum += a[j];
        }
    float mean = work_group_reduce_add(sum) / N;
    float var = 0.0f;
    for (int off = 0; off < N; off += LN_BLOCK)
        for (int k = 0; k < LN_CHUNKS; k++) {
            int c = off + SGID * LN_PER_SG + k * CH;
            float8 a = ln_chunk(X, c, N);
            for (int j = 0; j < 8; j++) { float d = c + j * SG + LANE < N ? a[j] - mean : 0.0f; var += d * d; }
        }
    float rstd = rsqrt(work_group_reduce_add(var) / N + eps);
    if (get_local_id(0) == 0) { Mean[row] = mean; Rstd[row] = rstd; }
    for (int off = 0; off < N; off += LN_BLOCK)
        for (int k = 0; k < LN_CHUNKS; k++) {
            int c = off + SGID * LN_PER_SG + k * CH;
            float8 y = (ln_chunk(X, c, N) - mean) * rstd * ln_chunk(W, c, N) + ln_chunk(B, c, N);
            if (c + CH <= N) {
                BLOCK_WRITE8(Y + c, ST8(y));
            } else {
                #pragma unroll 1
                for (int j = 0; j < 8; j++) { int i = c + j * SG + LANE; if (i < N) Y[i] = ST(y[j]); }
            }
        }
}

REQD __kernel void layer_norm_vec(__global const T *X, __global T *Y, __global const T *W, __global const T *B,
                                  __global float *Mean, __global float *Rstd, int stride, int N, float eps) {
    int row = get_group_id(0);
    X += row * stride;
    Y += row * stride;
    float sum = 0.0f;
    #pragma unroll
    for (int t = 0; t < LN_BLOCK / (WG * 4); t++) {   // (N <= LN_BLOCK, as the xekern kernel's one tile)
        int c = get_local_id(0) * 4 + t * (WG * 4);
        if (c >= N) break;
        float4 a = ln_vec(X, c, N);
        sum += a.s0 + a.s1 + a.s2 + a.s3;
    }
    float mean = work_group_reduce_add(sum) / N;
    float var = 0.0f;
    #pragma unroll
    for (int t = 0; t < LN_BLOCK / (WG * 4); t++) {
        int c = get_local_id(0) * 4 + t * (WG * 4);
        if (c >= N) break;
        float4 a = ln_vec(X, c, N);
        for (int j = 0; j < 4; j++) { float d = c + j < N ? a[j] - mean : 0.0f; var += d * d; }
    }
    float rstd = rsqrt(work_group_reduce_add(var) / N + eps);
    if (get_local_id(0) == 0) { Mean[row] = mean; Rstd[row] = rstd; }
    #pragma unroll
    for (int t = 0; t < LN_BLOCK / (WG * 4); t++) {
        int c = get_local_id(0) * 4 + t * (WG * 4);
        if (c >= N) break;
        float4 y = (ln_vec(X, c, N) - mean) * rstd * ln_vec(W, c, N) + ln_vec(B, c, N);
        if (c + 4 <= N) vstore4(ST4(y), 0, Y + c);
        else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) if (c + j < N) Y[c + j] = ST(y[j]);
        }
    }
}
#endif  // LN_BLOCK

#ifdef RMS_BLOCK
// ---- RMSNorm: one row of N <= RMS_BLOCK per work-group, y = x * rsqrt(mean(x^2) + eps) * w ----------
#define RMS_PER_SG (RMS_BLOCK / (WG / SG))
#define RMS_CHUNKS (RMS_PER_SG / CH)
REQD __kernel void rmsnorm_blk(__global const T *X, __global T *Y, __global const T *W, int stride, int N, float eps) {
    X += get_group_id(0) * stride;
    Y += get_group_id(0) * stride;
    float8 v[RMS_CHUNKS];
    float ss = 0.0f;
    for (int k = 0; k < RMS_CHUNKS; k++) {
        v[k] = ln_chunk(X, SGID * RMS_PER_SG + k * CH, N);
        for (int j = 0; j < 8; j++) ss += v[k][j] * v[k][j];
    }
    float r = rsqrt(work_group_reduce_add(ss) / N + eps);
    for (int k = 0; k < RMS_CHUNKS; k++) {
        int c = SGID * RMS_PER_SG + k * CH;
        float8 y = v[k] * r * ln_chunk(W, c, N);
        if (c + CH <= N) BLOCK_WRITE8(Y + c, ST8(y));
        else {
            #pragma unroll 1
            for (int j = 0; j < 8; j++) { int i = c + j * SG + LANE; if (i < N) Y[i] = ST(y[j]); }
        }
    }
}

#define RMS_VECS (RMS_BLOCK / (WG * 4))
REQD __kernel void rmsnorm_vec(__global const T *X, __global T *Y, __global const T *W, int stride, int N, float eps) {
    X += get_group_id(0) * stride;
    Y += get_group_id(0) * stride;
    float4 v[RMS_VECS];
    float ss = 0.0f;
    for (int k = 0; k < RMS_VECS; k++) {
        v[k] = ln_vec(X, (k * WG + get_local_id(0)) * 4, N);
        ss += dot(v[k], v[k]);
    }
    float r = rsqrt(work_group_reduce_add(ss) / N + eps);
    for (int k = 0; k < RMS_VECS; k++) {
        int c = (k * WG + get_local_id(0)) * 4;
        float4 y = v[k] * r * ln_vec(W, c, N);
        if (c + 4 <= N) vstore4(ST4(y), 0, Y + c);
        else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) if (c + j < N) Y[c + j] = ST(y[j]);
        }
    }
}
#endif  // RMS_BLOCK

#ifdef GE_BM
// ---- GELU (tanh form) over a GE_BM x GE_BN tile of a row-major matrix ---------------------------------
float gelu(float x) { return 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }
float8 gelu8(float8 x) { return 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }
float4 gelu4(float4 x) { return 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }

// each sub-group takes whole rows; a row of GE_BN elements is GE_BN / CH chunks of one block_read8
REQD __kernel void gelu_blk(__global const T *x, __global T *y, int M, int N, int stride) {
    int r0 = get_group_id(0) * GE_BM, c0 = get_group_id(1) * GE_BN;
    #pragma unroll
    for (int t = 0; t < GE_BM / (WG / SG); t++) {
        int r = r0 + SGID + t * (WG / SG);
        if (r >= M) break;
        #pragma unroll
        for (int c = c0; c < c0 + GE_BN; c += CH) {
            __global const T *p = x + r * stride + c;
            if (c + CH <= N) {
                BLOCK_WRITE8(y + r * stride + c, ST8(gelu8(LD8(BLOCK_READ8(p)))));
            } else {
                #pragma unroll 1
                for (int i = c + LANE; i < N && i < c + CH; i += SG) y[r * stride + i] = ST(gelu(LD(x[r * stride + i])));
            }
        }
    }
}

REQD __kernel void gelu_vec(__global const T *x, __global T *y, int M, int N, int stride) {
    int r0 = get_group_id(0) * GE_BM, c0 = get_group_id(1) * GE_BN;
    #pragma unroll
    for (int t = 0; t < GE_BM * GE_BN / (WG * 4); t++) {
        int e = get_local_id(0) * 4 + t * (WG * 4);
        int r = r0 + e / GE_BN, c = c0 + e % GE_BN;
        if (r >= M) break;
        if (c + 4 <= N) {
            vstore4(ST4(gelu4(LD4(vload4(0, x + r * stride + c)))), 0, y + r * stride + c);
        } else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) if (c + j < N) y[r * stride + c + j] = ST(gelu(LD(x[r * stride + c + j])));
        }
    }
}
#endif  // GE_BM

#ifdef RS_BM
// ---- row sum of an RS_BM x RS_BN tile: out[r] = sum over the tile's columns ---------------------------
REQD __kernel void row_sum_blk(__global const T *x, __global float *out, int M, int N, int stride) {
    int r0 = get_group_id(0) * RS_BM;
    #pragma unroll
    for (int t = 0; t < RS_BM / (WG / SG); t++) {
        int r = r0 + SGID + t * (WG / SG);
        if (r >= M) break;
        float s = 0.0f;
        #pragma unroll
        for (int c = 0; c < RS_BN; c += CH) {
            float8 v = ln_chunk(x + r * stride, c, N);
            for (int j = 0; j < 8; j++) s += v[j];
        }
        s = sub_group_reduce_add(s);
        if (LANE == 0) out[r] = s;
    }
}

REQD __kernel void row_sum_vec(__global const T *x, __global float *out, int M, int N, int stride) {
    int r0 = get_group_id(0) * RS_BM;
    #pragma unroll
    for (int t = 0; t < RS_BM / (WG / SG); t++) {
        int r = r0 + SGID + t * (WG / SG);
        if (r >= M) break;
        float s = 0.0f;
        #pragma unroll
        for (int c = LANE * 4; c < RS_BN; c += SG * 4) {
            float4 v = ln_vec(x + r * stride, c, N);
            s += v.s0 + v.s1 + v.s2 + v.s3;
        }
        s = sub_group_reduce_add(s);
        if (LANE == 0) out[r] = s;
    }
}
#endif  // RS_BM

#ifdef TR
// ---- transpose of a TR x TR tile: y[c, r] = x[r, c], through SLM ---------------------------------------
REQD __kernel void transpose_blk(__global const T *x, __global T *y, int M, int N, int xs, int ys) {
    __local float tile[TR][TR + 1];
    int r0 = get_group_id(0) * TR, c0 = get_group_id(1) * TR;
    bool full = r0 + TR <= M && c0 + TR <= N;
    #pragma unroll
    for (int t = 0; t < TR / (WG / SG); t++) {
        int r = SGID + t * (WG / SG);
        #pragma unroll
        for (int c = 0; c < TR; c += CH > TR ? SG : CH) {
            if (full && TR % CH == 0 && CH <= TR) {
                float8 v = LD8(BLOCK_READ8(x + (r0 + r) * xs + c0 + c));
                for (int j = 0; j < 8; j++) tile[r][c + j * SG + LANE] = v[j];
            } else {
                int i = c + LANE;
                tile[r][i] = r0 + r < M && c0 + i < N ? LD(x[(r0 + r) * xs + c0 + i]) : 0.0f;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int t = 0; t < TR / (WG / SG); t++) {
        int c = SGID + t * (WG / SG);
        #pragma unroll
        for (int u = 0; u < TR / SG; u++) {
            int r = LANE + u * SG;
            if (c0 + c < N && r0 + r < M) y[(c0 + c) * ys + r0 + r] = ST(tile[r][c]);
        }
    }
}

REQD __kernel void transpose_vec(__global const T *x, __global T *y, int M, int N, int xs, int ys) {
    __local float tile[TR][TR + 1];
    int r0 = get_group_id(0) * TR, c0 = get_group_id(1) * TR;
    #pragma unroll
    for (int t = 0; t < TR * TR / (WG * 4); t++) {
        int e = get_local_id(0) * 4 + t * (WG * 4);
        int r = e / TR, c = e % TR;
        if (r0 + r < M && c0 + c + 4 <= N) {
            float4 v = LD4(vload4(0, x + (r0 + r) * xs + c0 + c));
            tile[r][c] = v.s0; tile[r][c + 1] = v.s1; tile[r][c + 2] = v.s2; tile[r][c + 3] = v.s3;
        } else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) tile[r][c + j] = r0 + r < M && c0 + c + j < N ? LD(x[(r0 + r) * xs + c0 + c + j]) : 0.0f;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int t = 0; t < TR * TR / (WG * 4); t++) {
        int e = get_local_id(0) * 4 + t * (WG * 4);
        int c = e / TR, r = e % TR;
        if (c0 + c < N && r0 + r + 4 <= M) {
            vstore4(ST4((float4)(tile[r][c], tile[r + 1][c], tile[r + 2][c], tile[r + 3][c])), 0, y + (c0 + c) * ys + r0 + r);
        } else {
            #pragma unroll 1
            for (int j = 0; j < 4; j++) if (c0 + c < N && r0 + r + j < M) y[(c0 + c) * ys + r0 + r + j] = ST(tile[r + j][c]);
        }
    }
}
#endif  // TR
