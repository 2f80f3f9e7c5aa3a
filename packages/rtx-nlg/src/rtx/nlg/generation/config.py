"""GenerationConfig: Hugging Face's generation options, by the same names and defaults."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass
class GenerationConfig:
    """How `generate` / `stream` pick tokens.

    Decoding: do_sample=False is greedy (temperature, top_k, top_p are then ignored, as in HF);
    do_sample=True samples from softmax(scores / temperature) after top-k and top-p filtering;
    num_beams > 1 is beam search (length_penalty, early_stopping, num_return_sequences).
    repetition_penalty (HF semantics: a token already in the sequence has its positive logit
    divided, its negative logit multiplied by the penalty) applies in every mode.
    Stopping: max_new_tokens; eos_token_id (an id or a list); stop_strings (needs the
    tokenizer passed to generate). min_new_tokens suppresses eos until that many tokens exist.
    pad_token_id fills finished rows (default: the first eos id, else 0).
    use_cache=False recomputes the whole sequence each step (for comparison: same tokens, slower).
    """

    max_new_tokens: int = 20
    min_new_tokens: int = 0
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    num_return_sequences: int = 1
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None
    stop_strings: str | list[str] | None = None
    use_cache: bool = True

    def update(self, **kwargs) -> GenerationConfig:
        """A copy with some fields changed; an unknown name is an error (a typo must not be ignored)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"generate: unknown generation option(s) {unknown}; known: {sorted(names)}")
        cfg = replace(self, **kwargs)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def eos_ids(self) -> list[int]:
        e = self.eos_token_id
        if e is None:
            return []
        return [int(e)] if isinstance(e, int) or hasattr(e, "__index__") else [int(x) for x in e]

    @property
    def stops(self) -> list[str]:
        s = self.stop_strings
        if s is None:
            return []
        return [s] if isinstance(s, str) else list(s)

    def pad_id(self) -> int:
        if self.pad_token_id is not None:
            return int(self.pad_token_id)
        return self.eos_ids[0] if self.eos_ids else 0

    def validate(self) -> None:
        def bad(name, expected):
            raise ValueError(f"GenerationConfig.{name} must be {expected}, got {getattr(self, name)!r}")

        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 0:
            bad("max_new_tokens", "an int >= 0")
        if not isinstance(self.min_new_tokens, int) or self.min_new_tokens < 0:
            bad("min_new_tokens", "an int >= 0")
        if self.do_sample and not self.temperature > 0:
            bad("temperature", "> 0 when sampling (use do_sample=False for greedy decoding)")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 0):
            bad("top_k", "None or an int >= 0 (0 disables it)")
        if not 0.0 < self.top_p <= 1.0:
            bad("top_p", "in (0, 1]")
        if not self.repetition_penalty > 0:
            bad("repetition_penalty", "> 0 (1.0 disables it)")
        if not isinstance(self.num_beams, int) or self.num_beams < 1:
            bad("num_beams", "an int >= 1")
        if self.early_stopping not in (True, False, "never"):
            bad("early_stopping", "True, False or 'never'")
        if not isinstance(self.num_return_sequences, int) or self.num_return_sequences < 1:
            bad("num_return_sequences", "an int >= 1")
        if self.num_return_sequences > self.num_beams and not self.do_sample:
            bad("num_return_sequences", f"<= num_beams ({self.num_beams}) for greedy or beam search")
        if self.num_beams > 1 and self.do_sample:
            raise ValueError("GenerationConfig: beam search with sampling (num_beams > 1 and do_sample=True) is not "
                             "supported; use one or the other")
        for s in self.stops:
            if not isinstance(s, str) or not s:
                raise ValueError(f"GenerationConfig.stop_strings must hold non-empty strings, got {s!r}")
