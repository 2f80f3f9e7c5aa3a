"""TUDataset: graph classification sets in the TU Dortmund text format, read from a local folder.

Nothing is downloaded: put <name>_A.txt, <name>_graph_indicator.txt and the optional <name>_graph_labels.txt,
_node_labels.txt, _node_attributes.txt, _edge_labels.txt, _edge_attributes.txt, _graph_attributes.txt in
<root>/<name>/raw/ (the unpacked zip from chrsmrrs.github.io/datasets)."""
from pathlib import Path

import numpy as np

import rtx

from ..data import Data, InMemoryDataset


def _read(raw, name, suffix, dtype):
    path = raw / f"{name}_{suffix}.txt"
    if not path.exists():
        return None
    a = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    return a


def _one_hot(labels):
    cols = []
    for c in labels.T:
        c = c - c.min()
        cols.append(np.eye(int(c.max()) + 1, dtype=np.float32)[c])
    return np.concatenate(cols, 1)


class TUDataset(InMemoryDataset):
    """x = [node_attributes, one-hot node_labels] (use_node_attr keeps the attributes), edge_attr likewise,
    y = graph label (made 0-based) or graph_attributes."""

    def __init__(self, root, name, transform=None, pre_transform=None, pre_filter=None, use_node_attr=False,
                 use_edge_attr=False):
        raw = Path(root) / name / "raw"
        need = [raw / f"{name}_A.txt", raw / f"{name}_graph_indicator.txt"]
        missing = [str(p) for p in need if not p.exists()]
        if missing:
            raise FileNotFoundError(f"TUDataset: {', '.join(missing)} not found; rtx does not download. Unpack "
                                    f"{name}.zip from https://chrsmrrs.github.io/datasets/ into {raw}")
        edges = _read(raw, name, "A", np.int64) - 1
        batch = _read(raw, name, "graph_indicator", np.int64)[:, 0] - 1
        node_attr = _read(raw, name, "node_attributes", np.float32)
        node_lab = _read(raw, name, "node_labels", np.int64)
        edge_attr = _read(raw, name, "edge_attributes", np.float32)
        edge_lab = _read(raw, name, "edge_labels", np.int64)
        parts = [a for a in (node_attr if use_node_attr else None,
                             _one_hot(node_lab) if node_lab is not None else None) if a is not None]
        x = np.concatenate(parts, 1) if parts else None
        eparts = [a for a in (edge_attr if use_edge_attr else None,
                              _one_hot(edge_lab) if edge_lab is not None else None) if a is not None]
        ea = np.concatenate(eparts, 1) if eparts else None
        gattr = _read(raw, name, "graph_attributes", np.float32)
        glab = _read(raw, name, "graph_labels", np.int64)
        if gattr is not None:
            y = gattr
        elif glab is not None:
            lab = glab[:, 0]
            y = np.unique(lab, return_inverse=True)[1].reshape(-1)  # labels may be -1/1: make them 0..C-1
        else:
            y = None
        counts = np.bincount(batch)
        offs = np.concatenate([[0], np.cumsum(counts)])
        egraph = batch[edges[:, 0]]
        graphs = []
        for g in range(len(counts)):
            sel = np.nonzero(egraph == g)[0]
            d = Data(edge_index=rtx.tensor((edges[sel] - offs[g]).T.copy()))
            if x is not None:
                d.x = rtx.tensor(x[offs[g]:offs[g + 1]])
            else:
                d.num_nodes = int(counts[g])
            if ea is not None:
                d.edge_attr = rtx.tensor(ea[sel])
            if y is not None:
                d.y = rtx.tensor(y[g:g + 1].astype(np.int64 if gattr is None else np.float32))
            graphs.append(d)
        self.name = name
        super().__init__(root, transform, pre_transform, pre_filter, data_list=graphs)
