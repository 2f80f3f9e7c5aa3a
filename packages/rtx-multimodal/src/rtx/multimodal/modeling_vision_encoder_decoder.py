"""VisionEncoderDecoderModel in transformers' layout: a ViT encoder and a GPT-2 decoder whose blocks
cross-attend to the image (an image captioner, as TrOCR / ViT-GPT2).

    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(ViTConfig(...), GPT2Config(...))
    model = VisionEncoderDecoderModel(cfg)                     # or .from_pretrained("ckpt/")
    out = model(pixel_values=px, labels=caption_ids)           # out.loss, out.logits
    ids = model.generate(px, max_new_tokens=16, num_beams=3)   # through rtx.nlg.generate

Keys are transformers' (encoder.embeddings.patch_embeddings.projection.weight,
decoder.transformer.h.0.crossattention.q_attn.weight, enc_to_dec_proj.weight), so its checkpoints
load and save unrenamed. As transformers: the encoder's states are projected by enc_to_dec_proj when
the two hidden sizes differ; labels are shifted right behind decoder_start_token_id (-100 read as
pad_token_id) to make decoder_input_ids, and the loss is the cross entropy of logits and labels
(no further shift), skipping -100.

generate runs the encoder once and hands rtx.nlg.generate a decoder step that cross-attends to it:
greedy, beam search and sampling, with the decoder's KV cache; the cross-attention keys and values
are projected at the first step and cached (EncoderDecoderCache), reordered with the beams. Its
defaults are `model.generation_config` (an rtx.nlg GenerationConfig), which save_pretrained writes to
and from_pretrained reads from generation_config.json in transformers' keys.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import rtx
from rtx.multimodal.modeling_vit import ViTConfig, ViTModel
from rtx.nn import Linear, init
from rtx.transformers.configuration import GPT2Config, PretrainedConfig, UnsupportedConfigError
from rtx.transformers.gpt2 import GPT2LMHeadModel, GPT2PreTrainedModel
from rtx.transformers.modeling import PreTrainedModel
from rtx.transformers.outputs import ModelOutput
from rtx.transformers.utils import cross_entropy

__all__ = ["VisionEncoderDecoderConfig", "VisionEncoderDecoderModel", "Seq2SeqLMOutput", "shift_tokens_right"]


@dataclass
class VisionEncoderDecoderConfig(PretrainedConfig):
    """encoder: a ViTConfig (or its dict, model_type "vit"); decoder: a GPT2Config (or its dict,
    model_type "gpt2") with add_cross_attention=True."""

    encoder: Any = field(default_factory=dict)
    decoder: Any = field(default_factory=dict)
    decoder_start_token_id: int | None = None
    pad_token_id: int | None = None
    eos_token_id: int | None = None
    is_encoder_decoder: bool = True
    tie_word_embeddings: bool = False   # transformers sets it False here: the decoder's own setting ties its head

    model_type = "vision-encoder-decoder"
    architecture = "VisionEncoderDecoderModel"
    _ignored: ClassVar[frozenset] = frozenset({"bos_token_id"})

    def __post_init__(self):
        self.encoder = _sub(self.encoder, ViTConfig, "encoder", self.strict)
        self.decoder = _sub(self.decoder, GPT2Config, "decoder", self.strict)
        if not self.decoder.add_cross_attention:
            raise ValueError("VisionEncoderDecoderConfig: the decoder needs add_cross_attention=True "
                             "(from_encoder_decoder_configs sets it)")
        size = self.decoder.extra.get("cross_attention_hidden_size")
        if size is not None and size != self.encoder.hidden_size:
            raise ValueError(f"VisionEncoderDecoderConfig: decoder.cross_attention_hidden_size ({size}) must equal "
                             f"the encoder's hidden_size ({self.encoder.hidden_size})")
        super().__post_init__()

    @classmethod
    def from_encoder_decoder_configs(cls, encoder_config: ViTConfig, decoder_config: GPT2Config, **kwargs):
        """As transformers': marks the decoder a cross-attending decoder."""
        decoder_config.add_cross_attention = True
        decoder_config.extra["is_decoder"] = True
        return cls(encoder=encoder_config, decoder=decoder_config, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["encoder"] = self.encoder.to_dict()
        d["decoder"] = self.decoder.to_dict()
        return d


def _sub(value, cls, name, strict):
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"VisionEncoderDecoderConfig: {name} must be a dict or a {cls.__name__}, got "
                        f"{type(value).__name__}")
    kind = value.get("model_type", cls.model_type)
    if kind != cls.model_type:
        raise UnsupportedConfigError(f"VisionEncoderDecoderConfig: rtx builds a {cls.model_type!r} {name}, the "
                                     f"config names {kind!r}")
    return cls.from_dict(value, strict=strict)


