"""Generation on tiny causal LMs whose logits are known, so every expected token is computed by
hand or by a plain loop written here: greedy, repetition penalty, the sampling filters, seeded
sampling, beam search, eos / stop strings, left-padded batches, the KV cache, streaming."""
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import rtx
from rtx.nlg import CharTokenizer, GenerationConfig, generate, stream, stream_text
from rtx.nlg.generation import processors as P


@dataclass
class Out:
    logits: Any
    past_key_values: Any = None


class Bigram:
    """logits at a position = table[token at that position]; its cache only counts positions."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float32)
        self.calls = []

    def __call__(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False):
        ids = input_ids.numpy()
        self.calls.append((ids.shape[1], past_key_values is not None))
        cache = None
        if use_cache:
            cache = past_key_values or BigramCache()
            cache.n += ids.shape[1]
        return Out(rtx.from_numpy(self.table[ids]), cache)


class BigramCache:
    def __init__(self):
        self.n = 0

    def reorder(self, idx):
        pass


class Stateful:
    """A model whose next-token scores depend on the whole real history, on positions counted from
    the attention mask, and on a cache that must follow beam reordering:
        logits[b, t] = E[tok] + Pos[position] + 0.7 * (counts of the real tokens up to t) @ M
    position = number of real tokens before t (left padding does not count)."""

    def __init__(self, vocab=7, max_pos=64, seed=0):
        r = np.random.default_rng(seed)
        self.E = r.normal(size=(vocab, vocab)).astype(np.float64)
        self.Pos = r.normal(size=(max_pos, vocab)).astype(np.float64)
        self.M = r.normal(size=(vocab, vocab)).astype(np.float64)
        self.vocab = vocab
        self.calls = []

    def __call__(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False):
        ids = input_ids.numpy()
        b, n = ids.shape
        past = past_key_values
        held = 0 if past is None else past.length
        # no mask: no padding, positions continue from the cache length (as rtx.transformers')
        mask = np.ones((b, held + n), np.int64) if attention_mask is None else attention_mask.numpy()
        self.calls.append((n, past_key_values is not None))
        counts = np.zeros((b, self.vocab)) if past is None else past.counts.copy()
        new_mask = mask[:, -n:]
        pos = (np.cumsum(mask, axis=1) - 1)[:, -n:]
        out = np.empty((b, n, self.vocab))
        for t in range(n):
            counts[np.arange(b), ids[:, t]] += new_mask[:, t]
            out[:, t] = self.E[ids[:, t]] + self.Pos[np.maximum(pos[:, t], 0)] + 0.7 * counts @ self.M
        cache = None
        if use_cache:
            cache = past if past is not None else StatefulCache()
            cache.counts = counts
            cache.length = held + n
        return Out(rtx.from_numpy(out.astype(np.float32)), cache)


class StatefulCache:
    counts = None
    length = 0

    def reorder(self, idx):
        self.counts = self.counts[idx.numpy()]


def reference_greedy(model, prompt, n, eos=None):
    """Greedy by the definition: rerun the unpadded sequence, take the argmax."""
    seq = list(prompt)
    for _ in range(n):
        with rtx.no_grad():
            logits = model(rtx.tensor([seq]), attention_mask=rtx.tensor([[1] * len(seq)])).logits.numpy()[0, -1]
        seq.append(int(np.argmax(logits)))
        if eos is not None and seq[-1] == eos:
            break
    return seq


# ---- greedy, cache, batching -----------------------------------------------------------------------

def test_greedy_by_hand():
    # 0 -> 2 -> 1 -> 3 -> 3 ...
    table = [[0, 1, 5, 2], [0, 0, 1, 4], [1, 3, 2, 0], [0, 0, 0, 1]]
    m = Bigram(table)
    out = generate(m, rtx.tensor([[0]]), max_new_tokens=5)
    assert out.tolist() == [[0, 2, 1, 3, 3, 3]]
    assert out.dtype == rtx.int64
    # the prompt goes through once, then one token per call with the cache
    assert m.calls == [(1, False)] + [(1, True)] * 4


def test_no_cache_recomputes_and_agrees():
    m = Stateful()
    a = generate(m, rtx.tensor([[1, 2, 3]]), max_new_tokens=6)
    assert m.calls == [(3, False)] + [(1, True)] * 5
    m.calls.clear()
    b = generate(m, rtx.tensor([[1, 2, 3]]), max_new_tokens=6, use_cache=False)
    assert m.calls == [(n, False) for n in range(3, 9)]
    assert a.tolist() == b.tolist() == [reference_greedy(m, [1, 2, 3], 6)]


def test_batched_left_padding_equals_single_prompts():
    m = Stateful()
    prompts = [[1, 2, 3, 4, 5], [6], [2, 2, 0]]
    width = max(map(len, prompts))
    pad = 0
    ids = [[pad] * (width - len(p)) + p for p in prompts]
    mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
    out = generate(m, rtx.tensor(ids), attention_mask=rtx.tensor(mask), max_new_tokens=8, pad_token_id=pad)
    for row, p, i in zip(out.tolist(), prompts, ids):
        assert row[:width] == i
        assert row[width - len(p):] == reference_greedy(m, p, 8)


def test_eos_finishes_rows_and_pads():
    # token 3 is eos; row 0 reaches it at once, row 1 after two tokens
    table = [[0, 0, 0, 9], [0, 0, 9, 0], [0, 0, 0, 9], [9, 0, 0, 0]]
    m = Bigram(table)
    out = generate(m, rtx.tensor([[0], [1]]), max_new_tokens=10, eos_token_id=3, pad_token_id=1)
    assert out.tolist() == [[0, 3, 1], [1, 2, 3]]
    # pad_token_id defaults to the first eos id; a list of eos ids is accepted
    out = generate(m, rtx.tensor([[0], [1]]), max_new_tokens=10, eos_token_id=[3, 2])
    assert out.tolist() == [[0, 3], [1, 2]]
    # min_new_tokens holds eos back
    out = generate(m, rtx.tensor([[0]]), max_new_tokens=10, eos_token_id=3, min_new_tokens=2)
    assert out.tolist() == [[0, 0, 0, 3]]


def test_eos_from_model_config():
    class Cfg:
        eos_token_id = 3
        pad_token_id = None

    m = Bigram([[0, 0, 0, 9], [0, 0, 9, 0], [0, 0, 0, 9], [9, 0, 0, 0]])
    m.config = Cfg()
    assert generate(m, rtx.tensor([[1]]), max_new_tokens=10).tolist() == [[1, 2, 3]]


def test_repetition_penalty_by_hand():
    # positive logits are divided: token 0 (2.0 -> 1.0) loses to token 1 (1.5)
    table = [[2.0, 1.5, -1.0], [0.2, 0.1, 3.0], [0.0, 0.0, 0.0]]
    m = Bigram(table)
    assert generate(m, rtx.tensor([[0]]), max_new_tokens=2).tolist() == [[0, 0, 0]]
    assert generate(m, rtx.tensor([[0]]), max_new_tokens=1, repetition_penalty=2.0).tolist() == [[0, 1]]
    # negative logits are multiplied: -1.0 -> -2.0 loses to -1.5
    table = [[-1.0, -1.5, -3.0], [0, 0, 0], [0, 0, 0]]
    assert generate(Bigram(table), rtx.tensor([[0]]), max_new_tokens=1, repetition_penalty=2.0).tolist() == [[0, 1]]
    # padding positions are not "seen": a padded 0 does not penalise token 0
    table = [[0, 0, 0], [2.0, 1.5, 0], [0, 0, 0]]
    out = generate(Bigram(table), rtx.tensor([[0, 1]]), attention_mask=rtx.tensor([[0, 1]]), max_new_tokens=1,
                   repetition_penalty=2.0)
    assert out.tolist() == [[0, 1, 0]]


def test_repetition_penalty_array_values():
    scores = np.array([[2.0, -1.0, 0.5, -3.0]], np.float32)
    got = P.repetition_penalty(scores, np.array([[0, 1, 1]]), np.array([[1, 1, 1]]), 1.25)
    np.testing.assert_allclose(got, [[1.6, -1.25, 0.5, -3.0]], rtol=1e-6)


# ---- the sampling filters and the sampler ---------------------------------------------------------

def test_temperature_top_k_top_p_values():
    s = np.array([[1.0, 3.0, 2.0, 3.0]])
    np.testing.assert_allclose(P.temperature(s, 0.5), [[2.0, 6.0, 4.0, 6.0]])
    assert P.top_k_filter(s, 2).tolist() == [[-np.inf, 3.0, -np.inf, 3.0]]
    assert P.top_k_filter(s, 3).tolist() == [[-np.inf, 3.0, 2.0, 3.0]]
    assert P.top_k_filter(s, 1).tolist() == [[-np.inf, 3.0, -np.inf, 3.0]]  # ties at the k-th stay (HF)
    assert P.top_k_filter(s, 0).tolist() == s.tolist() and P.top_k_filter(s, 99).tolist() == s.tolist()
    probs = np.array([[0.5, 0.3, 0.15, 0.05]])
    logits = np.log(probs)
    # ascending cumulative: 0.05, 0.20, 0.50, 1.00; drop those <= 1 - p
    kept = lambda p: np.isfinite(P.top_p_filter(logits, p)).tolist()[0]  # noqa: E731
    assert kept(0.9) == [True, True, True, False]
    assert kept(0.75) == [True, True, False, False]
    assert kept(0.4) == [True, False, False, False]
    assert kept(0.01) == [True, False, False, False]  # the most likely always stays
    assert kept(1.0) == [True] * 4


def test_sampler_frequencies_and_seed():
    probs = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    scores = np.tile(np.log(np.maximum(probs, 1e-300)), (40000, 1))
    scores[:, 4] = -np.inf
    draws = P.sample(scores, rtx.Generator().manual_seed(3))
    freq = np.bincount(draws, minlength=5) / len(draws)
    np.testing.assert_allclose(freq, probs, atol=0.01)
    assert freq[4] == 0
    again = P.sample(scores, rtx.Generator().manual_seed(3))
    assert (again == draws).all()


def test_sampling_is_deterministic_under_a_seed():
    m = Stateful(vocab=11)
    kw = dict(max_new_tokens=30, do_sample=True, temperature=1.3, top_k=8, top_p=0.95)
    a = generate(m, rtx.tensor([[1, 2]]), generator=rtx.Generator().manual_seed(7), **kw)
    b = generate(m, rtx.tensor([[1, 2]]), generator=rtx.Generator().manual_seed(7), **kw)
    c = generate(m, rtx.tensor([[1, 2]]), generator=rtx.Generator().manual_seed(8), **kw)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    rtx.manual_seed(5)
    d = generate(m, rtx.tensor([[1, 2]]), **kw)
    rtx.manual_seed(5)
    assert generate(m, rtx.tensor([[1, 2]]), **kw).tolist() == d.tolist()
    # cache or not, the same seed gives the same tokens
    e = generate(m, rtx.tensor([[1, 2]]), generator=rtx.Generator().manual_seed(7), use_cache=False, **kw)
    assert e.tolist() == a.tolist()


def test_sampling_follows_the_filtered_distribution():
    # one step from token 0: probs 0.5/0.3/0.15/0.05; top_k=2 leaves 0.5/0.3 -> 0.625/0.375
    table = np.log([[0.5, 0.3, 0.15, 0.05]] * 4)
    m = Bigram(table)
    out = generate(m, rtx.tensor([[0]] * 4000), max_new_tokens=1, do_sample=True, top_k=2,
                   generator=rtx.Generator().manual_seed(0))
    freq = np.bincount(out.numpy()[:, 1], minlength=4) / 4000
    np.testing.assert_allclose(freq, [0.625, 0.375, 0, 0], atol=0.03)
    # temperature 0.5 squares the probabilities: 0.25/0.09/0.0225/0.0025 normalised
    out = generate(m, rtx.tensor([[0]] * 4000), max_new_tokens=1, do_sample=True, top_k=None, temperature=0.5,
                   generator=rtx.Generator().manual_seed(1))
    p = np.array([0.25, 0.09, 0.0225, 0.0025])
    freq = np.bincount(out.numpy()[:, 1], minlength=4) / 4000
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.03)


def test_num_return_sequences_with_sampling():
    m = Stateful(vocab=11)
    out = generate(m, rtx.tensor([[1], [2]]), max_new_tokens=5, do_sample=True, num_return_sequences=3,
                   generator=rtx.Generator().manual_seed(0))
    assert out.shape == (6, 6) and out.numpy()[:3, 0].tolist() == [1, 1, 1]


# ---- beam search --------------------------------------------------------------------------------

S, A, B, C, E = range(5)
BEAM_TABLE = np.log([
    [0.01, 0.50, 0.40, 0.04, 0.05],  # after S
    [0.01, 0.33, 0.30, 0.26, 0.10],  # after A
    [0.01, 0.02, 0.02, 0.90, 0.05],  # after B
    [0.01, 0.04, 0.05, 0.10, 0.80],  # after C
    [0.20, 0.20, 0.20, 0.20, 0.20],  # after E
])


def test_beam_search_by_hand():
    m = Bigram(BEAM_TABLE)
    greedy = generate(m, rtx.tensor([[S]]), max_new_tokens=3, eos_token_id=E)
    assert greedy.tolist() == [[S, A, A, A]]  # 0.5 * 0.33 * 0.33 = 0.054
    # 2 beams: step 2 keeps BC (0.36) and AA (0.165); step 3 finishes BCE (0.288) > AAA (0.054)
    out = generate(m, rtx.tensor([[S]]), max_new_tokens=3, eos_token_id=E, num_beams=2, length_penalty=0.0,
                   num_return_sequences=2)
    assert out.tolist() == [[S, B, C, E], [S, A, A, A]]
    # length_penalty 1: scores are log-probs per token: BCE log(.288)/3 = -0.415 > AAA log(.05445)/3 = -0.970
    out = generate(m, rtx.tensor([[S]]), max_new_tokens=3, eos_token_id=E, num_beams=2)
    assert out.tolist() == [[S, B, C, E]]


def test_beam_search_length_penalty_prefers_short_or_long():
    # after S: eos at once (0.3) or a long path of 0.6 then near-certain tokens ending in eos
    table = np.log([
        [1e-3, 0.3, 0.6, 0.099, 1e-3],  # S: E=1 (0.3), A=2 (0.6)
        [0.2] * 5,                       # after E (not reached)
        [1e-3, 1e-3, 1e-3, 0.996, 1e-3],  # A -> B
        [1e-3, 0.5, 1e-3, 0.497, 1e-3],  # B -> E 0.5 or B 0.497
        [0.2] * 5,
    ])
    m = Bigram(table)
    # sum log-probs: [E] = log .3 = -1.20; [A, B, E] = log(.6 * .996 * .5) = -1.21 -> the short one
    short = generate(m, rtx.tensor([[0]]), max_new_tokens=3, eos_token_id=1, num_beams=2, length_penalty=0.0,
                     early_stopping=True)
    assert short.tolist() == [[0, 1]]  # as wide as the longest returned sequence (HF)
    # per token: -1.20 / 1 vs -1.21 / 3 -> the long one
    long = generate(m, rtx.tensor([[0]]), max_new_tokens=3, eos_token_id=1, num_beams=2, length_penalty=1.0)
    assert long.tolist() == [[0, 2, 3, 1]]


def test_beam_search_cache_reordering_matches_recompute():
    m = Stateful(vocab=9, seed=3)
    kw = dict(max_new_tokens=8, num_beams=3, num_return_sequences=3, eos_token_id=8)
    a = generate(m, rtx.tensor([[0, 0, 1, 2], [0, 3, 4, 5]]), attention_mask=rtx.tensor([[0, 0, 1, 1], [0, 1, 1, 1]]),
                 **kw)
    b = generate(m, rtx.tensor([[0, 0, 1, 2], [0, 3, 4, 5]]), attention_mask=rtx.tensor([[0, 0, 1, 1], [0, 1, 1, 1]]),
                 use_cache=False, **kw)
    assert a.tolist() == b.tolist()
    # each prompt alone gives its rows of the batch (left padding is invisible)
    alone = generate(m, rtx.tensor([[1, 2]]), **kw).tolist()
    assert [r[2:] for r in a.tolist()[:3]] == alone


def test_beam_search_one_beam_is_greedy_and_scores_are_best():
    m = Stateful(vocab=6, seed=5)
    prompt = [1, 2]
    beam = generate(m, rtx.tensor([prompt]), max_new_tokens=4, num_beams=4, length_penalty=0.0,
                    num_return_sequences=4).tolist()

    def logprob(seq):
        total = 0.0
        for i in range(len(prompt), len(seq)):
            lg = m(rtx.tensor([seq[:i]])).logits.numpy()[0, -1].astype(np.float64)
            total += lg[seq[i]] - math.log(np.exp(lg).sum())
        return total

    scores = [logprob(r) for r in beam]
    assert scores == sorted(scores, reverse=True)
    # exhaustive search over 6^4 continuations: the best beam is the best sequence
    best = max(((a, b, c, d) for a in range(6) for b in range(6) for c in range(6) for d in range(6)),
               key=lambda t: logprob(prompt + list(t)))
    assert beam[0] == prompt + list(best)


# ---- stop strings, streaming -------------------------------------------------------------------

def cycle_model(tok):
    """a -> b -> c -> . -> a ... with a large margin."""
    v = len(tok)
    table = np.zeros((v, v), np.float32)
    order = "abc."
    for i, ch in enumerate(order):
        table[tok.token_to_id(ch), tok.token_to_id(order[(i + 1) % 4])] = 10
    return Bigram(table)


def test_stop_strings():
    tok = CharTokenizer("abc.")
    m = cycle_model(tok)
    out = generate(m, rtx.tensor([tok.encode("a")]), max_new_tokens=20, stop_strings="c.", tokenizer=tok)
    assert tok.decode(out[0]) == "abc."
    # rows stop at different steps; the finished one is padded
    tok = CharTokenizer("abc.", special_tokens=["<pad>"], pad_token="<pad>")
    m = cycle_model(tok)
    enc = tok(["a", "c"], return_tensors="rtx")
    out = generate(m, enc.input_ids, max_new_tokens=20, stop_strings=["b", "xx"], tokenizer=tok,
                   pad_token_id=tok.pad_token_id)
    assert [tok.decode(r) for r in out] == ["ab<pad><pad>", "c.ab"]
    # a stop string inside the prompt does not stop generation at once
    out = generate(m, rtx.tensor([tok.encode("c.a")]), max_new_tokens=10, stop_strings="c.", tokenizer=tok)
    assert tok.decode(out[0]) == "c.abc."
    with pytest.raises(ValueError, match="needs the tokenizer"):
        generate(m, rtx.tensor([[0]]), stop_strings="c.")


def test_stop_strings_in_beam_search():
    tok = CharTokenizer("abc.")
    m = cycle_model(tok)
    out = generate(m, rtx.tensor([tok.encode("a")]), max_new_tokens=20, num_beams=2, stop_strings="c.",
                   tokenizer=tok)
    assert tok.decode(out[0]) == "abc."


def test_stream_yields_the_generate_tokens():
    m = Stateful(vocab=11)
    ids, mask = rtx.tensor([[0, 1, 2], [3, 4, 5]]), rtx.tensor([[0, 1, 1], [1, 1, 1]])
    kw = dict(max_new_tokens=7, do_sample=True, top_p=0.9)
    full = generate(m, ids, attention_mask=mask, generator=rtx.Generator().manual_seed(2), **kw)
    steps = list(stream(m, ids, attention_mask=mask, generator=rtx.Generator().manual_seed(2), **kw))
    assert len(steps) == 7 and all(s.shape == (2,) for s in steps)
    assert np.stack([s.numpy() for s in steps], 1).tolist() == full.numpy()[:, 3:].tolist()
    # an iterator: the model has run only as far as it was consumed
    m.calls.clear()
    it = stream(m, ids, max_new_tokens=100)
    next(it)
    next(it)
    assert len(m.calls) == 2
    with pytest.raises(ValueError, match="beam search cannot stream"):
        stream(m, ids, num_beams=2)


def test_stream_text_holds_back_split_characters():
    from rtx.nlg import ByteLevelBPETokenizer
    tok = ByteLevelBPETokenizer.train("x", vocab_size=256)  # bytes only: "é" takes two tokens
    e = tok.encode("é")
    assert len(e) == 2
    v = len(tok)
    table = np.zeros((v, v), np.float32)
    x = tok.encode("x")[0]
    table[x, e[0]] = 10
    table[e[0], e[1]] = 10
    table[e[1], x] = 10
    pieces = list(stream_text(Bigram(table), tok, "x", max_new_tokens=6))
    assert "".join(pieces) == "éxéx"
    assert all("\ufffd" not in p for p in pieces)
    assert pieces[:2] == ["é", "x"]


# ---- options and errors ---------------------------------------------------------------------------

def test_config_object_and_errors():
    m = Bigram(np.eye(3))
    cfg = GenerationConfig(max_new_tokens=2)
    assert generate(m, rtx.tensor([[1]]), generation_config=cfg).tolist() == [[1, 1, 1]]
    assert generate(m, [1], max_new_tokens=1).tolist() == [[1, 1]]  # a list prompt is one row
    with pytest.raises(TypeError, match="unknown generation option"):
        generate(m, rtx.tensor([[1]]), max_tokens=3)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        generate(m, rtx.tensor([[1]]), do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="top_p must be in"):
        generate(m, rtx.tensor([[1]]), top_p=1.5)
    with pytest.raises(ValueError, match="beam search with sampling"):
        generate(m, rtx.tensor([[1]]), num_beams=2, do_sample=True)
    with pytest.raises(ValueError, match="attention_mask shape"):
        generate(m, rtx.tensor([[1, 2]]), attention_mask=rtx.tensor([[1]]))
    with pytest.raises(ValueError, match="all zeros"):
        generate(m, rtx.tensor([[1, 2]]), attention_mask=rtx.tensor([[0, 0]]))
    with pytest.raises(TypeError, match="integer token ids"):
        generate(m, rtx.tensor([[1.0]]))
    with pytest.raises(ValueError, match="rectangular"):
        generate(m, [[1, 2], [1]])
    with pytest.raises(TypeError, match=r"\.logits"):
        generate(lambda ids, **kw: ids, rtx.tensor([[1]]))
    assert generate(m, rtx.tensor([[1]]), max_new_tokens=0).tolist() == [[1]]


# ---- with rtx.transformers' GPT-2 and its KVCache --------------------------------------------------

@pytest.fixture(scope="module")
def gpt2():
    from rtx.transformers import GPT2Config, GPT2LMHeadModel
    rtx.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                       eos_token_id=49, bos_token_id=49)).eval()
    with rtx.no_grad():  # larger weights than the 0.02-std init, so the tokens vary along the sequence
        for p in model.parameters():
            if p.ndim == 2:
                rtx.nn.init.normal_(p, std=0.4)
    return model


def test_gpt2_cache_and_no_cache_agree_with_the_definition(gpt2):
    ids = rtx.tensor([[3, 14, 15, 9]])
    a = generate(gpt2, ids, max_new_tokens=12, eos_token_id=[])
    b = generate(gpt2, ids, max_new_tokens=12, eos_token_id=[], use_cache=False)
    assert a.tolist() == b.tolist() == [reference_greedy(gpt2, [3, 14, 15, 9], 12)]
    assert len(set(a.tolist()[0][4:])) > 3
    # eos from the model's config ends the row (generation stops when every row is done)
    c = generate(gpt2, ids, max_new_tokens=12).tolist()[0]
    ref = reference_greedy(gpt2, [3, 14, 15, 9], 12, eos=49)
    assert c == ref and ref[-1] == 49 and len(c) < 16


def test_gpt2_left_padded_batch_equals_each_prompt(gpt2):
    prompts = [[5, 6, 7, 8, 9, 10], [11], [12, 13, 14]]
    width = max(map(len, prompts))
    ids = rtx.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = rtx.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    for kw in (dict(), dict(num_beams=3)):
        out = generate(gpt2, ids, attention_mask=mask, max_new_tokens=6, eos_token_id=[], **kw).tolist()
        for row, p in zip(out, prompts):
            alone = generate(gpt2, rtx.tensor([p]), max_new_tokens=6, eos_token_id=[], **kw).tolist()[0]
            assert row[width - len(p):] == alone


def test_gpt2_beam_search_reorders_the_kv_cache(gpt2):
    ids = rtx.tensor([[1, 2, 3], [4, 5, 6]])
    kw = dict(max_new_tokens=8, num_beams=4, num_return_sequences=2, eos_token_id=[])
    assert generate(gpt2, ids, **kw).tolist() == generate(gpt2, ids, use_cache=False, **kw).tolist()


def test_gpt2_seeded_sampling_and_stream(gpt2):
    ids = rtx.tensor([[1, 2, 3]])
    kw = dict(max_new_tokens=10, do_sample=True, temperature=0.9, top_k=20, top_p=0.9, repetition_penalty=1.2)
    a = generate(gpt2, ids, generator=rtx.Generator().manual_seed(11), **kw)
    assert generate(gpt2, ids, generator=rtx.Generator().manual_seed(11), **kw).tolist() == a.tolist()
    steps = [int(t.tolist()[0]) for t in stream(gpt2, ids, generator=rtx.Generator().manual_seed(11), **kw)]
    assert steps == a.tolist()[0][3:3 + len(steps)]
