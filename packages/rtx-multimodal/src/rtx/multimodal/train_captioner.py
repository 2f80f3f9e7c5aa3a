"""`rtx multimodal train-captioner --dataset digits`: a small VisionEncoderDecoderModel (ViT + GPT-2 with
cross-attention) trained on scikit-learn's 8x8 digits with varied captions ("a photo of the number
seven", "a handwritten 7", ...), then greedy captions of held-out digits: a caption counts when it
names the right digit (its word or numeral) and no other.

The captions use a word-level vocabulary (<s> start, </s> end, <pad>, then the training words), saved
as vocab.json beside the model; the images go in as one channel, scaled to [-1, 1].
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import rtx
from rtx.multimodal.train import TRAIN_TEMPLATES, WORDS, caption, digits_split

SPECIALS = ["<s>", "</s>", "<pad>"]   # ids 0, 1, 2: decoder start, end, padding


@dataclass
class CaptionerResult:
    path: Path
    steps: int
    seconds: float
    final_loss: float
    accuracy: float          # held-out captions naming the right digit and no other
    examples: list
    parameters: int


class WordVocab:
    """Words (and punctuation) to ids and back."""

    def __init__(self, words):
        self.itos = list(SPECIALS) + [w for w in words if w not in SPECIALS]
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @staticmethod
    def split(text):
        return re.findall(r"\w+|[^\w\s]", text.lower())

    @classmethod
    def from_corpus(cls, texts):
        return cls(sorted({w for t in texts for w in cls.split(t)}))

    def encode(self, text):
        try:
            return [self.stoi[w] for w in self.split(text)] + [1]
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the captioner's vocabulary") from None

    def decode(self, ids):
        out = []
        for i in ids:
            i = int(i)
            if i == 1:
                break
            if i >= len(SPECIALS):
                out.append(self.itos[i])
        return " ".join(out)

    def save(self, path):
        Path(path).write_text(json.dumps(self.itos, indent=0))

    @classmethod
    def load(cls, path):
        itos = json.loads(Path(path).read_text())
        return cls(itos[len(SPECIALS):])


def names_digit(text, label):
    """True when the caption names `label` (word or numeral) and no other digit."""
    words = set(WordVocab.split(text))
    named = {d for d, w in enumerate(WORDS) if w in words or str(d) in words}
    return named == {label}


def pixels(images):
    """(N, 8, 8) uint8 -> (N, 1, 8, 8) float32 in [-1, 1]."""
    return rtx.from_numpy((images[:, None].astype(np.float32) / 127.5 - 1.0).copy())


def build(vocab_size, seed=0):
    from rtx.multimodal import VisionEncoderDecoderConfig, VisionEncoderDecoderModel, ViTConfig
    from rtx.transformers import GPT2Config
    rtx.manual_seed(seed)
    enc = ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=8,
                    patch_size=2, num_channels=1)
    dec = GPT2Config(vocab_size=vocab_size, n_positions=16, n_embd=64, n_layer=2, n_head=4, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec, decoder_start_token_id=0, pad_token_id=2,
                                                                  eos_token_id=1)
    return VisionEncoderDecoderModel(cfg)


def evaluate(model, vocab, images, labels, batch_size=256):
    model.eval()
    texts = []
    for s in range(0, len(images), batch_size):
        ids = model.generate(pixels(images[s:s + batch_size]), max_new_tokens=12)
        texts += [vocab.decode(row[1:]) for row in ids.numpy()]
    hits = [names_digit(t, int(c)) for t, c in zip(texts, labels)]
    return float(np.mean(hits)), texts


def train_captioner(dataset="digits", out="captioner_digits", minutes=10.0, max_steps=None, batch_size=64, lr=1e-3,
                    seed=0, progress=True, log=print) -> CaptionerResult:
    if dataset != "digits":
        raise ValueError(f"train-captioner: only the 'digits' data set is bundled, got {dataset!r}")
    out = Path(out)
    (tr_x, tr_y), (te_x, te_y) = digits_split(seed)
    vocab = WordVocab.from_corpus(t.format(w=w, d=d) for t in TRAIN_TEMPLATES for d, w in enumerate(WORDS))
    model = build(len(vocab.itos), seed)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = rtx.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=lr)
    rng = np.random.default_rng(seed)
    total, warmup = max_steps or 10**9, 30
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=max_steps, desc="rtx multimodal train-captioner", unit="step")
    start, step, loss_ema = time.time(), 0, None
    model.train()
    while step < total and time.time() - start < minutes * 60:
        idx = rng.choice(len(tr_x), size=min(batch_size, len(tr_x)), replace=False)
        seqs = [vocab.encode(caption(int(c), rng)) for c in tr_y[idx]]
        L = max(map(len, seqs))
        labels = np.full((len(seqs), L), -100, dtype=np.int64)   # padding is not learned
        for r, s in enumerate(seqs):
            labels[r, :len(s)] = s
        scale = min(1.0, (step + 1) / warmup)
        if max_steps:
            scale *= 0.5 * (1 + math.cos(math.pi * step / max_steps))
        for g in opt.param_groups:
            g["lr"] = lr * max(scale, 0.02)
        loss = model(pixel_values=pixels(tr_x[idx]), labels=rtx.from_numpy(labels)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        loss_ema = float(loss) if loss_ema is None else 0.95 * loss_ema + 0.05 * float(loss)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_ema:.3f}")
    if bar is not None:
        bar.close()
    seconds = time.time() - start
    model.save_pretrained(out)
    vocab.save(out / "vocab.json")
    acc, texts = evaluate(model, vocab, te_x, te_y)
    examples = [(int(c), t) for c, t in zip(te_y[:5], texts[:5])]
    log(f"held-out digits ({len(te_y)}): {acc * 100:.1f}% of greedy captions name the digit; e.g. "
        + "; ".join(f"{c}: {t!r}" for c, t in examples[:3]))
    return CaptionerResult(out, step, seconds, loss_ema or float("nan"), acc, examples, model.num_parameters())
