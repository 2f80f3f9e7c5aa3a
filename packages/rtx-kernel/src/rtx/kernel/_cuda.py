"""What the CUDA paths share: declaring kernels (compiled by CuPy on first use, then cached),
the block reductions of the one-block-per-row kernels, and launch helpers.

Nothing here imports CuPy until a kernel is first called on a CuPy array. Every CUDA source is
also recorded in ELEMENTWISE and RAW, so a test can compile them all with nvcc on a machine
without a GPU (tests/test_cuda_sources.py).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from rtx.runtime import tuning as _tuning
from rtx.runtime.devices import cupy


class ElementwiseSpec(NamedTuple):
    in_params: str
    out_params: str
    operation: str
    name: str
    preamble: str


class ReductionSpec(NamedTuple):
    in_params: str
    out_params: str
    map_expr: str
    reduce_expr: str
    post_map_expr: str
    identity: str
    name: str
    reduce_type: str


class RawSpec(NamedTuple):
    code: str
    name_expressions: tuple[str, ...]


ELEMENTWISE: dict[str, ElementwiseSpec] = {}
REDUCTION: dict[str, ReductionSpec] = {}
RAW: dict[str, RawSpec] = {}


def _declare(table: dict, name: str, spec) -> None:
    if table.setdefault(name, spec) is not spec:
        raise ValueError(f"CUDA kernel {name!r} is declared twice")


def elementwise(name: str, in_params: str, out_params: str, operation: str, preamble: str = ""):
    """Declare a cupy.ElementwiseKernel; returns a function that builds it on first call."""
    spec = ElementwiseSpec(in_params, out_params, operation, name, preamble)
    _declare(ELEMENTWISE, name, spec)

    @functools.cache
    def get():
        return cupy().ElementwiseKernel(*spec)
    return get


def reduction(name: str, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
              identity: str, reduce_type: str = "T"):
    """Declare a cupy.ReductionKernel; returns a function that builds it on first call."""
    spec = ReductionSpec(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, reduce_type)
    _declare(REDUCTION, name, spec)

    @functools.cache
    def get():
        return cupy().ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                                      name, reduce_type=reduce_type)
    return get


# Reductions over one row held by one thread block (blockDim.x a multiple of 32, at most 1024).
# `shm` is a 32-element shared array; every thread gets the result.
ROW_PRELUDE = r"""
template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000u); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000ull);
}

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T, bool IS_MAX> __device__ T block_reduce(T v, T* shm) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = lane < nwarps ? shm[lane] : (IS_MAX ? neg_inf<T>() : T(0));
        w = IS_MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0) shm[0] = w;
    }
    __syncthreads();
    const T r = shm[0];
    __syncthreads();  // shm is reused by the next reduction
    return r;
}

template <typename T> __device__ __forceinline__ T block_sum(T v, T* shm) { return block_reduce<T, false>(v, shm); }
template <typename T> __device__ __forceinline__ T block_max(T v, T* shm) { return block_reduce<T, true>(v, shm); }
"""


def raw_module(name: str, code: str, kernels: tuple[str, ...]):
    """Declare a module of row kernels (templates over float and double: each kernel name is
    instantiated as name<float> and name<double>). Returns get(kernel_name, dtype) that
    compiles the module on first use on each device."""
    exprs = tuple(f"{k}<{t}>" for k in kernels for t in ("float", "double"))
    spec = RawSpec(ROW_PRELUDE + code, exprs)
    _declare(RAW, name, spec)

    @functools.cache
    def module(device_id: int):
        return cupy().RawModule(code=spec.code, options=("-std=c++17",), name_expressions=spec.name_expressions)

    @functools.cache
    def function(kernel: str, ctype: str, device_id: int):
        return module(device_id).get_function(f"{kernel}<{ctype}>")

    def get(kernel: str, dtype):
        return function(kernel, CTYPE[np.dtype(dtype)], cupy().cuda.runtime.getDevice())
    return get


CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def row_kernel_ok(x, axes_from: int) -> bool:
    """Whether the row kernels apply: float32/float64, C-contiguous, reducing the trailing
    axes from `axes_from` on (rows of the flattened leading axes)."""
    return x.dtype in CTYPE and x.flags.c_contiguous and x.size > 0 and axes_from >= 0


def row_threads(n: int) -> int:
    """Threads per block for rows of n elements: about 4 elements a thread, 32 to 1024."""
    t = 32
    while t < 1024 and t * 4 < n:
        t *= 2
    return t


def launch_rows(kernel, rows: int, n: int, *args) -> None:
    """One block per row. `args` are arrays and Python numbers; the row length n is passed last
    as a 64-bit integer. The threads per block are row_threads(n) unless `rtx automeasure tune`
    measured another count faster for this kernel, shape and GPU (rtx.runtime.tuning, op
    "cuda_rows.<kernel name>", shape (rows, n): {"threads": a multiple of 32 up to 1024})."""
    threads = row_threads(n)
    x = args[0]
    cfg = _tuning.lookup(f"cuda_rows.{getattr(kernel, 'name', 'kernel')}", (rows, n), getattr(x, "dtype", None),
                         f"cuda:{getattr(getattr(x, 'device', None), 'id', 0)}")
    if cfg:   # the reductions need whole warps: anything else keeps the default
        t = cfg.get("threads")
        threads = t if isinstance(t, int) and 32 <= t <= 1024 and t % 32 == 0 else threads
    kernel((rows,), (threads,), (*args, np.int64(n)))
