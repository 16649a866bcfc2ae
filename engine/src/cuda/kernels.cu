// The bundled engine's CUDA kernels, compiled by NVRTC at start-up (engine/src/cuda/mod.rs) and
// launched by engine/src/cuda/model.rs. No headers: NVRTC compiles this file alone.
//
// Data layouts (all row-major, one row per token unless said):
// - Q4_1 weights, repacked at upload: qs[row][block] as 16 bytes of nibbles (uint4; element j of a
//   block is byte j's low nibble, element j+16 its high nibble) and dm[row][block] as two f16 (scale
//   d, minimum m): w = d*q + m.
// - Q8_0 weights: qs[row][block] as 32 signed bytes (two uint4), d[row][block] an f16 scale.
// - Activations quantized as the CPU engine does (kernels::QAct): 8 bits per block of 32,
//   xq[t][k] (int8), xd[t][block] = amax/127, xs[t][block] = xd * sum(xq in block).
// - KV cache: f32, [slot][layer][pos][kv_dim] for K and for V.

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;

#define WARP 32
#define FULL 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float f16_to_f32(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ int dp4a(int a, int b, int c) {
    int d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, o));
    return v;
}

__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

// Quantizes one block of 32 values, one per lane of the calling warp, as QAct::quantize does.
__device__ __forceinline__ void quantize_lane(float v, i8* xq, float* xd, float* xs, int blk) {
    int lane = threadIdx.x % WARP;
    float amax = warp_max(fabsf(v));
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q = (int)roundf(v * id);
    int sum = warp_sum_int(q);
    xq[blk * 32 + lane] = (i8)q;
    if (lane == 0) {
        xd[blk] = d;
        xs[blk] = d * (float)sum;
    }
}

// x[n_blocks*32] -> quantized activations; one warp per block.
extern "C" __global__ void quantize_q8(const float* x, int n_blocks, i8* xq, float* xd, float* xs) {
    int blk = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
    if (blk >= n_blocks) return;  // whole warps leave together
    quantize_lane(x[blk * 32 + threadIdx.x % WARP], xq, xd, xs, blk);
}

// RMSNorm of row rows[r] (or r when rows is null) of x[.][n], times w, quantized into row r of
// the activations. One block of 256 threads per row.
extern "C" __global__ void rmsnorm_q8(const float* x, const int* rows, const float* w, int n,
                                      float eps, i8* xq, float* xd, float* xs) {
    __shared__ float partial[8];
    int r = blockIdx.x;
    const float* xr = x + (size_t)(rows ? rows[r] : r) * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    ss = warp_sum(ss);
    if (threadIdx.x % WARP == 0) partial[threadIdx.x / WARP] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < (int)blockDim.x / WARP; i++) total += partial[i];
    float s = 1.0f / sqrtf(total / (float)n + eps);
    int nb = n / 32;
    for (int b = threadIdx.x / WARP; b < nb; b += blockDim.x / WARP) {
        int i = b * 32 + threadIdx.x % WARP;
        quantize_lane(xr[i] * s * w[i], xq + (size_t)r * n, xd + (size_t)r * nb, xs + (size_t)r * nb, b);
    }
}

// gu[t] = [gate | up] (2*n_ff wide): silu(gate) * up, quantized; one warp per block of 32.
extern "C" __global__ void silu_mul_q8(const float* gu, int n_ff, int n_tok, i8* xq, float* xd, float* xs) {
    int nb = n_ff / 32;
    int blk = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
    if (blk >= nb * n_tok) return;
    int t = blk / nb, i = (blk % nb) * 32 + threadIdx.x % WARP;
    float g = gu[(size_t)t * 2 * n_ff + i];
    float u = gu[(size_t)t * 2 * n_ff + n_ff + i];
    quantize_lane(g / (1.0f + expf(-g)) * u, xq, xd, xs, blk);
}

