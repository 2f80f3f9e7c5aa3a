"""TF-Serving / KServe v1 :predict (row and columnar formats, .npy bodies) and model status."""
import io

import numpy as np


def test_predict_row_format(client, models, h):
    r = client.post("/v1/models/digits:predict", json={"instances": h.X[:3].tolist()})
    assert r.status_code == 200 and r.headers["x-model-version"] == "1.0.0"
    np.testing.assert_allclose(r.json()["predictions"], h.eager(models["1.0.0"], h.X[:3]), rtol=1e-5, atol=1e-6)


def test_predict_named_version_and_columnar_format(client, models, h):
    r = client.post("/v1/models/digits/versions/2.0.0:predict", json={"inputs": h.X[:2].tolist()})
    assert r.status_code == 200
    np.testing.assert_allclose(r.json()["outputs"], h.eager(models["2.0.0"], h.X[:2]), rtol=1e-5, atol=1e-6)


def test_predict_multi_input_rows_are_objects(client):
    a, b = np.array([[1, 2, 3], [4, 5, 6]]), np.array([[10, 20, 30], [-1, -2, -3]])
    rows = [{"a": a[i].tolist(), "b": b[i].tolist()} for i in range(2)]
    preds = client.post("/v1/models/add:predict", json={"instances": rows}).json()["predictions"]
    assert preds == [{"sum": (a + b)[i].tolist(), "prod": (a * b)[i].tolist()} for i in range(2)]
    cols = client.post("/v1/models/add:predict", json={"inputs": {"a": a.tolist(), "b": b.tolist()}}).json()
    assert cols == {"outputs": {"sum": (a + b).tolist(), "prod": (a * b).tolist()}}


def test_predict_npy(client, models, h):
    buf = io.BytesIO()
    np.save(buf, h.X)
    r = client.post("/v1/models/digits:predict", content=buf.getvalue(), headers={"content-type": "application/x-npy"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-npy"
    np.testing.assert_allclose(np.load(io.BytesIO(r.content)), h.eager(models["1.0.0"], h.X), rtol=1e-5, atol=1e-6)


def test_model_status(client):
    st = client.get("/v1/models/digits").json()["model_version_status"]
    assert [s["version"] for s in st] == ["1.0.0", "2.0.0"] and {s["state"] for s in st} == {"AVAILABLE"}
    assert client.get("/v1/models/digits/versions/2.0.0").json()["model_version_status"][0]["version"] == "2.0.0"
    assert client.get("/v1/models/digits/versions/7.0.0").status_code == 404


def test_curl_default_content_type_is_read_as_json(client, models, h):
    """`curl -d '{"instances": ...}'` (TF-Serving's documented example) sends a form content type."""
    import json
    r = client.post("/v1/models/digits:predict", content=json.dumps({"instances": h.X[:1].tolist()}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 200
    np.testing.assert_allclose(r.json()["predictions"], h.eager(models["1.0.0"], h.X[:1]), rtol=1e-5, atol=1e-6)
