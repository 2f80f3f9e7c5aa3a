"""gRPC (inference.GRPCInferenceService) against a real server, with tritonclient's gRPC client used
with its defaults, and hand-built malformed requests through a bare grpcio stub."""
import queue
import time
from collections import Counter

import grpc
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as tg
from tritonclient.grpc import service_pb2 as triton_pb
from tritonclient.utils import InferenceServerException

from rtx.hub import Registry
from rtx.serving_api import ServeConfig, create_app
from rtx.serving_api.proto import inference_pb2 as pb
from rtx.serving_api.proto import inference_pb2_grpc as pb_grpc
from rtx.serving_api.testing import ServerThread


def grpc_address(app):
    return f"127.0.0.1:{app.state.grpc_port}"


@pytest.fixture(scope="module")
def grpc_server(tmp_path_factory, models, onnx_path, h):
    """digits 1.0.0/2.0.0, its ONNX export, the INT64 add model, the every-datatype model and a tiny
    rtx-nlg GPT, over HTTP and gRPC."""
    pytest.importorskip("rtx.nlg.train")
    root = tmp_path_factory.mktemp("grpcreg")
    reg = Registry(root / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    reg.register(models["2.0.0"], "digits", "2.0.0", example_inputs=h.X[:1])
    reg.register(onnx_path, "digits-onnx", "1.0.0", stage="production")
    reg.register(h.add_model_onnx(root / "add.onnx"), "add", "1.0.0", stage="production")
    reg.register(h.add_model_onnx(root / "placeholder.onnx"), "reverse", "1.0.0", stage="production")
    reg.register(tiny_gpt(root / "gpt.rtx"), "gpt", "1.0.0", stage="production")
    app = create_app(ServeConfig(grpc_port=0, max_body_bytes=1 << 20, max_new_tokens=64), registry=reg,
                     loader=h.reverse_loader)
    with ServerThread(app) as url:
        yield grpc_address(app), url, str(reg.get("gpt").artifact)


def tiny_gpt(path):
    import rtx
    import rtx.nlg.train as nlg_train
    from rtx.nlg.tokenizers import CharTokenizer
    tok = CharTokenizer(list("abcdefghij .,"), special_tokens=["<|endoftext|>"], eos_token="<|endoftext|>")
    cfg = nlg_train.TrainConfig(n_embd=16, n_layer=1, n_head=2, block_size=32, dropout=0.0, seed=0)
    rtx.manual_seed(0)
    nlg_train.save_checkpoint(str(path), nlg_train.build_model(tok, cfg).eval(), tok, cfg, 0, 0.0, 0.0)
    return path


def test_messages_match_the_protocol_field_by_field():
    """Every message and RPC of our inference.proto has the same fields (number, type, cardinality)
    and signatures as in the descriptors tritonclient ships (Triton's grpc_service.proto)."""
    def fields(m):
        return {f.name: (f.number, f.type, f.is_repeated, f.message_type.full_name if f.message_type else None)
                for f in m.fields}

    def walk(ours, theirs):
        assert set(fields(ours).items()) <= set(fields(theirs).items()), ours.full_name
        for nested in ours.nested_types:
            walk(nested, theirs.nested_types_by_name[nested.name])
    for name, m in pb.DESCRIPTOR.message_types_by_name.items():
        walk(m, triton_pb.DESCRIPTOR.message_types_by_name[name])
        if name in ("ModelInferRequest", "ModelInferResponse", "InferTensorContents", "InferParameter"):
            assert fields(m) == fields(triton_pb.DESCRIPTOR.message_types_by_name[name])  # nothing left out
    ours = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    theirs = triton_pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    for m in ours.methods:
        t = theirs.methods_by_name[m.name]
        assert (m.input_type.full_name, m.output_type.full_name, m.client_streaming, m.server_streaming) == \
               (t.input_type.full_name, t.output_type.full_name, t.client_streaming, t.server_streaming)


def test_health_and_metadata(grpc_server):
    c = tg.InferenceServerClient(grpc_server[0])
    assert c.is_server_live() and c.is_server_ready()
    meta = c.get_server_metadata(as_json=True)
    assert meta["name"] == "rtx" and "binary_tensor_data" in meta["extensions"]
    assert c.is_model_ready("digits") and c.is_model_ready("digits", "2.0.0")
    m = c.get_model_metadata("digits", as_json=True)
    assert m["versions"] == ["1.0.0", "2.0.0"]
    assert m["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "1", "8", "8"]}]  # int64 as JSON text
    index = c.get_model_repository_index(as_json=True)["models"]
    assert {("digits", "1.0.0"), ("gpt", "1.0.0"), ("add", "1.0.0")} <= {(e["name"], e["version"]) for e in index}


def test_infer_with_client_defaults(grpc_server, models, h, onnx_path):
    c = tg.InferenceServerClient(grpc_server[0])
    x = tg.InferInput("x", list(h.X.shape), "FP32")
    x.set_data_from_numpy(h.X)
    r = c.infer("digits", [x])
    np.testing.assert_allclose(r.as_numpy("output"), h.eager(models["1.0.0"], h.X), rtol=1e-5, atol=1e-6)
    assert r.get_response().model_version == "1.0.0"
    r2 = c.infer("digits", [x], model_version="2.0.0", request_id="r-2")
    np.testing.assert_allclose(r2.as_numpy("output"), h.eager(models["2.0.0"], h.X), rtol=1e-5, atol=1e-6)
    assert r2.get_response().id == "r-2"
    img = tg.InferInput("image", list(h.X.shape), "FP32")
    img.set_data_from_numpy(h.X)
    ref = ort.InferenceSession(onnx_path).run(None, {"image": h.X})[0]
    np.testing.assert_allclose(c.infer("digits-onnx", [img]).as_numpy("logits"), ref, rtol=1e-5, atol=1e-6)
    a, b = np.arange(6, dtype=np.int64).reshape(2, 3), np.full((2, 3), -(2**40), dtype=np.int64)
    ia, ib = tg.InferInput("a", [2, 3], "INT64"), tg.InferInput("b", [2, 3], "INT64")
    ia.set_data_from_numpy(a)
    ib.set_data_from_numpy(b)
    r = c.infer("add", [ia, ib], outputs=[tg.InferRequestedOutput("prod")])
    np.testing.assert_array_equal(r.as_numpy("prod"), a * b)
    assert r.as_numpy("sum") is None  # only what was asked for


def test_every_datatype_round_trips(grpc_server, h):
    c = tg.InferenceServerClient(grpc_server[0])
    inputs, arrays = [], {}
    for d in h.DTYPES:
        arrays[d] = h.sample(d, seed=len(d) + 1)
        i = tg.InferInput(f"in_{d}", list(arrays[d].shape), d)
        i.set_data_from_numpy(arrays[d])
        inputs.append(i)
    r = c.infer("reverse", inputs)
    for d, x in arrays.items():
        got = r.as_numpy(f"out_{d}")
        np.testing.assert_array_equal(got, x[..., ::-1], err_msg=d)
        assert got.dtype == np.dtype(h.DTYPES[d]), d


def test_typed_contents_are_accepted(grpc_server):
    """Typed contents (no raw bytes), as some clients send them."""
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_server[0]))
    req = pb.ModelInferRequest(model_name="add")
    for name, vals in (("a", [1, 2, 3]), ("b", [10, 20, 2**40])):
        t = req.inputs.add(name=name, datatype="INT64", shape=[1, 3])
        t.contents.int64_contents.extend(vals)
    resp = stub.ModelInfer(req, timeout=30)
    outs = {o.name: np.frombuffer(raw, "<i8") for o, raw in zip(resp.outputs, resp.raw_output_contents)}
    np.testing.assert_array_equal(outs["sum"], [11, 22, 3 + 2**40])
    np.testing.assert_array_equal(outs["prod"], [10, 40, 3 * 2**40])


