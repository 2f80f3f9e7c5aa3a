"""from_networkx / to_networkx."""
import numpy as np

import rtx


def to_networkx(data, node_attrs=None, edge_attrs=None, graph_attrs=None, to_undirected=False,
                to_multi=False, remove_self_loops=False):
    """A networkx (Multi)(Di)Graph of data's nodes 0..N-1 and edges, with the named attributes as lists."""
    import networkx as nx
    if to_undirected:
        g = nx.MultiGraph() if to_multi else nx.Graph()
    else:
        g = nx.MultiDiGraph() if to_multi else nx.DiGraph()
    g.add_nodes_from(range(data.num_nodes))
    for key in node_attrs or []:
        vals = data[key].cpu().numpy()
        for i in range(data.num_nodes):
            g.nodes[i][key] = vals[i].tolist()
    for key in graph_attrs or []:
        v = data[key]
        g.graph[key] = v.cpu().numpy().tolist() if isinstance(v, rtx.Tensor) else v
    ei = data.edge_index.cpu().numpy()
    eattr = {key: data[key].cpu().numpy() for key in edge_attrs or []}
    upper = to_undirected == "upper"
    lower = to_undirected == "lower"
    for k, (u, v) in enumerate(ei.T.tolist()):
        if to_undirected and ((upper and v < u) or (lower and v > u)):
            continue
        if to_undirected is True and v < u and not to_multi:
            # networkx keeps one edge per pair: the (u < v) copy's attributes win, as in PyG.
            if g.has_edge(u, v):
                continue
        if remove_self_loops and u == v:
            continue
        g.add_edge(u, v, **{key: val[k].tolist() for key, val in eattr.items()})
    return g


def from_networkx(G, group_node_attrs=None, group_edge_attrs=None):
    """A Data with edge_index from G's edges (both directions for an undirected G) and every node,
    edge and graph attribute stacked into a tensor (group_*_attrs concatenates the named ones into x /
    edge_attr)."""
    import networkx as nx

    from ..data import Data
    g = G.to_directed() if not nx.is_directed(G) else G
    mapping = {node: i for i, node in enumerate(g.nodes())}
    edges = list(g.edges(data=True))
    ei = np.array([[mapping[u] for u, _, _ in edges], [mapping[v] for _, v, _ in edges]], dtype=np.int64)
    ei = ei.reshape(2, -1)
    data = {}
    node_keys = set().union(*(d.keys() for _, d in g.nodes(data=True))) if g.number_of_nodes() else set()
    for key in sorted(node_keys):
        data[key] = [d[key] for _, d in g.nodes(data=True)]
    edge_keys = set().union(*(d.keys() for *_, d in edges)) if edges else set()
    for key in sorted(edge_keys):
        data["edge_" + key if key in node_keys else key] = [d[key] for *_, d in edges]
    for key, v in G.graph.items():
        data["graph_" + key if key in data else key] = v
    out = {}
    for key, v in data.items():
        try:
            out[key] = rtx.tensor(np.asarray(v))
        except (TypeError, ValueError):
            out[key] = v
    out["edge_index"] = rtx.tensor(ei)
    d = Data(**out)
    d.num_nodes = g.number_of_nodes()

    def group(keys, name):
        cols = []
        for k in keys:
            t = d[k].to(rtx.get_default_dtype())
            cols.append(t.view(-1, 1) if t.dim() <= 1 else t)
            del d[k]
        d[name] = rtx.cat(cols, 1)
    if group_node_attrs == "all":
        group_node_attrs = sorted(node_keys)
    if group_edge_attrs == "all":
        group_edge_attrs = sorted(edge_keys)
    if group_node_attrs:
        group(group_node_attrs, "x")
    if group_edge_attrs:
        group(group_edge_attrs, "edge_attr")
    return d
