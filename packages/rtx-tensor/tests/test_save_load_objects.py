"""rtx.save / rtx.load with torch.save / torch.load's semantics for any picklable object
(issue 26): tensor trees stay in rtx's no-pickle safetensors format; a whole module, a NumPy
array or a dict of arbitrary values is pickled into PyTorch's zip; weights_only=True (the
default) refuses unknown globals with PyTorch's message and runs nothing; add_safe_globals /
safe_globals, weights_only=False and the TORCH_FORCE_* variables open it as in PyTorch.
The PyTorch side is checked by running torch.load in the interpreter RTX_TORCH_PYTHON names
(skipped without it)."""
import copy
import io
import json
import os
import pickle
import subprocess
import zipfile
from collections import namedtuple

import numpy as np
import pytest

import rtx
import rtx.nn as nn

rng = np.random.default_rng(5)


class Config:
    """A user class a checkpoint may hold (module level, so pickle can name it)."""

    def __init__(self, depth, weights):
        self.depth, self.weights = depth, weights


Point = namedtuple("Point", "x y")


class Evil:
    """What a malicious checkpoint holds: a reduce that calls os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def saved(obj, **kw):
    buf = io.BytesIO()
    rtx.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def is_zip(buf):
    return buf.getvalue()[:4] == b"PK\x03\x04"


@pytest.fixture(autouse=True)
def _clean_env_and_safe_globals(monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    rtx.serialization.clear_safe_globals()
    yield
    rtx.serialization.clear_safe_globals()


def test_tensor_tree_stays_safetensors_and_loads_weights_only():
    sd = {"w": rtx.randn(2, 3), "p": nn.Parameter(rtx.ones(2)), "meta": {"epoch": 3, "lr": [0.1, (0.9, 0.99)]}}
    buf = saved(sd)
    assert not is_zip(buf) and b'"rtx"' in buf.getvalue()[:4096]  # safetensors header with rtx's structure
    back = rtx.load(buf)  # weights_only=True by default: nothing is unpickled
    np.testing.assert_array_equal(back["w"].numpy(), sd["w"].numpy())
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["meta"] == {"epoch": 3, "lr": [0.1, (0.9, 0.99)]}


def test_whole_module_round_trip():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x = rtx.randn(5, 4)
    buf = saved(model)
    assert is_zip(buf)
    names = zipfile.ZipFile(buf).read("archive/data.pkl")
    assert b"torch._utils\n_rebuild_parameter" in names and b"rtx.nn.modules" in names
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*GLOBAL "
                                                     "rtx.nn.modules.container.Sequential was not an allowed global"):
        rtx.load(io.BytesIO(buf.getvalue()))
    back = rtx.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(back) is nn.Sequential and back is not model
    params = list(back.parameters())
    assert len(params) == 4 and all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    np.testing.assert_allclose(back(x).detach().numpy(), model(x).detach().numpy(), rtol=0, atol=0)
    back(x).sum().backward()  # the loaded module trains
    assert params[0].grad is not None and params[0].grad.shape == (3, 4)


def test_numpy_array_and_arbitrary_values():
    arr = rng.standard_normal((3, 2)).astype(np.float32)
    back = rtx.load(saved(arr), weights_only=False)
    assert type(back) is np.ndarray and back.dtype == np.float32
    np.testing.assert_array_equal(back, arr)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL numpy.*was not an allowed global by default"):
        rtx.load(saved(arr))

    model = nn.Linear(2, 2)
    opt = rtx.optim.Adam(model.parameters(), lr=1e-3)
    model(rtx.randn(3, 2)).sum().backward()
    opt.step()
    ckpt = {"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict(), "arr": arr,
            "config": Config(2, rtx.arange(3.0)), "point": Point(1, rtx.ones(1)), "ids": {1, 2}}
    back = rtx.load(saved(ckpt), weights_only=False)
    assert back["epoch"] == 3 and back["ids"] == {1, 2}
    assert type(back["config"]) is Config and back["config"].weights.tolist() == [0.0, 1.0, 2.0]
    assert type(back["point"]) is Point and back["point"].y.tolist() == [1.0]
    np.testing.assert_array_equal(back["arr"], arr)
    state = back["optimizer"]["state"][0]
    np.testing.assert_array_equal(state["exp_avg"].numpy(), opt.state_dict()["state"][0]["exp_avg"].numpy())
    model2 = nn.Linear(2, 2)
    model2.load_state_dict(back["model"])
    opt2 = rtx.optim.Adam(model2.parameters(), lr=1e-3)
    opt2.load_state_dict(back["optimizer"])  # training resumes from the checkpoint


def test_shared_tensor_and_cycles_survive_pickling():
    t = rtx.arange(4.0)
    loop = {"a": t, "b": t}
    loop["self"] = loop
    back = rtx.load(saved(loop))  # only dicts and tensors: weights_only=True reads it
    assert back["a"] is back["b"] and back["self"] is back
    keyed = {rtx.ones(1): "tensor key"}
    (k, v), = rtx.load(saved(keyed)).items()
    assert isinstance(k, rtx.Tensor) and v == "tensor key"


def test_safe_globals_allow_a_class():
    obj = {"cfg": Config(3, rtx.ones(2))}
    data = saved(obj).getvalue()
    with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[test_save_load_objects.Config\]\)|"
                                                     r"add_safe_globals\(\[.*Config\]\)"):
        rtx.load(io.BytesIO(data))
    with rtx.serialization.safe_globals([Config]):
        assert rtx.serialization.get_safe_globals() == [Config]
        back = rtx.load(io.BytesIO(data))
        assert back["cfg"].depth == 3 and back["cfg"].weights.tolist() == [1.0, 1.0]
    assert rtx.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        rtx.load(io.BytesIO(data))
    rtx.serialization.add_safe_globals([(Config, f"{Config.__module__}.Config")])
    assert rtx.load(io.BytesIO(data))["cfg"].depth == 3
    rtx.serialization.clear_safe_globals()
    assert rtx.serialization.get_safe_globals() == []
    assert rtx.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [f"{Config.__module__}.Config"]
    rtx.serialization.add_safe_globals([(Config, 1)])
    with pytest.raises(TypeError, match="Expected second item in tuple to be str"):
        rtx.load(io.BytesIO(data))


def test_weights_only_refuses_os_system_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    buf = saved({"x": rtx.ones(1), "evil": Evil(marker)})
    # os.system pickles as posix.system: PyTorch's blocklist names the module
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*arbitrary code execution.*"
                                                     "GLOBAL posix.system whose module posix is blocked"):
        rtx.load(buf)
    assert not marker.exists()
    # blocked even when the user allow-lists it, as in PyTorch
    rtx.serialization.add_safe_globals([os.system])
    with pytest.raises(pickle.UnpicklingError, match="is blocked"):
        rtx.load(io.BytesIO(buf.getvalue()))
    assert not marker.exists()
    # an unknown class gets the add_safe_globals hint
    class_pickle = saved(Config(1, 2))
    with pytest.raises(pickle.UnpicklingError, match="(?s)Unsupported global: GLOBAL .*Config was not an allowed "
                                                     "global by default. Please use .*add_safe_globals"):
        rtx.load(class_pickle)
    # and weights_only=False does run it: the opt-in is real
    rtx.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert marker.exists()


def test_environment_switches(monkeypatch, tmp_path):
    marker = tmp_path / "ran"
    data = saved(Evil(marker)).getvalue()
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError):  # an explicit weights_only=True still wins
        rtx.load(io.BytesIO(data), weights_only=True)
    assert not marker.exists()
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        rtx.load(io.BytesIO(data))
    assert marker.exists()
    marker.unlink()
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(RuntimeError, match="Only one of"):
        rtx.load(io.BytesIO(data))
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(pickle.UnpicklingError, match="is blocked"):  # forces weights_only even when False is asked
        rtx.load(io.BytesIO(data), weights_only=False)
    assert not marker.exists()


def test_pickle_module_argument():
    data = saved(Config(4, None)).getvalue()
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        rtx.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    assert rtx.load(io.BytesIO(data), pickle_module=pickle).depth == 4  # a pickle_module means weights_only=False
    with pytest.warns(UserWarning, match="pickle_load_args only works"):
        rtx.load(saved({"a": rtx.ones(1)}), encoding="latin1")


def test_plain_pickle_and_deepcopy_of_tensors_and_parameters():
    p = nn.Parameter(rtx.randn(3))
    t = rtx.randn(2, 2)
    for back in (pickle.loads(pickle.dumps({"p": p, "t": t})), copy.deepcopy({"p": p, "t": t})):
        assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
        np.testing.assert_array_equal(back["p"].detach().numpy(), p.detach().numpy())
        np.testing.assert_array_equal(back["t"].numpy(), t.numpy())
        back["t"].add_(1)
        assert not np.array_equal(back["t"].numpy(), t.numpy())  # a copy, not a view


_TORCH_READ = r"""
import json, sys
import numpy as np
import torch
d = torch.load(sys.argv[1], weights_only=False)
opt = d["optimizer"]
print(json.dumps({
    "epoch": d["epoch"], "arr": d["arr"].tolist(), "arr_type": type(d["arr"]).__name__,
    "t": [str(d["t"].dtype), d["t"].tolist()], "p": [type(d["p"]).__name__, d["p"].requires_grad, d["p"].tolist()],
    "exp_avg": opt["state"][0]["exp_avg"].tolist(), "step": float(opt["state"][0]["step"]),
    "groups": [[g["lr"], list(g["betas"]), g["params"]] for g in opt["param_groups"]],
    "dtype": str(d["dtype"]), "tuple": list(d["tuple"]),
}))
"""


def _torch_python():
    exe = os.environ.get("RTX_TORCH_PYTHON")
    return exe if exe and os.path.exists(exe) else None


@pytest.mark.skipif(_torch_python() is None, reason="needs RTX_TORCH_PYTHON=<python with torch>")
def test_real_torch_load_reads_a_pickled_checkpoint(tmp_path):
    model = nn.Linear(2, 2)
    opt = rtx.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.95))
    model(rtx.randn(3, 2)).sum().backward()
    opt.step()
    arr = np.arange(6, dtype=np.int64).reshape(2, 3)
    ckpt = {"epoch": 3, "arr": arr, "t": rtx.tensor([1.5, -2.0]), "p": nn.Parameter(rtx.tensor([0.25])),
            "optimizer": opt.state_dict(), "dtype": rtx.bfloat16, "tuple": (1, "a")}
    path = tmp_path / "ckpt.pt"
    rtx.save(ckpt, path)
    res = subprocess.run([_torch_python(), "-c", _TORCH_READ, str(path)], capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["epoch"] == 3 and got["arr"] == arr.tolist() and got["arr_type"] == "ndarray"
    assert got["t"] == ["torch.float32", [1.5, -2.0]]
    assert got["p"] == ["Parameter", True, [0.25]]
    sd = opt.state_dict()
    np.testing.assert_array_equal(np.array(got["exp_avg"], dtype=np.float32), sd["state"][0]["exp_avg"].numpy())
    assert got["step"] == float(sd["state"][0]["step"])
    assert got["groups"] == [[1e-3, [0.8, 0.95], [0, 1]]]
    assert got["dtype"] == "torch.bfloat16" and got["tuple"] == [1, "a"]


def test_trusted_load_of_a_class_that_is_not_importable():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02cno_such_module_here\nThing\nq\x00)\x81q\x01.")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="needs no_such_module_here.Thing, which cannot be imported"):
        rtx.load(buf, weights_only=False)
