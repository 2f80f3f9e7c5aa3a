"""generate / stream / stream_text: decoding loops over any causal LM of rtx's interface.

The model is called as `model(input_ids, attention_mask=..., past_key_values=..., use_cache=...)`
and returns an object with `.logits` (batch, seq, vocab) and `.past_key_values` (a KV cache the
next call extends, or None): rtx.transformers' GPT-2 and Llama, or anything shaped like them.

- The prompt goes through the model once; every later step feeds only the newest token with the
  cache (use_cache=False recomputes the whole sequence instead: same tokens, for comparison).
- Batched prompts of different lengths are left-padded; attention_mask (batch, past + new) is
  then passed on every call, so the model masks the padding and counts positions from the first
  real token (as HF's generate does through position_ids). Without padding no mask is passed:
  positions then continue from the cache length, which is the same, and the model skips its
  mask work.
- Finished rows (eos, stop string) are filled with pad_token_id until every row is done or
  max_new_tokens is reached; the result holds the prompt and the new tokens, as HF's.
- Randomness comes from an rtx.Generator (default: the device's default stream, so
  rtx.manual_seed(s) also fixes it): the same seed gives the same tokens.
"""
from __future__ import annotations

import numpy as np

from rtx.extend import Tensor, raw, wrap
from rtx.nlg.generation import processors as P
from rtx.nlg.generation.config import GenerationConfig

__all__ = ["generate", "stream", "stream_text"]


# ==== public entry points ==========================================================================

def generate(model, input_ids, attention_mask=None, generation_config: GenerationConfig | None = None, *,
             generator=None, tokenizer=None, **kwargs):
    """Continue each prompt; returns an int64 Tensor (batch * num_return_sequences, prompt + new).

    input_ids: int64 Tensor (batch, seq) (or a list of lists, or one list); attention_mask: 1 for
    real tokens, 0 for (left) padding, default all ones. Options: a GenerationConfig and/or its
    fields as keywords (max_new_tokens=, do_sample=, temperature=, top_k=, top_p=,
    repetition_penalty=, num_beams=, length_penalty=, early_stopping=, eos_token_id=,
    stop_strings=, ...). tokenizer: needed for stop_strings. generator: an rtx.Generator."""
    cfg, ids, mask, gen = _setup(model, input_ids, attention_mask, generation_config, generator, kwargs)
    stopper = _StopChecker(tokenizer, cfg.stops)
    if cfg.num_beams > 1:
        out = _beam_search(model, ids, mask, cfg, stopper)
        return _tensor(out)
    if cfg.num_return_sequences > 1:
        xp = _xp(ids)
        ids, mask = xp.repeat(ids, cfg.num_return_sequences, axis=0), xp.repeat(mask, cfg.num_return_sequences, axis=0)
    state = _SampleState(ids, mask)
    for _ in _sample_steps(model, state, cfg, gen, stopper):
        pass
    return _tensor(state.ids)


def stream(model, input_ids, attention_mask=None, generation_config: GenerationConfig | None = None, *,
           generator=None, tokenizer=None, **kwargs):
    """Like generate (greedy or sampling), but an iterator: yields each step's new tokens as an
    int64 Tensor (batch,) as soon as they are chosen (finished rows get pad_token_id). The tokens
    are those generate returns for the same arguments and seed. Bad options raise at the call,
    before anything runs."""
    cfg, ids, mask, gen = _setup(model, input_ids, attention_mask, generation_config, generator, kwargs)
    if cfg.num_beams > 1:
        raise ValueError("stream: beam search cannot stream (a beam's earlier tokens can still change); use "
                         "generate(num_beams=...) or num_beams=1")
    if cfg.num_return_sequences > 1:
        raise ValueError("stream: num_return_sequences > 1 is not supported; repeat the prompt in the batch")
    steps = _sample_steps(model, _SampleState(ids, mask), cfg, gen, _StopChecker(tokenizer, cfg.stops))
    return (_tensor(step_tokens) for step_tokens in steps)


def stream_text(model, tokenizer, prompt, generation_config: GenerationConfig | None = None, *,
                generator=None, device=None, ids_out: list | None = None, **kwargs):
    """Yield the continuation of one prompt (a str, or a list of token ids) as text pieces while it
    is generated. A piece is held back while its last character is still incomplete (a multi-byte
    character split over tokens), so the pieces join to exactly tokenizer.decode(new tokens).
    ids_out: a list that receives the new token ids as they come."""
    import rtx
    ids = tokenizer.encode(prompt) if isinstance(prompt, str) else [int(i) for i in prompt]
    ids = rtx.tensor([ids], dtype=rtx.int64)
    if device is not None:
        ids = ids.to(device)
    new: list[int] = [] if ids_out is None else ids_out
    emitted = ""
    for tok in stream(model, ids, generation_config=generation_config, generator=generator, tokenizer=tokenizer,
                      **kwargs):
        new.append(int(tok.tolist()[0]))
        text = tokenizer.decode(new)
        if text.endswith("\ufffd"):
            continue
        if len(text) > len(emitted):
            yield text[len(emitted):]
            emitted = text
    text = tokenizer.decode(new)
    if len(text) > len(emitted):
        yield text[len(emitted):]


