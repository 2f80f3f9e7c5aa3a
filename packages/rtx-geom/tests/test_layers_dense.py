"""Each layer against its dense NumPy formula in float64 (edge weights, self-loops, isolated nodes),
gradients by finite differences, permutation equivariance, and batch == graph-by-graph."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rtx
import rtx.nn as tnn
from rtx.autograd import gradcheck
from rtx.geom import nn as gnn
from rtx.geom.data import Batch, Data

rng = np.random.default_rng(0)
# 6 nodes, node 5 isolated, a self-loop on 2, a repeated edge 1->0.
EI = np.array([[0, 1, 1, 2, 2, 3, 4, 1, 0], [1, 0, 2, 1, 2, 4, 3, 0, 3]])
N = 6
X = rng.standard_normal((N, 4))
W = rng.random(EI.shape[1]) + 0.5


def t(a):
    return rtx.tensor(a)


def dense_adj(ei, w=None, n=N):
    a = np.zeros((n, n))
    np.add.at(a, (ei[1], ei[0]), 1.0 if w is None else w)  # a[target, source]
    return a


def params(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


def f64(m):
    m = m.to(rtx.float64)
    with rtx.no_grad():
        for p in m.parameters():
            p.add_(0.1 * rtx.randn_like(p))
    return m


def test_gcn_dense():
    m = f64(gnn.GCNConv(4, 3))
    p = params(m)
    for w in (None, W):
        a = dense_adj(EI, w)
        a[np.arange(N), np.arange(N)] = 0
        loops = dense_adj(EI[:, EI[0] == EI[1]], None if w is None else w[EI[0] == EI[1]])
        a_hat = a + np.where(np.diag(loops) > 0, np.diag(np.diag(loops)), np.eye(N))  # existing loop weight kept
        d = a_hat.sum(1) ** -0.5
        want = d[:, None] * a_hat * d[None] @ X @ p["lin.weight"].T + p["bias"]
        got = m(t(X), t(EI), None if w is None else t(W)).detach().numpy()
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_sage_and_graphconv_dense():
    m = f64(gnn.SAGEConv(4, 3))
    p = params(m)
    a = dense_adj(EI)
    deg = a.sum(1, keepdims=True)
    mean = np.divide(a @ X, np.maximum(deg, 1))
    want = mean @ p["lin_l.weight"].T + p["lin_l.bias"] + X @ p["lin_r.weight"].T
    np.testing.assert_allclose(m(t(X), t(EI)).detach().numpy(), want, atol=1e-12)
    g = f64(gnn.GraphConv(4, 3))
    p = params(g)
    want = dense_adj(EI, W) @ X @ p["lin_rel.weight"].T + p["lin_rel.bias"] + X @ p["lin_root.weight"].T
    np.testing.assert_allclose(g(t(X), t(EI), t(W)).detach().numpy(), want, atol=1e-12)


def test_gin_dense():
    m = f64(gnn.GINConv(tnn.Linear(4, 3), eps=0.25))
    p = params(m)
    want = ((1.25 * X + dense_adj(EI) @ X) @ p["nn.weight"].T + p["nn.bias"])
    np.testing.assert_allclose(m(t(X), t(EI)).detach().numpy(), want, atol=1e-12)


def test_gat_dense():
    m = f64(gnn.GATConv(4, 2, heads=2))
    p = params(m)
    h = (X @ p["lin.weight"].T).reshape(N, 2, 2)
    a_s = (h * p["att_src"]).sum(-1)
    a_d = (h * p["att_dst"]).sum(-1)
    mask = dense_adj(EI) > 0
    mask[np.arange(N), np.arange(N)] = True  # GAT removes existing loops and adds one per node
    out = np.zeros((N, 2, 2))
    for hd in range(2):
        e = a_d[:, hd][:, None] + a_s[:, hd][None]
        e = np.where(e > 0, e, 0.2 * e)
        e = np.where(mask, e, -np.inf)
        # multi-edges count once per copy: weight them by multiplicity
        mult = dense_adj(EI[:, EI[0] != EI[1]])
        mult[np.arange(N), np.arange(N)] = 1
        att = mult * np.exp(e - e.max(1, keepdims=True))
        att = att / att.sum(1, keepdims=True)
        out[:, hd] = att @ h[:, hd]
    want = out.reshape(N, 4) + p["bias"]
    np.testing.assert_allclose(m(t(X), t(EI)).detach().numpy(), want, atol=1e-12)


def test_cheb_dense():
    m = f64(gnn.ChebConv(4, 3, K=3))
    p = params(m)
    ei = EI[:, EI[0] != EI[1]]
    w = W[EI[0] != EI[1]]
    a = dense_adj(ei, w).T  # ChebConv's degree is over rows (sources)
    d = a.sum(1)
    dis = np.where(d > 0, np.maximum(d, 1e-300) ** -0.5, 0)
    L_hat = -(dis[:, None] * a * dis[None]).T  # L - I, lambda_max = 2
    t0, t1 = X, L_hat @ X
    t2 = 2 * L_hat @ t1 - t0
    want = sum(tk @ p[f"lins.{k}.weight"].T for k, tk in enumerate((t0, t1, t2))) + p["bias"]
    np.testing.assert_allclose(m(t(X), t(EI), t(W)).detach().numpy(), want, atol=1e-12)



EA = np.random.default_rng(7).standard_normal((EI.shape[1], 3))  # edge features, one row per edge of EI


def in_edges(i, loops=True):
    """Indices into EI of the edges into node i (self-loops kept unless loops=False)."""
    return [k for k in range(EI.shape[1]) if EI[1, k] == i and (loops or EI[0, k] != i)]


def softmax_rows(s):
    e = np.exp(s - s.max(0))
    return e / e.sum(0)


def test_gatv2_dense_with_edge_features():
    m = f64(gnn.GATv2Conv(4, 2, heads=2, edge_dim=3))
    p = params(m)
    xl = (X @ p["lin_l.weight"].T + p["lin_l.bias"]).reshape(N, 2, 2)
    xr = (X @ p["lin_r.weight"].T + p["lin_r.bias"]).reshape(N, 2, 2)
    want = np.zeros((N, 2, 2))
    for i in range(N):
        ks = in_edges(i, loops=False)
        # existing loops are dropped; one loop per node whose edge feature is the mean of its in-edges' (0 if none)
        src = [EI[0, k] for k in ks] + [i]
        ea = np.array([EA[k] for k in ks] + [EA[ks].mean(0) if ks else np.zeros(3)])
        e = xl[src] + xr[i] + (ea @ p["lin_edge.weight"].T).reshape(-1, 2, 2)
        e = np.where(e > 0, e, 0.2 * e)
        alpha = softmax_rows((e * p["att"][0]).sum(-1))          # [edges, heads]
        want[i] = (alpha[..., None] * xl[src]).sum(0)
    want = want.reshape(N, 4) + p["bias"]
    np.testing.assert_allclose(m(t(X), t(EI), t(EA)).detach().numpy(), want, atol=1e-12)
    x, ea = rtx.tensor(X, requires_grad=True), rtx.tensor(EA, requires_grad=True)
    assert gradcheck(lambda x, ea: m(x, t(EI), ea), (x, ea), eps=1e-6, atol=1e-6)


def test_gine_dense_with_edge_features():
    m = f64(gnn.GINEConv(tnn.Linear(4, 3), eps=0.5, edge_dim=3))
    p = params(m)
    agg = np.zeros((N, 4))
    for k in range(EI.shape[1]):
        agg[EI[1, k]] += np.maximum(X[EI[0, k]] + EA[k] @ p["lin.weight"].T + p["lin.bias"], 0)
    want = (1.5 * X + agg) @ p["nn.weight"].T + p["nn.bias"]
    np.testing.assert_allclose(m(t(X), t(EI), t(EA)).detach().numpy(), want, atol=1e-12)
    x, ea = rtx.tensor(X, requires_grad=True), rtx.tensor(EA, requires_grad=True)
    assert gradcheck(lambda x, ea: m(x, t(EI), ea), (x, ea), eps=1e-6, atol=1e-6)


def test_transformer_dense_with_beta_and_edge_features():
    m = f64(gnn.TransformerConv(4, 2, heads=2, beta=True, edge_dim=3))
    p = params(m)

    def lin(name):
        return X @ p[f"{name}.weight"].T + p[f"{name}.bias"]
    q, k_, v = (lin(n).reshape(N, 2, 2) for n in ("lin_query", "lin_key", "lin_value"))
    e = (EA @ p["lin_edge.weight"].T).reshape(-1, 2, 2)
    out = np.zeros((N, 2, 2))
    for i in range(N):
        ks = in_edges(i)
        if not ks:
            continue  # no in-edges (node 5): the attention part is 0
        keys, vals = k_[EI[0, ks]] + e[ks], v[EI[0, ks]] + e[ks]
        alpha = softmax_rows((q[i] * keys).sum(-1) / np.sqrt(2))
        out[i] = (alpha[..., None] * vals).sum(0)
    out = out.reshape(N, 4)
    skip = lin("lin_skip")
    b = 1 / (1 + np.exp(-(np.concatenate([out, skip, out - skip], 1) @ p["lin_beta.weight"].T)))
    want = b * skip + (1 - b) * out
    np.testing.assert_allclose(m(t(X), t(EI), t(EA)).detach().numpy(), want, atol=1e-12)


def test_edgeconv_dense():
    m = f64(gnn.EdgeConv(tnn.Sequential(tnn.Linear(8, 3), tnn.Tanh())))
    p = params(m)
    want = np.zeros((N, 3))
    for i in range(N):
        ks = in_edges(i)
        if ks:  # max over in-edges of nn([x_i, x_j - x_i]); no in-edges gives 0
            h = np.concatenate([np.repeat(X[i:i + 1], len(ks), 0), X[EI[0, ks]] - X[i]], 1)
            want[i] = np.tanh(h @ p["nn.0.weight"].T + p["nn.0.bias"]).max(0)
    np.testing.assert_allclose(m(t(X), t(EI)).detach().numpy(), want, atol=1e-12)

LAYERS = {
    "gcn": lambda: gnn.GCNConv(4, 3),
    "gat": lambda: gnn.GATConv(4, 2, heads=2),
    "gatv2": lambda: gnn.GATv2Conv(4, 2, heads=2),
    "sage": lambda: gnn.SAGEConv(4, 3),
    "sage_max": lambda: gnn.SAGEConv(4, 3, aggr="max"),
    "gin": lambda: gnn.GINConv(tnn.Sequential(tnn.Linear(4, 3), tnn.Tanh())),
    "graph": lambda: gnn.GraphConv(4, 3),
    "cheb": lambda: gnn.ChebConv(4, 3, K=3),
    "transformer": lambda: gnn.TransformerConv(4, 2, heads=2),
    "edge": lambda: gnn.EdgeConv(tnn.Sequential(tnn.Linear(8, 3), tnn.Tanh())),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_gradcheck(name):
    m = f64(LAYERS[name]())
    ei = t(EI[:, EI[0] != EI[1]][:, :6])  # no ties for max; small for speed
    x = rtx.tensor(X, requires_grad=True)
    w = [p for p in m.parameters()]
    assert gradcheck(lambda x, *ps: m(x, ei), (x, *w), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(LAYERS))
@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_permutation_equivariance(name, seed):
    r = np.random.default_rng(seed)
    m = f64(LAYERS[name]())
    m.eval()
    perm = r.permutation(N)
    inv = np.argsort(perm)
    x = r.standard_normal((N, 4))
    y = m(t(x), t(EI)).detach().numpy()
    yp = m(t(x[perm]), t(inv[EI])).detach().numpy()
    np.testing.assert_allclose(yp, y[perm], atol=1e-10)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_pools_invariant(seed):
    r = np.random.default_rng(seed)
    x = r.standard_normal((7, 3))
    batch = np.array([0, 0, 1, 1, 1, 2, 2])
    perm = r.permutation(7)
    for pool in (gnn.global_add_pool, gnn.global_mean_pool, gnn.global_max_pool):
        a = pool(t(x), t(batch)).numpy()
        b = pool(t(x[perm]), t(batch[perm])).numpy()
        np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(gnn.global_mean_pool(t(x), t(batch)).numpy()[1], x[2:5].mean(0))
    np.testing.assert_allclose(gnn.global_max_pool(t(x), t(batch)).numpy()[2], x[5:].max(0))


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_batch_equals_one_by_one(name):
    m = f64(LAYERS[name]())
    m.eval()
    graphs = []
    for k in range(3):
        n = 4 + k
        e = rng.integers(0, n, (2, 3 * n))
        graphs.append(Data(x=t(rng.standard_normal((n, 4))), edge_index=t(e)))
    b = Batch.from_data_list(graphs)
    out = m(b.x, b.edge_index).detach().numpy()
    ptr = b.ptr.numpy()
    for k, g in enumerate(graphs):
        np.testing.assert_allclose(out[ptr[k]:ptr[k + 1]], m(g.x, g.edge_index).detach().numpy(), atol=1e-10)


def test_jumping_knowledge_modes():
    xs = [rng.standard_normal((N, 4)) for _ in range(3)]
    np.testing.assert_array_equal(gnn.JumpingKnowledge("cat")([t(x) for x in xs]).numpy(), np.concatenate(xs, -1))
    np.testing.assert_array_equal(gnn.JumpingKnowledge("max")([t(x) for x in xs]).numpy(), np.maximum.reduce(xs))
    jk = f64(gnn.JumpingKnowledge("lstm", channels=4, num_layers=3))
    assert sorted(jk.state_dict()) == sorted(
        [f"lstm.{w}_{g}_l0{r}" for w in ("weight", "bias") for g in ("ih", "hh") for r in ("", "_reverse")] +
        ["att.weight", "att.bias"])
    assert jk.lstm.hidden_size == 6  # (num_layers * channels) // 2, as PyG
    # the attention weights are a distribution over layers: the same input at every layer comes back unchanged
    with rtx.no_grad():
        np.testing.assert_allclose(jk([t(xs[0])] * 3).numpy(), xs[0], atol=1e-12)
    ins = [rtx.tensor(x, requires_grad=True) for x in xs]
    assert gradcheck(lambda *a: jk(list(a)), ins, eps=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="channels and num_layers"):
        gnn.JumpingKnowledge("lstm")
    with pytest.raises(ValueError, match="'cat', 'max' or 'lstm'"):
        gnn.JumpingKnowledge("sum")
    with pytest.raises(ValueError, match="jk must be"):
        gnn.GCN(4, 8, 2, jk="sum")