@dataclass
class Seq2SeqLMOutput(ModelOutput):
    loss: Any = None
    logits: Any = None                      # (batch, target length, vocab)
    past_key_values: Any = None             # the decoder's EncoderDecoderCache (use_cache=True)
    encoder_last_hidden_state: Any = None   # (batch, patches + 1, encoder hidden), before enc_to_dec_proj


def shift_tokens_right(labels, pad_token_id, decoder_start_token_id):
    """decoder_start_token_id, then labels[:, :-1], with -100 read as pad_token_id (transformers')."""
    if decoder_start_token_id is None:
        raise ValueError("set config.decoder_start_token_id: the decoder's inputs start with it")
    if pad_token_id is None:
        raise ValueError("set config.pad_token_id: label positions of -100 become pad tokens in the decoder input")
    start = rtx.full((labels.shape[0], 1), decoder_start_token_id, dtype=labels.dtype, device=labels.device)
    shifted = rtx.cat([start, labels[:, :-1]], 1)
    return rtx.where(shifted == -100, shifted.new_full((), pad_token_id), shifted)


class VisionEncoderDecoderModel(PreTrainedModel):
    config_class = VisionEncoderDecoderConfig
    base_model_prefix = "vision_encoder_decoder"
    # the causal-mask buffers GPT-2 checkpoints may carry
    _ignored_keys = GPT2PreTrainedModel._ignored_keys

    def __init__(self, config: VisionEncoderDecoderConfig):
        super().__init__(config)
        self.encoder = ViTModel(config.encoder)
        self.decoder = GPT2LMHeadModel(config.decoder)
        self._tied_weights = {"decoder." + k: "decoder." + v for k, v in self.decoder._tied_weights.items()}
        if config.encoder.hidden_size != config.decoder.n_embd:
            self.enc_to_dec_proj = Linear(config.encoder.hidden_size, config.decoder.n_embd)
            with rtx.no_grad():
                init.normal_(self.enc_to_dec_proj.weight, std=config.decoder.initializer_range)
                init.zeros_(self.enc_to_dec_proj.bias)
        else:
            self.enc_to_dec_proj = None

    def tie_weights(self):
        self.decoder.tie_weights()

    @property
    def generation_config(self):
        """generate's defaults (rtx.nlg.GenerationConfig); eos/pad default to the model config's."""
        if getattr(self, "_generation_config", None) is None:
            from rtx.nlg import GenerationConfig
            cfg = self.config
            eos = cfg.eos_token_id if cfg.eos_token_id is not None else cfg.decoder.eos_token_id
            pad = cfg.pad_token_id if cfg.pad_token_id is not None else cfg.decoder.pad_token_id
            self._generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
        return self._generation_config

    @generation_config.setter
    def generation_config(self, value):
        self._generation_config = value

    @classmethod
    def from_pretrained(cls, path, config=None, **kwargs):
        """As PreTrainedModel's, and generation_config.json (when the folder has one) sets
        model.generation_config: the fields rtx.nlg's GenerationConfig has, by transformers' names;
        max_length (transformers' total length, the start token included) becomes max_new_tokens =
        max_length - 1 when max_new_tokens is absent; decoder_start_token_id goes to the model config
        when that has none. Keys generate does not use (transformers_version, output_*, ...) are skipped."""
        out = super().from_pretrained(path, config, **kwargs)
        model = out[0] if isinstance(out, tuple) else out
        p = Path(path)
        gen = (p if p.is_dir() else p.parent) / "generation_config.json"
        if gen.is_file():
            model.generation_config = _read_generation_config(gen, model)
        return out

    def save_pretrained(self, path, **kwargs):
        """config.json and model.safetensors (PreTrainedModel's), and generation_config.json in
        transformers' keys: the token ids, and every generation option that differs from its default."""
        super().save_pretrained(path, **kwargs)
        from rtx.nlg import GenerationConfig
        default = GenerationConfig()
        gc = self.generation_config
        d = {f.name: getattr(gc, f.name) for f in fields(gc) if getattr(gc, f.name) != getattr(default, f.name)}
        for key in ("decoder_start_token_id", "eos_token_id", "pad_token_id"):
            if d.get(key) is None and getattr(self.config, key) is not None:
                d[key] = getattr(self.config, key)
        if self.config.decoder.bos_token_id is not None:
            d.setdefault("bos_token_id", self.config.decoder.bos_token_id)
        with open(Path(path) / "generation_config.json", "w", encoding="utf-8") as f:
            json.dump(d, f, indent=2, sort_keys=True)

    def encode(self, pixel_values):
        """(the states the decoder attends to, the encoder's last_hidden_state)."""
        h = self.encoder(pixel_values).last_hidden_state
        return (self.enc_to_dec_proj(h) if self.enc_to_dec_proj is not None else h), h

    def forward(self, pixel_values=None, decoder_input_ids=None, decoder_attention_mask=None, labels=None,
                encoder_hidden_states=None, past_key_values=None, use_cache=False):
        """encoder_hidden_states: states already projected (from encode), instead of pixel_values."""
        enc_last = None
        if encoder_hidden_states is None:
            if pixel_values is None:
                raise ValueError("VisionEncoderDecoderModel: give pixel_values (or encoder_hidden_states)")
            encoder_hidden_states, enc_last = self.encode(pixel_values)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("VisionEncoderDecoderModel: give decoder_input_ids or labels")
            decoder_input_ids = shift_tokens_right(labels, self.config.pad_token_id,
                                                   self.config.decoder_start_token_id)
        out = self.decoder(decoder_input_ids, attention_mask=decoder_attention_mask, past_key_values=past_key_values,
                           use_cache=use_cache, encoder_hidden_states=encoder_hidden_states)
        loss = None
        if labels is not None:
            loss = cross_entropy(out.logits.reshape(-1, out.logits.shape[-1]), labels.reshape(-1))
        return Seq2SeqLMOutput(loss=loss, logits=out.logits, past_key_values=out.past_key_values,
                               encoder_last_hidden_state=enc_last)

    def generate(self, pixel_values, generation_config=None, *, decoder_input_ids=None, generator=None, **kwargs):
        """Captions for a batch of images: rtx.nlg.generate over the decoder, starting from
        decoder_start_token_id (or the given decoder_input_ids). Returns int64 ids (batch *
        num_return_sequences, 1 + new), the start token included, as transformers'."""
        from rtx.nlg import generate
        with rtx.no_grad():
            enc, _ = self.encode(pixel_values)
        if decoder_input_ids is None:
            start = self.config.decoder_start_token_id
            if start is None:
                start = self.config.decoder.bos_token_id
            if start is None:
                raise ValueError("VisionEncoderDecoderModel.generate: set config.decoder_start_token_id")
            decoder_input_ids = rtx.full((enc.shape[0], 1), start, dtype=rtx.int64, device=enc.device)
        if generation_config is None:
            generation_config = self.generation_config
        return generate(_DecoderStep(self, enc), decoder_input_ids, generation_config=generation_config,
                        generator=generator, **kwargs)


