"""--backend: ONNX artifacts on onnxruntime or rtx.inference; both agree within 1e-5, and the model
metadata says which one serves."""
import httpx
import numpy as np
import onnxruntime as ort
import pytest

from rtx.serving_api import ServeConfig, create_app
from rtx.serving_api import backends as backends_mod
from rtx.serving_api.testing import ServerThread


def infer(url, h, model="digits-onnx", name="image"):
    r = httpx.post(f"{url}/v2/models/{model}/infer", json=h.v2_body(name, h.X), timeout=30)
    assert r.status_code == 200, r.text
    return np.reshape(r.json()["outputs"][0]["data"], (5, 10))


def test_both_backends_agree_and_report_themselves(registry, onnx_path, h):
    ref = ort.InferenceSession(onnx_path).run(None, {"image": h.X})[0]
    got = {}
    for backend in ("rtx", "onnxruntime", "auto"):
        with ServerThread(create_app(ServeConfig(backend=backend), registry=registry)) as url:
            meta = httpx.get(url + "/v2/models/digits-onnx", timeout=30).json()
            assert meta["backend"] == ("onnxruntime" if backend == "auto" else backend)  # auto: onnxruntime is here
            assert httpx.get(url + "/v2/models/digits", timeout=30).json()["backend"] == "rtx"  # rtx modules: rtx
            got[backend] = infer(url, h)
            add = httpx.post(url + "/v2/models/add/infer", timeout=30, json={"inputs": [
                {"name": "a", "shape": [1, 3], "datatype": "INT64", "data": [1, 2, 3]},
                {"name": "b", "shape": [1, 3], "datatype": "INT64", "data": [4, 5, 2**40]}]}).json()
            assert add["outputs"][0]["data"] == [5, 7, 3 + 2**40] and add["outputs"][1]["data"] == [4, 10, 3 * 2**40]
            bad = httpx.post(url + "/v2/models/digits-onnx/infer", json=h.v2_body("image", h.X[:, :, :4]), timeout=30)
            assert bad.status_code == 400
    np.testing.assert_allclose(got["rtx"], got["onnxruntime"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["onnxruntime"], ref, rtol=1e-6, atol=1e-6)


def test_backend_choice_and_errors(monkeypatch, registry):
    assert backends_mod.choose("rtx") == "rtx"
    with pytest.raises(ValueError, match="auto, onnxruntime, rtx"):
        ServeConfig(backend="tpu")
    monkeypatch.setattr(backends_mod, "onnxruntime_available", lambda: False)
    assert backends_mod.choose("auto") == "rtx"
    with pytest.raises(ValueError, match=r"rtx-serving-api\[onnxruntime\]"):
        create_app(ServeConfig(backend="onnxruntime"), registry=registry)
