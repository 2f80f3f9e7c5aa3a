"""Check the CUDA kernels against the CPU path on a GPU, and time them.

    python -m rtx.flash_attn.gpu_check [--quick] [--host]

Each case draws q, k, v (and dO, masks) on the host, runs forward and backward with the CUDA
kernels in the case's dtype, and compares out, lse, dq, dk, dv (and the additive mask's
gradient) with the CPU path run in float64 on the same numbers; dropout cases compare too,
since both paths drop the same elements (the counter-based hash). Then one timing row: the
issue's benchmark shape on the GPU, flash vs the math backend. Prints one line per case;
exits 0 when all pass, 1 on a failure, 2 when there is no GPU.

--host runs the same cases with the CPU path in the case's dtype in place of the kernels
(what the test suite does without a GPU: it checks the checker and the low-precision path).
"""
from __future__ import annotations

import argparse
import time
import zlib
from dataclasses import dataclass

import numpy as np

from rtx.flash_attn import _cpu


@dataclass
class Case:
    label: str
    dtype: str = "float32"
    B: int = 2
    Hq: int = 4
    Hk: int = 4
    L: int = 67
    S: int = 67
    D: int = 64
    Dv: int | None = None
    window: tuple = (-1, -1)
    offset: int = 0
    mask: str | None = None      # None, "bool", "add", "pad"
    alibi: bool = False
    dropout: float = 0.0


CASES = [
    Case("plain f32 d64"),
    Case("causal f32 d64", window=(-1, 0)),
    Case("causal bottom-right L<S", L=33, S=90, window=(-1, 0), offset=57),
    Case("gqa 8/2 d128", Hq=8, Hk=2, D=128),
    Case("mqa 6/1 d32", Hq=6, Hk=1, D=32),
    Case("d256", D=256, L=40, S=50),
    Case("d80 dv48", D=80, Dv=48),
    Case("d16", D=16),
    Case("bool mask", mask="bool"),
    Case("additive mask + grad", mask="add"),
    Case("key padding", mask="pad", window=(-1, 0)),
    Case("alibi causal", alibi=True, window=(-1, 0)),
    Case("sliding window 16", window=(16, 0), L=130, S=130),
    Case("dropout 0.2", dropout=0.2),
    Case("float16", dtype="float16"),
    Case("float16 causal gqa", dtype="float16", Hq=8, Hk=2, window=(-1, 0)),
    Case("bfloat16", dtype="bfloat16"),
    Case("float64", dtype="float64", D=128),
    Case("long 1030", B=1, Hq=2, Hk=2, L=1030, S=1030, window=(-1, 0)),
]
QUICK = {"plain f32 d64", "causal f32 d64", "gqa 8/2 d128", "additive mask + grad", "dropout 0.2", "float16"}

TOL = {"float64": 1e-9, "float32": 2e-4, "float16": 2e-2, "bfloat16": 8e-2}


