"""rtx.save(..., format="torch"): PyTorch's zip checkpoint, written without torch.

Three checks: the file's layout and pickle stream (always), a round trip through rtx.load's
torch reader (always), and torch.load(weights_only=True) itself, either in this interpreter
when torch imports, or in the interpreter named by the environment variable RTX_TORCH_PYTHON
(e.g. RTX_TORCH_PYTHON=/work/torch-venv/bin/python, a side venv with PyTorch); skipped when
neither is there. PyTorch is not a test dependency.
"""
import io
import json
import os
import pickletools
import subprocess
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import rtx


def _payload():
    g = np.random.default_rng(0)
    return {
        "model": OrderedDict([("fc.weight", rtx.tensor(g.standard_normal((3, 4)).astype(np.float32))),
                              ("fc.bias", rtx.tensor(g.standard_normal(3).astype(np.float32))),
                              ("bn.num_batches_tracked", rtx.tensor(7))]),
        "step": 12, "lr": 0.125, "name": "run-1", "flags": [True, None],
        "f64": rtx.tensor(g.standard_normal((2, 2))),
        "i32": rtx.tensor([1, -2, 3], dtype=rtx.int32),
        "u8": rtx.tensor([0, 255], dtype=rtx.uint8),
        "mask": rtx.tensor([True, False, True]),
        "half": rtx.tensor([0.5, -2.0], dtype=rtx.float16),
        "bf16": rtx.tensor([1.5, -3.0], dtype=rtx.bfloat16),
        "cplx": rtx.tensor([1 + 2j, -0.5j], dtype=rtx.complex64),
        "transposed": rtx.arange(6).reshape(2, 3).T,   # a non-contiguous view: saved contiguous
        "scalar": rtx.tensor(2.5),
        "empty": rtx.zeros(0, 3),
        "nested": (rtx.ones(2), {"deep": rtx.full((1,), 4.0)}),
    }


def _write(obj):
    buf = io.BytesIO()
    rtx.save(obj, buf, format="torch")
    return buf.getvalue()


def test_layout_and_pickle_stream():
    data = _write(_payload())
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    assert names[0] == "archive/data.pkl" and "archive/byteorder" in names and "archive/version" in names
    assert z.read("archive/byteorder") == b"little" and z.read("archive/version") == b"3\n"
    assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    for info in z.infolist():  # data aligned to 64 bytes, as torch's mmap loading needs
        if info.filename.startswith("archive/data/"):
            extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
            assert (info.header_offset + 30 + len(info.filename) + extra_len) % 64 == 0, info.filename
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read("archive/data.pkl"))]
    assert ops[0] == ("PROTO", 2)
    globals_ = {arg for name, arg in ops if name == "GLOBAL"}
    assert {"torch._utils _rebuild_tensor_v2", "torch FloatStorage", "torch LongStorage", "torch BoolStorage",
            "torch BFloat16Storage", "collections OrderedDict"} <= globals_
    assert not any(g.startswith("rtx") for g in globals_)
    assert sum(1 for name, _ in ops if name == "BINPERSID") == 15  # one per stored tensor


def test_round_trip_through_rtx_load():
    obj = _payload()
    back = rtx.load(io.BytesIO(_write(obj)))
    assert isinstance(back["model"], OrderedDict) and list(back["model"]) == list(obj["model"])
    assert back["step"] == 12 and back["lr"] == 0.125 and back["name"] == "run-1" and back["flags"] == [True, None]
    for key in ("f64", "i32", "u8", "mask", "half", "cplx", "transposed", "scalar", "empty"):
        assert back[key].dtype == obj[key].dtype and back[key].shape == obj[key].shape, key
        np.testing.assert_array_equal(back[key].numpy(), obj[key].numpy())
    np.testing.assert_array_equal(back["bf16"].float().numpy(), [1.5, -3.0])
    np.testing.assert_array_equal(back["nested"][1]["deep"].numpy(), [4.0])