def test_stream_infer_generates_the_generators_text(grpc_server):
    from rtx.streaming import load_text_generator
    address, _, artifact = grpc_server
    expected, reason = load_text_generator(artifact).generate_text("abc", max_new_tokens=12, temperature=0)
    results = queue.Queue()
    c = tg.InferenceServerClient(address)
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    prompt = tg.InferInput("text_input", [1], "BYTES")
    prompt.set_data_from_numpy(np.array([b"abc"], dtype=object))
    c.async_stream_infer("gpt", [prompt], request_id="g1",
                         parameters={"max_new_tokens": 12, "temperature": 0})
    pieces = []
    while True:
        result, error = results.get(timeout=60)
        assert error is None, error
        resp = result.get_response()
        pieces.append(result.as_numpy("text_output")[0].decode())
        if resp.parameters["triton_final_response"].bool_param:
            assert resp.parameters["finish_reason"].string_param == reason
            break
    assert len(pieces) > 2 and "".join(pieces) == expected
    # a tensor model over the same stream, then an error that does not end the stream
    a, b = tg.InferInput("a", [1, 3], "INT64"), tg.InferInput("b", [1, 3], "INT64")
    a.set_data_from_numpy(np.array([[1, 2, 3]], dtype=np.int64))
    b.set_data_from_numpy(np.array([[1, 2, 3]], dtype=np.int64))
    c.async_stream_infer("add", [a, b])
    result, error = results.get(timeout=60)
    np.testing.assert_array_equal(result.as_numpy("sum"), [[2, 4, 6]])
    c.async_stream_infer("nope", [a])
    result, error = results.get(timeout=60)
    assert result is None and "unknown model 'nope'" in str(error)
    c.async_stream_infer("add", [a, b])
    result, error = results.get(timeout=60)
    np.testing.assert_array_equal(result.as_numpy("prod"), [[1, 4, 9]])
    c.stop_stream()