def _np_dtype(name):
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise Skip("ml_dtypes is not installed") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _inputs(c: Case, rng):
    dt = _np_dtype(c.dtype)
    Dv = c.Dv or c.D
    q = rng.standard_normal((c.B, c.Hq, c.L, c.D)).astype(dt)
    k = rng.standard_normal((c.B, c.Hk, c.S, c.D)).astype(dt)
    v = rng.standard_normal((c.B, c.Hk, c.S, Dv)).astype(dt)
    do = rng.standard_normal((c.B, c.Hq, c.L, Dv)).astype(dt)
    mask = None
    if c.mask == "bool":
        mask = rng.random((c.L, c.S)) > 0.3
    elif c.mask == "add":
        mask = rng.standard_normal((c.B, 1, c.L, c.S)).astype(np.float32)
    elif c.mask == "pad":
        mask = np.ones((c.B, 1, 1, c.S), dtype=bool)
        mask[0, ..., : c.S // 3] = False
    alibi = rng.random(c.Hq).astype(np.float32) if c.alibi else None
    return q, k, v, do, mask, alibi


def _err(got, want, tol):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    finite = np.isfinite(want)
    if not np.array_equal(finite, np.isfinite(got)):
        return np.inf
    if not finite.any():
        return 0.0
    scale = tol * (1 + np.abs(want[finite]))
    return float(np.max(np.abs(got[finite] - want[finite]) / scale))


def run_case(c: Case, backend, seed=1234):
    """Worst error (1 = at the tolerance) over out, lse, dq, dk, dv and dmask."""
    rng = np.random.default_rng(zlib.crc32(c.label.encode()))
    q, k, v, do, mask, alibi = _inputs(c, rng)
    scale = 1.0 / np.sqrt(c.D)
    kw = dict(scale=scale, window=c.window, offset=c.offset, dropout_p=c.dropout, seed=seed)
    f64 = [a.astype(np.float64) for a in (q, k, v, do)]
    mask64 = mask.astype(np.float64) if mask is not None and mask.dtype != np.bool_ else mask
    want_o, want_lse = _cpu.forward(*f64[:3], mask64, alibi=alibi, **kw)
    want = (want_o, want_lse) + _cpu.backward(f64[3], *f64[:3], want_o, want_lse, mask64, alibi=alibi,
                                              mask_grad=c.mask == "add", **kw)[:4]
    got = backend.run(q, k, v, do, mask, alibi, c.mask == "add", kw)
    tol = TOL[c.dtype]
    errs = [_err(g, w, tol) for g, w in zip(got, want) if w is not None and g is not None]
    return max(errs), [round(e, 3) for e in errs]


class Skip(Exception):
    """The case cannot run here (a dtype this machine's libraries lack)."""


class HostBackend:
    name = "numpy"

    def run(self, q, k, v, do, mask, alibi, mask_grad, kw):
        o, lse = _cpu.forward(q, k, v, mask, alibi=alibi, **kw)
        return (o, lse) + _cpu.backward(do, q, k, v, o, lse, mask, alibi=alibi, mask_grad=mask_grad, **kw)[:4]


class CudaBackend:
    name = "cuda"

    def __init__(self):
        from rtx.runtime.devices import cupy
        self.cp = cupy()

    def run(self, q, k, v, do, mask, alibi, mask_grad, kw):
        from rtx.flash_attn import _cuda
        cp = self.cp
        try:
            dq_, dk_, dv_, ddo = (cp.asarray(a) for a in (q, k, v, do))
        except (TypeError, ValueError) as e:
            raise Skip(f"CuPy cannot hold {q.dtype} arrays: {e}") from None
        dm = cp.asarray(mask) if mask is not None else None
        da = cp.asarray(alibi) if alibi is not None else None
        o, lse = _cuda.forward(dq_, dk_, dv_, dm, alibi=da, **kw)
        grads = _cuda.backward(ddo, dq_, dk_, dv_, o, lse, dm, alibi=da, mask_grad=mask_grad, **kw)
        cp.cuda.Device().synchronize()
        return tuple(None if a is None else cp.asnumpy(a) for a in (o, lse) + tuple(grads))


def bench(lines):
    """The issue's shape on the GPU: batch 1, 8 heads, head dim 64, float32, forward + backward."""
    import rtx
    import rtx.nn.functional as F
    from rtx.nn.attention import sdpa_kernel
    from rtx.runtime.devices import cupy
    cp = cupy()
    for L in (1024, 4096):
        row = [f"L={L}"]
        for backend in ("math", "flash_attention"):
            rtx.manual_seed(0)
            q, k, v = (rtx.randn(1, 8, L, 64, device="cuda", requires_grad=True) for _ in range(3))
            g = rtx.randn(1, 8, L, 64, device="cuda")

            def step(backend=backend, q=q, k=k, v=v, g=g):
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(q, k, v).backward(g)
            step()
            cp.cuda.Device().synchronize()
            pool = cp.get_default_memory_pool()
            t0 = time.perf_counter()
            for _ in range(5):
                step()
            cp.cuda.Device().synchronize()
            ms = (time.perf_counter() - t0) / 5 * 1e3
            row.append(f"{backend} {ms:8.2f} ms (pool {pool.total_bytes() / 2**20:7.1f} MiB)")
        lines.append("   ".join(row))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a few cases only")
    p.add_argument("--host", action="store_true", help="check the CPU path in each dtype instead of the kernels")
    args = p.parse_args(argv)
    if args.host:
        backend = HostBackend()
    else:
        from rtx.runtime import cuda
        if not cuda.is_available():
            print("no CUDA device: nothing to check (use --host for the CPU path)")
            return 2
        backend = CudaBackend()
    failed = 0
    for c in CASES:
        if args.quick and c.label not in QUICK:
            continue
        t0 = time.perf_counter()
        try:
            worst, errs = run_case(c, backend)
        except Skip as e:
            print(f"skip {c.label:<28} {e}")
            continue
        except Exception as e:  # one broken case must not hide the others
            print(f"FAIL {c.label:<28} {type(e).__name__}: {e}")
            failed += 1
            continue
        ok = worst <= 1.0
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {c.label:<28} {c.dtype:<9} worst {worst:8.3f} (out, lse, dq, dk, dv"
              f"{', dmask' if c.mask == 'add' else ''}: {errs}) {1e3 * (time.perf_counter() - t0):7.1f} ms")
    if backend.name == "cuda" and not args.quick:
        lines: list[str] = []
        try:
            bench(lines)
        except Exception as e:
            lines.append(f"benchmark failed: {type(e).__name__}: {e}")
        print("\n".join(lines))
    print(f"{backend.name}: {failed} case(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