# ==== setup ========================================================================================

def _setup(model, input_ids, attention_mask, generation_config, generator, kwargs):
    if not callable(model):
        raise TypeError(f"generate: model must be callable as model(input_ids, attention_mask=..., "
                        f"past_key_values=..., use_cache=...), got {type(model).__name__}")
    cfg = generation_config if generation_config is not None else GenerationConfig()
    if not isinstance(cfg, GenerationConfig):
        raise TypeError(f"generation_config must be a GenerationConfig, got {type(cfg).__name__}")
    defaults = {}
    if cfg.eos_token_id is None and "eos_token_id" not in kwargs:
        eos = _model_default(model, "eos_token_id")
        if eos is not None:
            defaults["eos_token_id"] = eos
    if cfg.pad_token_id is None and "pad_token_id" not in kwargs:
        pad = _model_default(model, "pad_token_id")
        if pad is not None:
            defaults["pad_token_id"] = pad
    cfg = cfg.update(**defaults, **kwargs)
    ids = _as_array(input_ids, "input_ids")
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise ValueError(f"generate: input_ids must be (batch, seq) with seq >= 1, got shape {tuple(ids.shape)}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"generate: input_ids must hold integer token ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    xp = _xp(ids)
    if attention_mask is None:
        mask = xp.ones(ids.shape, dtype=np.int64)
    else:
        mask = _as_array(attention_mask, "attention_mask")
        if mask.ndim == 1:
            mask = mask[None]
        if tuple(mask.shape) != tuple(ids.shape):
            raise ValueError(f"generate: attention_mask shape {tuple(mask.shape)} must equal input_ids shape "
                             f"{tuple(ids.shape)}")
        mask = mask.astype(np.int64)
        if bool((mask.sum(axis=1) == 0).any()):
            raise ValueError("generate: a row of attention_mask is all zeros (a prompt with no real token)")
    gen = generator
    if gen is None and cfg.do_sample:
        import rtx.runtime as rt
        gen = rt.generator_for("cpu" if xp is np else f"cuda:{ids.device.id}")
    return cfg, ids, mask, gen


def _model_default(model, name):
    for holder in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        v = getattr(holder, name, None) if holder is not None else None
        if v is not None:
            return v
    return None


def _as_array(x, name):
    if isinstance(x, Tensor):
        return raw(x)
    if isinstance(x, (list, tuple)):
        try:
            return np.asarray(x, dtype=np.int64)
        except ValueError:
            raise ValueError(f"generate: {name} as a list must be rectangular (pad the prompts, e.g. with "
                             f"tokenizer(texts), which left-pads)") from None
    if hasattr(x, "__array__") or hasattr(x, "__cuda_array_interface__"):
        return x
    raise TypeError(f"generate: {name} must be a Tensor or a list of token ids, got {type(x).__name__}")


def _xp(a):
    from rtx.runtime import array_module
    return array_module(a)


def _tensor(arr):
    return wrap(arr)


def _forward(model, ids, mask, past, use_cache):
    """One model call; returns (last-position scores as float32/64 array (batch, vocab), cache).
    mask None: no padding anywhere (the model then counts positions from the cache length, which
    is the same, and skips its mask work)."""
    mask = None if mask is None else _tensor(mask)
    if use_cache:
        out = model(_tensor(ids), attention_mask=mask, past_key_values=past, use_cache=True)
    else:
        out = model(_tensor(ids), attention_mask=mask)
    logits = getattr(out, "logits", None)
    if logits is None:
        raise TypeError(f"generate: the model must return an object with .logits (batch, seq, vocab), got "
                        f"{type(out).__name__}")
    if logits.ndim != 3 or logits.shape[0] != ids.shape[0] or logits.shape[1] != ids.shape[1]:
        raise ValueError(f"generate: the model returned logits of shape {tuple(logits.shape)} for input_ids "
                         f"{tuple(ids.shape)}; expected (batch, seq, vocab)")
    scores = raw(logits)[:, -1, :]
    if scores.dtype not in (np.float32, np.float64):
        scores = scores.astype(np.float32)
    return scores, (getattr(out, "past_key_values", None) if use_cache else None)


def _process(scores, ids, mask, cfg, step, sampling):
    scores = P.repetition_penalty(scores, ids, mask, cfg.repetition_penalty)
    if step < cfg.min_new_tokens:
        scores = P.suppress_tokens(scores, cfg.eos_ids)
    if sampling:
        scores = P.temperature(scores, cfg.temperature)
        scores = P.top_k_filter(scores, cfg.top_k)
        scores = P.top_p_filter(scores, cfg.top_p)
    return scores


class _StopChecker:
    """Finds stop strings in the generated text. Each token decodes to at least one byte, so a stop
    string of n bytes that the newest token completes lies within the last n + 1 tokens."""

    def __init__(self, tokenizer, stops):
        self.stops = stops
        if stops and tokenizer is None:
            raise ValueError("generate: stop_strings needs the tokenizer: generate(..., tokenizer=tok)")
        self.tokenizer = tokenizer
        self.window = max((len(s.encode("utf-8", errors="surrogatepass")) for s in stops), default=0) + 1

    def __bool__(self):
        return bool(self.stops)

    def hit(self, generated: list[int]) -> bool:
        tail = self.tokenizer.decode(generated[-self.window:])
        return any(s in tail for s in self.stops)


# ==== greedy and sampling ==========================================================================

class _SampleState:
    def __init__(self, ids, mask):
        self.ids, self.mask = ids, mask
        self.prompt_len = ids.shape[1]


def _sample_steps(model, state, cfg, gen, stopper):
    """Yields the (batch,) array of each step's tokens, extending state.ids / state.mask."""
    import rtx
    xp = _xp(state.ids)
    b = state.ids.shape[0]
    pad = cfg.pad_id()
    eos = xp.asarray(cfg.eos_ids, dtype=np.int64) if cfg.eos_ids else None
    unfinished = xp.ones(b, dtype=bool)
    padded = not bool(state.mask.all())
    past = None
    with rtx.no_grad():
        for step in range(cfg.max_new_tokens):
            mask = state.mask if padded else None
            if past is None:
                scores, past = _forward(model, state.ids, mask, None, cfg.use_cache)
            else:
                scores, past = _forward(model, state.ids[:, -1:], mask, past, True)
            scores = _process(scores, state.ids, state.mask, cfg, step, cfg.do_sample)
            nxt = P.sample(scores, gen) if cfg.do_sample else xp.argmax(scores, axis=-1).astype(np.int64)
            nxt = xp.where(unfinished, nxt, pad)
            state.ids = xp.concatenate([state.ids, nxt[:, None]], axis=1)
            state.mask = xp.concatenate([state.mask, xp.ones((b, 1), dtype=np.int64)], axis=1)
            if eos is not None:
                unfinished &= ~(nxt[:, None] == eos[None, :]).any(axis=1)
            if stopper:
                rows = state.ids[:, state.prompt_len:].tolist()
                done = [bool(u) and stopper.hit(r) for u, r in zip(unfinished.tolist(), rows)]
                unfinished &= ~xp.asarray(done, dtype=bool)
            yield nxt
            if not bool(unfinished.any()):
                return


# ==== beam search ==================================================================================

class _Hypotheses:
    """The best finished beams of one prompt (HF's BeamHypotheses): score = sum of log-probs /
    (generated length ** length_penalty), the length counting the finishing token."""

    def __init__(self, num_beams, length_penalty, early_stopping, max_new_tokens):
        self.num_beams, self.length_penalty = num_beams, length_penalty
        self.early_stopping, self.max_new_tokens = early_stopping, max_new_tokens
        self.beams: list[tuple[float, list[int]]] = []

    def score(self, sum_logprobs, length):
        return sum_logprobs / (max(length, 1) ** self.length_penalty)

    @property
    def worst(self):
        return min(s for s, _ in self.beams) if self.beams else -np.inf

    def add(self, tokens, sum_logprobs):
        s = self.score(sum_logprobs, len(tokens))
        if len(self.beams) < self.num_beams or s > self.worst:
            self.beams.append((s, tokens))
            if len(self.beams) > self.num_beams:
                self.beams.remove(min(self.beams, key=lambda x: x[0]))

    def is_done(self, best_running_sum, cur_len):
        """No running beam can still beat the worst kept hypothesis (HF's rules)."""
        if len(self.beams) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        if self.early_stopping == "never" and self.length_penalty > 0:
            best = self.score(best_running_sum, self.max_new_tokens)
        else:
            best = self.score(best_running_sum, cur_len)
        return self.worst >= best


def _beam_search(model, ids, mask, cfg, stopper):
    import rtx
    xp = _xp(ids)
    batch, prompt_len = ids.shape
    k = cfg.num_beams
    pad = cfg.pad_id()
    eos = set(cfg.eos_ids)
    ids = xp.repeat(ids, k, axis=0)
    mask = xp.repeat(mask, k, axis=0)
    # beams of one prompt start identical: only the first may expand at step 0
    beam_scores = np.zeros((batch, k))
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.reshape(-1)
    hyps = [_Hypotheses(k, cfg.length_penalty, cfg.early_stopping, cfg.max_new_tokens) for _ in range(batch)]
    done = [False] * batch
    padded = not bool(mask.all())
    past = None
    with rtx.no_grad():
        for step in range(cfg.max_new_tokens):
            if past is None:
                scores, past = _forward(model, ids, mask if padded else None, None, cfg.use_cache)
            else:
                scores, past = _forward(model, ids[:, -1:], mask if padded else None, past, True)
            logp = P.log_softmax(scores.astype(np.float64))
            logp = _process(logp, ids, mask, cfg, step, sampling=False)
            logp = logp.get() if hasattr(logp, "get") else np.asarray(logp)
            vocab = logp.shape[-1]
            total = (logp + beam_scores[:, None]).reshape(batch, k * vocab)
            gen_rows = (ids.get() if hasattr(ids, "get") else ids)[:, prompt_len:].tolist()
            new_src, new_tok, new_scores = [], [], []
            for i in range(batch):
                if done[i]:  # keep the row shape: dummy beams that are never read
                    new_src += [i * k] * k
                    new_tok += [pad] * k
                    new_scores += [0.0] * k
                    continue
                order = np.argsort(-total[i], kind="stable")[:2 * k]
                chosen = 0
                for rank, flat in enumerate(order):
                    src, tok = i * k + int(flat) // vocab, int(flat) % vocab
                    s = float(total[i, flat])
                    if s == -np.inf:
                        break
                    seq = gen_rows[src] + [tok]
                    if tok in eos or (stopper and stopper.hit(seq)):
                        if rank < k:  # HF: a finishing token outside the top num_beams is not kept
                            hyps[i].add(seq, s)
                        continue
                    new_src.append(src)
                    new_tok.append(tok)
                    new_scores.append(s)
                    chosen += 1
                    if chosen == k:
                        break
                while chosen < k:  # fewer live candidates than beams (tiny vocabularies)
                    new_src.append(i * k)
                    new_tok.append(pad)
                    new_scores.append(-np.inf)
                    chosen += 1
                best_running = max(new_scores[-k:])
                done[i] = best_running == -np.inf or hyps[i].is_done(best_running, step + 1)
            beam_scores = np.asarray(new_scores, dtype=np.float64)
            src_idx = xp.asarray(new_src, dtype=np.int64)
            ids = xp.concatenate([ids[src_idx], xp.asarray(new_tok, dtype=np.int64)[:, None]], axis=1)
            mask = xp.concatenate([mask[src_idx], xp.ones((ids.shape[0], 1), dtype=np.int64)], axis=1)
            if past is not None:
                _reorder(past, src_idx)
            if all(done):
                break
    # beams still running at the end compete with the finished ones
    gen_rows = (ids.get() if hasattr(ids, "get") else ids)[:, prompt_len:].tolist()
    for i in range(batch):
        if done[i] and hyps[i].beams:
            continue
        for j in range(k):
            s = beam_scores[i * k + j]
            if s > -np.inf:
                hyps[i].add(gen_rows[i * k + j], s)
        if not hyps[i].beams:  # nothing could be generated (every continuation had probability 0)
            hyps[i].beams.append((-np.inf, []))
    prompts = (ids.get() if hasattr(ids, "get") else ids)[::k, :prompt_len]
    rows = []
    for i in range(batch):
        best = sorted(hyps[i].beams, key=lambda x: -x[0])[:cfg.num_return_sequences]
        rows += [(i, toks) for _, toks in best]
    width = max(len(t) for _, t in rows)
    out = np.full((len(rows), prompt_len + width), pad, dtype=np.int64)
    for r, (i, toks) in enumerate(rows):
        out[r, :prompt_len] = prompts[i]
        out[r, prompt_len:prompt_len + len(toks)] = toks
    return xp.asarray(out)


def _reorder(past, idx):
    """Pick cache rows for the chosen beams: KVCache.reorder, HF's reorder_cache, or a tuple of
    per-layer (key, value) tensors."""
    if hasattr(past, "reorder"):
        past.reorder(_tensor(idx))
    elif hasattr(past, "reorder_cache"):
        past.reorder_cache(_tensor(idx))
    else:
        raise TypeError(f"beam search: the model's cache ({type(past).__name__}) has no reorder(beam_idx); "
                        f"use rtx.transformers.KVCache or pass use_cache=False")