def test_parameter_and_shared_tensor(tmp_path):
    import rtx.nn as nn
    p = nn.Parameter(rtx.ones(3))
    t = rtx.arange(4.0)
    path = tmp_path / "ckpt.pt"
    rtx.save({"p": p, "a": t, "b": t}, path, format="torch")
    z = zipfile.ZipFile(path)
    assert sorted(n for n in z.namelist() if n.startswith("archive/data/")) == ["archive/data/0", "archive/data/1"]
    ops = {arg for op, arg, _ in pickletools.genops(z.read("archive/data.pkl")) if op.name == "GLOBAL"}
    assert "torch._utils _rebuild_parameter" in ops
    back = rtx.load(path)
    assert back["a"] is back["b"] and back["p"].requires_grad


def test_bad_format_and_dtype():
    with pytest.raises(ValueError, match="format must be"):
        rtx.save({}, io.BytesIO(), format="pickle")
    buf = io.BytesIO()  # dtypes are written as torch's globals (torch.float32), as torch.save does
    rtx.save({"dtype": rtx.float32}, buf, format="torch")
    assert rtx.load(io.BytesIO(buf.getvalue()))["dtype"] is rtx.float32
    assert b"torch\nfloat32\n" in zipfile.ZipFile(buf).read("archive/data.pkl")
    with pytest.raises(TypeError, match="binary file object"):
        rtx.save({}, 3, format="torch")


_TORCH_CHECK = r"""
import json, sys
import torch
d = torch.load(sys.argv[1], weights_only=True)
m = torch.load(sys.argv[1], weights_only=True, mmap=True)
out = {}
for k, v in d.items():
    if isinstance(v, torch.Tensor):
        out[k] = [str(v.dtype), list(v.shape), v.to(torch.float64).tolist() if not v.is_complex() else
                  [[z.real, z.imag] for z in v.tolist()], type(v).__name__, bool(v.requires_grad)]
out["model"] = {k: [str(v.dtype), v.tolist()] for k, v in d["model"].items()}
out["model_type"] = type(d["model"]).__name__
out["plain"] = [d["step"], d["lr"], d["name"], d["flags"]]
out["nested"] = [d["nested"][0].tolist(), d["nested"][1]["deep"].tolist()]
out["mmap_equal"] = all(torch.equal(m[k], v) for k, v in d.items() if isinstance(v, torch.Tensor))
print(json.dumps(out))
"""


def _torch_python():
    try:
        import sys

        import torch  # noqa: F401
        return sys.executable
    except ImportError:
        exe = os.environ.get("RTX_TORCH_PYTHON")
        return exe if exe and os.path.exists(exe) else None


@pytest.mark.skipif(_torch_python() is None, reason="needs PyTorch here or RTX_TORCH_PYTHON=<python with torch>")
def test_torch_load_weights_only_reads_it(tmp_path):
    import rtx.nn as nn
    obj = _payload()
    obj["param"] = nn.Parameter(rtx.tensor([1.0, 2.0]))
    path = tmp_path / "rtx_saved.pt"
    rtx.save(obj, path, format="torch")
    res = subprocess.run([_torch_python(), "-c", _TORCH_CHECK, str(path)], capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["model_type"] == "OrderedDict" and got["mmap_equal"]
    assert got["plain"] == [12, 0.125, "run-1", [True, None]]
    names = {"float32": "torch.float32", "float64": "torch.float64", "int32": "torch.int32", "uint8": "torch.uint8",
             "bool": "torch.bool", "float16": "torch.float16", "bfloat16": "torch.bfloat16",
             "complex64": "torch.complex64", "int64": "torch.int64"}
    for key in ("f64", "i32", "u8", "mask", "half", "bf16", "transposed", "scalar", "empty"):
        dtype, shape, values, _, _ = got[key]
        t = obj[key]
        assert dtype == names[t.dtype.name] and shape == list(t.shape), key
        np.testing.assert_array_equal(np.asarray(values, dtype=np.float64).reshape(shape),
                                      t.float().numpy().astype(np.float64) if t.dtype.name == "bfloat16"
                                      else t.numpy().astype(np.float64))
    np.testing.assert_allclose(np.array(got["cplx"][2]), [[1, 2], [0, -0.5]])
    assert got["param"][3] == "Parameter" and got["param"][4] is True
    assert got["model"]["bn.num_batches_tracked"] == ["torch.int64", 7]
    np.testing.assert_array_equal(np.array(got["model"]["fc.weight"][1], dtype=np.float32),
                                  obj["model"]["fc.weight"].numpy())
    assert got["nested"] == [[1.0, 1.0], [4.0]]
