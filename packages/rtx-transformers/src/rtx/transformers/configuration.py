"""Config dataclasses, one per family, with Hugging Face's field names and defaults, reading
config.json as transformers 4.x and 5.x write it.

    cfg = GPT2Config(n_embd=64, n_layer=2, n_head=4)
    cfg = LlamaConfig.from_json_file("ckpt/config.json")     # 4.x or 5.x layout
    cfg.to_dict()                                            # what save_pretrained writes

The two layouts: transformers 4 writes RoPE as top-level `rope_theta` / `rope_scaling`;
transformers 5 writes `rope_parameters: {"rope_theta", "rope_type", "factor", ...}`. Both read
into `rope_theta` / `rope_scaling`, and `to_dict` writes back the layout that was read (the 4.x
one for configs made here, which transformers 4 and 5 both read). `id2label` gives BERT's
`num_labels`; `torch_dtype` / `dtype` are kept (see PreTrainedModel.from_pretrained's dtype).

Nothing is dropped silently. A key is either a field, a key known not to change the forward
pass (IGNORED_KEYS and each family's `_ignored`: kept in `.extra` and written back), or refused:
`from_dict` raises UnsupportedConfigError naming every other key and its value (an unknown key,
or a numerics-changing one whose value rtx does not compute, as a longrope RoPE or relative position
embeddings); with strict=False each becomes a warning and the config loads without it.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from rtx.transformers.activations import ACT2FN

__all__ = ["PretrainedConfig", "GPT2Config", "LlamaConfig", "MistralConfig", "Qwen2Config", "BertConfig",
           "UnsupportedConfigError", "IGNORED_KEYS"]


class UnsupportedConfigError(NotImplementedError):
    """A config key that may change the forward pass and that rtx does not compute."""


# Keys every transformers config may carry that do not change what the forward pass computes:
# bookkeeping, output switches, generation defaults (rtx's generate takes its own arguments),
# token ids, initialisation, and computations that are equal in value (chunked feed-forward).
IGNORED_KEYS = frozenset({
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype", "use_cache",
    "output_attentions", "output_hidden_states", "return_dict", "torchscript", "use_bfloat16", "tf_legacy_loss",
    "chunk_size_feed_forward", "id2label", "label2id", "problem_type", "finetuning_task", "tokenizer_class",
    "prefix", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "task_specific_params", "initializer_range", "gradient_checkpointing", "_attn_implementation",
    "attn_implementation", "_commit_hash", "tie_encoder_decoder", "is_decoder", "cross_attention_hidden_size",
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
    "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "sliding_window_pattern",
})

# Keys that change the forward pass, with the only value rtx computes (anything else is refused).
_MUST = {
    "pruned_heads": lambda v: not v,
    "quantization_config": lambda v: v is None,
    "is_encoder_decoder": lambda v: not v,
    "add_cross_attention": lambda v: not v,
}


@dataclass
class PretrainedConfig:
    """What the families' configs share: dict/json round trips in both transformers layouts,
    and the refusal of keys rtx does not compute."""

    extra: dict = field(default_factory=dict, repr=False, kw_only=True)
    strict: bool = field(default=True, repr=False, compare=False, kw_only=True)

    model_type = "base"
    architecture = None                 # the class name save_pretrained writes when the model gives none
    _ignored: ClassVar[frozenset] = frozenset()   # the family's own keys that do not change the forward pass

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, strict: bool = True, **overrides) -> PretrainedConfig:
        """Read a config.json structure (4.x or 5.x layout). strict=False: keys rtx cannot honour
        warn instead of raising UnsupportedConfigError."""
        if not isinstance(d, dict):
            raise TypeError(f"{cls.__name__}.from_dict expects a dict, got {type(d).__name__}")
        d = {**d, **overrides}
        kind = d.pop("model_type", None)
        if kind is not None and kind != cls.model_type:
            warnings.warn(f"{cls.__name__}: the config is of model_type {kind!r}, not {cls.model_type!r}; fields "
                          f"of the same name are read", stacklevel=2)
        layout = "rope_parameters" if "rope_parameters" in d else "top-level"
        problems = []
        d = cls._normalize(d, problems)
        names = {f.name for f in fields(cls)} - {"extra", "strict"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        for k, v in extra.items():
            if k in _MUST:
                if not _MUST[k](v):
                    problems.append(f"{k}={v!r} changes the forward pass and rtx does not compute it")
            elif k not in IGNORED_KEYS and k not in cls._ignored:
                problems.append(f"{k}={v!r} is not a key rtx knows for {cls.model_type}; it may change the "
                                f"forward pass")
        _report(cls.__name__, problems, strict)
        cfg = cls(**known, extra=extra, strict=strict)
        cfg._layout = layout
        return cfg

    @classmethod
    def _normalize(cls, d: dict, problems: list) -> dict:
        """Bring a 5.x (or older) spelling to the fields' names. Families add theirs."""
        return d

    def unsupported(self) -> list[str]:
        """The field values rtx does not compute, one line each (families add theirs)."""
        return []

    def __post_init__(self):
        _report(type(self).__name__, self.unsupported(), self.strict)

    @classmethod
    def from_json_file(cls, path, *, strict: bool = True) -> PretrainedConfig:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), strict=strict)

    @classmethod
    def from_pretrained(cls, path, *, strict: bool = True, **overrides) -> PretrainedConfig:
        """From a checkpoint folder holding config.json (or the json file itself)."""
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
        if not p.exists():
            raise FileNotFoundError(f"{cls.__name__}.from_pretrained: no config.json at {p}")
        with open(p, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), strict=strict, **overrides)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "strict")}
        return {**self.extra, **d, "model_type": self.model_type}

    def to_json_file(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)

    @property
    def torch_dtype(self) -> str | None:
        """The dtype config.json names (5.x `dtype`, 4.x `torch_dtype`), or None."""
        return self.extra.get("dtype") or self.extra.get("torch_dtype")


