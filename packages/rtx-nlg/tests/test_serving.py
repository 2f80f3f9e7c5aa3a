"""rtx.nlg.serving: a checkpoint of the `rtx nlg train` format as a TextGenerator. Every expected text
comes from rtx.nlg.generate on the in-memory model (not through the checkpoint), decoded here."""
import threading

import pytest

import rtx
from rtx.nlg import ByteLevelBPETokenizer, generate, load_corpus
from rtx.nlg.serving import GPTTextGenerator, load_gpt_checkpoint
from rtx.nlg.train import TrainConfig, save_checkpoint
from rtx.transformers import GPT2Config, GPT2LMHeadModel

EOS = "<|endoftext|>"
CONTEXT = 32


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tok = ByteLevelBPETokenizer.train(load_corpus()[:6000], vocab_size=300, special_tokens=[EOS], eos_token=EOS)
    rtx.manual_seed(0)
    # large random weights (initializer_range 0.5): greedy decoding then wanders over the vocabulary
    # (odd bytes included) instead of repeating one token, and seed 0 never picks end-of-text early
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=CONTEXT, n_embd=16, n_layer=2, n_head=2,
                                       initializer_range=0.5, bos_token_id=tok.eos_token_id,
                                       eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)).eval()
    path = tmp_path_factory.mktemp("ckpt") / "tiny.rtx"
    save_checkpoint(path, model, tok, TrainConfig(), step=0, train_loss=0.0, val_loss=0.0)
    return model, tok, path


def reference(model, tok, prompt, max_new_tokens, **options):
    """The new token ids generate() picks for `prompt` (within the context)."""
    ids = rtx.tensor([tok.encode(prompt)], dtype=rtx.int64)
    out = generate(model, ids, max_new_tokens=max_new_tokens, **options)
    return out[0, ids.shape[1]:].tolist()


def text_of(tok, new):
    """What a client should see for the new ids: the text before the first end-of-text token."""
    return tok.decode(new[:new.index(tok.eos_token_id)] if tok.eos_token_id in new else new)


def run(gen, prompt, **params):
    """(pieces, finish reason) of one stream."""
    it = gen.stream_text(prompt, **params)
    pieces = []
    while True:
        try:
            pieces.append(next(it))
        except StopIteration as end:
            return pieces, end.value


def test_greedy_matches_generate_and_reports_length(tiny):
    model, tok, path = tiny
    gen = load_gpt_checkpoint(path)
    pieces, reason = run(gen, "Shall I compare thee", max_new_tokens=12, temperature=0)
    new = reference(model, tok, "Shall I compare thee", 12)
    assert tok.eos_token_id not in new                      # the fixture's model: 12 tokens, no early stop
    assert "".join(pieces) == tok.decode(new) and reason == "length"
    assert len(pieces) >= 2 and all(pieces)                 # streamed piece by piece, no empty pieces


def test_end_of_text_stops_and_is_left_out(tiny):
    model, tok, path = tiny
    new = reference(model, tok, "To be", 20)
    # make a token the greedy run picks (first at position k) the model's end-of-text token
    k = next(i for i in range(3, 20) if new[i] not in new[:i])
    ckpt = rtx.load(path)
    ckpt["config"]["eos_token_id"] = new[k]
    gen = load_gpt_checkpoint(path, checkpoint=ckpt)
    pieces, reason = run(gen, "To be", max_new_tokens=20, temperature=0)
    assert "".join(pieces) == tok.decode(new[:k]) and reason == "stop"


def test_the_real_end_of_text_token_is_not_sent(tiny):
    model, tok, _ = tiny

    class AlwaysEos:                     # a model whose logits always pick <|endoftext|> after 3 tokens
        config = model.config

        def __init__(self):
            self.calls = 0

        def __call__(self, input_ids, **kw):
            out = model(input_ids, **kw)
            self.calls += 1
            if self.calls > 3:
                logits = out.logits.numpy().copy()
                logits[..., tok.eos_token_id] = 1e9
                out.logits = rtx.tensor(logits)
            return out

    pieces, reason = run(GPTTextGenerator(AlwaysEos(), tok), "To be", max_new_tokens=10, temperature=0)
    text = "".join(pieces)
    assert EOS not in text and reason == "stop"
    assert text == tok.decode(reference(model, tok, "To be", 3))


def test_sampling_with_a_seed_is_reproducible_and_matches_generate(tiny):
    model, tok, path = tiny
    gen = load_gpt_checkpoint(path)
    params = dict(max_new_tokens=10, temperature=0.8, top_k=40, top_p=0.9)
    texts = {seed: "".join(run(gen, "Once upon", seed=seed, **params)[0]) for seed in (1, 2, 3)}
    assert "".join(run(gen, "Once upon", seed=2, **params)[0]) == texts[2]
    expected = reference(model, tok, "Once upon", 10, do_sample=True, temperature=0.8, top_k=40, top_p=0.9,
                         generator=rtx.Generator().manual_seed(2))
    assert texts[2] == text_of(tok, expected)
    assert len(set(texts.values())) > 1                       # the seed matters


