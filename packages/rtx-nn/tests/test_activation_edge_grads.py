"""Every activation of rtx.nn.functional at the edges of its domain (issue 26): forward values
and gradients equal PyTorch's, NaN where PyTorch gives NaN and finite where it is finite (±inf,
huge magnitudes, exp overflow points, thresholds and kinks exactly, -0.0; softmax rows with -inf). The
reference numbers were computed once with PyTorch 2.13 by data/make_activation_edge_grads.py (cases in
data/activation_edge_cases.py, shared by both sides) and are stored in data/activation_edge_grads.json."""
import importlib.util
import json
import os
import warnings

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_spec = importlib.util.spec_from_file_location("activation_edge_cases", os.path.join(_DATA, "activation_edge_cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
with open(os.path.join(_DATA, "activation_edge_grads.json")) as _f:
    EXPECTED = json.load(_f)


def assert_like_torch(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN at {np.isnan(got)} vs torch {np.isnan(want)}"
    fin = np.isfinite(want)
    assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)]), f"{what}: inf {got} vs {want}"
    np.testing.assert_allclose(got[fin], want[fin], rtol=2e-5, atol=1e-6 * max(1.0, np.abs(want[fin]).max(initial=0)),
                               err_msg=f"{what}: rtx {got} vs torch {want}")


# PyTorch's float32 CPU gelu kernel returns NaN for gelu(+inf) (its float64 kernel, and the
# exact value, give +inf); rtx gives +inf. Every other value must equal PyTorch's.
OVERRIDES = {("gelu", len(cases.X) - 1): float("inf")}


@pytest.mark.parametrize("name", list(cases.CASES))
def test_activation_edges_match_pytorch(name):
    fn, inputs, wrt = cases.CASES[name]
    ts = [rtx.tensor(v, dtype=getattr(rtx, d), requires_grad=(i in wrt)) for i, (v, d) in enumerate(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = fn(F, rtx, *ts)
        g = rtx.tensor(cases.grad_output(y.numel()), dtype=y.dtype).reshape(y.shape)
        grads = rtx.autograd.grad(y, [ts[i] for i in wrt], g, allow_unused=True)
    want = dict(EXPECTED[name])
    for (case, i), v in OVERRIDES.items():
        if case == name:
            want["out"] = list(want["out"])
            want["out"][i] = v
    assert_like_torch(y.detach().numpy(), want["out"], f"{name} forward")
    for i, gr, wg in zip(wrt, grads, want["grads"]):
        if wg is None:
            assert gr is None or not np.any(gr.numpy()), f"{name}: torch has no gradient for input {i}"
            continue
        assert gr is not None, f"{name}: no gradient for input {i}"
        assert_like_torch(gr.numpy(), wg, f"{name} d/d input {i}")

