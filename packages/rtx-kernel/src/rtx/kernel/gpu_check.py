"""Check every kernel's CUDA path against its NumPy reference on a GPU, and time both.

    python -m rtx.kernel.gpu_check [--only softmax,adam_step] [--dtype float32] [--quick]

For each kernel: every "test" sample (odd shapes, fallbacks, edge values) must match the NumPy
reference, in float32 and float64; then each "bench" sample (float32; --full adds float64) is
checked and timed: the NumPy reference and the fast CPU path on the host (perf_counter), the
reference run on CuPy arrays (plain CuPy ops, where the reference is written for either module)
and the rtx CUDA path (CUDA events). Prints one table row per bench sample and a line per
failure; exits 1 if anything failed, 2 if there is no GPU.

The oracle is the reference run in float64 (float32 inputs are exact in float64), and an
element's error is |got - want| / (atol + rtol (|want| + mean |want|)): the mean term gives
sums over thousands of rows (grad_bias, grad_weight) the slack their float32 rounding needs,
which the float32 reference itself does not meet (its column sums are sequential).
"""
from __future__ import annotations

import argparse
import functools
import time
from dataclasses import dataclass

import numpy as np

from rtx.kernel._registry import KERNELS, Kernel, Sample
from rtx.runtime import cuda
from rtx.runtime.devices import cupy


@dataclass
class Row:
    kernel: str
    label: str
    dtype: str
    error: float                 # worst |got - want| / (atol + rtol |want|): at most 1 passes
    numpy_ms: float
    cpu_ms: float
    device_ops_ms: float | None  # the reference on device arrays (None: it is NumPy-only)
    device_ms: float


class HostBackend:
    """The NumPy stand-in for a device: lets the checks themselves be tested without a GPU."""
    name = "numpy"

    def asarray(self, a):
        return a.copy()

    def asnumpy(self, a):
        return a

    def time_ms(self, fn, calls=3):
        return _host_time_ms(fn, calls)


class CudaBackend:
    name = "cuda"

    def __init__(self):
        self.cp = cupy()

    def asarray(self, a):
        return self.cp.asarray(a)

    def asnumpy(self, a):
        return self.cp.asnumpy(a)

    def time_ms(self, fn, calls=10):
        cp = self.cp
        fn()  # compile and warm up
        cp.cuda.Device().synchronize()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / calls


def _host_time_ms(fn, calls=3, warm=True):
    if warm:
        fn()
    best = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def _error(kernel: Kernel, got, want, dtype) -> float:
    """The worst element's error in units of the kernel's tolerance (nan/inf must match)."""
    rtol, atol = kernel.tolerance(dtype)
    if len(got) != len(want):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            return float("inf")
        finite = np.abs(w[np.isfinite(w)])
        scale = float(finite.mean()) if finite.size else 0.0
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        with np.errstate(invalid="ignore"):
            err = np.where(same, 0.0, np.abs(g - w) / (atol + rtol * (np.abs(w) + scale)))
        if err.size:
            worst = max(worst, float(np.nan_to_num(err, nan=np.inf).max()))
    return worst


def _in_float64(sample: Sample) -> Sample:
    def up(a):
        return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a
    return Sample(tuple(up(a) for a in sample.args), {k: up(v) for k, v in sample.kwargs.items()}, sample.label)


def _device_args(backend, sample: Sample):
    def conv(a):
        return backend.asarray(a) if isinstance(a, np.ndarray) else a
    return tuple(conv(a) for a in sample.args), {k: conv(v) for k, v in sample.kwargs.items()}