def _raw_request(**kw):
    req = pb.ModelInferRequest(model_name=kw.pop("model", "add"))
    for name, datatype, shape in kw.pop("inputs", [("a", "INT64", [1, 3]), ("b", "INT64", [1, 3])]):
        req.inputs.add(name=name, datatype=datatype, shape=shape)
    req.raw_input_contents.extend(kw.pop("raw", [np.arange(3, dtype="<i8").tobytes()] * 2))
    for o in kw.pop("outputs", []):
        req.outputs.add(name=o)
    for k, v in kw.items():
        setattr(req, k, v)
    return req


BAD = {
    "unknown model": (_raw_request(model="nope"), grpc.StatusCode.NOT_FOUND, "unknown model 'nope'"),
    "unknown version": (_raw_request(model_version="9.9.9"), grpc.StatusCode.NOT_FOUND, "unknown version"),
    "raw count short": (_raw_request(raw=[b"\0" * 24]), grpc.StatusCode.INVALID_ARGUMENT, "1 entries for 2 inputs"),
    "raw size short": (_raw_request(raw=[b"\0" * 24, b"\0" * 16]), grpc.StatusCode.INVALID_ARGUMENT,
                       "needs 24 bytes"),
    "wrong datatype": (_raw_request(inputs=[("a", "FP32", [1, 3]), ("b", "INT64", [1, 3])],
                                    raw=[b"\0" * 12, b"\0" * 24]), grpc.StatusCode.INVALID_ARGUMENT,
                       "expected datatype INT64"),
    "unknown datatype": (_raw_request(inputs=[("a", "INT3", [1, 3]), ("b", "INT64", [1, 3])]),
                         grpc.StatusCode.INVALID_ARGUMENT, "INT3"),
    "wrong shape": (_raw_request(inputs=[("a", "INT64", [3]), ("b", "INT64", [1, 3])]),
                    grpc.StatusCode.INVALID_ARGUMENT, "expected shape"),
    "missing input": (_raw_request(inputs=[("a", "INT64", [1, 3])], raw=[b"\0" * 24]),
                      grpc.StatusCode.INVALID_ARGUMENT, "missing input"),
    "unknown output": (_raw_request(outputs=["x"]),
                       grpc.StatusCode.INVALID_ARGUMENT, "unknown output"),
    "over the size limit": (_raw_request(raw=[b"\0" * (1 << 20)] * 2), grpc.StatusCode.RESOURCE_EXHAUSTED, ""),
    "text generator": (_raw_request(model="gpt"), grpc.StatusCode.INVALID_ARGUMENT, "text generator"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_requests_get_the_right_status(grpc_server, case):
    req, code, needle = BAD[case]
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_server[0]))
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req, timeout=30)
    assert e.value.code() == code, e.value.details()
    assert needle in e.value.details()


