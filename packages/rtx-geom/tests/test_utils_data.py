"""utils against NumPy/networkx references; Data/Batch round trips; loaders."""
import networkx as nx
import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.geom import utils as U
from rtx.geom.data import Data
from rtx.geom.datasets import FakeDataset, KarateClub, StochasticBlockModelDataset
from rtx.geom.loader import DataLoader, LinkNeighborLoader, NeighborLoader

rng = np.random.default_rng(1)


def t(a):
    return rtx.tensor(a)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "mul"])
def test_scatter_values_and_grad(reduce):
    src = rng.standard_normal((7, 3))
    idx = np.array([0, 2, 2, 0, 3, 2, 0])
    got = U.scatter(t(src), t(idx), 0, 5, reduce).numpy()
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "mul": np.prod}[reduce]
    empty = 1.0 if reduce == "mul" else 0.0
    want = np.array([fn(src[idx == k], 0) if (idx == k).any() else np.full(3, empty) for k in range(5)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    x = rtx.tensor(src, requires_grad=True)
    assert gradcheck(lambda s: U.scatter(s, t(idx), 0, 5, reduce), (x,), eps=1e-6, atol=1e-6)


def test_spmm_matches_dense_and_grad():
    ei = rng.integers(0, 5, (2, 12))
    w = rng.random(12)
    x = rng.standard_normal((5, 3))
    a = np.zeros((5, 5))
    np.add.at(a, (ei[1], ei[0]), w)
    np.testing.assert_allclose(U.spmm(t(ei), t(x), t(w)).numpy(), a @ x, atol=1e-12)
    xs, ws = rtx.tensor(x, requires_grad=True), rtx.tensor(w, requires_grad=True)
    assert gradcheck(lambda x, w: U.spmm(t(ei), x, w, reduce="mean"), (xs, ws), eps=1e-6, atol=1e-6)


def test_softmax_groups():
    src = rng.standard_normal(6) * 50
    idx = np.array([0, 1, 0, 1, 1, 3])
    got = U.softmax(t(src), t(idx)).numpy()
    for k in (0, 1, 3):
        e = np.exp(src[idx == k] - src[idx == k].max())
        np.testing.assert_allclose(got[idx == k], e / e.sum(), atol=1e-12)


def test_self_loops_coalesce_undirected():
    ei = t(np.array([[0, 1, 1, 2, 1], [1, 1, 2, 0, 2]]))
    w = t(np.array([1.0, 5.0, 2.0, 3.0, 4.0]))
    e2, w2 = U.remove_self_loops(ei, w)
    assert e2.numpy().tolist() == [[0, 1, 2, 1], [1, 2, 0, 2]] and w2.numpy().tolist() == [1, 2, 3, 4]
    e3, w3 = U.add_remaining_self_loops(ei, w, 9.0, 3)
    loops = {(a, b): c for a, b, c in zip(*e3.numpy(), w3.numpy()) if a == b}
    assert loops == {(0, 0): 9.0, (1, 1): 5.0, (2, 2): 9.0}
    e4, w4 = U.coalesce(ei, w)
    assert e4.numpy().tolist() == [[0, 1, 1, 2], [1, 1, 2, 0]] and w4.numpy().tolist() == [1, 5, 6, 3]
    und = U.to_undirected(ei)
    assert U.is_undirected(und) and not U.is_undirected(ei)
    assert U.degree(t(np.array([0, 2, 2])), 4).numpy().tolist() == [1, 0, 2, 0]


def test_subgraphs_against_networkx():
    g = nx.gnm_random_graph(30, 60, seed=3, directed=True)
    ei = np.array(list(g.edges())).T
    subset, sub_ei, mapping, emask = U.k_hop_subgraph(5, 2, t(ei), relabel_nodes=False, num_nodes=30)
    # nodes that reach 5 within 2 hops along edge direction
    want = {n for n, d in nx.single_source_shortest_path_length(g.reverse(), 5, cutoff=2).items()}
    assert set(subset.numpy().tolist()) == want
    s = np.array(sorted(want))
    e, _ = U.subgraph(t(s), t(ei), relabel_nodes=False, num_nodes=30)
    assert {tuple(p) for p in e.numpy().T} == set(g.subgraph(s).edges())


def test_negative_sampling_and_dropout_edge():
    ei = t(np.array(list(nx.gnm_random_graph(20, 40, seed=1).to_directed().edges())).T)
    rtx.manual_seed(0)
    neg = U.negative_sampling(ei, 20, 50).numpy()
    pos = {tuple(p) for p in ei.numpy().T}
    assert neg.shape == (2, 50) and not any(tuple(p) in pos or p[0] == p[1] for p in neg.T)
    assert len({tuple(p) for p in neg.T}) == 50
    kept, mask = U.dropout_edge(ei, p=0.5)
    assert kept.shape[1] == int(mask.numpy().sum()) and 0 < kept.shape[1] < ei.shape[1]
    ku, _ = U.dropout_edge(ei, p=0.5, force_undirected=True)
    assert U.is_undirected(ku)


def test_dense_round_trip_and_networkx():
    ei = np.array([[0, 1, 3, 4], [1, 0, 4, 3]])
    batch = np.array([0, 0, 0, 1, 1])
    adj = U.to_dense_adj(t(ei), t(batch)).numpy()
    assert adj.shape == (2, 3, 3) and adj[0, 0, 1] == 1 and adj[1, 0, 1] == 1 and adj.sum() == 4
    e2, w2 = U.dense_to_sparse(t(adj))
    assert e2.numpy().tolist() == [[0, 1, 3, 4], [1, 0, 4, 3]] and w2.numpy().tolist() == [1, 1, 1, 1]
    g = nx.karate_club_graph()
    d = U.from_networkx(g)
    assert d.num_nodes == 34 and d.num_edges == 156 and d.is_undirected()
    back = U.to_networkx(d, to_undirected=True)
    assert nx.is_isomorphic(back, g)


def test_batch_round_trip_and_dataloader():
    ds = FakeDataset(num_graphs=6, avg_num_nodes=8, avg_degree=3, num_channels=4, edge_dim=2, seed=0)
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert [b.num_graphs for b in batches] == [4, 2]
    back = batches[0].to_data_list()
    for a, b in zip(back, [ds[i] for i in range(4)]):
        for key in ("x", "edge_index", "edge_attr", "y"):
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
    b0 = batches[0]
    assert b0.ptr.numpy().tolist()[-1] == b0.num_nodes and b0.batch.shape[0] == b0.num_nodes


def test_data_subgraph_and_to():
    d = KarateClub()[0]
    sub = d.subgraph(rtx.tensor(np.arange(10)))
    assert sub.num_nodes == 10 and sub.x.shape == (10, 34) and int(sub.edge_index.max().item()) < 10
    assert d.to("cpu").num_edges == 156 and int(d.train_mask.sum().item()) == 4


def test_neighbor_loader_samples_real_edges():
    ds = StochasticBlockModelDataset(block_sizes=[60, 60], edge_probs=[[0.2, 0.02], [0.02, 0.2]], num_channels=4,
                                     seed=0)
    data = ds[0]
    edges = {tuple(p) for p in data.edge_index.numpy().T}
    loader = NeighborLoader(data, num_neighbors=[3, 2], batch_size=8, input_nodes=rtx.arange(40), seed=0)
    assert len(loader) == 5
    for b in loader:
        nid = b.n_id.numpy()
        ei = b.edge_index.numpy()
        assert all((nid[s], nid[d]) in edges for s, d in ei.T)
        # each seed has at most 3 sampled in-edges at hop 1
        seeds = np.arange(b.batch_size)
        assert np.bincount(ei[1], minlength=len(nid))[seeds].max() <= 3
        np.testing.assert_array_equal(b.x.numpy(), data.x.numpy()[nid])
    a = [b.n_id.numpy().tolist() for b in NeighborLoader(data, [3, 2], batch_size=8, seed=1)]
    c = [b.n_id.numpy().tolist() for b in NeighborLoader(data, [3, 2], batch_size=8, seed=1)]
    assert a == c
    link = LinkNeighborLoader(data, [2], batch_size=16, neg_sampling_ratio=1.0, seed=0)
    b = next(iter(link))
    assert b.edge_label_index.shape == (2, 32) and b.edge_label.numpy().sum() == 16
    nid = b.n_id.numpy()
    pos = b.edge_label_index.numpy()[:, :16]
    assert all((nid[s], nid[d]) in edges for s, d in pos.T)


@pytest.mark.parametrize("replace", [False, True])
def test_neighbor_sampler_counts_ids_and_uniformity(replace):
    # Exact sampling contract: seeds first, then hop-1 then hop-2 nodes; a seed gets min(deg, k1) distinct
    # in-edges (k1 with replacement), a hop-1 node min(deg, k2); e_id points at the very edge sampled.
    rs = np.random.default_rng(3)
    n = 60
    ei = np.unique(rs.integers(0, n, (2, 500)), axis=1)
    ei = ei[:, ei[0] != ei[1]]
    ei = ei[:, rs.permutation(ei.shape[1])]
    deg = np.bincount(ei[1], minlength=n)
    data = Data(x=t(np.arange(n, dtype=np.float64)[:, None]), edge_index=t(ei), edge_attr=t(np.arange(ei.shape[1])))
    k1, k2 = 4, 2
    for b in NeighborLoader(data, [k1, k2], batch_size=7, shuffle=True, replace=replace, seed=5):
        nid, sei, eid = b.n_id.numpy(), b.edge_index.numpy(), b.e_id.numpy()
        assert len(np.unique(nid)) == len(nid)
        np.testing.assert_array_equal(ei[:, eid], nid[sei])
        np.testing.assert_array_equal(b.edge_attr.numpy(), eid)
        seeds = np.arange(b.batch_size)
        np.testing.assert_array_equal(nid[seeds], b.input_id.numpy())  # input_nodes = all nodes
        hop1 = np.setdiff1d(sei[0][np.isin(sei[1], seeds)], seeds)
        assert np.array_equal(hop1, np.arange(b.batch_size, b.batch_size + len(hop1)))  # hop-1 nodes next
        indeg = np.bincount(sei[1], minlength=len(nid))
        want1 = np.where(deg[nid[seeds]] > 0, k1, 0) if replace else np.minimum(deg[nid[seeds]], k1)
        want2 = np.where(deg[nid[hop1]] > 0, k2, 0) if replace else np.minimum(deg[nid[hop1]], k2)
        np.testing.assert_array_equal(indeg[seeds], want1)
        np.testing.assert_array_equal(indeg[hop1], want2)
        assert indeg[b.batch_size + len(hop1):].sum() == 0
        if not replace:
            assert len(np.unique(eid)) == len(eid)
    # repeated input nodes keep their slots: the first batch_size rows are the inputs in order
    b = next(iter(NeighborLoader(data, [k1], input_nodes=t(np.array([7, 3, 7, 9])), batch_size=4, seed=0)))
    assert b.batch_size == 4 and b.n_id.numpy()[:4].tolist() == [7, 3, 7, 9]
    np.testing.assert_array_equal(b.x.numpy()[:4, 0], [7, 3, 7, 9])
    # every in-edge of a node is equally likely: node v with deg 8 sampled k=3 many times
    v = int(np.argmax(deg == 8))
    loader = NeighborLoader(data, [3], input_nodes=t(np.full(2000, v)), batch_size=1, replace=replace, seed=0)
    counts = np.zeros(ei.shape[1])
    for b in loader:
        np.add.at(counts, b.e_id.numpy(), 1)
    picks = counts[ei[1] == v]
    assert picks.sum() == 3 * 2000 and len(picks) == 8
    # expected 750 each; binomial sd ~ 22: 5 sd bounds
    assert np.abs(picks - 750).max() < 5 * np.sqrt(2000 * 3 / 8 * (1 - 3 / 8)), picks
