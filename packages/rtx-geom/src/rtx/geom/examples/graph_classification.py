"""Graph classification: GIN against a feature-only MLP (same sum pooling) on graphs whose class is their density.

Every node has the same features, so only the structure tells the classes apart: GIN should reach ~100 %,
the MLP chance level.

    python -m rtx.geom.examples.graph_classification
"""
import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F

from ..datasets import FakeDataset
from ..loader import DataLoader
from ..nn import GIN, MLP, global_add_pool


def make_graphs(seed=0, n=120):
    """n random graphs of ~12 nodes; class 1 has average degree 6, class 0 degree 2; features all ones."""
    rs = np.random.default_rng(seed)
    graphs = []
    for k in range(n):
        y = k % 2
        d = FakeDataset(1, avg_num_nodes=12, avg_degree=2 + 4 * y, num_channels=0, num_classes=0,
                        seed=int(rs.integers(1 << 30)))[0]
        d.x = rtx.ones(d.num_nodes, 4)
        d.y = rtx.tensor([y])
        graphs.append(d)
    return graphs


class GraphGIN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gnn = GIN(4, 16, 2)
        self.head = nn.Linear(16, 2)

    def forward(self, b):
        return self.head(global_add_pool(self.gnn(b.x, b.edge_index), b.batch))


class GraphMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP([4, 16, 16], norm=None)
        self.head = nn.Linear(16, 2)

    def forward(self, b):
        return self.head(global_add_pool(self.mlp(b.x), b.batch))


def train_graph(model, graphs, epochs=15):
    """Train on the first 80 graphs (batches of 16), return accuracy on the other 40."""
    opt = rtx.optim.Adam(model.parameters(), lr=0.01)
    train, test = graphs[:80], graphs[80:]
    for _ in range(epochs):
        for b in DataLoader(train, batch_size=16, shuffle=True):
            opt.zero_grad()
            F.cross_entropy(model(b), b.y).backward()
            opt.step()
    model.eval()
    b = next(iter(DataLoader(test, batch_size=len(test))))
    return float((model(b).argmax(1).numpy() == b.y.numpy()).mean())


def main():
    rtx.manual_seed(0)
    graphs = make_graphs(0)
    gin = train_graph(GraphGIN(), graphs)
    mlp = train_graph(GraphMLP(), graphs)
    print(f"test accuracy: GIN {100 * gin:.1f} %, feature-only MLP {100 * mlp:.1f} %")


if __name__ == "__main__":
    main()
