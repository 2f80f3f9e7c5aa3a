"""Every loss at the edges of its domain (issue 26): forward values and gradients equal
PyTorch's, NaN where PyTorch gives NaN and finite where it is finite (probabilities of 0 and 1 in
binary_cross_entropy, ±inf and huge logits, log(0), zero vectors, kinks at the margin). The
reference numbers were computed once with PyTorch 2.13 by tools/make_edge_grads.py (cases in
data/loss_edge_cases.py, shared by both sides) and are stored in data/loss_edge_grads.json."""
import os

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.testing import check_edge_case, load_edge_cases

cases, EXPECTED = load_edge_cases(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"), "loss")


def _soft_margin_exact(x, y, g):
    z = -y * x
    return np.logaddexp(0, z), [g * -y / (1 + np.exp(-z))]


# Where PyTorch itself overflows (its soft_margin_loss computes log(1 + exp(-y x)) directly: inf
# loss and NaN gradient at |x| = 1e4), rtx stays finite; there the test checks rtx against the
# closed form in float64 instead. Everywhere else it must equal PyTorch.
EXACT_WHERE_TORCH_OVERFLOWS = {"soft_margin": _soft_margin_exact}


def _with_exact(name, inputs, want):
    exact = EXACT_WHERE_TORCH_OVERFLOWS.get(name)
    if exact is None:
        return want
    arrays = [np.asarray(v, dtype=np.float64) for v, _ in inputs]
    out, grads = exact(*arrays, np.asarray(cases.grad_output(arrays[0].size)))
    fix = lambda w, e: np.where(np.isfinite(np.asarray(w, dtype=np.float64)), w, e)  # noqa: E731
    return {"out": fix(want["out"], out), "grads": [fix(w, e) for w, e in zip(want["grads"], grads)]}


@pytest.mark.parametrize("name", list(cases.CASES))
def test_loss_edges_match_pytorch(name):
    check_edge_case(cases, name, _with_exact(name, cases.CASES[name][1], EXPECTED[name]), F)


def test_bce_primitive_gradients_and_double_backward_inside_the_domain():
    # away from the clamp, the hand-written backward is the true derivative (finite differences in float64)
    rng = np.random.default_rng(0)
    p = rtx.tensor(rng.uniform(0.05, 0.95, 6), dtype=rtx.float64, requires_grad=True)
    t = rtx.tensor(rng.uniform(0, 1, 6), dtype=rtx.float64, requires_grad=True)
    w = rtx.tensor(rng.uniform(0.5, 2, 6), dtype=rtx.float64)
    fn = lambda a, b: F.binary_cross_entropy(a, b, weight=w)  # noqa: E731
    assert rtx.autograd.gradcheck(fn, (p, t))
    assert rtx.autograd.gradgradcheck(fn, (p, t))
