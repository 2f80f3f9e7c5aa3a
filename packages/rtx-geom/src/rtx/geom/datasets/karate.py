"""KarateClub: Zachary's karate club from networkx, with PyG's four communities and one labelled node each."""
import numpy as np

import rtx

from ..data import Data, InMemoryDataset

# The four communities PyG's KarateClub uses (modularity-based clustering, Brandes et al. 2008).
_COMMUNITIES = [1, 1, 1, 1, 3, 3, 3, 1, 0, 1, 3, 1, 1, 1, 0, 0, 3, 1, 0, 1, 0, 1,
                0, 0, 2, 2, 0, 0, 2, 0, 0, 2, 0, 0]


class KarateClub(InMemoryDataset):
    """One graph: 34 nodes with one-hot features, 156 directed edges (78 friendships both ways),
    y in 4 communities, train_mask marking the first node of each community."""

    def __init__(self, transform=None):
        import networkx as nx
        g = nx.karate_club_graph()
        e = np.array(sorted(g.edges()), dtype=np.int64).T
        ei = np.concatenate([e, e[::-1]], axis=1)
        ei = ei[:, np.lexsort((ei[1], ei[0]))]
        y = np.array(_COMMUNITIES, dtype=np.int64)
        train = np.zeros(34, dtype=bool)
        for c in range(4):
            train[np.nonzero(y == c)[0][0]] = True
        data = Data(x=rtx.eye(34), edge_index=rtx.tensor(ei), y=rtx.tensor(y), train_mask=rtx.tensor(train))
        super().__init__(None, transform, data_list=[data])
