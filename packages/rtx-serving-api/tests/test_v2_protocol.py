"""KServe v2 (Open Inference Protocol) against a real server: answers checked against the eager
rtx model, onnxruntime and NumPy."""
import numpy as np
import onnxruntime as ort


def test_health_and_server_metadata(client, h):
    assert client.get("/v2/health/live").json() == {"live": True}
    assert client.get("/v2/health/ready").json() == {"ready": True}
    meta = client.get("/v2").json()
    assert meta["name"] == "rtx" and "version" in meta


def test_model_metadata_lists_versions_and_signature(client, h):
    m = client.get("/v2/models/digits").json()
    assert m["name"] == "digits" and m["versions"] == ["1.0.0", "2.0.0"]
    assert m["version"] == "1.0.0"  # the production version is the default
    assert m["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 1, 8, 8]}]
    assert m["outputs"] == [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}]
    assert client.get("/v2/models/digits/versions/2.0.0").json()["stage"] == "staging"
    assert client.get("/v2/models/digits/ready").json()["ready"] is True
    assert client.get("/v2/models/digits/versions/2.0.0/ready").status_code == 200
    index = client.post("/v2/repository/index").json()
    assert {(e["name"], e["version"]) for e in index} >= {("digits", "1.0.0"), ("digits", "2.0.0"), ("add", "1.0.0")}


def test_infer_matches_the_eager_model(client, models, h):
    r = client.post("/v2/models/digits/infer", json=h.v2_body("x", h.X, id="req-7"))
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["model_name"] == "digits" and doc["model_version"] == "1.0.0" and doc["id"] == "req-7"
    (out,) = doc["outputs"]
    assert out["name"] == "output" and out["datatype"] == "FP32" and out["shape"] == [5, 10]
    ref = h.eager(models["1.0.0"], h.X)
    np.testing.assert_allclose(np.array(out["data"]).reshape(5, 10), ref, rtol=1e-5, atol=1e-6)


def test_infer_named_version(client, models, h):
    r = client.post("/v2/models/digits/versions/2.0.0/infer", json=h.v2_body("x", h.X[:2]))
    assert r.status_code == 200 and r.json()["model_version"] == "2.0.0"
    got = np.array(r.json()["outputs"][0]["data"]).reshape(2, 10)
    np.testing.assert_allclose(got, h.eager(models["2.0.0"], h.X[:2]), rtol=1e-5, atol=1e-6)


def test_nested_data_is_accepted(client, models, h):
    body = {"inputs": [{"name": "x", "shape": [2, 1, 8, 8], "datatype": "FP32", "data": h.X[:2].tolist()}]}
    r = client.post("/v2/models/digits/infer", json=body)
    assert r.status_code == 200
    got = np.array(r.json()["outputs"][0]["data"]).reshape(2, 10)
    np.testing.assert_allclose(got, h.eager(models["1.0.0"], h.X[:2]), rtol=1e-5, atol=1e-6)


def test_onnx_model_matches_onnxruntime(client, onnx_path, h):
    ref = ort.InferenceSession(onnx_path).run(None, {"image": h.X})[0]
    r = client.post("/v2/models/digits-onnx/infer", json=h.v2_body("image", h.X))
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["name"] == "logits"
    np.testing.assert_allclose(np.array(out["data"]).reshape(5, 10), ref, rtol=1e-5, atol=1e-6)


def test_multi_input_int64_and_output_selection(client, h):
    a = np.arange(6, dtype=np.int64).reshape(2, 3) - 2
    b = np.array([[5, 6, 7], [1 << 40, -3, 0]], dtype=np.int64)
    body = {"inputs": [{"name": "a", "shape": [2, 3], "datatype": "INT64", "data": a.ravel().tolist()},
                       {"name": "b", "shape": [2, 3], "datatype": "INT64", "data": b.ravel().tolist()}]}
    outs = {o["name"]: o for o in client.post("/v2/models/add/infer", json=body).json()["outputs"]}
    assert outs["sum"]["datatype"] == "INT64" and outs["sum"]["data"] == (a + b).ravel().tolist()
    assert outs["prod"]["data"] == (a * b).ravel().tolist()
    only = client.post("/v2/models/add/infer", json={**body, "outputs": [{"name": "prod"}]}).json()["outputs"]
    assert [o["name"] for o in only] == ["prod"]


def test_npy_body_round_trip(client, models, h):
    import io
    buf = io.BytesIO()
    np.save(buf, h.X[:3])
    r = client.post("/v2/models/digits/infer", content=buf.getvalue(), headers={"content-type": "application/x-npy"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-npy"
    out = np.load(io.BytesIO(r.content), allow_pickle=False)
    assert out.dtype == np.float32 and out.shape == (3, 10)
    np.testing.assert_allclose(out, h.eager(models["1.0.0"], h.X[:3]), rtol=1e-5, atol=1e-6)


def test_concurrent_requests_are_batched_and_answered_each_their_own(server, models, h):
    """Requests sent at once go through the DynamicBatcher; each gets the rows it sent."""
    import asyncio

    import httpx

    ref = h.eager(models["1.0.0"], h.X)

    async def main():
        async with httpx.AsyncClient(base_url=server, timeout=30) as c:
            rs = await asyncio.gather(*(c.post("/v2/models/digits/infer", json=h.v2_body("x", h.X[i % 5:i % 5 + 1]))
                                        for i in range(40)))
        return rs

    def batch_histogram():
        lines = httpx.get(server + "/metrics").text.splitlines()
        get = lambda key: sum(float(ln.rsplit(" ", 1)[1]) for ln in lines  # noqa: E731
                              if ln.startswith(f'rtx_batch_size_{key}{{model="digits"}}'))
        return get("count"), get("sum")

    count0, rows0 = batch_histogram()
    for i, r in enumerate(asyncio.run(main())):
        assert r.status_code == 200
        np.testing.assert_allclose(r.json()["outputs"][0]["data"], ref[i % 5], rtol=1e-5, atol=1e-6)
    count1, rows1 = batch_histogram()
    assert rows1 - rows0 == 40 and 1 <= count1 - count0 <= 40  # every row went through the batcher


def test_model_stats(client, h):
    client.post("/v2/models/digits/versions/2.0.0/infer", json=h.v2_body("x", h.X[:3]))
    (st,) = client.get("/v2/models/digits/versions/2.0.0/stats").json()["model_stats"]
    assert st["version"] == "2.0.0" and st["inference_stats"]["count"] >= 1
    assert st["batch_stats"]["rows"] >= 3 and st["batch_stats"]["max_batch_size"] == 32
    assert [s["version"] for s in client.get("/v2/models/digits/stats").json()["model_stats"]] == ["1.0.0", "2.0.0"]
    assert client.get("/v2/models/digits/versions/5.0.0/stats").status_code == 404
