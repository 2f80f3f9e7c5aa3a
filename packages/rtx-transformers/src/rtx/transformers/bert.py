"""BERT (Devlin et al. 2019) in Hugging Face's layout: BertModel, BertForMaskedLM,
BertForSequenceClassification (single-label, multi-label and regression problem_types),
BertForTokenClassification, BertForQuestionAnswering, BertForMultipleChoice.

Keys as HF's: bert.embeddings.{word,position,token_type}_embeddings.weight,
bert.embeddings.LayerNorm.{weight,bias}, bert.encoder.layer.0.attention.self.{query,key,value}
.{weight,bias}, bert.encoder.layer.0.attention.output.{dense,LayerNorm}, ...intermediate.dense,
...output.{dense,LayerNorm}, bert.pooler.dense, cls.predictions.{bias, transform.dense,
transform.LayerNorm, decoder.weight (tied to the word embeddings unless tie_word_embeddings is
false)}, classifier.{weight,bias} (sequence, token and multiple-choice heads), qa_outputs.
TF-era names (LayerNorm.gamma / beta) and the position_ids buffer of older checkpoints load;
the pre-training heads a bert-base checkpoint carries (cls.seq_relationship, the pooler for
BertForMaskedLM, which has none, as HF's) are reported as unexpected.

    model = BertForMaskedLM(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=64, vocab_size=100))
    out = model(input_ids, attention_mask=mask, token_type_ids=None, labels=None)
"""
from __future__ import annotations

import math

