"""Learning checks from the issue's "Done when" (short versions; the README has the figures)."""
import networkx as nx
import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.geom.datasets import KarateClub
from rtx.geom.examples.graph_classification import GraphGIN, GraphMLP, make_graphs, train_graph
from rtx.geom.examples.karate import DEFAULT, train_karate
from rtx.geom.examples.link_prediction import Encoder, fit, sbm_split
from rtx.geom.nn import GCN, MLP


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


def test_gin_beats_feature_mlp_on_graph_classification():
    # rtx.geom.examples.graph_classification: classes differ in structure only (density), not in node features.
    rtx.manual_seed(0)
    graphs = make_graphs(0)
    gin = train_graph(GraphGIN(), graphs, 15)
    mlp = train_graph(GraphMLP(), graphs, 15)
    assert gin >= 0.85 and gin >= mlp + 0.15, (gin, mlp)


def test_gae_link_prediction_on_sbm():
    # rtx.geom.examples.link_prediction: features carry nothing, the blocks are in the edges.
    rtx.manual_seed(0)
    split = sbm_split(0)
    gae = fit(Encoder(), split, True)
    mlp = fit(MLP([8, 32, 16], norm=None), split, False)
    assert gae >= 0.85 and gae >= mlp + 0.2, (gae, mlp)
