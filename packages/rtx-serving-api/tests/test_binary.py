"""The binary tensor data extension over HTTP, tested with tritonclient (the Triton/KServe
ecosystem's own client) used with its defaults, and with hand-built malformed bodies."""
import json
import struct

import httpx
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as th

from rtx.hub import Registry
from rtx.serving_api import ServeConfig, create_app
from rtx.serving_api.testing import ServerThread


@pytest.fixture(scope="module")
def reverse_server(tmp_path_factory, h):
    root = tmp_path_factory.mktemp("binreg")
    reg = Registry(root / "reg")
    # the artifact is only a placeholder: reverse_loader builds the model; the other entries are real
    reg.register(h.add_model_onnx(root / "add.onnx"), "reverse", "1.0.0", stage="production")
    reg.register(h.add_model_onnx(root / "add2.onnx"), "add", "1.0.0", stage="production")
    with ServerThread(create_app(ServeConfig(max_body_bytes=1 << 20), registry=reg, loader=h.reverse_loader)) as url:
        yield url


def triton(url):
    return th.InferenceServerClient(url.removeprefix("http://"))


def test_health_and_metadata_with_tritonclient(server):
    c = triton(server)
    assert c.is_server_live() and c.is_server_ready()
    meta = c.get_server_metadata()
    assert meta["name"] == "rtx" and "binary_tensor_data" in meta["extensions"]
    assert c.is_model_ready("digits") and c.is_model_ready("digits", "2.0.0")
    m = c.get_model_metadata("digits")
    assert m["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 1, 8, 8]}]


def test_tritonclient_defaults_send_and_receive_binary(server, models, h):
    c = triton(server)
    inp = th.InferInput("x", list(h.X.shape), "FP32")
    inp.set_data_from_numpy(h.X)  # binary_data=True: the default that used to get a 400
    assert inp._get_binary_data() is not None
    result = c.infer("digits", [inp])  # no outputs named: the client asks binary_data_output
    out = result.get_output("output")
    assert "data" not in out and out["parameters"]["binary_data_size"] == 5 * 10 * 4
    np.testing.assert_allclose(result.as_numpy("output"), h.eager(models["1.0.0"], h.X), rtol=1e-5, atol=1e-6)


def test_json_and_binary_mixed_in_one_request(server, h, onnx_path):
    c = triton(server)
    a = np.arange(12, dtype=np.int64).reshape(4, 3) - 6
    b = np.full((4, 3), 2**40, dtype=np.int64)
    ia, ib = th.InferInput("a", [4, 3], "INT64"), th.InferInput("b", [4, 3], "INT64")
    ia.set_data_from_numpy(a)                     # binary
    ib.set_data_from_numpy(b, binary_data=False)  # JSON
    outs = [th.InferRequestedOutput("sum", binary_data=False), th.InferRequestedOutput("prod")]  # prod binary
    r = c.infer("add", [ia, ib], outputs=outs)
    assert "data" in r.get_output("sum") and "data" not in r.get_output("prod")
    np.testing.assert_array_equal(r.as_numpy("sum"), a + b)
    np.testing.assert_array_equal(r.as_numpy("prod"), a * b)
    # the ONNX model, binary both ways, against onnxruntime
    img = th.InferInput("image", list(h.X.shape), "FP32")
    img.set_data_from_numpy(h.X)
    ref = ort.InferenceSession(onnx_path).run(None, {"image": h.X})[0]
    np.testing.assert_allclose(c.infer("digits-onnx", [img]).as_numpy("logits"), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("binary", [True, False])
def test_every_datatype_round_trips(reverse_server, binary, h):
    c = triton(reverse_server)
    inputs, arrays = [], {}
    for d in h.DTYPES:
        x = h.sample(d, seed=len(d))
        if d == "BYTES" and not binary:  # the JSON form of BYTES is text: no element that is not UTF-8
            x[x == b"\x00\xff"] = b"ok"
        arrays[d] = x
        i = th.InferInput(f"in_{d}", list(x.shape), d)
        # tritonclient can only send BF16 in binary (JSON has no bfloat16 numbers)
        i.set_data_from_numpy(x, binary_data=binary or d == "BF16")
        inputs.append(i)
    outputs = [th.InferRequestedOutput(f"out_{d}", binary_data=binary) for d in h.DTYPES]
    r = c.infer("reverse", inputs, outputs=outputs)
    for d, x in arrays.items():
        got = r.as_numpy(f"out_{d}")
        assert r.get_output(f"out_{d}")["datatype"] == d
        if d == "BYTES" and not binary:  # JSON strings come back as str
            got = np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(got)
        np.testing.assert_array_equal(got, x[..., ::-1], err_msg=d)
        assert got.dtype == np.dtype(h.DTYPES[d]), d


def binary_body(header: dict, *blobs: bytes):
    head = json.dumps(header).encode()
    return head + b"".join(blobs), {"Inference-Header-Content-Length": str(len(head)),
                                    "Content-Type": "application/octet-stream"}


def inp(name, shape, datatype, size):
    return {"name": name, "shape": shape, "datatype": datatype, "parameters": {"binary_data_size": size}}


A = np.arange(6, dtype=np.int64).reshape(2, 3)
GOOD_A = A.astype("<i8").tobytes()


def bytes_elements(*items):
    return b"".join(struct.pack("<I", len(b)) + b for b in items)


MALFORMED = {
    "header longer than the body": (lambda: (b'{"inputs": []}', {"Inference-Header-Content-Length": "999"}),
                                    400, "Inference-Header-Content-Length"),
    "header length not a number": (lambda: (b'{}', {"Inference-Header-Content-Length": "ten"}), 400, "ten"),
    "header length zero": (lambda: (b'{}', {"Inference-Header-Content-Length": "0"}), 400, "JSON header"),
    "header not JSON": (lambda: (b'{"inp\xff' + GOOD_A, {"Inference-Header-Content-Length": "6"}), 400, "UTF-8"),
    "size beyond the body": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", 48),
                                                             inp("b", [2, 3], "INT64", 48)]}, GOOD_A, GOOD_A[:40]),
                             400, "only 40 bytes"),
    "truncated tensor": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", 40),
                                                         inp("b", [2, 3], "INT64", 40)]}, GOOD_A[:40], GOOD_A[:40]),
                         400, "needs 48 bytes"),
    "bytes after the tensors": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", 48),
                                                                inp("b", [2, 3], "INT64", 48)]}, GOOD_A, GOOD_A,
                                                    b"xx"), 400, "2 bytes after"),
    "unknown datatype": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT128", 48),
                                                         inp("b", [2, 3], "INT64", 48)]}, GOOD_A, GOOD_A),
                         400, "INT128"),
    "negative size": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", -48)]}, GOOD_A), 400, ">= 0"),
    "size as a string": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", "48")]}, GOOD_A), 400, "'48'"),
    "data and binary size": (lambda: binary_body({"inputs": [{**inp("a", [2, 3], "INT64", 48), "data": [1]}]},
                                                 GOOD_A), 400, "both"),
    "binary size without the header": (lambda: (json.dumps({"inputs": [inp("a", [2, 3], "INT64", 48)]}).encode(),
                                                {}), 400, "no binary part"),
    "a lying shape": (lambda: binary_body({"inputs": [inp("a", [1000000, 3], "INT64", 48),
                                                      inp("b", [2, 3], "INT64", 48)]}, GOOD_A, GOOD_A),
                      400, "needs 24000000 bytes"),
    "binary_data_output not a bool": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", 48),
                                                                      inp("b", [2, 3], "INT64", 48)],
                                                           "parameters": {"binary_data_output": "yes"}},
                                                          GOOD_A, GOOD_A), 400, "binary_data_output"),
    "compressed body": (lambda: (b"\x1f\x8b", {"Content-Encoding": "gzip"}), 415, "Content-Encoding"),
    "binary on a v1 route": (lambda: (*binary_body({"inputs": []}, b""), "/v1/models/add:predict"), 415, "/v2/"),
    "over max_body_bytes": (lambda: binary_body({"inputs": [inp("a", [2, 3], "INT64", 48)]}, b"\0" * (1 << 20)),
                            413, "max_body_bytes"),
}

