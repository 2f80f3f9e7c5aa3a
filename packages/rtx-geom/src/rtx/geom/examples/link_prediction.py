"""Link prediction: a GAE (two GCNConv) against an MLP encoder on a 4-block SBM graph with uninformative features.

40 undirected edges are held out with 40 non-edges; the score is ROC AUC.

    python -m rtx.geom.examples.link_prediction
"""
import numpy as np

import rtx
import rtx.nn as nn

from ..datasets import StochasticBlockModelDataset
from ..nn import GAE, MLP, GCNConv
from ..utils import negative_sampling, to_undirected


def sbm_split(seed=0):
    """(x, training edge_index, test positive pairs, test negative pairs)."""
    data = StochasticBlockModelDataset(block_sizes=[40] * 4, edge_probs=np.full((4, 4), 0.01) + np.eye(4) * 0.25,
                                       num_channels=8, feature_separation=0.0, seed=seed)[0]
    ei = data.edge_index.numpy()
    und = ei[:, ei[0] < ei[1]]
    perm = np.random.default_rng(seed).permutation(und.shape[1])
    test_pos, train_pos = und[:, perm[:40]], und[:, perm[40:]]
    test_neg = negative_sampling(data.edge_index, data.num_nodes, 40)
    return data.x, to_undirected(rtx.tensor(train_pos)), rtx.tensor(test_pos), test_neg


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = GCNConv(8, 32), GCNConv(32, 16)

    def forward(self, x, ei):
        return self.c2(self.c1(x, ei).relu(), ei)


def fit(encoder, split, uses_graph, epochs=150):
    """Train GAE(encoder) on the training edges; ROC AUC on the held-out pairs."""
    x, train_ei, test_pos, test_neg = split
    model = GAE(encoder)
    opt = rtx.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(epochs):
        opt.zero_grad()
        z = model.encode(x, train_ei) if uses_graph else model.encode(x)
        model.recon_loss(z, train_ei).backward()
        opt.step()
    model.eval()
    with rtx.no_grad():
        z = model.encode(x, train_ei) if uses_graph else model.encode(x)
    return float(model.test(z, test_pos, test_neg)[0])


def main():
    rtx.manual_seed(0)
    split = sbm_split(0)
    gae = fit(Encoder(), split, True)
    mlp = fit(MLP([8, 32, 16], norm=None), split, False)
    print(f"ROC AUC on held-out edges: GAE {gae:.3f}, MLP encoder {mlp:.3f}")


if __name__ == "__main__":
    main()