import rtx
from rtx.nn import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, Parameter, init
from rtx.transformers.activations import get_activation
from rtx.transformers.blocks import attend
from rtx.transformers.configuration import BertConfig
from rtx.transformers.modeling import PreTrainedModel
from rtx.transformers.outputs import (
    BaseModelOutput,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from rtx.transformers.utils import check_input_ids, cross_entropy

__all__ = ["BertConfig", "BertModel", "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification",
           "BertForQuestionAnswering", "BertForMultipleChoice"]


class BertEmbeddings(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.max_positions = config.max_position_embeddings

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        B, L = input_ids.shape
        if L > self.max_positions:
            raise ValueError(f"BertModel: sequence of {L} tokens is longer than max_position_embeddings "
                             f"({self.max_positions})")
        if position_ids is None:
            position_ids = rtx.arange(L, device=input_ids.device, dtype=rtx.int64).unsqueeze(0).expand(B, L)
        if token_type_ids is None:
            token_type_ids = rtx.zeros((B, L), dtype=rtx.int64, device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) \
            + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = config.hidden_size
        self.query = Linear(config.hidden_size, self.all_head_size)
        self.key = Linear(config.hidden_size, self.all_head_size)
        self.value = Linear(config.hidden_size, self.all_head_size)
        self.dropout_prob = config.attention_probs_dropout_prob

    def forward(self, x, padding_mask=None):
        B, L, _ = x.shape
        q, k, v = ((lin(x).reshape(B, L, self.num_attention_heads, self.attention_head_size).transpose(1, 2))
                   for lin in (self.query, self.key, self.value))
        out = attend(q, k, v, causal=False, padding_mask=padding_mask,
                     dropout_p=self.dropout_prob if self.training else 0.0,
                     scale=1.0 / math.sqrt(self.attention_head_size))
        return out.transpose(1, 2).reshape(B, L, self.all_head_size)


class BertSelfOutput(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, x, padding_mask=None):
        return self.output(self.self(x, padding_mask), x)


class BertIntermediate(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = get_activation(config.hidden_act)

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertOutput(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertLayer(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x, padding_mask=None):
        a = self.attention(x, padding_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x, padding_mask=None):
        for layer in self.layer:
            x = layer(x, padding_mask)
        return x


class BertPooler(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return self.dense(hidden[:, 0]).tanh()


class BertPreTrainedModel(PreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"
    _ignored_keys = (r"embeddings\.position_ids$",)

    def _init_weights(self):
        """HF's BERT init: N(0, initializer_range) for matrices and embeddings (padding row
        zero), zero biases, unit LayerNorms."""
        std = self.config.initializer_range
        with rtx.no_grad():
            for m in self.modules():
                if isinstance(m, Linear):
                    init.normal_(m.weight, std=std)
                    if m.bias is not None:
                        init.zeros_(m.bias)
                elif isinstance(m, Embedding):
                    init.normal_(m.weight, std=std)
                    if m.padding_idx is not None:
                        m.weight[m.padding_idx] = 0.0


class BertModel(BertPreTrainedModel):
    def __init__(self, config: BertConfig, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        check_input_ids(input_ids, self.config.vocab_size, "BertModel")
        B, L = input_ids.shape
        if attention_mask is not None and tuple(attention_mask.shape) != (B, L):
            raise ValueError(f"BertModel: attention_mask must be (batch, seq) = {(B, L)}, got "
                             f"{tuple(attention_mask.shape)}")
        x = self.encoder(self.embeddings(input_ids, token_type_ids, position_ids), attention_mask)
        pooled = self.pooler(x) if self.pooler is not None else None
        return BaseModelOutput(last_hidden_state=x, pooler_output=pooled)


class BertPredictionHeadTransform(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = get_activation(config.hidden_act)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))


class BertLMPredictionHead(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = Parameter(rtx.zeros(config.vocab_size))
        self.decoder.bias = self.bias  # one tensor under two names, as HF's

    def forward(self, x):
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, x):
        return self.predictions(x)


class BertForMaskedLM(BertPreTrainedModel):
    """BERT with the masked-language-modelling head (decoder tied to the word embeddings unless
    config.tie_word_embeddings is false)."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self._tied_weights = {"cls.predictions.decoder.bias": "cls.predictions.bias"}
        if config.tie_word_embeddings:
            self._tied_weights["cls.predictions.decoder.weight"] = "bert.embeddings.word_embeddings.weight"
        self._init_weights()
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.cls.predictions.decoder.bias = self.cls.predictions.bias

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None):
        h = self.bert(input_ids, attention_mask, token_type_ids, position_ids).last_hidden_state
        logits = self.cls(h)
        loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)) if labels is not None else None
        return MaskedLMOutput(logits=logits, loss=loss)


class BertForSequenceClassification(BertPreTrainedModel):
    """BERT with a classifier on the pooled first token: num_labels outputs (from id2label). The
    loss follows config.problem_type, or when it is None (as transformers): MSE for num_labels
    == 1 (regression), cross entropy for integer labels, BCE-with-logits for float labels
    (multi-label)."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        self.dropout = Dropout(_classifier_dropout(config))
        self.classifier = Linear(config.hidden_size, config.num_labels)
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None):
        pooled = self.bert(input_ids, attention_mask, token_type_ids, position_ids).pooler_output
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            kind = self.config.problem_type
            if kind is None:
                kind = "regression" if self.num_labels == 1 else (
                    "single_label_classification" if not labels.is_floating_point() else "multi_label_classification")
            if kind == "regression":
                y = labels.to(logits.dtype)
                if self.num_labels == 1:
                    loss = ((logits.reshape(-1) - y.reshape(-1)) ** 2).mean()
                else:
                    loss = ((logits - y.reshape(logits.shape)) ** 2).mean()
            elif kind == "single_label_classification":
                loss = cross_entropy(logits, labels.reshape(-1))
            elif kind == "multi_label_classification":
                y = labels.to(logits.dtype)
                # BCE with logits, the stable form: max(x, 0) - x y + log(1 + exp(-|x|))
                loss = (logits.clamp(min=0) - logits * y + (-logits.abs()).exp().log1p()).mean()
            else:
                raise ValueError(f"unknown problem_type {kind!r}")
        return SequenceClassifierOutput(logits=logits, loss=loss)


class BertForTokenClassification(BertPreTrainedModel):
    """BERT with a classifier on every token (NER, POS tagging): logits (batch, seq, num_labels);
    the loss is cross entropy over the tokens whose label is not -100."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = Dropout(_classifier_dropout(config))
        self.classifier = Linear(config.hidden_size, config.num_labels)
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None):
        h = self.bert(input_ids, attention_mask, token_type_ids, position_ids).last_hidden_state
        logits = self.classifier(self.dropout(h))
        loss = cross_entropy(logits.reshape(-1, self.num_labels), labels.reshape(-1)) if labels is not None else None
        return TokenClassifierOutput(logits=logits, loss=loss)


class BertForQuestionAnswering(BertPreTrainedModel):
    """BERT with span extraction (SQuAD): qa_outputs gives start and end logits per token. The
    loss is the mean of the start and end cross entropies; positions outside the sequence are
    clamped to its length and ignored, as transformers does."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = Linear(config.hidden_size, 2)
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, start_positions=None,
                end_positions=None):
        h = self.bert(input_ids, attention_mask, token_type_ids, position_ids).last_hidden_state
        both = self.qa_outputs(h)
        start, end = both[..., 0], both[..., 1]
        loss = None
        if start_positions is not None and end_positions is not None:
            L = start.shape[1]
            s = start_positions.reshape(-1).clamp(0, L)
            e = end_positions.reshape(-1).clamp(0, L)
            loss = (cross_entropy(start, s, ignore_index=L) + cross_entropy(end, e, ignore_index=L)) / 2
        return QuestionAnsweringModelOutput(start_logits=start, end_logits=end, loss=loss)


class BertForMultipleChoice(BertPreTrainedModel):
    """BERT scoring each choice (SWAG): inputs (batch, num_choices, seq), one logit per choice
    from the pooled first token; the loss is cross entropy over the choices."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config)
        self.dropout = Dropout(_classifier_dropout(config))
        self.classifier = Linear(config.hidden_size, 1)
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None):
        if input_ids.ndim != 3:
            raise ValueError(f"BertForMultipleChoice: input_ids must be (batch, num_choices, seq), got shape "
                             f"{tuple(input_ids.shape)}")
        B, C, L = input_ids.shape

        def flat(t):
            return None if t is None else t.reshape(B * C, L)

        pooled = self.bert(flat(input_ids), flat(attention_mask), flat(token_type_ids),
                           flat(position_ids)).pooler_output
        logits = self.classifier(self.dropout(pooled)).reshape(B, C)
        loss = cross_entropy(logits, labels.reshape(-1)) if labels is not None else None
        return MultipleChoiceModelOutput(logits=logits, loss=loss)


def _classifier_dropout(config):
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
