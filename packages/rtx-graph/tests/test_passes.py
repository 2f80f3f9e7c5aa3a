"""Graph passes: each preserves the outputs and does what it says; drawing."""
import numpy as np
import pytest

import rtx
import rtx.graph as G
import rtx.nn as nn


def _f(x, y):
    a = (x + 1) * 2
    b = (x + 1) * 2          # the same as a: CSE merges it
    dead = x @ x.T           # read by nothing: DCE removes it  # noqa: F841
    c = (a + b).tanh() - y.exp()
    return c.sigmoid()


def _args(b=3):
    return rtx.randn(b, 4), rtx.randn(b, 4)


def test_dead_code_elimination():
    g = G.trace(_f, _args())
    assert "matmul" in g.op_counts() and "permute" in g.op_counts()
    removed = g.eliminate_dead_code()
    assert removed == 2 and "matmul" not in g.op_counts()
    assert g.eliminate_dead_code() == 0
    x, y = _args(5)
    np.testing.assert_array_equal(g(x, y).numpy(), _f(x, y).numpy())


def test_common_subexpression_elimination():
    g = G.trace(_f, _args())
    before = g.op_counts()
    merged = g.eliminate_common_subexpressions()
    assert merged == 2 and g.op_counts()["add"] == before["add"] - 1 and g.op_counts()["mul"] == before["mul"] - 1
    add2 = next(n for n in g.nodes if n.op == "add" and n.args[0] is n.args[1])  # a + a now
    assert add2.args[0].node.op == "mul"
    x, y = _args(2)
    np.testing.assert_array_equal(g(x, y).numpy(), _f(x, y).numpy())


def test_cse_keeps_different_attributes_apart():
    def fn(x):
        return x.sum(0) + x.sum(1)[:1] * 0 + x.sum(0)

    g = G.trace(fn, rtx.randn(3, 3), dynamic_dims=False)
    assert g.eliminate_common_subexpressions() == 1
    assert g.op_counts()["sum"] == 2
    x = rtx.randn(3, 3)
    np.testing.assert_array_equal(g(x).numpy(), fn(x).numpy())


def test_constant_folding_precomputes_constant_subgraphs():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    model[1].running_mean.copy_(rtx.randn(4))
    model[1].running_var.copy_(rtx.rand(4) + 0.5)
    model.eval()
    x = rtx.randn(2, 3, 6, 6)
    g = G.trace(model, x)
    n0 = len(g.nodes)
    kept_params = G.trace(model, x)
    assert kept_params.fold_constants(fold_parameters=False) == 0   # every constant chain reads a buffer
    folded = g.fold_constants()
    # BN eval affine: scale = rsqrt(var + eps) * weight (3 ops), shift = -mean * scale + bias (3), 2 reshapes
    assert folded == 8 and len(g.nodes) == n0 - 8
    assert [n.op for n in g.nodes] == ["convolution", "mul", "add", "relu"]
    assert all(not c.is_parameter for c in g.nodes[1].inputs[1:] + g.nodes[2].inputs[1:])
    with rtx.no_grad():
        np.testing.assert_allclose(g(rtx.randn(5, 3, 6, 6) * 0 + x[:1]).numpy()[0], model(x[:1]).numpy()[0],
                                   rtol=1e-6, atol=1e-6)

    def pure(x):
        k = rtx.ones(3) * 2 + 1      # constant-only: folded to one constant
        return x * k.exp()

    gp = G.trace(pure, rtx.randn(2, 3))
    assert gp.fold_constants() == 3 and gp.op_counts() == {"mul": 1}
    x = rtx.randn(4, 3)
    np.testing.assert_array_equal(gp(x).numpy(), pure(x).numpy())


def test_symbolic_constants_are_not_folded():
    def fn(x):
        return x + rtx.zeros(x.shape[0], 3).exp()

    g = G.trace(fn, rtx.randn(2, 3))
    assert g.fold_constants() == 0
    x = rtx.randn(5, 3)
    np.testing.assert_array_equal(g(x).numpy(), fn(x).numpy())


def test_elementwise_fusion_groups_and_runs():
    g = G.trace(_f, _args())
    g.optimize()
    assert len(g.fusion_groups) == 1
    group = g.fusion_groups[0]
    assert [n.op for n in group.nodes] == ["add", "mul", "add", "tanh", "exp", "sub",
                                           "sigmoid"]
    assert all(n.group == 0 for n in g.nodes)
    assert group.expression() == "(1 / (1 + exp(-(tanh((((in0 + 1.0) * 2.0) + ((in0 + 1.0) * 2.0))) - exp(in1)))))"
    x, y = _args(6)
    np.testing.assert_allclose(g(x, y).numpy(), _f(x, y).numpy(), rtol=1e-6, atol=1e-7)


def test_fusion_respects_other_readers_and_outputs():
    def fn(x):
        a = x.exp()
        b = a * 2           # a is also an output: a and b are not fused
        c = (b + 1).relu()  # b + 1 and relu fuse
        return a, c

    g = G.trace(fn, rtx.randn(3, 3))
    assert g.fuse_elementwise() == 1
    (grp,) = g.fusion_groups.values()
    assert [n.op for n in grp.nodes] == ["mul", "add", "relu"]
    x = rtx.randn(4, 3)
    for got, want in zip(g(x), fn(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_bias_activation_runs_as_rtx_kernel_bias_act(monkeypatch):
    import rtx.kernel as K
    calls = []
    real = K.bias_act

    def spy(*a, **k):
        calls.append(a[2])
        return real(*a, **k)

    monkeypatch.setattr(K, "bias_act", spy)
    w, b = rtx.randn(4, 5), rtx.randn(5)

    def fn(x):
        return (x @ w + b).relu()

    g = G.trace(fn, rtx.randn(3, 4))
    g.fold_constants()
    g.fuse_elementwise()
    (grp,) = g.fusion_groups.values()
    assert grp.bias_act is not None and grp.bias_act[2] == "relu"
    x = rtx.randn(7, 4)
    np.testing.assert_allclose(g(x).numpy(), fn(x).numpy(), rtol=1e-6)
    assert calls == ["relu"]


def test_fused_graph_still_differentiates():
    lin = nn.Linear(3, 3)

    def fn(x):
        return (lin(x) * 2).tanh()

    g = G.trace(fn, rtx.randn(2, 3)).optimize()
    assert g.fusion_groups
    x = rtx.randn(4, 3, requires_grad=True)
    g(x).sum().backward()
    gx = x.grad.numpy().copy()
    x.grad = None
    fn(x).sum().backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("fmt", ["dot", "svg", "png"])
def test_draw(tmp_path, fmt):
    g = G.trace(_f, _args()).optimize()
    written = g.draw(tmp_path / f"graph.{fmt}")
    dot = (tmp_path / "graph.dot").read_text()
    assert dot.startswith("digraph") and '"x" -> "add"' in dot and "group 0" in dot
    assert written[0] == tmp_path / "graph.dot"
    if fmt == "png":
        assert (tmp_path / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if fmt == "svg":
        assert "<svg" in (tmp_path / "graph.svg").read_text()
    with pytest.raises(ValueError, match="dot, svg or png"):
        g.draw(tmp_path / "graph.gif")
