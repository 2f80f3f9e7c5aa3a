"""POST /v1/models/{name}:generate: SSE streaming (rtx.streaming.sse_stream) and whole-text JSON,
with a real rtx-nlg GPT checkpoint loaded through rtx.streaming.load_text_generator."""
import json
import threading
import time

import httpx
import pytest

from rtx.hub import Registry
from rtx.serving_api import ServeConfig, create_app
from rtx.serving_api.models import ServedModel, load_version
from rtx.serving_api.testing import ServerThread


def tiny_gpt_checkpoint(path):
    """An untrained 1-layer GPT over a character vocabulary, saved the way `rtx nlg train` saves."""
    nlg_train = pytest.importorskip("rtx.nlg.train")
    from rtx.nlg.tokenizers import CharTokenizer
    tok = CharTokenizer(list("abcdefghij .,"), special_tokens=["<|endoftext|>"], eos_token="<|endoftext|>")
    cfg = nlg_train.TrainConfig(n_embd=16, n_layer=1, n_head=2, block_size=32, dropout=0.0, seed=0)
    import rtx
    rtx.manual_seed(0)
    model = nlg_train.build_model(tok, cfg).eval()
    nlg_train.save_checkpoint(str(path), model, tok, cfg, 0, 0.0, 0.0)
    return path


def sse_events(lines):
    events = []
    for line in lines:
        if line.startswith("data: "):
            payload = line[len("data: "):]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


@pytest.fixture(scope="module")
def gpt_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpt")
    reg = Registry(root / "reg")
    reg.register(tiny_gpt_checkpoint(root / "gpt.rtx"), "gpt", "1.0.0", stage="production")
    with ServerThread(create_app(ServeConfig(max_new_tokens=64), registry=reg)) as url:
        yield url, str(reg.get("gpt").artifact)


def test_generate_whole_text_and_stream_agree_with_the_generator(gpt_server):
    from rtx.streaming import load_text_generator
    url, artifact = gpt_server
    params = {"max_new_tokens": 12, "temperature": 0}
    expected, reason = load_text_generator(artifact).generate_text("abc", **params)  # the reference: no server

    r = httpx.post(url + "/v1/models/gpt:generate", json={"prompt": "abc", **params}, timeout=60)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["text"] == expected and doc["finish_reason"] == reason and doc["model_version"] == "1.0.0"

    with httpx.stream("POST", url + "/v1/models/gpt:generate", json={"prompt": "abc", "stream": True, **params},
                      timeout=60) as s:
        assert s.status_code == 200 and s.headers["content-type"].startswith("text/event-stream")
        events = sse_events(s.iter_lines())
    assert events[-1] == "[DONE]"
    final, pieces = events[-2], events[:-2]
    assert [p["index"] for p in pieces] == list(range(len(pieces)))
    assert "".join(p["text"] for p in pieces) == expected == final["text"]
    assert final["finish_reason"] == reason


@pytest.mark.parametrize("body, fragment", [
    ({"prompt": 5}, "'prompt' must be a string"),
    ({}, "'prompt' must be a string"),
    ({"prompt": "a", "max_new_tokens": 0}, "'max_new_tokens'"),
    ({"prompt": "a", "max_new_tokens": 65}, "at most 64"),
    ({"prompt": "a", "temperature": -1}, "'temperature'"),
    ({"prompt": "a", "top_p": 1.5}, "'top_p'"),
    ({"prompt": "a", "stream": "yes"}, "'stream'"),
    ({"prompt": "a", "stop": [""]}, "'stop'"),
    ({"prompt": "a", "beams": 2}, "unknown field"),
    ({"prompt": "a", "max_new_tokens": -3}, "'max_new_tokens'"),
    ({"prompt": "a", "temperature": float("nan")}, "'temperature'"),
    ({"prompt": "a", "top_k": -1}, "'top_k'"),
    ({"prompt": "a", "seed": True}, "'seed'"),
    ({"prompt": "a", "stop": 5}, "'stop'"),
    ({"prompt": "a", "stop": {"a": 1}}, "'stop'"),
    ({"prompt": "xyz€"}, "refused the request"),  # characters outside the model's alphabet
])
def test_generate_bad_requests_are_400(gpt_server, body, fragment):
    url, _ = gpt_server
    for stream in (False, True):
        doc = {**body, "stream": stream} if "stream" not in body else body
        r = httpx.post(url + "/v1/models/gpt:generate", content=json.dumps(doc, allow_nan=True),  # NaN literals too
                       headers={"content-type": "application/json"}, timeout=60)
        assert r.status_code == 400, (body, r.text)
        assert fragment in r.json()["error"], r.json()
    assert httpx.post(url + "/v2/models/gpt/infer", json={"inputs": []}).status_code == 400


class CountingGenerator:
    """A text generator that records how far it got: it shows that a client which goes away stops
    the generation."""

    def __init__(self):
        self.produced = 0
        self.closed = threading.Event()

    def stream_text(self, prompt, max_new_tokens=16, **params):
        def pieces():
            try:
                for i in range(max_new_tokens):
                    time.sleep(0.01)
                    self.produced += 1
                    yield f"{prompt}{i} "
                return "length"
            finally:
                self.closed.set()
        return pieces()


def test_client_disconnect_stops_generation(tmp_path, h):
    gen = CountingGenerator()

    def loader(mv, batching):
        if mv.name == "counter":
            return ServedModel(mv.name, mv.version, mv.stage, mv.sha256, signature=None, generator=gen)
        return load_version(mv, batching)

    reg = Registry(tmp_path / "reg")
    reg.register(h.add_model_onnx(tmp_path / "add.onnx"), "counter", "1.0.0")
    with ServerThread(create_app(ServeConfig(max_new_tokens=100000), registry=reg, loader=loader)) as url:
        with httpx.stream("POST", url + "/v1/models/counter:generate",
                          json={"prompt": "t", "stream": True, "max_new_tokens": 100000}, timeout=30) as s:
            got = []
            for line in s.iter_lines():
                if line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                if len(got) == 3:
                    break  # leave: the connection closes
        assert [g["text"] for g in got] == ["t0 ", "t1 ", "t2 "]
        assert gen.closed.wait(10), "the generator was not stopped after the client left"
        assert gen.produced < 200, gen.produced
        r = httpx.post(url + "/v1/models/counter:generate", json={"prompt": "u", "max_new_tokens": 3})
        assert r.json()["text"] == "u0 u1 u2 " and r.json()["finish_reason"] == "length"