def test_stop_strings_end_the_text_and_are_left_out(tiny):
    model, tok, path = tiny
    gen = load_gpt_checkpoint(path)
    full, reason = gen.generate_text("The", max_new_tokens=20, temperature=0)
    assert reason == "length" and full == tok.decode(reference(model, tok, "The", 20))
    stop = full[6:9]                                          # a string the greedy text contains
    cut = full.index(stop)
    pieces, reason = run(gen, "The", max_new_tokens=20, temperature=0, stop=[stop, "\u2603 never"])
    assert "".join(pieces) == full[:cut] and reason == "stop"
    for i in range(len(pieces)):                              # no piece was sent that the stop string retracts
        assert full[:cut].startswith("".join(pieces[:i + 1]))
    assert gen.generate_text("The", max_new_tokens=20, temperature=0, stop="\u2603 never") == (full, "length")


def test_generation_past_the_context_goes_on(tiny):
    model, tok, path = tiny
    gen = load_gpt_checkpoint(path)
    prompt = "Shall I compare thee"
    n_prompt = len(tok.encode(prompt))
    text, reason = gen.generate_text(prompt, max_new_tokens=CONTEXT + 10, temperature=0)
    first = reference(model, tok, prompt, CONTEXT - n_prompt)
    assert tok.eos_token_id not in first
    assert reason == "length" and text.startswith(tok.decode(first)) and len(text) > len(tok.decode(first))
    long_prompt = " ".join(["thee"] * 3 * CONTEXT)            # longer than the context: its end is kept
    assert gen.generate_text(long_prompt, max_new_tokens=5, temperature=0)[1] in ("length", "stop")


def test_empty_prompt_starts_from_end_of_text(tiny):
    model, tok, path = tiny
    text, _ = load_gpt_checkpoint(path).generate_text("", max_new_tokens=6, temperature=0)
    ids = rtx.tensor([[tok.eos_token_id]], dtype=rtx.int64)
    new = generate(model, ids, max_new_tokens=6)[0, 1:].tolist()
    assert text == text_of(tok, new)


def test_threads_share_one_generator(tiny):
    _, _, path = tiny
    gen = load_gpt_checkpoint(path)
    params = dict(max_new_tokens=8, temperature=1.0, seed=5)
    expected = gen.generate_text("Once upon", **params)
    results = []
    threads = [threading.Thread(target=lambda: results.append(gen.generate_text("Once upon", **params)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3


@pytest.mark.parametrize("params, err, match", [
    (dict(max_new_tokens=-1), ValueError, "max_new_tokens must be >= 0, got -1"),
    (dict(max_new_tokens=2.5), TypeError, "max_new_tokens must be an int, got float"),
    (dict(temperature=-0.5), ValueError, "temperature must be >= 0"),
    (dict(temperature="hot"), TypeError, "temperature must be a number, got str"),
    (dict(top_p=0), ValueError, r"top_p must be in \(0, 1\], got 0"),
    (dict(top_p=float("nan")), ValueError, "top_p must be finite"),
    (dict(top_k=-3), ValueError, "top_k must be >= 0"),
    (dict(seed="x"), TypeError, "seed must be an int"),
    (dict(stop=[""]), ValueError, "stop must be a non-empty string or a list of them"),
    (dict(stop=5), ValueError, "stop must be"),
    (dict(beams=2), TypeError, "beams"),
])
def test_bad_parameters_raise_at_the_call(tiny, params, err, match):
    gen = load_gpt_checkpoint(tiny[2])
    with pytest.raises(err, match=match):
        gen.stream_text("Hi", **params)                       # before any iteration
    with pytest.raises(TypeError, match="prompt must be a str, got list"):
        gen.stream_text([1, 2])


def test_load_text_generator_finds_the_entry_point(tiny, tmp_path):
    streaming = pytest.importorskip("rtx.streaming")
    _, tok, path = tiny
    gen = streaming.load_text_generator(path)
    assert isinstance(gen, GPTTextGenerator) and isinstance(gen, streaming.TextGenerator)
    assert gen.generate_text("To be", max_new_tokens=4, temperature=0) == \
        load_gpt_checkpoint(path).generate_text("To be", max_new_tokens=4, temperature=0)
    other = tmp_path / "other.rtx"
    rtx.save({"format": "someone-else/3", "weights": rtx.zeros(2)}, other)
    with pytest.raises(ValueError, match=r"no loader for checkpoint format 'someone-else/3'.*rtx-nlg-gpt/1"):
        streaming.load_text_generator(other)
    with pytest.raises(ValueError, match="is not an rtx-nlg-gpt/1 checkpoint"):
        load_gpt_checkpoint(other, checkpoint=rtx.load(other))


def test_streams_over_sse(tiny):
    """End to end through rtx.streaming.sse_stream, as an ASGI app called by httpx."""
    streaming = pytest.importorskip("rtx.streaming")
    httpx = pytest.importorskip("httpx")
    import asyncio
    import json

    from starlette.applications import Starlette
    from starlette.routing import Route

    gen = load_gpt_checkpoint(tiny[2])

    async def route(request):
        body = await request.json()
        return streaming.sse_stream(request, lambda: gen.stream_text(body["prompt"], **body["params"]))

    async def call(payload):
        app = Starlette(routes=[Route("/g", route, methods=["POST"])])
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.post("/g", json=payload)

    params = dict(max_new_tokens=8, temperature=0.7, seed=3)
    r = asyncio.run(call({"prompt": "Once upon", "params": params}))
    assert r.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    text, reason = gen.generate_text("Once upon", **params)
    assert [e["index"] for e in events[:-1]] == list(range(len(events) - 1))
    assert "".join(e["text"] for e in events[:-1]) == text
    assert events[-1] == {"finish_reason": reason, "text": text}
    assert r.text.endswith("data: [DONE]\n\n")