// out[t][row] (+)= W[row] . x[t] for Q4_1 W. TPR threads per row, blockDim/TPR rows per block;
// NT tokens per thread, so a weight block is read once for NT tokens (prefill) or one (decode).
#define MM_Q4_1(NAME, NT, TPR)                                                                   \
extern "C" __global__ void NAME(const uint4* __restrict__ qs, const u32* __restrict__ dm,        \
                                const i8* __restrict__ xq, const float* __restrict__ xd,          \
                                const float* __restrict__ xs, float* out, int rows, int nb,       \
                                int n_tok, int out_stride, int accumulate) {                     \
    int row = blockIdx.x * (blockDim.x / TPR) + threadIdx.x / TPR, g = threadIdx.x % TPR;           \
    int t0 = blockIdx.y * NT;                                                                    \
    float acc[NT];                                                                               \
    _Pragma("unroll") for (int j = 0; j < NT; j++) acc[j] = 0.0f;                                \
    if (row < rows) {                                                                            \
        _Pragma("unroll 4") for (int b = g; b < nb; b += TPR) {                                   \
            uint4 w = qs[(size_t)row * nb + b];                                                  \
            u32 sm = dm[(size_t)row * nb + b];                                                   \
            float d = f16_to_f32((u16)(sm & 0xffff)), m = f16_to_f32((u16)(sm >> 16));           \
            int wl[4] = {(int)(w.x & 0x0f0f0f0f), (int)(w.y & 0x0f0f0f0f),                       \
                         (int)(w.z & 0x0f0f0f0f), (int)(w.w & 0x0f0f0f0f)};                      \
            int wh[4] = {(int)((w.x >> 4) & 0x0f0f0f0f), (int)((w.y >> 4) & 0x0f0f0f0f),         \
                         (int)((w.z >> 4) & 0x0f0f0f0f), (int)((w.w >> 4) & 0x0f0f0f0f)};        \
            _Pragma("unroll") for (int j = 0; j < NT; j++) {                                     \
                int t = t0 + j;                                                                  \
                if (t < n_tok) {                                                                 \
                    const int* xv = (const int*)(xq + ((size_t)t * nb + b) * 32);                \
                    int4 xa = *(const int4*)xv, xb = *(const int4*)(xv + 4);                     \
                    int s = dp4a(wl[0], xa.x, 0);                                                \
                    s = dp4a(wl[1], xa.y, s); s = dp4a(wl[2], xa.z, s); s = dp4a(wl[3], xa.w, s);\
                    s = dp4a(wh[0], xb.x, s); s = dp4a(wh[1], xb.y, s);                          \
                    s = dp4a(wh[2], xb.z, s); s = dp4a(wh[3], xb.w, s);                          \
                    size_t xb_i = (size_t)t * nb + b;                                            \
                    acc[j] += d * xd[xb_i] * (float)s + m * xs[xb_i];                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    _Pragma("unroll") for (int j = 0; j < NT; j++) {                                             \
        float v = acc[j];                                                                        \
        _Pragma("unroll") for (int o = TPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o); \
        int t = t0 + j;                                                                          \
        if (g == 0 && row < rows && t < n_tok) {                                                 \
            float* o = out + (size_t)t * out_stride + row;                                       \
            *o = accumulate ? *o + v : v;                                                        \
        }                                                                                        \
    }                                                                                            \
}

// As MM_Q4_1 for Q8_0 W (no minimum term).
#define MM_Q8_0(NAME, NT)                                                                        \
extern "C" __global__ void NAME(const uint4* __restrict__ qs, const u16* __restrict__ dw,        \
                                const i8* __restrict__ xq, const float* __restrict__ xd,          \
                                const float* __restrict__ xs, float* out, int rows, int nb,       \
                                int n_tok, int out_stride, int accumulate) {                     \
    int row = blockIdx.x * (blockDim.x / 8) + threadIdx.x / 8, g = threadIdx.x % 8, t0 = blockIdx.y * NT;      \
    float acc[NT];                                                                               \
    _Pragma("unroll") for (int j = 0; j < NT; j++) acc[j] = 0.0f;                                \
    if (row < rows) {                                                                            \
        _Pragma("unroll 4") for (int b = g; b < nb; b += 8) {                                     \
            uint4 wa = qs[((size_t)row * nb + b) * 2], wb = qs[((size_t)row * nb + b) * 2 + 1];  \
            float d = f16_to_f32(dw[(size_t)row * nb + b]);                                      \
            _Pragma("unroll") for (int j = 0; j < NT; j++) {                                     \
                int t = t0 + j;                                                                  \
                if (t < n_tok) {                                                                 \
                    const int* xv = (const int*)(xq + ((size_t)t * nb + b) * 32);                \
                    int4 xa = *(const int4*)xv, xb = *(const int4*)(xv + 4);                     \
                    int s = dp4a((int)wa.x, xa.x, 0);                                            \
                    s = dp4a((int)wa.y, xa.y, s); s = dp4a((int)wa.z, xa.z, s);                  \
                    s = dp4a((int)wa.w, xa.w, s); s = dp4a((int)wb.x, xb.x, s);                  \
                    s = dp4a((int)wb.y, xb.y, s); s = dp4a((int)wb.z, xb.z, s);                  \
                    s = dp4a((int)wb.w, xb.w, s);                                                \
                    acc[j] += d * xd[(size_t)t * nb + b] * (float)s;                             \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    _Pragma("unroll") for (int j = 0; j < NT; j++) {                                             \
        float v = acc[j];                                                                        \
        v += __shfl_xor_sync(FULL, v, 4); v += __shfl_xor_sync(FULL, v, 2);                      \
        v += __shfl_xor_sync(FULL, v, 1);                                                        \
        int t = t0 + j;                                                                          \
        if (g == 0 && row < rows && t < n_tok) {                                                 \
            float* o = out + (size_t)t * out_stride + row;                                       \
            *o = accumulate ? *o + v : v;                                                        \
        }                                                                                        \
    }                                                                                            \
}

MM_Q4_1(mv_q4_1, 1, 8)
MM_Q4_1(mm_q4_1, 8, 8)
// A whole warp per row: the bench's alternative for long rows (gpu-bench times both).
MM_Q4_1(mv_q4_1_w32, 1, 32)
MM_Q8_0(mv_q8_0, 1)
MM_Q8_0(mm_q8_0, 8)

// x[t] = the Q8_0 embedding row of tokens[t]; one block per token.
extern "C" __global__ void embed_q8_0(const int* tokens, const i8* qs, const u16* dw, int n_embd,
                                      int n_vocab, float* x) {
    int t = blockIdx.x, tok = tokens[t];
    tok = tok < 0 ? 0 : (tok >= n_vocab ? n_vocab - 1 : tok);
    int nb = n_embd / 32;
    for (int i = threadIdx.x; i < n_embd; i += blockDim.x)
        x[(size_t)t * n_embd + i] = (float)qs[(size_t)tok * n_embd + i] * f16_to_f32(dw[(size_t)tok * nb + i / 32]);
}

// Rotates pairs (2i, 2i+1) of each head of v by pos * inv_freq[i].
__device__ __forceinline__ void rope_head(float* v, int hd, int pos, const float* inv_freq, int i) {
    float s, c;
    sincosf((float)pos * inv_freq[i], &s, &c);
    float a = v[2 * i], b = v[2 * i + 1];
    v[2 * i] = a * c - b * s;
    v[2 * i + 1] = a * s + b * c;
}

// qkv[t] = [q | k | v]: RoPE on q (in place) and k, then k and v stored in the cache at
// (slots[t], layer, positions[t]). One block per token.
extern "C" __global__ void rope_store(float* qkv, const int* positions, const int* slots,
                                      const float* inv_freq, int n_head, int n_head_kv, int hd,
                                      int layer, int n_layer, int cap, float* kc, float* vc) {
    int t = blockIdx.x, pos = positions[t], slot = slots[t];
    int d = n_head * hd, kvd = n_head_kv * hd, half_hd = hd / 2;
    float* row = qkv + (size_t)t * (d + 2 * kvd);
    for (int j = threadIdx.x; j < (n_head + n_head_kv) * half_hd; j += blockDim.x) {
        int h = j / half_hd, i = j % half_hd;
        rope_head(row + h * hd, hd, pos, inv_freq, i);
    }
    __syncthreads();
    size_t at = (((size_t)slot * n_layer + layer) * cap + pos) * kvd;
    for (int j = threadIdx.x; j < kvd; j += blockDim.x) {
        kc[at + j] = row[d + j];
        vc[at + j] = row[d + kvd + j];
    }
}

// Causal attention of token t's head h over its slot's cache positions 0..=positions[t]:
// four warps split the positions with an online softmax each, then merge; the output goes
// straight to the quantized activations of the output projection. hd <= 256.
extern "C" __global__ void attention(const float* qkv, const int* positions, const int* slots,
                                     const float* kc, const float* vc, int n_head, int n_head_kv,
                                     int hd, int layer, int n_layer, int cap, float scale,
                                     i8* xq, float* xd, float* xs) {
    __shared__ float s_m[4], s_l[4], s_acc[4][256];
    int h = blockIdx.x, t = blockIdx.y, warp = threadIdx.x / WARP, lane = threadIdx.x % WARP;
    int pos = positions[t], slot = slots[t], kvh = h / (n_head / n_head_kv);
    int d = n_head * hd, kvd = n_head_kv * hd, epl = hd / WARP;
    const float* q = qkv + (size_t)t * (d + 2 * kvd) + h * hd;
    float qv[8], acc[8];
#pragma unroll
    for (int e = 0; e < 8; e++) {
        qv[e] = e < epl ? q[lane * epl + e] : 0.0f;
        acc[e] = 0.0f;
    }
    size_t base = ((size_t)slot * n_layer + layer) * cap * kvd + kvh * hd + lane * epl;
    float m = NEG_INF, l = 0.0f;
    for (int p = warp; p <= pos; p += 4) {
        const float* k = kc + base + (size_t)p * kvd;
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) if (e < epl) dot += qv[e] * k[e];
        float s = warp_sum(dot) * scale;
        float m_new = fmaxf(m, s), corr = expf(m - m_new), w = expf(s - m_new);
        l = l * corr + w;
        const float* v = vc + base + (size_t)p * kvd;
#pragma unroll
        for (int e = 0; e < 8; e++) if (e < epl) acc[e] = acc[e] * corr + w * v[e];
        m = m_new;
    }
    if (lane == 0) { s_m[warp] = m; s_l[warp] = l; }
#pragma unroll
    for (int e = 0; e < 8; e++) if (e < epl) s_acc[warp][lane * epl + e] = acc[e];
    __syncthreads();
    float mx = fmaxf(fmaxf(s_m[0], s_m[1]), fmaxf(s_m[2], s_m[3])), total = 0.0f, f[4];
    for (int w = 0; w < 4; w++) {
        f[w] = s_m[w] == NEG_INF ? 0.0f : expf(s_m[w] - mx);
        total += s_l[w] * f[w];
    }
    // Each warp quantizes blocks of 32 of the head's output (hd is a multiple of 32), as
    // quantize_q8 would the whole row: block (t*d + h*hd)/32 + b of the activations.
    for (int b = warp; b < hd / WARP; b += 4) {
        int i = b * WARP + lane;
        float o = 0.0f;
        for (int w = 0; w < 4; w++) o += s_acc[w][i] * f[w];
        quantize_lane(o / total, xq, xd, xs, (t * d + h * hd) / WARP + b);
    }
}

// out[r] = the index of row r's largest logit (the first of equals), one block of 256 per row.
extern "C" __global__ void argmax_rows(const float* logits, int n, int* out) {
    __shared__ float s_v[8];
    __shared__ int s_i[8];
    const float* row = logits + (size_t)blockIdx.x * n;
    float best = NEG_INF;
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (row[i] > best) { best = row[i]; bi = i; }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(FULL, best, o);
        int oi = __shfl_xor_sync(FULL, bi, o);
        if (ov > best || (ov == best && oi < bi)) { best = ov; bi = oi; }
    }
    if (threadIdx.x % WARP == 0) { s_v[threadIdx.x / WARP] = best; s_i[threadIdx.x / WARP] = bi; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / WARP; w++)
            if (s_v[w] > best || (s_v[w] == best && s_i[w] < bi)) { best = s_v[w]; bi = s_i[w]; }
        out[blockIdx.x] = bi;
    }
}

// A device-to-device copy of n 16-byte words: the bandwidth bench's second roofline.
extern "C" __global__ void copy_u4(const uint4* src, uint4* dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
