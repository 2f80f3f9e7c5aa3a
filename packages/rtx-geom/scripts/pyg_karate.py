"""PyG 2.8's own GCN on KarateClub's four communities, the settings of rtx.geom.examples.karate (cross-check).

    /work/venvs/pyg/bin/python packages/rtx-geom/scripts/pyg_karate.py
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.datasets import KarateClub
from torch_geometric.nn import GCN
from torch_geometric.utils import degree

torch.set_num_threads(1)
data = KarateClub()[0]
y = data.y.numpy()
deg = degree(data.edge_index[1], data.num_nodes).numpy()
LABELLED = {"first": np.nonzero(data.train_mask.numpy())[0],   # PyG's train_mask
            "hub": np.array([max(np.nonzero(y == c)[0], key=lambda v: (deg[v], -v)) for c in range(4)])}
for how, hidden in (("first", 16), ("hub", 16), ("first", 64), ("hub", 64)):
    mask = np.zeros(data.num_nodes, bool)
    mask[LABELLED[how]] = True
    m = torch.from_numpy(mask)
    accs = []
    for seed in range(10):
        torch.manual_seed(seed)
        model = GCN(34, hidden, num_layers=2, out_channels=4, dropout=0.5)
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        for _ in range(200):
            opt.zero_grad()
            F.cross_entropy(model(data.x, data.edge_index)[m], data.y[m]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(1).numpy()
        accs.append((pred[~mask] == y[~mask]).mean())
    print(f"labelled={how} {sorted(LABELLED[how].tolist())} hidden={hidden}: "
          f"mean {100 * np.mean(accs):.1f} %, min {100 * np.min(accs):.1f} %")
