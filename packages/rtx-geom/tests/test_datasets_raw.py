"""Planetoid and TUDataset readers on tiny raw folders (fixtures/raw/) against what PyG 2.8's own readers made of
the same files (fixtures/pyg_datasets.npz, written by fixtures/make_dataset_fixtures.py)."""
import pickle
from pathlib import Path

import numpy as np
import pytest

from rtx.geom.datasets import Planetoid, TUDataset

HERE = Path(__file__).parent / "fixtures"
FIX = np.load(HERE / "pyg_datasets.npz")


def same(got, key):
    want = FIX[key]
    got = got.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (key, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind == "f":  # duplicate edges' attributes are summed: float32 order may differ by an ulp
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=key)
    else:
        np.testing.assert_array_equal(got, want, err_msg=key)


@pytest.mark.parametrize("name", ["Cora", "CiteSeer"])
def test_planetoid_matches_pyg(name):
    d = Planetoid(HERE / "raw", name)[0]
    for k in ("x", "edge_index", "y", "train_mask", "val_mask", "test_mask"):
        same(d[k], f"{name}/{k}")


@pytest.mark.parametrize("name,flags", [("TOY", "00"), ("TOY", "11"), ("TOYREG", "00")])
def test_tudataset_matches_pyg(name, flags):
    ds = TUDataset(HERE / "raw", name, use_node_attr=flags[0] == "1", use_edge_attr=flags[1] == "1")
    assert len(ds) == int(FIX[f"{name}/{flags}/len"])
    for i, d in enumerate(ds):
        p = f"{name}/{flags}/{i}"
        assert d.num_nodes == int(FIX[f"{p}/num_nodes"])
        for k in ("x", "edge_index", "edge_attr", "y"):
            if f"{p}/{k}" in FIX:
                same(d[k], f"{p}/{k}")
            else:
                assert getattr(d, k) is None, (p, k)


class _Boom:
    def __reduce__(self):
        import os
        return (os.system, ("touch pwned",))


# a pickled call of os.system, builtins.eval, and a scipy.sparse function (not a matrix class)
PAYLOADS = [pickle.dumps(_Boom(), protocol=2), b"cbuiltins\neval\n(S'open(\"pwned\", \"w\")'\ntR.",
            b"cscipy.sparse\nload_npz\n(S'pwned'\ntR."]


@pytest.mark.parametrize("blob", PAYLOADS)
def test_planetoid_refuses_a_malicious_pickle(tmp_path, monkeypatch, blob):
    raw = tmp_path / "Cora" / "raw"
    raw.mkdir(parents=True)
    for f in (HERE / "raw" / "Cora" / "raw").iterdir():
        (raw / f.name).write_bytes(f.read_bytes())
    (raw / "ind.cora.graph").write_bytes(blob)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        Planetoid(tmp_path, "Cora")
    assert not (tmp_path / "pwned").exists()


def test_missing_folders_say_where_to_put_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not download"):
        Planetoid(tmp_path, "Cora")
    with pytest.raises(FileNotFoundError, match="does not download"):
        TUDataset(tmp_path, "MUTAG")
