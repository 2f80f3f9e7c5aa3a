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
    return np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)


def _one_hot(labels):
    """One block of one-hot columns per label column, each made 0-based (PyG's one_hot after subtracting the min)."""
    labels = labels - labels.min(0)
    return np.concatenate([np.eye(int(c.max()) + 1, dtype=np.float32)[c] for c in labels.T], 1)


def _features(attr, labels, use_attr):
    """[attributes, one-hot labels], without the attribute columns unless use_attr; None when the files
    have neither (PyG keeps an [N, 0] x when only attributes exist and use_attr is False: so does this)."""
    parts = [a for a in (attr, _one_hot(labels) if labels is not None else None) if a is not None]
    if not parts:
        return None
    x = np.concatenate(parts, 1).astype(np.float32)
    return x if use_attr or attr is None else x[:, attr.shape[1]:]


def _coalesce(edges, attr, n):
    """Drop self-loops, sort by (source, target) and merge duplicates, summing their attributes (as PyG's
    read_tu_data does with remove_self_loops + coalesce)."""
    keep = edges[:, 0] != edges[:, 1]
    edges = edges[keep]
    key, inv = np.unique(edges[:, 0] * n + edges[:, 1], return_inverse=True)
    out = np.stack([key // n, key % n], 1)
    if attr is None:
        return out, None
    summed = np.zeros((len(key), attr.shape[1]), np.float32)
    np.add.at(summed, inv.reshape(-1), attr[keep])
    return out, summed


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
        x = _features(_read(raw, name, "node_attributes", np.float32), _read(raw, name, "node_labels", np.int64),
                      use_node_attr)
        ea = _features(_read(raw, name, "edge_attributes", np.float32), _read(raw, name, "edge_labels", np.int64),
                       use_edge_attr)
        edges, ea = _coalesce(edges, ea, len(batch))
        gattr = _read(raw, name, "graph_attributes", np.float32)
        glab = _read(raw, name, "graph_labels", np.int64)
        if gattr is not None:  # regression targets: [G] for one attribute, [G, D] for several
            y = gattr[:, 0] if gattr.shape[1] == 1 else gattr
        elif glab is not None:
            y = np.unique(glab[:, 0], return_inverse=True)[1].reshape(-1)  # labels may be -1/1: make them 0..C-1
        else:
            y = None
        counts = np.bincount(batch)
        offs = np.concatenate([[0], np.cumsum(counts)])
        egraph = batch[edges[:, 0]]
        graphs = []
        for g in range(len(counts)):
            sel = np.nonzero(egraph == g)[0]
            d = Data(edge_index=rtx.tensor((edges[sel] - offs[g]).T.reshape(2, -1).copy()))
            if x is not None:
                d.x = rtx.tensor(x[offs[g]:offs[g + 1]])
            else:
                d.num_nodes = int(counts[g])
            if ea is not None:
                d.edge_attr = rtx.tensor(ea[sel])
            if y is not None:
                d.y = rtx.tensor(y[g:g + 1])
            graphs.append(d)
        self.name = name
        super().__init__(root, transform, pre_transform, pre_filter, data_list=graphs)