REVERSE_MALFORMED = {
    "BYTES element longer than the data": (bytes_elements(b"a", b"b", b"c", b"abcdef")[:-1], 400, "says 6 bytes"),
    "BYTES count short of the shape": (bytes_elements(b"a", b"b"), 400, "need at least"),
    "BYTES bytes left over": (bytes_elements(b"a", b"b", b"c", b"d") + b"\0\0", 400, "left after"),
    "BOOL byte that is not 0 or 1": (bytes([0, 1, 2, 1]), 400, "0 or 1"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_binary_body_gets_4xx(reverse_server, case):
    make, status, needle = MALFORMED[case]
    made = make()
    body, headers = made[0], made[1]
    path = made[2] if len(made) > 2 else "/v2/models/add/infer"
    r = httpx.post(reverse_server + path, content=body, headers=headers, timeout=30)
    assert r.status_code == status, (r.status_code, r.text)
    assert needle in r.json()["error"], r.json()


@pytest.mark.parametrize("case", sorted(REVERSE_MALFORMED))
def test_malformed_bytes_and_bool_tensors_get_400(reverse_server, case, h):
    blob, status, needle = REVERSE_MALFORMED[case]
    datatype = "BOOL" if "BOOL" in case else "BYTES"
    good = {d: h.sample(d, (1, 4)) for d in h.DTYPES}
    from rtx.serving_api import tensors
    header = {"inputs": []}
    blobs = []
    for d, x in good.items():
        raw = blob if d == datatype else tensors.encode(x, d)
        header["inputs"].append(inp(f"in_{d}", [1, 4], d, len(raw)))
        blobs.append(raw)
    body, headers = binary_body(header, *blobs)
    r = httpx.post(reverse_server + "/v2/models/reverse/infer", content=body, headers=headers, timeout=30)
    assert r.status_code == status, r.text
    assert needle in r.json()["error"] and f"in_{datatype}" in r.json()["error"]


def test_server_keeps_serving_after_malformed_bodies(reverse_server):
    for case in sorted(MALFORMED):
        made = MALFORMED[case][0]()
        httpx.post(reverse_server + (made[2] if len(made) > 2 else "/v2/models/add/infer"), content=made[0],
                   headers=made[1], timeout=30)
    c = triton(reverse_server)
    ia, ib = th.InferInput("a", [2, 3], "INT64"), th.InferInput("b", [2, 3], "INT64")
    ia.set_data_from_numpy(A)
    ib.set_data_from_numpy(A)
    np.testing.assert_array_equal(c.infer("add", [ia, ib]).as_numpy("sum"), 2 * A)
    metrics = httpx.get(reverse_server + "/metrics").text
    assert 'code="500"' not in metrics