def _report(name, problems, strict):
    if not problems:
        return
    text = f"{name}: " + "; ".join(problems)
    if strict:
        raise UnsupportedConfigError(text + ". Pass strict=False to load anyway (a warning; the model computes "
                                            "without these settings and will differ from transformers')")
    warnings.warn(text + " (strict=False: ignored; results will differ from transformers')", stacklevel=4)


def _check_act(name, value, problems):
    if value not in ACT2FN:
        problems.append(f"{name}={value!r} is not an activation rtx has ({', '.join(sorted(ACT2FN))})")


@dataclass
class GPT2Config(PretrainedConfig):
    """HF's GPT2Config (same names and defaults)."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None             # None: 4 * n_embd
    activation_function: str = "gelu_new"  # gelu_new (tanh approximation), gelu, relu, silu, ...
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False  # a numerical-stability switch of HF's; rtx's attention is already stable
    use_cache: bool = True
    bos_token_id: int = 50256
    eos_token_id: int = 50256
    pad_token_id: int | None = None
    tie_word_embeddings: bool = True
    add_cross_attention: bool = False      # cross-attention blocks (the decoder of an encoder-decoder model)

    model_type = "gpt2"
    architecture = "GPT2LMHeadModel"
    # n_ctx: GPT-2's old name of n_positions, unused by transformers' forward; summary_*: the
    # double-heads model's sequence summary, a head rtx does not build
    _ignored = frozenset({"n_ctx", "summary_type", "summary_use_proj", "summary_activation",
                          "summary_proj_to_labels", "summary_first_dropout"})

    def __post_init__(self):
        _check_heads(self.n_embd, self.n_head, "n_embd", "n_head")
        super().__post_init__()

    def unsupported(self):
        problems = []
        _check_act("activation_function", self.activation_function, problems)
        return problems

    # HF's attribute_map: the common names
    @property
    def hidden_size(self):
        return self.n_embd

    @property
    def num_hidden_layers(self):
        return self.n_layer

    @property
    def num_attention_heads(self):
        return self.n_head

    @property
    def max_position_embeddings(self):
        return self.n_positions


_ROPE_KEYS = {  # the rope settings each RoPE type reads; any other key in them is refused
    "default": set(),
    "linear": {"factor"},
    "dynamic": {"factor"},
    "llama3": {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"},
    "yarn": {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow", "mscale",
             "mscale_all_dim", "truncate"},
}


@dataclass
class LlamaConfig(PretrainedConfig):
    """HF's LlamaConfig (same names and defaults); the base of the Llama-shaped decoders
    (Mistral, Qwen2). sliding_window (Mistral's field, an rtx option for Llama) limits each
    query to the last `sliding_window` keys; None: full causal attention."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None  # None: num_attention_heads (no GQA)
    head_dim: int | None = None             # None: hidden_size // num_attention_heads
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    use_cache: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = 1
    eos_token_id: int | list | None = 2
    tie_word_embeddings: bool = False
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None        # {"rope_type": "linear"|"dynamic"|"llama3"|"yarn", "factor": ...}
    attention_bias: bool = False
    attention_dropout: float = 0.0
    mlp_bias: bool = False
    sliding_window: int | None = None

    model_type = "llama"
    architecture = "LlamaForCausalLM"
    # pretraining_tp > 1 makes transformers 4 split each projection into slices and add them up:
    # the same values (transformers 5 dropped it)
    _ignored = frozenset({"pretraining_tp"})

    def __post_init__(self):
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"{type(self).__name__}: num_attention_heads ({self.num_attention_heads}) must be a "
                             f"multiple of num_key_value_heads ({self.num_key_value_heads})")
        super().__post_init__()

    @classmethod
    def _normalize(cls, d, problems):
        """5.x: rope_parameters {"rope_theta", "rope_type", ...} -> rope_theta and rope_scaling."""
        if "rope_parameters" not in d:
            return d
        rp = d.pop("rope_parameters")
        if rp is None:
            return d
        if isinstance(rp, dict) and rp and all(isinstance(v, dict) for v in rp.values()):
            # one set per layer type (Gemma-style models): rtx reads it when all agree
            sets = list(rp.values())
            if any(s != sets[0] for s in sets):
                problems.append(f"rope_parameters={rp!r} gives each layer type its own RoPE, which rtx does not "
                                f"compute")
                return d
            rp = sets[0]
        if not isinstance(rp, dict):
            problems.append(f"rope_parameters={rp!r} is not a dict")
            return d
        rp = dict(rp)
        if "rope_theta" in rp:
            theta = rp.pop("rope_theta")
            if "rope_theta" in d and d["rope_theta"] != theta:
                problems.append(f"rope_theta={d['rope_theta']!r} disagrees with rope_parameters.rope_theta={theta!r}")
            d["rope_theta"] = theta
        if rp.get("rope_type", rp.get("type", "default")) == "default" and set(rp) <= {"rope_type", "type"}:
            rp = None
        if rp is not None and d.get("rope_scaling") not in (None, rp):
            problems.append(f"rope_scaling={d['rope_scaling']!r} disagrees with rope_parameters={rp!r}")
        d["rope_scaling"] = rp
        return d

    def unsupported(self):
        problems = []
        _check_act("hidden_act", self.hidden_act, problems)
        rs = self.rope_scaling
        if rs:
            kind = rs.get("rope_type", rs.get("type", "default"))
            if kind not in _ROPE_KEYS:
                problems.append(f"rope_type={kind!r} (rope_scaling / rope_parameters) is not a RoPE rtx computes "
                                f"({', '.join(_ROPE_KEYS)})")
            else:
                for k in sorted(set(rs) - _ROPE_KEYS[kind] - {"rope_type", "type"}):
                    problems.append(f"rope_scaling.{k}={rs[k]!r} is not read by rtx's {kind!r} RoPE")
        return problems

    def to_dict(self):
        d = super().to_dict()
        if getattr(self, "_layout", None) == "rope_parameters":  # write back the 5.x layout that was read
            theta, scaling = d.pop("rope_theta"), d.pop("rope_scaling")
            d["rope_parameters"] = {"rope_theta": theta, "rope_type": "default", **(scaling or {})}
        return d

    # what the decoder layers ask (Qwen2 differs)
    def qkv_bias(self) -> bool:
        return self.attention_bias

    def o_bias(self) -> bool:
        return self.attention_bias

    def layer_window(self, layer_idx: int) -> int | None:
        """The sliding window of layer `layer_idx` (None: full causal attention)."""
        return self.sliding_window