def check_kernel(kernel: Kernel, dtype, backend, rng_seed=0, quick=False,
                 timed="bench") -> tuple[list[Row], list[str]]:
    """Rows for the timed samples (the kernel's "bench" samples), and failure messages for any
    sample out of tolerance."""
    rows, failures = [], []
    dtype = np.dtype(dtype)
    for sample in kernel.samples(np.random.default_rng(rng_seed), dtype, "test"):
        want = kernel.run(kernel.reference, _in_float64(sample))
        got = tuple(backend.asnumpy(g) for g in kernel.run(kernel, sample, convert=backend.asarray))
        err = _error(kernel, got, want, dtype)
        if not err <= 1:
            failures.append(f"{kernel.name} [{sample.label}] {dtype}: error {err:.3g} x tolerance")
    if quick:
        return rows, failures
    for sample in kernel.samples(np.random.default_rng(rng_seed), dtype, timed):
        want = kernel.run(kernel.reference, _in_float64(sample))
        got = tuple(backend.asnumpy(g) for g in kernel.run(kernel, sample, convert=backend.asarray))
        err = _error(kernel, got, want, dtype)
        if not err <= 1:
            failures.append(f"{kernel.name} [{sample.label}] {dtype}: error {err:.3g} x tolerance")
        # Timings call in place on the same arrays: in-place kernels (optimizer steps) keep
        # stepping, as in training.
        numpy_ms = _host_time_ms(functools.partial(kernel.reference, *sample.args, **sample.kwargs), 1, warm=False)
        cpu_ms = _host_time_ms(functools.partial(kernel.cpu, *sample.args, **sample.kwargs), calls=1)
        args, kwargs = _device_args(backend, sample)
        device_ms = backend.time_ms(functools.partial(kernel, *args, **kwargs))
        try:
            device_ops_ms = backend.time_ms(functools.partial(kernel.reference, *args, **kwargs))
        except Exception:  # a NumPy-only reference (the math module, element by element)
            device_ops_ms = None
        rows.append(Row(kernel.name, sample.label, dtype.name, err, numpy_ms, cpu_ms, device_ops_ms, device_ms))
    return rows, failures


def format_table(rows: list[Row], device_name: str) -> str:
    head = (f"{'kernel':<22} {'sample':<36} {'dtype':<8} {'err/tol':>7} {'numpy ms':>9} {'cpu ms':>8} "
            f"{device_name + ' ops ms':>12} {'rtx ' + device_name + ' ms':>11} {'vs ops':>7}")
    lines = [head]
    for r in rows:
        ops = "-" if r.device_ops_ms is None else f"{r.device_ops_ms:.3f}"
        gain = "-" if r.device_ops_ms is None else f"{r.device_ops_ms / max(r.device_ms, 1e-9):.2f}x"
        lines.append(f"{r.kernel:<22} {r.label[:36]:<36} {r.dtype:<8} {r.error:7.2f} {r.numpy_ms:9.2f} "
                     f"{r.cpu_ms:8.2f} {ops:>12} {r.device_ms:11.3f} {gain:>7}")
    return "\n".join(lines)


def run_checks(backend, names=None, dtypes=("float32", "float64"), quick=False, timed="bench",
               timed_dtypes=("float32",)):
    """Every kernel in `names` (default all) and dtype; bench samples only for `timed_dtypes`."""
    rows, failures = [], []
    for name in names or sorted(KERNELS):
        for dtype in dtypes:
            try:
                r, f = check_kernel(KERNELS[name], dtype, backend, quick=quick or dtype not in timed_dtypes,
                                    timed=timed)
            except Exception as exc:  # report and go on: one broken kernel must not hide the rest
                r, f = [], [f"{name} {dtype}: {type(exc).__name__}: {exc}"]
            rows += r
            failures += f
    return rows, failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Check rtx.kernel's CUDA paths against the NumPy references.")
    parser.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    parser.add_argument("--dtype", action="append", choices=["float32", "float64"],
                        help="dtypes to check (default: both)")
    parser.add_argument("--quick", action="store_true", help="correctness on the test samples only, no timing")
    parser.add_argument("--full", action="store_true", help="bench samples in float64 too (slower)")
    args = parser.parse_args(argv)
    if not cuda.is_available():
        print("rtx.kernel.gpu_check: CUDA is not available (no CuPy, driver or GPU); nothing was checked")
        return 2
    backend = CudaBackend()
    print(f"GPU: {cuda.get_device_name(0)}, CuPy {backend.cp.__version__}")
    names = [n for n in args.only.split(",") if n] or None
    dtypes = tuple(args.dtype or ("float32", "float64"))
    rows, failures = run_checks(backend, names, dtypes, args.quick, timed_dtypes=dtypes if args.full else ("float32",))
    if rows:
        print(format_table(rows, "cupy"))
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failure(s)" if failures else "all kernels match their references")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
