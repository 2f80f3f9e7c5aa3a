"""A GPT checkpoint of `rtx nlg train` as a TextGenerator (rtx.streaming's protocol), for the server.

    gen = load_gpt_checkpoint("nlg_gpt.rtx")
    for piece in gen.stream_text("Shall I compare thee", max_new_tokens=40, temperature=0.8, seed=0):
        print(piece, end="")

rtx-nlg registers load_gpt_checkpoint under the checkpoint format "rtx-nlg-gpt/1" in the entry point
group `rtx.text_generators`, so `rtx.streaming.load_text_generator(path)` finds it without
rtx-streaming importing rtx-nlg.

Parameters follow the OpenAI completions API where it has them: temperature 0 is greedy decoding,
`stop` strings end the text and are not part of it, the iterator's return value is the finish
reason ("stop": end-of-text token or a stop string, "length": max_new_tokens reached).
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterator

import rtx
from rtx.nlg.generation import stream_text as _stream_text
from rtx.nlg.train import load_checkpoint

__all__ = ["GPTTextGenerator", "load_gpt_checkpoint", "FORMAT"]

FORMAT = "rtx-nlg-gpt/1"


class GPTTextGenerator:
    """A causal LM (rtx.transformers' GPT-2 or alike) and its tokenizer, streaming text.

    Safe to share between threads: every call has its own KV cache and random generator, and the
    model is only read."""

    def __init__(self, model, tokenizer, *, device="cpu"):
        self.model, self.tokenizer, self.device = model, tokenizer, device
        config = getattr(model, "config", None)
        self.context = int(getattr(config, "n_positions", 0) or getattr(config, "max_position_embeddings", 0) or 0)
        if self.context < 2:
            raise ValueError(f"GPTTextGenerator: the model's config must give its context length (n_positions), "
                             f"got {self.context}")
        eos = getattr(config, "eos_token_id", None)
        self.eos_ids = set() if eos is None else {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def stream_text(self, prompt: str, *, max_new_tokens: int = 16, temperature: float = 1.0,
                    top_k: int | None = None, top_p: float = 1.0, seed: int | None = None,
                    stop: str | list[str] | None = None) -> Iterator[str]:
        """An iterator of the text pieces that continue `prompt`; it returns the finish reason.

        max_new_tokens: tokens to generate at most (>= 0). temperature: 0 greedy, > 0 sampling
        from softmax(logits / temperature). top_k: keep the k most likely tokens (None or 0: all).
        top_p: nucleus sampling, in (0, 1]. seed: the same seed gives the same text (None: random).
        stop: a string or list of strings; generation ends before the first one and it is left out.
        A prompt longer than the model's context keeps its last half-context tokens; past the
        context, generation goes on from the last half of the text (GPT-2's positions are absolute).
        Bad parameters raise here, before any token is computed."""
        if not isinstance(prompt, str):
            raise TypeError(f"stream_text: prompt must be a str, got {type(prompt).__name__}")
        max_new_tokens = _int(max_new_tokens, "max_new_tokens", 0)
        temperature = _float(temperature, "temperature")
        if temperature < 0:
            raise ValueError(f"stream_text: temperature must be >= 0 (0: greedy), got {temperature}")
        top_k = 0 if top_k is None else _int(top_k, "top_k", 0)
        top_p = _float(top_p, "top_p")
        if not 0 < top_p <= 1:
            raise ValueError(f"stream_text: top_p must be in (0, 1], got {top_p}")
        if seed is not None:
            seed = _int(seed, "seed", 0)
        stops = _stops(stop)

        ids = self.tokenizer.encode(prompt)
        if not ids:  # GPT-2's convention: an empty prompt starts from the end-of-text token
            if not self.eos_ids:
                raise ValueError("stream_text: prompt is empty and the model has no end-of-text token to start from")
            ids = [min(self.eos_ids)]
        if temperature > 0:
            gen = rtx.Generator("cpu" if not str(self.device).startswith("cuda") else self.device)
            if seed is None:
                gen.seed()  # a fresh random seed for every call
            else:
                gen.manual_seed(seed)
            options = dict(do_sample=True, temperature=temperature, top_k=top_k or None, top_p=top_p)
        else:
            gen, options = None, dict(do_sample=False)
        return self._pieces(ids, max_new_tokens, options, gen, stops)

    def _pieces(self, ids, max_new_tokens, options, gen, stops):
        half = self.context // 2
        ids = ids[-half:] if len(ids) >= self.context else ids
        held = ""  # text that may be the start of a stop string: not sent until that is decided
        left = max_new_tokens
        while left > 0:
            n = min(left, self.context - len(ids))
            new: list[int] = []
            for piece in _stream_text(self.model, self.tokenizer, ids, generator=gen, device=self.device,
                                      ids_out=new, max_new_tokens=n, **options):
                if new[-1] in self.eos_ids:  # the end-of-text token's own text is not part of the answer
                    eos_text = self.tokenizer.decode([new[-1]])
                    piece = piece[:-len(eos_text)] if eos_text and piece.endswith(eos_text) else piece
                held += piece
                if stops:
                    cut = min((i for i in (held.find(s) for s in stops) if i >= 0), default=-1)
                    if cut >= 0:
                        if cut:
                            yield held[:cut]
                        return "stop"
                    keep = _pending_stop(held, stops)
                    send, held = held[:len(held) - keep], held[len(held) - keep:]
                else:
                    send, held = held, ""
                if send:
                    yield send
            if len(new) < n or (new and new[-1] in self.eos_ids):
                if held:
                    yield held
                return "stop"
            left -= n
            ids = (ids + new)[-half:]
        if held:
            yield held
        return "length"

    def generate_text(self, prompt: str, **params) -> tuple[str, str]:
        """(the whole continuation, finish reason): stream_text without streaming."""
        it = self.stream_text(prompt, **params)
        pieces = []
        while True:
            try:
                pieces.append(next(it))
            except StopIteration as end:
                return "".join(pieces), end.value


def load_gpt_checkpoint(path, *, checkpoint: dict | None = None, device="cpu") -> GPTTextGenerator:
    """A GPTTextGenerator from a checkpoint written by `rtx nlg train` (format "rtx-nlg-gpt/1").

    checkpoint: the file's content when the caller has already loaded it (rtx.streaming's
    load_text_generator does), so it is not read twice."""
    if checkpoint is None:
        model, tok, _ = load_checkpoint(path, device=device)
        return GPTTextGenerator(model, tok, device=device)
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        found = checkpoint.get("format") if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise ValueError(f"load_gpt_checkpoint: {os.fspath(path)!r} is not an {FORMAT} checkpoint (found {found!r})")
    from rtx.nlg.tokenizers import tokenizer_from_json
    from rtx.transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["model"])
    model.to(device).eval()
    return GPTTextGenerator(model, tokenizer_from_json(checkpoint["tokenizer"]), device=device)


def _pending_stop(text: str, stops: list[str]) -> int:
    """The length of the longest end of `text` that some stop string starts with (0: none)."""
    for k in range(min(len(text), max(len(s) for s in stops) - 1), 0, -1):
        tail = text[-k:]
        if any(s.startswith(tail) for s in stops):
            return k
    return 0


def _stops(stop) -> list[str]:
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, (list, tuple)) or not all(isinstance(s, str) and s for s in stops):
        raise ValueError(f"stream_text: stop must be a non-empty string or a list of them, got {stop!r}")
    return list(stops)


def _int(value, name, minimum) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"stream_text: {name} must be an int, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"stream_text: {name} must be >= {minimum}, got {value}")
    return value


def _float(value, name) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"stream_text: {name} must be a number, got {type(value).__name__} ({value!r})")
    if not math.isfinite(value):
        raise ValueError(f"stream_text: {name} must be finite, got {value}")
    return float(value)