@dataclass
class MistralConfig(LlamaConfig):
    """HF's MistralConfig (same names and defaults): Llama with a sliding window on every layer."""

    intermediate_size: int = 14336
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 4096 * 32
    sliding_window: int | None = 4096

    model_type = "mistral"
    architecture = "MistralForCausalLM"


@dataclass
class Qwen2Config(LlamaConfig):
    """HF's Qwen2Config (same names and defaults): biases on q/k/v (not o), and a sliding window
    (when use_sliding_window) on the layers from max_window_layers on, or as layer_types says."""

    vocab_size: int = 151936
    intermediate_size: int = 22016
    max_position_embeddings: int = 32768
    bos_token_id: int | None = None
    eos_token_id: int | list | None = None
    sliding_window: int | None = 4096
    use_sliding_window: bool = False
    max_window_layers: int = 28
    layer_types: list | None = None

    model_type = "qwen2"
    architecture = "Qwen2ForCausalLM"

    def __post_init__(self):
        window = self.sliding_window if self.use_sliding_window else None
        if self.layer_types is None:  # transformers' rule
            self.layer_types = ["sliding_attention" if window is not None and i >= self.max_window_layers
                                else "full_attention" for i in range(self.num_hidden_layers)]
        super().__post_init__()

    def unsupported(self):
        problems = super().unsupported()
        if self.attention_bias or self.mlp_bias:
            problems.append("attention_bias / mlp_bias: Qwen2 has biases on q/k/v only, always")
        if len(self.layer_types) != self.num_hidden_layers or not set(self.layer_types) <= {
                "full_attention", "sliding_attention"}:
            problems.append(f"layer_types={self.layer_types!r}: rtx computes one of 'full_attention' / "
                            f"'sliding_attention' per layer ({self.num_hidden_layers} layers)")
        return problems

    def to_dict(self):
        d = super().to_dict()
        del d["attention_bias"], d["mlp_bias"]  # Llama's switches, not Qwen2's keys
        return d

    def qkv_bias(self):
        return True

    def o_bias(self):
        return False

    def layer_window(self, layer_idx):
        if not self.use_sliding_window or self.layer_types[layer_idx] != "sliding_attention":
            return None
        return self.sliding_window


