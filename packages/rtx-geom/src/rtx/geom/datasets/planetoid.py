"""Planetoid (Cora, CiteSeer, PubMed) from the raw files of Kipf's planetoid release, read from a local folder.

Nothing is downloaded: put ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index} in <root>/<Name>/raw/.
The x/tx/allx files are pickled SciPy sparse matrices and graph a pickled dict; they are read with an
unpickler that admits only NumPy/SciPy array classes and builtins, so a file cannot run code.
"""
import collections
import pickle
from pathlib import Path

import numpy as np

import rtx

from ..data import Data, InMemoryDataset

# What the planetoid pickles hold: NumPy arrays (rebuilt by ndarray's own reduce function), SciPy sparse
# matrices, a defaultdict(list) of adjacency lists. The pickles name NumPy's and SciPy's classes by paths of
# their day (numpy.core.multiarray, scipy.sparse.csr): those resolve to the same objects, taken from the public
# namespaces, so no deprecated module is imported.
_NUMPY = {"ndarray": np.ndarray, "dtype": np.dtype, "_reconstruct": np.ndarray(0).__reduce__()[0],
          "scalar": np.float64(0).__reduce__()[0]}
_BUILTINS = {("collections", "defaultdict"): collections.defaultdict, ("builtins", "list"): list,
             ("builtins", "dict"): dict, ("builtins", "set"): set, ("builtins", "int"): int}


class _SafeUnpickler(pickle.Unpickler):
    """Admits only the classes above and SciPy sparse matrix classes: a crafted file cannot call anything else
    (os.system, eval, ...), the way pickle's documentation recommends restricting find_class."""

    def find_class(self, module, name):
        module = "builtins" if module == "__builtin__" else module  # Python 2's name (overriding skips the mapping)
        if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray") and name in _NUMPY:
            return _NUMPY[name]
        if (module, name) in _BUILTINS:
            return _BUILTINS[(module, name)]
        if module == "scipy.sparse" or module.startswith("scipy.sparse."):
            import scipy.sparse as sp
            cls = getattr(sp, name, None)
            if isinstance(cls, type) and issubclass(cls, (sp.spmatrix, sp.sparray)):
                return cls
        raise pickle.UnpicklingError(f"Planetoid: refusing to load {module}.{name} from a raw file (only NumPy "
                                     f"arrays, SciPy sparse matrices and builtin containers are allowed)")


def _read(path):
    with open(path, "rb") as f:
        return _SafeUnpickler(f, encoding="latin1").load()


def _dense(m):
    return np.asarray(m.todense() if hasattr(m, "todense") else m, dtype=np.float32)


class Planetoid(InMemoryDataset):
    NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}

    def __init__(self, root, name, split="public", transform=None, pre_transform=None):
        key = name.lower()
        if key not in self.NAMES:
            raise ValueError(f"Planetoid: name must be one of Cora, CiteSeer, PubMed, got {name!r}")
        if split != "public":
            raise ValueError(f"Planetoid: only split='public' is supported, got {split!r}")
        self.name = self.NAMES[key]
        raw = Path(root) / self.name / "raw"
        files = [f"ind.{key}.{s}" for s in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")]
        missing = [f for f in files if not (raw / f).exists()]
        if missing:
            raise FileNotFoundError(f"Planetoid: {', '.join(missing)} not found in {raw}; rtx does not download. "
                                    f"Put the planetoid raw files (github.com/kimiyoung/planetoid, data/) there.")
        x, tx, allx, y, ty, ally, graph = (_read(raw / f) for f in files[:7])
        test_index = np.loadtxt(raw / files[7], dtype=np.int64)
        sorted_test = np.sort(test_index)
        x, tx, allx = _dense(x), _dense(tx), _dense(allx)
        y, ty, ally = (np.asarray(a) for a in (y, ty, ally))
        if key == "citeseer":
            # CiteSeer has isolated test nodes missing from tx/ty: zero rows pad them, as PyG does.
            lo = test_index.min()
            tx_ext = np.zeros((int(test_index.max() - lo) + 1, tx.shape[1]), np.float32)
            ty_ext = np.zeros((tx_ext.shape[0], ty.shape[1]), ty.dtype)
            tx_ext[sorted_test - lo] = tx
            ty_ext[sorted_test - lo] = ty
            tx, ty = tx_ext, ty_ext
        fx = np.concatenate([allx, tx])
        fy = np.concatenate([ally, ty]).argmax(1)
        # The tx/ty rows follow test.index's order; PyG moves them to the sorted positions this way.
        fx[test_index] = fx[sorted_test]
        fy[test_index] = fy[sorted_test]
        n = fx.shape[0]
        rows = np.array([k for k, v in graph.items() for _ in v], dtype=np.int64)
        cols = np.array([c for v in graph.values() for c in v], dtype=np.int64)
        keep = rows != cols
        # PyG removes self-loops and duplicates and sorts by target (coalesce with sort_by_row=False).
        k_ = np.unique(cols[keep] * n + rows[keep])
        ei = np.stack([k_ % n, k_ // n])
        train = np.zeros(n, bool)
        train[: len(y)] = True
        val = np.zeros(n, bool)
        val[len(y): len(y) + 500] = True
        test = np.zeros(n, bool)
        test[sorted_test] = True
        data = Data(x=rtx.tensor(fx), edge_index=rtx.tensor(ei), y=rtx.tensor(fy.astype(np.int64)),
                    train_mask=rtx.tensor(train), val_mask=rtx.tensor(val), test_mask=rtx.tensor(test))
        super().__init__(root, transform, pre_transform, data_list=[data])
