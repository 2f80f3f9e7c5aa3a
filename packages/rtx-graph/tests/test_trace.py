"""rtx.graph.trace: the IR it records, symbolic sizes, and re-execution equal to eager."""

import networkx as nx
import numpy as np
import pytest

import rtx
import rtx.graph as G
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.graph._pytree import leaves
from rtx.graph.symbolic import SymInt, fit_int


def _np(t):
    return t.detach().numpy()


def _same(graph, fn, *args):
    with rtx.no_grad():
        want, got = leaves(fn(*args)), leaves(graph(*args))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(_np(g), _np(w))


class ResBlock(nn.Module):
    """conv + BN + in-place ReLU + `out += identity` + pooling + view(B, -1) + linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = self.relu(self.bn(self.conv1(x)))
        out = self.conv2(y)
        out += y
        out = self.pool(self.relu(out))
        return self.fc(out.view(out.size(0), -1))


def test_mlp_ir_records_ops_shapes_dtypes():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(-1))
    g = G.trace(model, rtx.randn(2, 4))
    assert g.dynamic and g.symbols == {"batch": 2}
    assert [n.op for n in g.nodes] == ["linear", "relu", "linear", "softmax"]
    first = g.nodes[0]
    assert [v.name for v in first.inputs] == ["input", "0.weight", "0.bias"]
    assert first.outputs[0].shape == (SymInt.symbol("batch"), 8) and first.outputs[0].dtype == rtx.float32
    assert g.nodes[3].attrs == {"axis": 1}
    assert g.inputs[0].shape == (SymInt.symbol("batch"), 4)
    assert {c.name for c in g.consts} == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert all(c.is_parameter for c in g.consts)
    for b in (2, 1, 7):
        _same(g, model, rtx.randn(b, 4))
    assert "linear(%input, %0.weight, %0.bias)" in repr(g)


def test_cnn_with_inplace_ops_and_batch_dependent_view():
    model = ResBlock().eval()
    g = G.trace(model, rtx.randn(2, 3, 8, 8))
    assert g.dynamic
    reshape = next(n for n in g.nodes if n.op == "reshape" and n.outputs[0].shape[-1] == 64)
    assert reshape.attrs["shape"] == (SymInt.symbol("batch"), 64)   # view(out.size(0), -1), rewritten
    assert sum(n.op == "relu" for n in g.nodes) == 2       # ReLU(inplace=True) twice
    # out += y reads conv2's output and y, the in-place ReLU's result
    assert any(n.op == "add" and [getattr(v.node, "op", None) for v in n.inputs] == ["convolution", "relu"]
               for n in g.nodes)
    for b in (2, 5):
        _same(g, model, rtx.randn(b, 3, 8, 8))


def test_heads_reshape_is_symbolic_in_a_product():
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = rtx.randn(2, 3, 8)
    g = G.trace(mha, (x, x, x))
    shapes = {tuple(map(str, n.attrs["shape"])) for n in g.nodes if n.op == "reshape"}
    assert ("3", "2*batch", "4") in shapes
    x2 = rtx.randn(5, 3, 8)
    _same(g, mha, x2, x2, x2)


def test_two_symbols_and_uniform_constants_made_at_run_time():
    def attn(q):
        return F.scaled_dot_product_attention(q, q, q, is_causal=True)

    g = G.trace(attn, rtx.randn(2, 2, 3, 4), dynamic_dims=[{0: "batch", 2: "seq"}])
    ones = [c for c in g.consts if c.fill is not None]
    assert len(ones) == 1 and ones[0].shape == (SymInt.symbol("seq"), SymInt.symbol("seq"))
    _same(g, attn, rtx.randn(3, 2, 5, 4))
    _same(g, attn, rtx.randn(1, 2, 1, 4))


def test_positions_from_arange_follow_the_sequence_length():
    emb = nn.Embedding(10, 4)

    def fn(idx):
        return emb(idx) + emb(rtx.arange(idx.shape[1]))

    g = G.trace(fn, rtx.tensor([[1, 2, 3]]), dynamic_dims=[{0: "batch", 1: "seq"}])
    assert g.dynamic
    _same(g, fn, rtx.tensor([[4, 5, 6, 7], [1, 1, 1, 1]]))


def test_static_fallback_when_the_trace_depends_on_the_size():
    def fn(x):
        return x.squeeze() * 2  # batch 1 is squeezed away: not generalisable

    with pytest.warns(UserWarning, match="static"):
        g = G.trace(fn, rtx.randn(1, 3))
    assert not g.dynamic and "changes" in g.static_reason
    _same(g, fn, rtx.randn(1, 3))
    with pytest.raises(RuntimeError, match="expects size 1 at dim 0.*static"):
        g(rtx.randn(2, 3))

    def loop(x):
        for _ in range(x.shape[0]):
            x = x + 1
        return x

    with pytest.warns(UserWarning, match="number of ops changes"):
        G.trace(loop, rtx.randn(2, 3))


def test_static_trace_and_input_checks():
    g = G.trace(lambda x, y: x * y + 1, (rtx.randn(2, 3), rtx.randn(2, 3)), dynamic_dims=False)
    assert not g.dynamic and g.inputs[0].shape == (2, 3) and [v.name for v in g.inputs] == ["x", "y"]
    with pytest.raises(TypeError, match="takes 2 tensor input"):
        g(rtx.randn(2, 3))
    with pytest.raises(RuntimeError, match="expects dtype"):
        g(rtx.randn(2, 3), rtx.ones(2, 3, dtype=rtx.float64))
    with pytest.raises(RuntimeError, match="expects 2 dims"):
        g(rtx.randn(2, 3, 1), rtx.randn(2, 3))
    gd = G.trace(lambda x, y: x * y, (rtx.randn(2, 3), rtx.randn(2, 3)))
    with pytest.raises(RuntimeError, match="symbolic size 'batch'"):
        gd(rtx.randn(2, 3), rtx.randn(4, 3))
    with pytest.raises(TypeError, match="holds no Tensor"):
        G.trace(lambda: 1, ())
    with pytest.raises(ValueError, match="one per input tensor"):
        G.trace(lambda x: x, rtx.randn(2), dynamic_dims=[{}, {}])


def test_setitem_is_traced_and_untraceable_writes_raise():
    def fn(x):
        y = x * 2
        y[:, 0] = 0.0     # __setitem__ records a SetItem primitive and rebinds y
        return y + 1

    g = G.trace(fn, rtx.randn(3, 2))
    assert "setitem" in g.op_counts()
    _same(g, fn, rtx.randn(5, 2))

    def fill(x):
        y = x * 2
        y.fill_(1.0)      # written straight into the array: the tracer cannot follow it
        return y + 1

    with pytest.raises(G.TraceError, match="modified in place"):
        G.trace(fill, rtx.randn(3, 2))


def test_graph_is_differentiable_like_eager():
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    g = G.trace(model, rtx.randn(4, 3))
    x = rtx.randn(6, 3)
    g(x).sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for w, p in zip(want, model.parameters()):
        np.testing.assert_allclose(w, p.grad.numpy(), rtol=1e-6)


def test_leaf_module_is_one_node():
    lstm = nn.LSTM(4, 5, batch_first=True)
    g = G.trace(lstm, rtx.randn(2, 3, 4), leaf_modules=(nn.LSTM,))
    assert [n.op for n in g.nodes] == ["LSTM"] and g.nodes[0].kind == "module"
    assert [o.shape for o in g.nodes[0].outputs][1] == (1, SymInt.symbol("batch"), 5)
    _same(g, lstm, rtx.randn(6, 3, 4))
    unrolled = G.trace(lstm, rtx.randn(2, 3, 4))
    assert len(unrolled.nodes) > 20 and "matmul" in unrolled.op_counts()
    _same(unrolled, lstm, rtx.randn(6, 3, 4))


def test_networkx_view():
    model = ResBlock().eval()
    g = G.trace(model, rtx.randn(2, 3, 8, 8))
    d = g.to_networkx()
    assert isinstance(d, nx.DiGraph) and nx.is_directed_acyclic_graph(d)
    assert d.number_of_nodes() == len(g.inputs) + len(g.consts) + len(g.nodes) + 1
    assert d.nodes["convolution"]["op"] == "convolution" and d.nodes["x"]["kind"] == "input"
    assert set(d.predecessors("convolution")) == {"x", "conv1.weight", "conv1.bias"}
    assert nx.has_path(d, "x", "output_0")
    assert nx.dag_longest_path(d)[-1] == "output_0"
    assert set(nx.ancestors(d, "output_0")) == set(d.nodes) - {"output_0"}


@pytest.mark.parametrize("base,grown", [
    ({"b": 2}, {frozenset(): 8, frozenset({"b"}): 12}),                           # 4*b
    ({"b": 3, "s": 5}, {frozenset(): 16, frozenset({"b"}): 21, frozenset({"s"}): 19,
                        frozenset({"b", "s"}): 25}),                              # b*s + 1
])
def test_fit_int_multilinear(base, grown):
    expr = fit_int(grown, base)
    for key, value in grown.items():
        env = {k: v + (1 if k in key else 0) for k, v in base.items()}
        assert expr.evaluate(env) == value
    assert str(expr) in ("4*b", "b*s + 1")