@dataclass
class BertConfig(PretrainedConfig):
    """HF's BertConfig (same names and defaults). num_labels comes from id2label (what
    transformers writes) when the config has one."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"
    classifier_dropout: float | None = None
    num_labels: int = 2
    problem_type: str | None = None         # None: regression if num_labels == 1, else single-label
    tie_word_embeddings: bool = True        # the MLM decoder shares the word embeddings

    model_type = "bert"
    architecture = "BertModel"
    # use_cache: only for BERT as a decoder, which is refused (is_decoder); BERT-base-chinese's
    # directionality / pooler_* fields are not read by transformers' forward
    _ignored = frozenset({"directionality", "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers",
                          "pooler_size_per_head", "pooler_type"})

    @classmethod
    def _normalize(cls, d, problems):
        if d.get("is_decoder"):
            problems.append(f"is_decoder={d['is_decoder']!r}: BERT as a causal decoder is not computed by rtx")
        id2label = d.get("id2label")
        if id2label is not None:
            n = len(id2label)
            if "num_labels" in d and d["num_labels"] != n:
                problems.append(f"num_labels={d['num_labels']!r} disagrees with id2label ({n} labels)")
            d["num_labels"] = n
        return d

    def __post_init__(self):
        _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
        super().__post_init__()

    def unsupported(self):
        problems = []
        _check_act("hidden_act", self.hidden_act, problems)
        if self.position_embedding_type != "absolute":
            problems.append(f"position_embedding_type={self.position_embedding_type!r} is not computed by rtx "
                            f"(only 'absolute')")
        if self.problem_type not in (None, "regression", "single_label_classification", "multi_label_classification"):
            problems.append(f"problem_type={self.problem_type!r} is not one of regression, "
                            f"single_label_classification, multi_label_classification")
        return problems

    @property
    def id2label(self) -> dict[int, str]:
        got = self.extra.get("id2label")
        if got is not None and len(got) == self.num_labels:
            return {int(k): v for k, v in got.items()}
        return {i: f"LABEL_{i}" for i in range(self.num_labels)}

    @property
    def label2id(self) -> dict[str, int]:
        return {v: k for k, v in self.id2label.items()}

    def to_dict(self):
        """As transformers writes it: id2label / label2id, not num_labels."""
        d = super().to_dict()
        del d["num_labels"]
        d["id2label"] = {str(k): v for k, v in self.id2label.items()}
        d["label2id"] = self.label2id
        return d


def _check_heads(dim, heads, dim_name, heads_name):
    if heads <= 0 or dim % heads:
        raise ValueError(f"{dim_name} ({dim}) must be divisible by {heads_name} ({heads})")
