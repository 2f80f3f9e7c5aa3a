"""Module.to(dtype) / .double() / .half() / .float() convert parameters in place through
rtx.extend.set_raw: the same Parameter objects (optimizers hold them), gradients converted along,
one version bump per parameter whose storage changed, none for a conversion that changes nothing."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.extend import raw


def _model():
    rtx.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    m(rtx.randn(5, 3)).sum().backward()
    return m


def test_conversions_keep_parameters_grads_and_version_semantics():
    m = _model()
    params = list(m.parameters())
    values = [raw(p).copy() for p in params]
    grads = [raw(p.grad).copy() for p in params]
    versions = [p._version for p in params]

    assert m.double() is m
    assert all(p is q for p, q in zip(params, m.parameters()))
    for p, v, g, n in zip(params, values, grads, versions):
        assert p.dtype == rtx.float64 and isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
        assert np.array_equal(raw(p), v.astype(np.float64)) and np.array_equal(raw(p.grad), g.astype(np.float64))
        assert p._version == n + 1  # new storage: one bump
    assert m[1].running_var.dtype == rtx.float64 and m[1].num_batches_tracked.dtype == rtx.int64

    m.double()  # already float64: nothing changes, versions included
    assert [p._version for p in params] == [n + 1 for n in versions]

    m.half()
    for p, v, n in zip(params, values, versions):
        assert p.dtype == rtx.float16 and np.array_equal(raw(p), v.astype(np.float64).astype(np.float16))
        assert p.grad.dtype == rtx.float16 and p._version == n + 2

    m.to(dtype=rtx.float32)
    m.float()
    assert [p._version for p in params] == [n + 3 for n in versions]
    assert all(p.dtype == rtx.float32 and p.grad.dtype == rtx.float32 for p in params)


def test_a_graph_saved_before_conversion_refuses_stale_parameters():
    m = nn.Linear(2, 3)
    loss = m(rtx.randn(4, 2)).sum()
    m.double()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_an_optimizer_built_before_conversion_steps_the_converted_parameters():
    m = nn.Linear(3, 1)
    opt = rtx.optim.SGD(m.parameters(), lr=0.1)
    m.double()
    x = rtx.randn(6, 3, dtype=rtx.float64)
    w0, b0 = raw(m.weight).copy(), raw(m.bias).copy()
    m(x).pow(2).mean().backward()
    opt.step()
    # closed form of the gradient of mean((x w^T + b)^2), in float64
    xa = raw(x)
    r = xa @ w0.T + b0
    gw, gb = 2 * (r * xa).mean(0, keepdims=True), 2 * r.mean(0)
    assert m.weight.dtype == rtx.float64
    np.testing.assert_allclose(raw(m.weight), w0 - 0.1 * gw, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(raw(m.bias), b0 - 0.1 * gb, rtol=1e-12, atol=1e-15)


def test_parameter_shares_storage_and_version_with_its_data():
    t = rtx.ones(3)
    p = nn.Parameter(t)
    assert raw(p) is raw(t) and p is not t
    assert p.is_leaf and p.requires_grad and not t.requires_grad
    t.add_(1.0)
    assert p.tolist() == [2.0, 2.0, 2.0] and p._version == t._version == 1
    with rtx.no_grad():
        p.mul_(3.0)
    assert t.tolist() == [6.0, 6.0, 6.0] and t._version == 2
    (p * p).sum().backward()
    assert p.grad.tolist() == [12.0, 12.0, 12.0] and t.grad is None

    x = rtx.randn(2, requires_grad=True)
    q = nn.Parameter(x * 2)  # from a computed tensor: a fresh leaf
    assert q.is_leaf and q.grad_fn is None and q.requires_grad
