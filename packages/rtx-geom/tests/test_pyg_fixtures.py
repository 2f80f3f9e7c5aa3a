"""PyG 2.8's own layers (fixtures from fixtures/make_pyg_fixtures.py) loaded into rtx.geom: same state_dict keys
and shapes, same outputs within 1e-5."""
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.nn as tnn
from rtx.geom import nn as gnn

FIX = np.load(Path(__file__).parent / "fixtures" / "pyg_layers.npz")
CASES = {}
for line in (Path(__file__).parent / "fixtures" / "pyg_layers.txt").read_text().splitlines():
    if ": " in line and not line.startswith("made with"):
        name, rest = line.split(": ", 1)
        ctor, call = rest.rsplit(" (", 1)
        CASES[name] = (ctor, call.rstrip(")"))


def mlp(i, o):
    return tnn.Sequential(tnn.Linear(i, o), tnn.ReLU(), tnn.Linear(o, o))


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_pyg(name):
    ctor, call = CASES[name]
    env = {k: getattr(gnn, k) for k in dir(gnn) if not k.startswith("_")}
    env["MLP"] = mlp
    m = eval(ctor, env).to(rtx.float64)
    m.eval()
    prefix = f"{name}/sd/"
    sd = {k[len(prefix):]: rtx.tensor(FIX[k]) for k in FIX.files if k.startswith(prefix)}
    assert sorted(sd) == sorted(m.state_dict()), "state_dict keys differ from PyG's"
    m.load_state_dict(sd)
    args = {"x": rtx.tensor(FIX["x"]), "ei": rtx.tensor(FIX["edge_index"]), "ea": rtx.tensor(FIX["edge_attr"]),
            "ew": rtx.tensor(FIX["edge_weight"]), "batch": rtx.tensor(FIX["batch"])}
    with rtx.no_grad():
        y = m(*[args[a.strip()] for a in call.split(",")])
    np.testing.assert_allclose(y.numpy(), FIX[f"{name}/out"], rtol=1e-5, atol=1e-5)
