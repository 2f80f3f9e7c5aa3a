"""FlashAttention-2 as CuPy RawKernels: the GPU path (forward and backward), same contract
as _cpu.py, checked against it on a GPU by `python -m rtx.flash_attn.gpu_check`.

Layout: one warp per query row (forward) or per key (backward); a lane holds head-dim slots
lane, lane + 32, ... (NT = ceil(D / 32) of them, NT in 1, 2, 4, 8: head dims up to 256).

Forward (grid: batch * Hq, ceil(L / 8); 8 warps): key/value tiles of BC keys are staged in
shared memory (converted to the accumulation type); each warp computes its row's BC scores
(one per lane), updates the running max / sum, rescales its output slots and adds P V.
Writes O (input dtype) and the log-sum-exp (accumulation dtype).

Backward (grid: batch * Hk, ceil(S / 8); 8 warps, one per key): a warp keeps its key, value,
dK and dV in registers and walks every query row of the G query heads it serves (GQA needs no
atomics for dK/dV); query and dO tiles of BR rows are staged in shared memory, each warp
recomputes P = exp(s - lse) and dS = P (dP - D) for its key, and the block turns dS (BR x 8 in
shared memory) into dQ contributions, added with atomicAdd into a float accumulator.

Masks arrive as additive float32 (bool masks become 0 / -inf on the host, at the size of the
caller's mask) with broadcast strides, so a key padding mask is never expanded. Dropout uses
the counter-based hash of _dropout.py: the same elements are dropped as on the CPU.

Half types are read and written as 16-bit patterns converted in registers (PTX cvt for
float16, bit shifts for bfloat16), so the source needs no CUDA headers under NVRTC.

Nothing here imports CuPy until a kernel is launched.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import cupy

WARPS = 8  # rows per forward block, keys per backward block

SOURCE = r"""
typedef unsigned short rtx_u16;
struct half_t { rtx_u16 x; };
struct bf16_t { rtx_u16 x; };

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(half_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x));
    return f;
}
__device__ __forceinline__ float to_acc(bf16_t v) { return __uint_as_float(((unsigned int)v.x) << 16); }

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(double* p, double v) { *p = v; }
__device__ __forceinline__ void store(half_t* p, float v) {
    rtx_u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p->x = h;
}
__device__ __forceinline__ void store(bf16_t* p, float v) {
    unsigned int u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) { p->x = (rtx_u16)((u >> 16) | 0x40u); return; }  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    p->x = (rtx_u16)(u >> 16);
}

template <typename A> __device__ __forceinline__ A neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() { return __longlong_as_double(0xfff0000000000000ll); }
template <typename A> __device__ __forceinline__ A pos_inf() { return -neg_inf<A>(); }