def test_int_contents_out_of_range_and_mixed_forms(grpc_server, h):
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_server[0]))
    req = pb.ModelInferRequest(model_name="add")
    for name in "ab":
        req.inputs.add(name=name, datatype="INT64", shape=[1, 3]).contents.int64_contents.extend([1, 2, 3])
    req.raw_input_contents.extend([b"\0" * 24] * 2)  # both forms at once
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req, timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "one or the other" in e.value.details()
    c = tg.InferenceServerClient(grpc_server[0])
    with pytest.raises(InferenceServerException) as e:
        c.get_model_metadata("nope")
    assert "StatusCode.NOT_FOUND" in str(e.value.status())


def test_server_keeps_serving_and_counts_grpc_requests(grpc_server, h):
    import httpx
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_server[0]))
    for case in sorted(BAD):
        with pytest.raises(grpc.RpcError):
            stub.ModelInfer(BAD[case][0], timeout=30)
    resp = stub.ModelInfer(_raw_request(), timeout=30)
    assert np.frombuffer(resp.raw_output_contents[0], "<i8").tolist() == [0, 2, 4]
    metrics = httpx.get(grpc_server[1] + "/metrics").text
    assert 'protocol="grpc"' in metrics and 'code="500"' not in metrics


def test_model_statistics_count_the_runs(grpc_server, h):
    c = tg.InferenceServerClient(grpc_server[0])

    def stats(**kw):
        return {(m["name"], m["version"]): m for m in c.get_inference_statistics(as_json=True, **kw)["model_stats"]}
    before = stats(model_name="digits", model_version="2.0.0")[("digits", "2.0.0")]
    x = tg.InferInput("x", [4, 1, 8, 8], "FP32")
    x.set_data_from_numpy(h.X[:4])
    for _ in range(3):
        c.infer("digits", [x], model_version="2.0.0")
    after = stats(model_name="digits", model_version="2.0.0")[("digits", "2.0.0")]
    assert int(after.get("execution_count", 0)) - int(before.get("execution_count", 0)) == 3
    infer = after["inference_stats"]["compute_infer"]
    assert int(infer["count"]) == int(after["execution_count"]) and int(infer["ns"]) > 0
    everything = stats()  # no name: every model and version
    assert {("digits", "1.0.0"), ("digits", "2.0.0"), ("add", "1.0.0"), ("gpt", "1.0.0")} <= set(everything)
    for bad in ({"model_name": "nope"}, {"model_name": "digits", "model_version": "9.9.9"}):
        with pytest.raises(InferenceServerException) as e:
            c.get_inference_statistics(**bad)
        assert "StatusCode.NOT_FOUND" in str(e.value.status())


