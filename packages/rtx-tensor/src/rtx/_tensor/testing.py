"""rtx.testing: assert_close (as torch.testing) and the op-table machinery the test suites use.

An OpCase names an op once: the rtx function, an independent NumPy reference, sample inputs
(arrays), and whether it is differentiable. `check_case` compares values against the
reference, gradients against central finite differences in float64, and double backward
(gradgradcheck), on every device present.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from rtx._tensor.tensor import Tensor


def _arr(x):
    if type(x) is Tensor:
        return x.detach().__array__()
    return np.asarray(x)


_TOL = {np.float16: (1e-3, 1e-5), np.float32: (1.3e-6, 1e-5), np.float64: (1e-7, 1e-7),
        np.complex64: (1.3e-6, 1e-5), np.complex128: (1e-7, 1e-7)}


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True, msg=None):
    """Raise AssertionError naming the worst element unless actual ≈ expected."""
    a, e = _arr(actual), _arr(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.")
    if check_dtype and type(actual) is Tensor and type(expected) is Tensor and a.dtype != e.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != "
                                    f"{expected.dtype}.")
    default = _TOL.get(a.dtype.type, (1.3e-6, 1e-5))
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        ok = a == e
    else:
        a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        e64 = e.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
        ok = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not np.all(ok):
        bad = np.argwhere(~np.asarray(ok))
        first = tuple(bad[0]) if bad.size else ()
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64)) if a.dtype.kind not in "c" else np.abs(a - e)
        raise AssertionError(msg or f"Tensor-likes are not close!\n\nMismatched elements: {len(bad)} / {a.size}\n"
                                    f"Greatest absolute difference: {np.nanmax(diff) if diff.size else 0}\n"
                                    f"First mismatch at index {first}: {a[first] if a.ndim else a} vs "
                                    f"{e[first] if e.ndim else e} (rtol={rtol}, atol={atol})")


@dataclass
class OpCase:
    """One op, described once."""
    name: str
    fn: Callable                          # rtx function: fn(*tensors, **kwargs)
    ref: Callable | None                  # NumPy reference: ref(*arrays, **kwargs)
    inputs: list                          # sample input arrays (float64 preferred)
    kwargs: dict = field(default_factory=dict)
    grad: bool = True                     # check gradients by finite differences
    gradgrad: bool = True                 # check double backward
    grad_inputs: tuple | None = None      # positions that require grad (default: all float inputs)
    rtol: float = 1e-7
    atol: float = 1e-7
    grad_atol: float = 1e-5
    grad_rtol: float = 1e-3

    def __repr__(self):
        return self.name


def devices():
    """Every device present: cpu, and cuda when a GPU is usable."""
    from rtx.runtime import cuda
    return ["cpu"] + (["cuda"] if cuda.is_available() else [])


def check_case(case: OpCase, device="cpu"):
    from rtx._tensor.ops.creation import tensor
    from rtx.autograd import gradcheck, gradgradcheck

    arrays = [np.asarray(x) for x in case.inputs]
    tensors = [tensor(a, device=device) for a in arrays]
    out = case.fn(*tensors, **case.kwargs)
    if case.ref is not None:
        expected = case.ref(*arrays, **case.kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        exps = expected if isinstance(expected, tuple) else (expected,)
        for o, e in zip(outs, exps):
            assert_close(o, e, rtol=case.rtol, atol=case.atol, check_dtype=False)
            if type(o) is Tensor and o.device.type != device.split(":")[0]:
                raise AssertionError(f"{case.name}: output on {o.device}, expected {device}")
    if not case.grad:
        return
    positions = case.grad_inputs
    if positions is None:
        positions = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    gin = [tensor(a.astype(np.float64) if i in positions else a, device=device,
                  requires_grad=i in positions) for i, a in enumerate(arrays)]

    def f(*xs):
        res = case.fn(*xs, **case.kwargs)
        if isinstance(res, tuple):
            return tuple(r for r in res if type(r) is Tensor and r.is_floating_point())
        return res

    gradcheck(f, gin, atol=case.grad_atol, rtol=case.grad_rtol)
    if case.gradgrad:
        gradgradcheck(f, gin, atol=case.grad_atol, rtol=case.grad_rtol)


# ---- edge-of-domain tests against numbers PyTorch computed once -------------------------------------------------
# A package's tests/data holds `<stem>_edge_cases.py` (CASES = {name: (fn(F, torch_or_rtx, *tensors), inputs, wrt)},
# grad_output(n)) and `<stem>_edge_grads.json`, written once by tools/make_edge_grads.py in a PyTorch venv.

def load_edge_cases(data_dir, stem):
    """(cases module, reference dict) of the edge-of-domain test `stem` in `data_dir`."""
    import importlib.util
    import json
    import os
    spec = importlib.util.spec_from_file_location(f"{stem}_edge_cases", os.path.join(data_dir, f"{stem}_edge_cases.py"))
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    with open(os.path.join(data_dir, f"{stem}_edge_grads.json")) as f:
        return cases, json.load(f)


def assert_like_reference(got, want, what):
    """NaN exactly where the reference has NaN, the same infinities, finite values within float32 rounding."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at {np.isnan(got)} vs reference {nan}"
    fin = np.isfinite(want)
    inf = ~fin & ~nan
    assert np.array_equal(got[inf], want[inf]), f"{what}: infinities {got} vs reference {want}"
    np.testing.assert_allclose(got[fin], want[fin], rtol=2e-5, atol=1e-6 * max(1.0, np.abs(want[fin]).max(initial=0)),
                               err_msg=f"{what}: rtx {got} vs reference {want}")