template <typename A> __device__ __forceinline__ A warp_sum(A v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename A> __device__ __forceinline__ A warp_max(A v) {
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The dropout hash of _dropout.py: SplitMix64's finaliser over a Weyl step.
__device__ __forceinline__ float drop_uniform(unsigned long long seed, unsigned long long idx) {
    unsigned long long x = idx * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (float)(x >> 40) * (1.0f / 16777216.0f);
}

struct Bias {
    const float* mask; long long mb, mh, mi, mj; int has_mask;
    const float* alibi; long long ab, ah; int has_alibi;
    int left, right, offset;
};

// The score's additive terms and the window; -inf when key j is hidden from query i.
template <typename A>
__device__ __forceinline__ A bias_of(const Bias& bs, int b, int h, int i, int j) {
    const int d = j - i - bs.offset;
    if ((bs.right >= 0 && d > bs.right) || (bs.left >= 0 && d < -bs.left)) return neg_inf<A>();
    A r = A(0);
    if (bs.has_mask) r += (A)bs.mask[b * bs.mb + h * bs.mh + i * bs.mi + j * bs.mj];
    if (bs.has_alibi) r -= (A)bs.alibi[b * bs.ab + h * bs.ah] * (A)abs(i + bs.offset - j);
    return r;
}

template <typename A, int NT> struct Tiles {
    static constexpr int DMAX = 32 * NT;
    static constexpr int BC = (16384 / (DMAX * (int)sizeof(A))) < 32 ? (16384 / (DMAX * (int)sizeof(A))) : 32;
    static constexpr int BR = (16384 / (2 * DMAX * (int)sizeof(A))) < 32 ? (16384 / (2 * DMAX * (int)sizeof(A))) : 32;
};

// ---- forward: one warp per query row --------------------------------------------------------------
template <typename T, typename A, int NT>
__global__ void __launch_bounds__(256) flash_fwd(
        const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ out,
        A* __restrict__ lse, const float* __restrict__ mask, const long long mb, const long long mh, const long long mi,
        const long long mj, const int has_mask, const float* __restrict__ alibi, const long long ab,
        const long long ah, const int has_alibi, const int left, const int right, const int offset,
        const int Hq, const int Hk, const int L, const int S, const int D,
        const int Dv, const A scale, const float p_drop, const unsigned long long seed) {
    constexpr int DMAX = Tiles<A, NT>::DMAX, BC = Tiles<A, NT>::BC;
    const Bias bs = {mask, mb, mh, mi, mj, has_mask, alibi, ab, ah, has_alibi, left, right, offset};
    __shared__ A Ks[BC][DMAX];
    __shared__ A Vs[BC][DMAX];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int bh = blockIdx.x, b = bh / Hq, h = bh % Hq, hk = h / (Hq / Hk);
    const int i0 = blockIdx.y * nw, i1 = min(i0 + nw, L), i = i0 + w;
    const bool active = i < L;
    const long long krow = (long long)(b * Hk + hk) * S;

    A qr[NT], o[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int d = lane + 32 * t;
        qr[t] = (active && d < D) ? (A)to_acc(q[((long long)bh * L + i) * D + d]) * scale : A(0);
        o[t] = A(0);
    }
    A m = neg_inf<A>(), l = A(0);
    const A keep_scale = p_drop > 0.f ? A(1) / (A(1) - (A)p_drop) : A(1);

    int lo = 0, hi = S;  // the keys some row of this block may see
    if (bs.left >= 0) lo = min(S, max(i0 + bs.offset - bs.left, 0));
    if (bs.right >= 0) hi = min(S, max(i1 - 1 + bs.offset + bs.right + 1, 0));

    for (int j0 = lo; j0 < hi; j0 += BC) {
        const int nj = min(BC, hi - j0);
        __syncthreads();
        for (int idx = threadIdx.x; idx < BC * DMAX; idx += blockDim.x) {
            const int jj = idx / DMAX, d = idx % DMAX;
            const bool in = jj < nj;
            Ks[jj][d] = (in && d < D) ? (A)to_acc(k[(krow + j0 + jj) * D + d]) : A(0);
            Vs[jj][d] = (in && d < Dv) ? (A)to_acc(v[(krow + j0 + jj) * Dv + d]) : A(0);
        }
        __syncthreads();
        if (!active) continue;  // whole warp: the shuffles below stay convergent
        A s_mine = neg_inf<A>();
        for (int jj = 0; jj < nj; ++jj) {
            A part = A(0);
#pragma unroll
            for (int t = 0; t < NT; ++t) part += qr[t] * Ks[jj][lane + 32 * t];
            const A s = warp_sum(part) + bias_of<A>(bs, b, h, i, j0 + jj);
            if (lane == jj) s_mine = s;
        }
        const A m_new = fmax(m, warp_max(s_mine));
        const A msafe = m_new == neg_inf<A>() ? A(0) : m_new;
        A pj = s_mine == neg_inf<A>() ? A(0) : exp(s_mine - msafe);
        const A alpha = exp(m - msafe);
        l = l * alpha + warp_sum(pj);
        if (p_drop > 0.f && lane < nj) {
            const unsigned long long idx = ((unsigned long long)bh * L + i) * S + (j0 + lane);
            pj = drop_uniform(seed, idx) >= p_drop ? pj * keep_scale : A(0);
        }
#pragma unroll
        for (int t = 0; t < NT; ++t) o[t] *= alpha;
        for (int jj = 0; jj < nj; ++jj) {
            const A p = __shfl_sync(0xffffffffu, pj, jj);
#pragma unroll
            for (int t = 0; t < NT; ++t) o[t] += p * Vs[jj][lane + 32 * t];
        }
        m = m_new;
    }
    if (!active) return;
    const A inv = l > A(0) ? A(1) / l : A(0);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int d = lane + 32 * t;
        if (d < Dv) store(&out[((long long)bh * L + i) * Dv + d], o[t] * inv);
    }
    if (lane == 0) lse[(long long)bh * L + i] = l > A(0) ? (m == neg_inf<A>() ? A(0) : m) + log(l) : neg_inf<A>();
}

// ---- backward: one warp per key --------------------------------------------------------------------
// lse holds +inf for rows that saw no key (so P = 0 there); delta = rowsum(dO * O).
// dq (float accumulator, zeroed) gets atomicAdd; dk, dv are written once. dS, when not null, is a
// zeroed (batch, Hq, L, S) buffer that receives dS for the mask's gradient.
template <typename T, typename A, int NT>
__global__ void __launch_bounds__(256) flash_bwd(
        const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, const T* __restrict__ dout,
        const A* __restrict__ lse, const A* __restrict__ delta, A* __restrict__ dq, T* __restrict__ dk,
        T* __restrict__ dv, A* __restrict__ dS, const int want_dS, const float* __restrict__ mask,
        const long long mb, const long long mh, const long long mi, const long long mj, const int has_mask,
        const float* __restrict__ alibi, const long long ab, const long long ah, const int has_alibi,
        const int left, const int right, const int offset,
        const int Hq, const int Hk, const int L, const int S, const int D, const int Dv, const A scale,
        const float p_drop, const unsigned long long seed) {
    constexpr int DMAX = Tiles<A, NT>::DMAX, BR = Tiles<A, NT>::BR, NW = 8;
    const Bias bs = {mask, mb, mh, mi, mj, has_mask, alibi, ab, ah, has_alibi, left, right, offset};
    __shared__ A Qs[BR][DMAX];
    __shared__ A dOs[BR][DMAX];
    __shared__ A Ks[NW][DMAX];
    __shared__ A dSs[BR][NW];
    __shared__ A lse_s[BR];
    __shared__ A delta_s[BR];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int bk = blockIdx.x, b = bk / Hk, hk = bk % Hk, G = Hq / Hk;
    const int j0 = blockIdx.y * NW, j1 = min(j0 + NW, S), j = j0 + w;
    const bool active = j < S;
    const long long krow = (long long)bk * S;

    for (int idx = threadIdx.x; idx < NW * DMAX; idx += blockDim.x) {
        const int jj = idx / DMAX, d = idx % DMAX;
        Ks[jj][d] = (j0 + jj < S && d < D) ? (A)to_acc(k[(krow + j0 + jj) * D + d]) : A(0);
    }
    A kr[NT], vr[NT], dkr[NT], dvr[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int d = lane + 32 * t;
        kr[t] = (active && d < D) ? (A)to_acc(k[(krow + j) * D + d]) : A(0);
        vr[t] = (active && d < Dv) ? (A)to_acc(v[(krow + j) * Dv + d]) : A(0);
        dkr[t] = A(0);
        dvr[t] = A(0);
    }
    const A keep_scale = p_drop > 0.f ? A(1) / (A(1) - (A)p_drop) : A(1);
    int lo = 0, hi = L;  // the query rows that may see some key of this block
    if (bs.right >= 0) lo = min(L, max(j0 - bs.offset - bs.right, 0));
    if (bs.left >= 0) hi = min(L, max(j1 - 1 - bs.offset + bs.left + 1, 0));

    for (int g = 0; g < G; ++g) {
        const int h = hk * G + g;
        const long long bh = (long long)b * Hq + h;
        for (int i0 = lo; i0 < hi; i0 += BR) {
            const int nr = min(BR, hi - i0);
            __syncthreads();
            for (int idx = threadIdx.x; idx < BR * DMAX; idx += blockDim.x) {
                const int r = idx / DMAX, d = idx % DMAX;
                const bool in = r < nr;
                Qs[r][d] = (in && d < D) ? (A)to_acc(q[(bh * L + i0 + r) * D + d]) : A(0);
                dOs[r][d] = (in && d < Dv) ? (A)to_acc(dout[(bh * L + i0 + r) * Dv + d]) : A(0);
            }
            for (int r = threadIdx.x; r < BR; r += blockDim.x) {
                lse_s[r] = r < nr ? lse[bh * L + i0 + r] : pos_inf<A>();
                delta_s[r] = r < nr ? delta[bh * L + i0 + r] : A(0);
            }
            __syncthreads();
            for (int r = 0; r < nr; ++r) {
                A ds = A(0);
                if (active) {  // warp-uniform
                    const int i = i0 + r;
                    A part = A(0), dpart = A(0);
#pragma unroll
                    for (int t = 0; t < NT; ++t) {
                        part += Qs[r][lane + 32 * t] * kr[t];
                        dpart += dOs[r][lane + 32 * t] * vr[t];
                    }
                    const A s = warp_sum(part) * scale + bias_of<A>(bs, b, h, i, j);
                    const A dp_raw = warp_sum(dpart);
                    const A lr = lse_s[r];
                    const A p = (s == neg_inf<A>() || lr == pos_inf<A>()) ? A(0) : exp(s - lr);
                    A z = A(1);
                    if (p_drop > 0.f) {
                        const unsigned long long idx = ((unsigned long long)bh * L + i) * S + j;
                        z = drop_uniform(seed, idx) >= p_drop ? keep_scale : A(0);
                    }
                    ds = p * (dp_raw * z - delta_s[r]);
#pragma unroll
                    for (int t = 0; t < NT; ++t) {
                        dvr[t] += p * z * dOs[r][lane + 32 * t];
                        dkr[t] += ds * Qs[r][lane + 32 * t];
                    }
                    if (want_dS && lane == 0) dS[(bh * L + i) * S + j] = ds;
                }
                if (lane == 0) dSs[r][w] = ds;
            }
            __syncthreads();
            // dQ rows of this tile: sum over the block's keys, one atomicAdd per element.
            for (int idx = threadIdx.x; idx < nr * D; idx += blockDim.x) {
                const int r = idx / D, d = idx % D;
                A acc = A(0);
#pragma unroll
                for (int jj = 0; jj < NW; ++jj) acc += dSs[r][jj] * Ks[jj][d];
                atomicAdd(&dq[(bh * L + i0 + r) * D + d], acc * scale);
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int d = lane + 32 * t;
        if (d < D) store(&dk[(krow + j) * D + d], dkr[t] * scale);
        if (d < Dv) store(&dv[(krow + j) * Dv + d], dvr[t]);
    }
}
"""

# (storage type, accumulation type) per NumPy dtype name
CTYPES = {"float32": ("float", "float"), "float16": ("half_t", "float"), "bfloat16": ("bf16_t", "float"),
          "float64": ("double", "double")}
SLOTS = (1, 2, 4, 8)
NAME_EXPRESSIONS = tuple(f"{kern}<{t}, {a}, {nt}>" for kern in ("flash_fwd", "flash_bwd")
                         for t, a in CTYPES.values() for nt in SLOTS)


def _dtype_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bfloat16" if _dt.is_bfloat16(dtype) else dtype.name


def supports_dtype(dtype) -> bool:
    return _dtype_name(dtype) in CTYPES


def _slots(D: int) -> int:
    for nt in SLOTS:
        if D <= 32 * nt:
            return nt
    raise ValueError(f"flash attention on CUDA: head dims up to 256 are supported, got {D}")


@functools.cache
def _module(device_id: int):
    return cupy().RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=NAME_EXPRESSIONS)


def _kernel(kind: str, dtype, nt: int):
    cp = cupy()
    t, a = CTYPES[_dtype_name(dtype)]
    return _module(cp.cuda.runtime.getDevice()).get_function(f"flash_{kind}<{t}, {a}, {nt}>")


def _acc(dtype):
    return np.float64 if _dtype_name(dtype) == "float64" else np.float32


class _Args:
    """Contiguous (N, H, L, D) views and the Bias struct's fields, shared by forward and backward."""

    def __init__(self, q, k, v, mask, scale, window, offset, alibi):
        cp = cupy()
        if not supports_dtype(q.dtype):
            raise TypeError(f"flash attention on CUDA: float16, bfloat16, float32 or float64 expected, got {q.dtype}")
        *batch, Hq, L, D = q.shape
        Hk, S, Dv = k.shape[-3], k.shape[-2], v.shape[-1]
        self.batch, self.N, self.Hq, self.Hk, self.L, self.S, self.D, self.Dv = (
            tuple(batch), math.prod(batch), Hq, Hk, L, S, D, Dv)
        self.nt = _slots(max(D, Dv))
        self.acc = _acc(q.dtype)
        self.q = cp.ascontiguousarray(q).reshape(self.N, Hq, L, D)
        self.k = cp.ascontiguousarray(k).reshape(self.N, Hk, S, D)
        self.v = cp.ascontiguousarray(v).reshape(self.N, Hk, S, Dv)
        self.scale = self.acc(scale)
        dummy = cp.zeros(1, dtype=cp.float32)
        self.mask_arr, mstrides, has_mask = dummy, (0, 0, 0, 0), 0
        if mask is not None:
            if mask.dtype == np.bool_:
                mask = cp.where(mask, cp.float32(0), cp.float32(-np.inf))
            else:
                mask = mask.astype(cp.float32, copy=False)
            full = cp.broadcast_to(mask, (*batch, Hq, L, S)).reshape(self.N, Hq, L, S)
            self.mask_arr, has_mask = full, 1
            mstrides = tuple(s // full.itemsize for s in full.strides)
        self.alibi_arr, astrides, has_alibi = dummy, (0, 0), 0
        if alibi is not None:
            a = cp.broadcast_to(cp.asarray(alibi, dtype=cp.float32), (*batch, Hq)).reshape(self.N, Hq)
            self.alibi_arr, has_alibi = a, 1
            astrides = tuple(s // a.itemsize for s in a.strides)
        left, right = window
        # the kernels' Bias fields, in their parameter order
        self.bias = (self.mask_arr, *(np.int64(s) for s in mstrides), np.int32(has_mask), self.alibi_arr,
                     *(np.int64(s) for s in astrides), np.int32(has_alibi), np.int32(left), np.int32(right),
                     np.int32(offset))


def forward(q, k, v, mask=None, *, scale, window=(-1, -1), offset=0, dropout_p=0.0, seed=0, alibi=None,
            block_q=None, block_k=None):
    cp = cupy()
    a = _Args(q, k, v, mask, scale, window, offset, alibi)
    out = cp.empty((a.N, a.Hq, a.L, a.Dv), dtype=q.dtype)
    lse = cp.empty((a.N, a.Hq, a.L), dtype=a.acc)
    grid = (a.N * a.Hq, -(-a.L // WARPS))
    _kernel("fwd", q.dtype, a.nt)(grid, (32 * WARPS,), (
        a.q, a.k, a.v, out, lse, *a.bias, np.int32(a.Hq), np.int32(a.Hk), np.int32(a.L), np.int32(a.S),
        np.int32(a.D), np.int32(a.Dv), a.scale, np.float32(dropout_p), np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
    return out.reshape(*a.batch, a.Hq, a.L, a.Dv), lse.reshape(*a.batch, a.Hq, a.L)


def backward(dout, q, k, v, out, lse, mask=None, *, scale, window=(-1, -1), offset=0, dropout_p=0.0, seed=0,
             alibi=None, block_q=None, block_k=None, mask_grad=False):
    cp = cupy()
    a = _Args(q, k, v, mask, scale, window, offset, alibi)
    do = cp.ascontiguousarray(dout).reshape(a.N, a.Hq, a.L, a.Dv)
    o = out.reshape(a.N, a.Hq, a.L, a.Dv)
    delta = (do.astype(a.acc) * o.astype(a.acc)).sum(-1)
    lse_safe = cp.where(lse == -np.inf, np.inf, lse).astype(a.acc).reshape(a.N, a.Hq, a.L)
    dq = cp.zeros((a.N, a.Hq, a.L, a.D), dtype=a.acc)
    dk = cp.empty((a.N, a.Hk, a.S, a.D), dtype=q.dtype)
    dv = cp.empty((a.N, a.Hk, a.S, a.Dv), dtype=q.dtype)
    want = bool(mask_grad and mask is not None and mask.dtype != np.bool_)
    ds = cp.zeros((a.N, a.Hq, a.L, a.S), dtype=a.acc) if want else cp.zeros(1, dtype=a.acc)
    grid = (a.N * a.Hk, -(-a.S // WARPS))
    _kernel("bwd", q.dtype, a.nt)(grid, (32 * WARPS,), (
        a.q, a.k, a.v, do, lse_safe, delta, dq, dk, dv, ds, np.int32(want), *a.bias, np.int32(a.Hq),
        np.int32(a.Hk), np.int32(a.L), np.int32(a.S), np.int32(a.D), np.int32(a.Dv), a.scale,
        np.float32(dropout_p), np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
    dmask = None
    if want:
        dmask = _sum_to(ds.reshape(*a.batch, a.Hq, a.L, a.S), mask.shape)
    return (dq.astype(q.dtype).reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape), dmask)


def _sum_to(x, shape):
    shape = tuple(shape)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    return x.sum(axis=axes, keepdims=True).reshape(shape) if axes else x
