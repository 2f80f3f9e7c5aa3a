"""Every activation of rtx.nn.functional at the edges of its domain (issue 26): forward values
and gradients equal PyTorch's, NaN where PyTorch gives NaN and finite where it is finite (±inf,
huge magnitudes, exp overflow points, thresholds and kinks exactly, -0.0; softmax rows with -inf). The
reference numbers were computed once with PyTorch 2.13 by tools/make_edge_grads.py (cases in
data/activation_edge_cases.py, shared by both sides) and are stored in data/activation_edge_grads.json."""
import os

import pytest

import rtx.nn.functional as F
from rtx.testing import check_edge_case, load_edge_cases

cases, EXPECTED = load_edge_cases(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"), "activation")


# PyTorch's float32 CPU gelu kernel returns NaN for gelu(+inf) (its float64 kernel, and the
# exact value, give +inf); rtx gives +inf. Every other value must equal PyTorch's.
OVERRIDES = {("gelu", len(cases.X) - 1): float("inf")}


@pytest.mark.parametrize("name", list(cases.CASES))
def test_activation_edges_match_pytorch(name):
    want = dict(EXPECTED[name])
    for (case, i), v in OVERRIDES.items():
        if case == name:
            want["out"] = list(want["out"])
            want["out"][i] = v
    check_edge_case(cases, name, want, F)
