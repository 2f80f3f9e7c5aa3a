"""Every client mistake gets a 4xx JSON {"error": ...} naming what was wrong: never a 500, never a
crash. The server keeps answering correctly afterwards."""
import io
import json

import numpy as np
import pytest

IMG = np.zeros((1, 1, 8, 8), np.float32)


def v2(shape=(1, 1, 8, 8), datatype="FP32", data=None, name="x"):
    data = np.zeros(shape).ravel().tolist() if data is None else data
    return {"inputs": [{"name": name, "shape": list(shape), "datatype": datatype, "data": data}]}


def npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


ADD_A = {"name": "a", "shape": [1, 3], "datatype": "INT64", "data": [1, 2, 3]}
INFER = "/v2/models/digits/infer"
NPY = {"content-type": "application/x-npy"}

CASES = {
    # name: (method, path, request kwargs, status, fragments the message must contain)
    "wrong shape": ("POST", INFER, dict(json=v2((1, 1, 8, 9))), 400, ["'x'", "[-1, 1, 8, 8]", "[1, 1, 8, 9]"]),
    "wrong rank": ("POST", INFER, dict(json=v2((64,))), 400, ["'x'", "[-1, 1, 8, 8]", "[64]"]),
    "empty batch": ("POST", INFER, dict(json=v2((0, 1, 8, 8), data=[])), 400, ["'x'", "empty", "[0, 1, 8, 8]"]),
    "too few values": ("POST", INFER, dict(json=v2(data=[0.0] * 63)), 400, ["'x'", "64 values", "63"]),
    "wrong datatype": ("POST", INFER, dict(json=v2(datatype="INT32")), 400, ["'x'", "FP32", "INT32"]),
    "unknown datatype": ("POST", INFER, dict(json=v2(datatype="FLOAT")), 400, ["'FLOAT'", "FP32"]),
    "BYTES datatype": ("POST", INFER, dict(json=v2(datatype="BYTES")), 400, ["expected datatype FP32, found BYTES"]),
    "string data": ("POST", INFER, dict(json=v2(data=["a"] * 64)), 400, ["'x'", "numbers", "strings"]),
    "null data": ("POST", INFER, dict(json=v2(data=[None] * 64)), 400, ["'x'", "numbers"]),
    "ragged data": ("POST", INFER, dict(json=v2(data=[[0.0] * 32, [0.0] * 31])), 400, ["'x'", "regular"]),
    "negative shape": ("POST", INFER, dict(json=v2(shape=(-1, 1, 8, 8), data=[0.0] * 64)), 400,
                       ["shape", "[-1, 1, 8, 8]"]),
    "malformed JSON": ("POST", INFER, dict(content=b'{"inputs": [}'), 400, ["malformed JSON", "line 1"]),
    "empty body": ("POST", INFER, dict(content=b""), 400, ["empty"]),
    "not UTF-8": ("POST", INFER, dict(content=b"\xff\xfe{"), 400, ["UTF-8"]),
    "deeply nested JSON": ("POST", INFER, dict(content=b"[" * 100000 + b"]" * 100000), 400, ["nested"]),
    "JSON list": ("POST", INFER, dict(json=[1, 2]), 400, ["JSON object", "list"]),
    "no inputs": ("POST", INFER, dict(json={"outputs": []}), 400, ["'inputs'"]),
    "input lacks fields": ("POST", INFER, dict(json={"inputs": [{"name": "x"}]}), 400, ["inputs[0]", "shape"]),
    "unknown input": ("POST", INFER, dict(json=v2(name="img")), 400, ["'img'", "['x']"]),
    "missing input": ("POST", "/v2/models/add/infer", dict(json={"inputs": [ADD_A]}), 400, ["['b']"]),
    "input given twice": ("POST", "/v2/models/add/infer", dict(json={"inputs": [ADD_A, ADD_A]}), 400, ["twice"]),
    "unknown output": ("POST", INFER, dict(json={**v2(), "outputs": [{"name": "probs"}]}), 400, ["'probs'", "output"]),
    "non-integral INT64": ("POST", "/v2/models/add/infer",
                           dict(json={"inputs": [{**ADD_A, "data": [1.5, 2, 3]}, {**ADD_A, "name": "b"}]}),
                           400, ["'a'", "integers"]),
    "INT64 overflow": ("POST", "/v2/models/add/infer",
                       dict(json={"inputs": [{**ADD_A, "data": [1e30, 2, 3]}, {**ADD_A, "name": "b"}]}),
                       400, ["'a'", "range"]),
    "unknown model": ("POST", "/v2/models/nope/infer", dict(json=v2()), 404, ["'nope'", "digits"]),
    "unknown version": ("POST", "/v2/models/digits/versions/9.9.9/infer", dict(json=v2()), 404,
                        ["'9.9.9'", "1.0.0", "2.0.0"]),
    "unknown model metadata": ("GET", "/v2/models/nope", {}, 404, ["'nope'"]),
    "unknown version metadata": ("GET", "/v2/models/digits/versions/3.0.0", {}, 404, ["'3.0.0'"]),
    "GET on infer": ("GET", INFER, {}, 405, ["GET", "POST"]),
    "PUT on infer": ("PUT", INFER, dict(json=v2()), 405, ["PUT", "POST"]),
    "GET on predict": ("GET", "/v1/models/digits:predict", {}, 405, ["GET", "POST"]),
    "unknown route": ("GET", "/v3/models", {}, 404, ["/v3/models"]),
    "unknown verb": ("POST", "/v1/models/digits:classify", dict(json={}), 404, [":classify", ":predict"]),
    "text/plain body": ("POST", INFER, dict(content=b"1,2", headers={"content-type": "text/plain"}), 415,
                        ["text/plain", "application/json"]),
    "multipart body": ("POST", "/v1/models/digits:predict", dict(files={"a": b"1"}), 415,
                       ["multipart/form-data", "application/json"]),
    "form-encoded non-JSON": ("POST", "/v1/models/digits:predict", dict(data={"a": "1"}), 400, ["malformed JSON"]),
    "too large (Content-Length)": ("POST", INFER, dict(content=b" " * (8 * 1024 * 1024 + 1)), 413,
                                   ["8388609", "8388608"]),
    "too large (chunked)": ("POST", INFER, dict(content=iter([b" " * (1 << 20)] * 9)), 413, ["8388608"]),
    "v1 neither instances nor inputs": ("POST", "/v1/models/digits:predict", dict(json={"rows": []}), 400,
                                        ["instances", "inputs"]),
    "v1 both": ("POST", "/v1/models/digits:predict", dict(json={"instances": [1], "inputs": [1]}), 400,
                ["exactly one"]),
    "v1 wrong instance shape": ("POST", "/v1/models/digits:predict", dict(json={"instances": [[0.0] * 64]}), 400,
                                ["'x'", "[-1, 1, 8, 8]", "[1, 64]"]),
    "v1 ragged instances": ("POST", "/v1/models/digits:predict", dict(json={"instances": [[1.0], [1.0, 2.0]]}), 400,
                            ["'x'"]),
    "v1 multi-input rows not objects": ("POST", "/v1/models/add:predict", dict(json={"instances": [[1, 2, 3]]}), 400,
                                        ["['a', 'b']", "object"]),
    "v1 unknown version": ("POST", "/v1/models/digits/versions/0.1.0:predict", dict(json={"instances": [1]}), 404,
                           ["'0.1.0'"]),
    "npy corrupt": ("POST", INFER, dict(content=b"\x93NUMPY garbage", headers=NPY), 400, [".npy"]),
    "npy wrong dtype": ("POST", INFER, dict(content=npy(IMG.astype(np.float64)), headers=NPY), 400, ["FP32", "FP64"]),
    "npy object array": ("POST", INFER, dict(content=npy(np.array([{}], dtype=object)), headers=NPY), 400,
                         [".npy"]),
    "npy multi-input model": ("POST", "/v2/models/add/infer", dict(content=npy(IMG), headers=NPY), 415, ["['a', 'b']"]),
    # regressions found by adversarial review
    "duplicate JSON keys": ("POST", INFER, dict(content=b'{"inputs": [], "inputs": '
                                                + json.dumps(v2()["inputs"]).encode() + b"}"), 400,
                            ["'inputs'", "twice"]),
    "booleans for FP32": ("POST", INFER, dict(json=v2(data=[True] * 64)), 400, ["'x'", "FP32", "booleans"]),
    "FP32 overflow": ("POST", INFER, dict(json=v2(data=[1e300] * 64)), 400, ["'x'", "out of range", "FP32"]),
    "INT64 2**63 (uint64 in JSON)": ("POST", "/v2/models/add/infer",
                                     dict(json={"inputs": [{**ADD_A, "data": [2 ** 63, 2, 3]},
                                                           {**ADD_A, "name": "b"}]}), 400, ["'a'", "range"]),
    "INT64 2.0**63 (float)": ("POST", "/v2/models/add/infer",
                              dict(json={"inputs": [{**ADD_A, "data": [2.0 ** 63, 2, 3]}, {**ADD_A, "name": "b"}]}),
                              400, ["'a'", "range"]),
    "output requested twice": ("POST", "/v2/models/add/infer",
                               dict(json={"inputs": [ADD_A, {**ADD_A, "name": "b"}],
                                          "outputs": [{"name": "sum"}, {"name": "sum"}]}), 400,
                               ["'sum'", "more than once"]),
    "huge shape, tiny data": ("POST", INFER, dict(json=v2(shape=(10 ** 12, 1, 8, 8), data=[0.0] * 64)), 400,
                              ["64000000000000 values", "found 64"]),
    "npy header claims 10**9 rows": ("POST", INFER,
                                     dict(content=npy(IMG).replace(b"(1, 1, 8, 8)", b"(1000000000, 1, 8, 8)"),
                                          headers=NPY), 400, ["[1000000000, 1, 8, 8]", "256000000000 bytes"]),
    "npy truncated": ("POST", INFER, dict(content=npy(IMG)[:-10], headers=NPY), 400, ["256 bytes", "246 bytes"]),
    "npy trailing bytes": ("POST", INFER, dict(content=npy(IMG) + b"junk", headers=NPY), 400, ["260 bytes"]),
    "npy structured dtype": ("POST", INFER, dict(content=npy(np.zeros(2, [("a", "f4")])), headers=NPY), 400, ["dtype"]),
    "npy 0-d": ("POST", INFER, dict(content=npy(np.float32(1)), headers=NPY), 400, ["[-1, 1, 8, 8]", "[]"]),
    "npz archive": ("POST", INFER, dict(content=b"PK\x03\x04rest", headers=NPY), 400, [".npz"]),
    "generate on a tensor model": ("POST", "/v1/models/digits:generate", dict(json={"prompt": "hi"}), 400,
                                   ["not a text generator"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_client_mistake_gets_4xx_json(client, case):
    method, path, kwargs, status, fragments = CASES[case]
    r = client.request(method, path, **kwargs)
    assert r.status_code == status, (case, r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    msg = r.json()["error"]
    assert isinstance(msg, str)
    for f in fragments:
        assert f in msg, (case, f, msg)
    if status == 405:
        assert "POST" in r.headers["allow"]


def test_server_still_answers_and_never_answered_500(client, models, h):
    r = client.post(INFER, json=h.v2_body("x", h.X[:1]))
    assert r.status_code == 200
    np.testing.assert_allclose(r.json()["outputs"][0]["data"], h.eager(models["1.0.0"], h.X[:1])[0], rtol=1e-5,
                               atol=1e-6)
    metrics = client.get("/metrics").text
    codes = {line.split('code="')[1].split('"')[0] for line in metrics.splitlines()
             if line.startswith("rtx_requests_total{")}
    assert codes and not any(c.startswith("5") for c in codes), codes


def test_npy_fortran_order_and_big_endian_give_the_right_answer(client, models, h):
    """Valid .npy variants are read as the array they describe, not refused or misread."""
    x = h.X[:2]
    for arr in (np.asfortranarray(x), x.astype(">f4")):
        r = client.post(INFER, content=npy(arr), headers=NPY)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(np.load(io.BytesIO(r.content)), h.eager(models["1.0.0"], x), rtol=1e-5, atol=1e-6)


def _codes(client):
    """Requests counted so far, by status code (summed over model, version and protocol)."""
    codes = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("rtx_requests_total{"):
            code = line.split('code="')[1].split('"')[0]
            codes[code] = codes.get(code, 0.0) + float(line.rsplit(" ", 1)[1])
    return codes


def test_client_disconnecting_mid_body_is_not_a_server_error(client):
    """A body cut short by the client is counted as its mistake (400), not logged as a 500."""
    import socket
    import time
    before = _codes(client)
    host, port = str(client.base_url)[len("http://"):].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"inputs\"")
    deadline = time.monotonic() + 10
    while (codes := _codes(client)) == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert codes.get("400", 0) == before.get("400", 0) + 1, (before, codes)
    assert not any(c.startswith("5") for c in codes), codes


def test_errors_are_counted_by_code(client):
    before = _count(client, "404")
    client.post("/v2/models/nope/infer", json={})
    assert _count(client, "404") == before + 1


def _count(client, code):
    total = 0.0
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("rtx_requests_total{") and f'code="{code}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_timeout_is_504_and_overload_is_503_with_retry_after(registry, h):
    """A model slower than request_timeout_s: 504. More requests than max_concurrency: 503 at once."""
    import threading

    import httpx

    from rtx.serving_api import ServeConfig, create_app
    from rtx.serving_api.testing import ServerThread

    cfg = ServeConfig(request_timeout_s=0.5, max_concurrency=2, retry_after_s=3)
    app = create_app(cfg, registry=registry, loader=h.slow_loader(1.5))
    body = json.dumps(h.v2_body("x", h.X[:1]))
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as c:
        r = c.post(INFER, content=body)
        assert r.status_code == 504, r.text
        assert "0.5 s" in r.json()["error"] and "request_timeout_s" in r.json()["error"]

        # Content-Length promising more than arrives: the client's fault, 408 (not 504), not a hang
        import socket
        host, port = url[len("http://"):].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{}")
            reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert b"Content-Length" in reply and b"request_timeout_s" in reply

        app.state.config.request_timeout_s = 30.0  # now let the two slow ones finish
        results = []
        threads = [threading.Thread(target=lambda: results.append(httpx.post(url + INFER, content=body, timeout=30)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        import time
        deadline = time.monotonic() + 10
        while app.state.gate.in_flight < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        r = c.post(INFER, content=body)
        assert r.status_code == 503 and r.headers["retry-after"] == "3"
        assert "max_concurrency" in r.json()["error"]
        for t in threads:
            t.join()
        assert [x.status_code for x in results] == [200, 200]


def _json_values():
    from hypothesis import strategies as st
    scalars = st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=5)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["inputs", "name", "shape", "datatype", "data", "outputs", "instances", "prompt", "a", "x"]),
        inner, max_size=4), max_leaves=20)


def test_arbitrary_json_never_gets_a_5xx(client):
    """Random JSON documents, and random values inside an otherwise valid request, on every POST route."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    paths = ["/v2/models/digits/infer", "/v2/models/add/infer", "/v1/models/digits:predict",
             "/v1/models/add:predict", "/v1/models/digits:generate"]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(path=st.sampled_from(paths), doc=_json_values(),
           field=st.sampled_from(["name", "shape", "datatype", "data"]),
           value=_json_values())
    def check(path, doc, field, value):
        for body in (doc, {"inputs": [{**v2()["inputs"][0], field: value}]}):
            r = client.post(path, content=json.dumps(body, allow_nan=True))
            assert r.status_code < 500, (path, body, r.text)
            if r.status_code >= 400:
                assert isinstance(r.json()["error"], str)

    check()


class Broken:
    """A session whose every run fails: a server fault, not a client mistake."""

    def __init__(self, session):
        self.session = session

    def __getattr__(self, name):
        return getattr(self.session, name)

    def run(self, names, feed):
        raise RuntimeError("the accelerator caught fire")


def test_a_server_fault_is_a_logged_500_json(registry, h, caplog):
    import logging

    import httpx

    from rtx.serving_api import create_app
    from rtx.serving_api.models import load_version
    from rtx.serving_api.testing import ServerThread

    def loader(mv, batching):
        m = load_version(mv, batching)
        if m.session is not None:
            m.session = Broken(m.session)
            if m.batcher is not None:
                m.batcher.close()
                m.batcher = None
        return m

    with caplog.at_level(logging.ERROR, logger="rtx.serving_api"):
        with ServerThread(create_app(registry=registry, loader=loader)) as url:
            r = httpx.post(url + INFER, json=h.v2_body("x", h.X[:1]))
            assert r.status_code == 500 and r.json() == {"error": "internal server error (see the server log)"}
            assert httpx.get(url + "/v2/health/live").status_code == 200  # still up
    assert any("the accelerator caught fire" in (r.exc_text or "") or
               (r.exc_info and "caught fire" in str(r.exc_info[1])) for r in caplog.records)
