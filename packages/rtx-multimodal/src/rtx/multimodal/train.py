"""`rtx multimodal train-clip --dataset digits`: contrastive training of a small CLIP on scikit-learn's
8x8 digits paired with varied captions, then zero-shot accuracy and retrieval on held-out digits.

Recipe (OpenCLIP's): symmetric InfoNCE over the batch, a learnable temperature (logit_scale, clamped
at log 100), AdamW with warm-up and cosine decay. Training captions come from TRAIN_TEMPLATES; the
evaluation uses EVAL_TEMPLATES, which never occur verbatim in training, with prompt ensembling.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import rtx

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
# {w}: the number's word, {d}: its numeral
TRAIN_TEMPLATES = ["a photo of the number {w}", "a handwritten {d}", "the digit {w}", "a drawing of a {w}",
                   "number {d}", "an image showing a {w}", "a picture of the numeral {d}", "a {w} written by hand",
                   "a scanned {w}", "the number {d}, handwritten", "a small image of the digit {d}",
                   "someone wrote a {w}"]
EVAL_TEMPLATES = ["a blurry photo of the number {}.", "an image of a handwritten {}.", "this is a {}."]


@dataclass
class TrainResult:
    path: Path
    steps: int
    seconds: float
    final_loss: float
    zero_shot_accuracy: float
    retrieval: dict
    parameters: int


def digits_split(seed=0, test_fraction=0.2):
    """8x8 digits as uint8 images (0..255) and labels, split by a seeded stratified permutation."""
    from sklearn.datasets import load_digits
    d = load_digits()
    images = np.round(d.images * (255 / 16)).astype(np.uint8)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(images), bool)
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(d.target == c))
        test[idx[:int(round(len(idx) * test_fraction))]] = True
    return (images[~test], d.target[~test]), (images[test], d.target[test])


def caption(label, rng, templates=TRAIN_TEMPLATES):
    t = templates[rng.integers(len(templates))]
    return t.format(w=WORDS[label], d=label)


def build(seed=0):
    """A small CLIP, its tokenizer (trained on the training captions) and image processor."""
    from rtx.multimodal import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer
    corpus = [t.format(w=w, d=d) for t in TRAIN_TEMPLATES for d, w in enumerate(WORDS)]
    tok = CLIPTokenizer.train(corpus, num_merges=150, model_max_length=32)
    processor = CLIPProcessor(CLIPImageProcessor(size=16, crop_size=16, image_mean=[0.5] * 3, image_std=[0.5] * 3), tok)
    rtx.manual_seed(seed)
    cfg = CLIPConfig(text_config=dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, max_position_embeddings=32, bos_token_id=tok.bos_token_id,
                                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id),
                     vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, image_size=16, patch_size=4),
                     projection_dim=32)
    return CLIPModel(cfg), processor


def evaluate(model, processor, images, labels, templates=EVAL_TEMPLATES, seed=1):
    """Zero-shot accuracy over the ten digit words and image<->text recall with one unseen caption per
    image (a hit: a caption of the same digit)."""
    from rtx.multimodal import retrieval_metrics, zero_shot_classify
    model.eval()
    px = processor.image_processor(list(images), return_tensors="rtx")["pixel_values"]
    probs = zero_shot_classify(model, processor, px, WORDS, templates).numpy()
    acc = float((probs.argmax(1) == labels).mean())
    rng = np.random.default_rng(seed)
    texts = [templates[rng.integers(len(templates))].format(WORDS[c]) for c in labels]
    with rtx.no_grad():
        enc = processor.tokenizer(texts, padding=True, truncation=True, return_tensors="rtx")
        t = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        i = model.get_image_features(pixel_values=px)
    return acc, retrieval_metrics(i, t, ks=(1, 5), image_labels=labels, text_labels=labels)


def train(dataset="digits", out="clip_digits", minutes=10.0, max_steps=None, batch_size=128, lr=1e-3, seed=0,
          checkpoint_every=500, progress=True, log=print) -> TrainResult:
    if dataset != "digits":
        raise ValueError(f"train-clip: only the 'digits' data set is bundled, got {dataset!r}")
    out = Path(out)
    (tr_x, tr_y), (te_x, te_y) = digits_split(seed)
    model, processor = build(seed)
    px_all = processor.image_processor(list(tr_x), return_tensors="np")["pixel_values"]
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    rest = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = rtx.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=lr)
    rng = np.random.default_rng(seed)
    total = max_steps or 10**9
    warmup = 50
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=max_steps, desc="rtx multimodal train-clip", unit="step")
    start, step, loss_ema = time.time(), 0, None
    model.train()
    while step < total and time.time() - start < minutes * 60:
        idx = rng.choice(len(tr_x), size=min(batch_size, len(tr_x)), replace=False)
        texts = [caption(int(c), rng) for c in tr_y[idx]]
        enc = processor.tokenizer(texts, padding=True, truncation=True, return_tensors="rtx")
        scale = min(1.0, (step + 1) / warmup)
        if max_steps:
            scale *= 0.5 * (1 + math.cos(math.pi * step / max_steps))
        for g in opt.param_groups:
            g["lr"] = lr * max(scale, 0.02)
        loss = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                     pixel_values=rtx.from_numpy(px_all[idx]), return_loss=True).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        with rtx.no_grad():
            model.logit_scale.clamp_(0, math.log(100))   # OpenCLIP's clamp of the temperature
        step += 1
        loss_ema = float(loss) if loss_ema is None else 0.95 * loss_ema + 0.05 * float(loss)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_ema:.3f}", scale=f"{math.exp(float(model.logit_scale)):.1f}")
        if checkpoint_every and step % checkpoint_every == 0:
            _save(model, processor, out)
            model.train()
    if bar is not None:
        bar.close()
    seconds = time.time() - start
    _save(model, processor, out)
    acc, rec = evaluate(model, processor, te_x, te_y)
    log(f"held-out digits ({len(te_y)}): zero-shot accuracy {acc * 100:.1f}% (unseen templates, ensembled); "
        f"image->text R@1 {rec['image_to_text_R@1'] * 100:.1f}%, text->image R@1 {rec['text_to_image_R@1'] * 100:.1f}%")
    return TrainResult(out, step, seconds, loss_ema or float("nan"), acc, rec, model.num_parameters())


def _save(model, processor, out):
    model.save_pretrained(out)
    processor.save_pretrained(out)