def _read_generation_config(path, model):
    from rtx.nlg import GenerationConfig
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if not isinstance(d, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(d).__name__}")
    names = {f.name for f in fields(GenerationConfig)}
    opts = {k: v for k, v in d.items() if k in names}
    if "max_new_tokens" not in opts and d.get("max_length") is not None:
        opts["max_new_tokens"] = max(int(d["max_length"]) - 1, 0)
    if d.get("decoder_start_token_id") is not None and model.config.decoder_start_token_id is None:
        model.config.decoder_start_token_id = int(d["decoder_start_token_id"])
    return model.generation_config.update(**opts)


class _TokenIds:
    def __init__(self, eos_token_id, pad_token_id):
        self.eos_token_id, self.pad_token_id = eos_token_id, pad_token_id


class _DecoderStep:
    """The decoder as rtx.nlg.generate calls a causal LM, cross-attending to fixed encoder states.
    generate repeats each image's row (beams, num_return_sequences): the states are repeated to match."""

    def __init__(self, model, enc):
        self.model, self.enc = model, enc
        cfg = model.config
        eos = cfg.eos_token_id if cfg.eos_token_id is not None else cfg.decoder.eos_token_id
        self.config = _TokenIds(eos, cfg.pad_token_id if cfg.pad_token_id is not None else cfg.decoder.pad_token_id)
        self._rep = {1: enc}

    def _states(self, rows):
        B, S, D = self.enc.shape
        if rows % B:
            raise ValueError(f"generate: {rows} decoder rows for {B} images")
        n = rows // B
        if n not in self._rep:
            self._rep[n] = self.enc.unsqueeze(1).expand(B, n, S, D).reshape(B * n, S, D)
        return self._rep[n]

    def __call__(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False):
        return self.model.decoder(input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
                                  use_cache=use_cache, encoder_hidden_states=self._states(input_ids.shape[0]))