def check_edge_case(cases, name, want, F):
    """Run case `name` through rtx (F: rtx.nn.functional) and compare its output and gradients with `want`
    ({"out": ..., "grads": [...]}; a None gradient means the reference has none, so rtx's must be absent or zero)."""
    import warnings

    import rtx
    fn, inputs, wrt = cases.CASES[name]
    ts = [rtx.tensor(v, dtype=getattr(rtx, d), requires_grad=(i in wrt)) for i, (v, d) in enumerate(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = fn(F, rtx, *ts)
        g = rtx.tensor(cases.grad_output(y.numel()), dtype=y.dtype).reshape(y.shape)
        grads = rtx.autograd.grad(y, [ts[i] for i in wrt], g, allow_unused=True)
    assert_like_reference(y.detach().numpy(), want["out"], f"{name} forward")
    for i, gr, wg in zip(wrt, grads, want["grads"]):
        if wg is None:
            assert gr is None or not np.any(gr.numpy()), f"{name}: the reference has no gradient for input {i}"
            continue
        assert gr is not None, f"{name}: no gradient for input {i}"
        assert_like_reference(gr.numpy(), wg, f"{name} d/d input {i}")


# ---- thread-safety tests: one thing runs while another thread works -------------------------------------------

def run_while_working(fn, work, min_runs=2):
    """Call fn() repeatedly in this thread while work(progress) runs in another thread (appending to `progress` as
    it goes); return (fn's results, work's result, how many fn() calls saw work progress meanwhile). Threads switch
    every 10 µs meanwhile, so each call meets many interleavings; an exception in `work` fails the test here."""
    import sys
    import threading
    progress, out = [], {}

    def target():
        try:
            out["work"] = work(progress)
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread below)
            out["error"] = e
            progress.append(1)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        t = threading.Thread(target=target)
        t.start()
        while not progress:
            pass
        results, overlapped = [], 0
        while t.is_alive() or len(results) < min_runs:
            before = len(progress)
            results.append(fn())
            # work advanced during this call: the two overlapped (even if work then finished before fn: with
            # faster ops a whole training run can end inside one long fn call, which still overlapped it)
            overlapped += len(progress) > before
        t.join()
    finally:
        sys.setswitchinterval(old)
    if "error" in out:
        raise AssertionError(f"the working thread failed: {out['error']!r}") from out["error"]
    return results, out["work"], overlapped
