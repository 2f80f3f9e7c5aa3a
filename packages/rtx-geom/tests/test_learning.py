"""Learning checks from the issue's "Done when" (short versions; the README has the figures)."""
import networkx as nx
import numpy as np

import rtx
import rtx.nn as tnn
import rtx.nn.functional as F
from rtx.geom.datasets import FakeDataset, KarateClub, StochasticBlockModelDataset
from rtx.geom.examples.karate import DEFAULT, train_karate
from rtx.geom.loader import DataLoader
from rtx.geom.nn import GAE, GCN, GIN, MLP, GCNConv, global_add_pool
from rtx.geom.utils import negative_sampling, to_undirected


def test_gcn_karate_four_communities_hubs_labelled():
    # The bar on PyG's four communities, one labelled node each: the hub (highest degree) of each
    # community is labelled (rtx.geom.examples.karate; the README has the sweep behind this choice). PyG 2.8's
    # own GCN gives the same 90.0 % on every seed (scripts/pyg_karate.py); labelling PyG's train_mask nodes gives 77 %.
    for seed in (0, 1):
        assert train_karate(seed=seed, **DEFAULT) >= 0.9


def test_gcn_karate_two_factions():
    # The club's split into two factions (networkx's 'club' attribute), leaders and one member of each
    # labelled.
    rtx.manual_seed(0)
    data = KarateClub()[0]
    club = np.array([d["club"] != "Mr. Hi" for _, d in nx.karate_club_graph().nodes(data=True)], dtype=np.int64)
    y = rtx.tensor(club)
    labelled = np.zeros(34, bool)
    labelled[[0, 1, 32, 33]] = True
    mask = rtx.tensor(labelled)
    model = GCN(34, 16, 2, 2)
    opt = rtx.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(100):
        opt.zero_grad()
        F.cross_entropy(model(data.x, data.edge_index)[mask], y[mask]).backward()
        opt.step()
    model.eval()
    pred = model(data.x, data.edge_index).argmax(1).numpy()
    acc = (pred[~labelled] == club[~labelled]).mean()
    assert acc >= 0.9, acc


def _graph_task(seed):
    # Graph classes differ in structure only (density), not in node features.
    rs = np.random.default_rng(seed)
    graphs = []
    for k in range(120):
        y = k % 2
        d = FakeDataset(1, avg_num_nodes=12, avg_degree=2 + 4 * y, num_channels=0, num_classes=0,
                        seed=int(rs.integers(1 << 30)))[0]
        d.x = rtx.ones(d.num_nodes, 4)
        d.y = rtx.tensor([y])
        graphs.append(d)
    return graphs


def _train_graph(model, graphs, epochs):
    opt = rtx.optim.Adam(model.parameters(), lr=0.01)
    train, test = graphs[:80], graphs[80:]
    for _ in range(epochs):
        for b in DataLoader(train, batch_size=16, shuffle=True):
            opt.zero_grad()
            F.cross_entropy(model(b), b.y).backward()
            opt.step()
    model.eval()
    b = next(iter(DataLoader(test, batch_size=len(test))))
    return (model(b).argmax(1).numpy() == b.y.numpy()).mean()


class GraphGIN(tnn.Module):
    def __init__(self):
        super().__init__()
        self.gnn = GIN(4, 16, 2)
        self.head = tnn.Linear(16, 2)

    def forward(self, b):
        return self.head(global_add_pool(self.gnn(b.x, b.edge_index), b.batch))


class GraphMLP(tnn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP([4, 16, 16], norm=None)
        self.head = tnn.Linear(16, 2)

    def forward(self, b):
        return self.head(global_add_pool(self.mlp(b.x), b.batch))


def test_gin_beats_feature_mlp_on_graph_classification():
    rtx.manual_seed(0)
    graphs = _graph_task(0)
    gin = _train_graph(GraphGIN(), graphs, 15)
    mlp = _train_graph(GraphMLP(), graphs, 15)
    assert gin >= 0.85 and gin >= mlp + 0.15, (gin, mlp)


def test_gae_link_prediction_on_sbm():
    rtx.manual_seed(0)
    data = StochasticBlockModelDataset(block_sizes=[40] * 4, edge_probs=np.full((4, 4), 0.01) + np.eye(4) * 0.25,
                                       num_channels=8, feature_separation=0.0, seed=0)[0]
    ei = data.edge_index.numpy()
    und = ei[:, ei[0] < ei[1]]
    perm = np.random.default_rng(0).permutation(und.shape[1])
    test_pos, train_pos = und[:, perm[:40]], und[:, perm[40:]]
    train_ei = to_undirected(rtx.tensor(train_pos))
    test_neg = negative_sampling(data.edge_index, data.num_nodes, 40)
    x = data.x

    def fit(encoder, uses_graph):
        model = GAE(encoder)
        opt = rtx.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(150):
            opt.zero_grad()
            z = model.encode(x, train_ei) if uses_graph else model.encode(x)
            model.recon_loss(z, train_ei).backward()
            opt.step()
        model.eval()
        with rtx.no_grad():
            z = model.encode(x, train_ei) if uses_graph else model.encode(x)
        return model.test(z, rtx.tensor(test_pos), test_neg)[0]

    class Enc(tnn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = GCNConv(8, 32), GCNConv(32, 16)

        def forward(self, x, ei):
            return self.c2(self.c1(x, ei).relu(), ei)

    gae = fit(Enc(), True)
    mlp = fit(MLP([8, 32, 16], norm=None), False)
    assert gae >= 0.85 and gae >= mlp + 0.2, (gae, mlp)