def test_server_timeout_is_deadline_exceeded(tmp_path, models, h):
    reg = Registry(tmp_path / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    app = create_app(ServeConfig(grpc_port=0, request_timeout_s=0.2), registry=reg, loader=h.slow_loader(0.6))
    with ServerThread(app):
        stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_address(app)))
        req = pb.ModelInferRequest(model_name="digits")
        req.inputs.add(name="x", datatype="FP32", shape=[1, 1, 8, 8])
        req.raw_input_contents.append(h.X[:1].tobytes())
        with pytest.raises(grpc.RpcError) as e:  # the server's request_timeout_s, the client waits longer
            stub.ModelInfer(req, timeout=30)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "request_timeout_s" in e.value.details()
        assert stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live


def test_deadline_and_overload(tmp_path, models, h):
    reg = Registry(tmp_path / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    cfg = ServeConfig(grpc_port=0, request_timeout_s=0.6, max_concurrency=1)
    app = create_app(cfg, registry=reg, loader=h.slow_loader(0.4))
    with ServerThread(app):
        stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_address(app)))
        req = pb.ModelInferRequest(model_name="digits")
        req.inputs.add(name="x", datatype="FP32", shape=[1, 1, 8, 8])
        req.raw_input_contents.append(h.X[:1].tobytes())
        slow = stub.ModelInfer.future(req, timeout=30)  # holds the one slot
        time.sleep(0.1)
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(req, timeout=30)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE and "max_concurrency" in e.value.details()
        streamed = next(stub.ModelStreamInfer(iter([req]), timeout=30))  # streams pass the same gate
        assert "max_concurrency" in streamed.error_message
        assert slow.result().model_version == "1.0.0"
        with pytest.raises(grpc.RpcError) as e:  # the client's own deadline
            stub.ModelInfer(req, timeout=0.1)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_ab_split_stickiness_and_promotion_over_grpc(tmp_path, models, h):
    """gRPC requests take the HTTP app's routes: the A/B split (sticky per x-client-id metadata), a named
    version bypassing it, and a promotion in the registry picked up without a restart."""
    from rtx.serving_api import RouteConfig
    reg = Registry(tmp_path / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    reg.register(models["2.0.0"], "digits", "2.0.0", example_inputs=h.X[:1])
    cfg = ServeConfig(grpc_port=0, poll_interval_s=0.05,
                      routes=[RouteConfig(model="digits", split={"1.0.0": 50, "2.0.0": 50})])
    app = create_app(cfg, registry=reg)
    refs = {v: h.eager(models[v], h.X[:1]) for v in ("1.0.0", "2.0.0")}
    with ServerThread(app):
        stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(grpc_address(app)))
        req = pb.ModelInferRequest(model_name="digits")
        req.inputs.add(name="x", datatype="FP32", shape=[1, 1, 8, 8])
        req.raw_input_contents.append(h.X[:1].tobytes())

        def infer(client=None, version=""):
            req.model_version = version
            r = stub.ModelInfer(req, timeout=30, metadata=(("x-client-id", client),) if client else None)
            out = np.frombuffer(r.raw_output_contents[0], "<f4").reshape(1, -1)
            np.testing.assert_allclose(out, refs[r.model_version], rtol=1e-5, atol=1e-6)
            return r.model_version

        by_client = {c: {infer(f"user-{c}") for _ in range(3)} for c in range(24)}
        assert all(len(v) == 1 for v in by_client.values()), by_client  # sticky
        got = Counter(v.pop() for v in by_client.values())
        assert got["1.0.0"] and got["2.0.0"], got  # both arms see traffic (P(miss) = 2 * 2^-24)
        assert infer("user-0", version="2.0.0") == "2.0.0" and infer("user-0", version="1.0.0") == "1.0.0"
        reg.promote("digits", "2.0.0", "production", archive_existing=True)
        deadline = time.monotonic() + 60
        while set(app.state.manager.table["digits"].versions) != {"2.0.0"}:
            assert time.monotonic() < deadline, "the promotion never reached the server"
            time.sleep(0.05)
        assert {infer(f"user-{c}") for c in range(8)} == {"2.0.0"}
