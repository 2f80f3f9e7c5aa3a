#!/usr/bin/env python3
"""rtx-compress figures (the README table): accuracy, weight bytes and CPU latency of
fp32 / int8 dynamic / int8 static / fp16 weights / pruned 50% for
- the digits CNN of `rtx demo` (rtx.demo.train.train, 15 epochs), and
- a small transformer (2 x nn.TransformerEncoderLayer, d_model 64, 4 heads) trained on a synthetic
  sequence task: in 24 tokens drawn from 16, are there more 1s than 2s, fewer, or as many?

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python tools/bench/compress.py [--epochs 15] [--quick]

Weight bytes: the state dict (rtx.compress.state_dict_bytes). Latency: one forward of a batch
(64 digits, 64 sequences) under no_grad, single thread, the best of 5 interleaved rounds.
"""
import argparse
import copy
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, blas_info  # noqa: E402

import rtx  # noqa: E402
import rtx.compress as C  # noqa: E402
import rtx.nn as nn  # noqa: E402
import rtx.nn.functional as F  # noqa: E402


def accuracy(model, x, y, batch=256):
    model.eval()
    correct = 0
    with rtx.no_grad():
        for i in range(0, len(y), batch):
            correct += int((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item())
    return correct / len(y)


def latencies(models, x, rounds=5):
    """Per model, the best over `rounds` interleaved rounds (each a best of 3): the machine's load
    then weighs on every variant alike."""
    best = dict.fromkeys(models, float("inf"))
    for _ in range(rounds):
        for label, model in models.items():
            model.eval()

            def run(model=model):
                with rtx.no_grad():
                    model(x)
            best[label] = min(best[label], best_of(run, repeat=3, min_time=0.1))
    return best


def prune_half(model, finetune):
    """Global L1 pruning of every Linear / Conv2d weight and attention in_proj to 50%, a short
    fine-tune with the masks in place, then remove() to make it permanent. Attention's out_proj is
    left dense: MultiheadAttention reads out_proj.weight without calling out_proj, so its pruning
    hook would not run (as in PyTorch)."""
    pruned = copy.deepcopy(model)
    params = [(m, "weight") for m in pruned.modules() if type(m) in (nn.Linear, nn.Conv2d)]
    params += [(m, "in_proj_weight") for m in pruned.modules() if isinstance(m, nn.MultiheadAttention)]
    C.prune.global_unstructured(params, C.prune.L1Unstructured, amount=0.5)
    finetune(pruned)
    for m, name in params:
        C.prune.remove(m, name)
    total = sum(getattr(m, n).numel() for m, n in params)
    zeros = sum(int((getattr(m, n) == 0).sum()) for m, n in params)
    return pruned, zeros / total


def fit(model, x, y, epochs, lr, batch=32, seed=0):
    opt = rtx.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        model.train()
        for idx in np.array_split(rng.permutation(len(y)), max(1, len(y) // batch)):
            i = rtx.from_numpy(idx)
            opt.zero_grad()
            F.cross_entropy(model(x[i]), y[i]).backward()
            opt.step()
    return model.eval()


def variants(model, calib, qconfig_target, finetune, attention=False):
    out = {"fp32": model}
    out["int8 dynamic"] = C.quantize_dynamic(model, {nn.Linear}, dtype=C.qint8)
    if attention:
        out["int8 dynamic, attention too"] = C.quantize_dynamic(model, {nn.Linear, nn.MultiheadAttention})
    target = qconfig_target(copy.deepcopy(model))
    prepared = C.prepare(target)
    with rtx.no_grad():
        prepared(calib)
    out["int8 static"] = C.convert(prepared)
    out["fp16 weights (Linear)"] = C.quantize_dynamic(model, {nn.Linear}, dtype=rtx.float16)
    out["pruned 50%"], frac = prune_half(model, finetune)
    return out, frac


def digits(args):
    from rtx.demo.model import DigitsCNN
    from rtx.demo.train import digits_tensors, train
    with tempfile.TemporaryDirectory() as d:
        r = train(epochs=args.epochs, out=os.path.join(d, "cnn.safetensors"), progress=False, log=lambda *_: None)
        model = DigitsCNN()
        model.load_state_dict(rtx.load(r.path))
    x_train, y_train, x_test, y_test = digits_tensors(0)

    def wrap(m):
        w = C.QuantWrapper(m)
        w.qconfig = C.get_default_qconfig("x86")
        return w

    def finetune(m):
        fit(m, x_train, y_train, epochs=1, lr=1e-3)

    models, frac = variants(model.eval(), x_train[:512], wrap, finetune)
    # quantization-aware fine-tuning from the trained weights: one epoch with fake quantization
    rtx.manual_seed(0)
    wrapped = C.QuantWrapper(copy.deepcopy(model))
    wrapped.qconfig = C.get_default_qat_qconfig("x86")
    qat = C.prepare_qat(wrapped.train())
    fit(qat, x_train, y_train, epochs=1, lr=1e-4)
    ordered = {}
    for label, m in models.items():
        ordered[label] = m
        if label == "int8 static":
            ordered["int8 QAT (1 epoch)"] = C.convert(qat.eval())
    return ordered, x_test, y_test, x_test[:64], frac


class TinyTransformer(nn.Module):
    def __init__(self, vocab=16, length=24, d_model=64, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(rtx.randn(1, length, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos).mean(1))


def counting_task(n, seed, vocab=16, length=24):
    """Tokens uniform over 0..15; the label compares how often 1 and 2 occur: 0 more 1s, 1 more
    2s, 2 as many (about a quarter of the sequences: the model must count exactly)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, size=(n, length))
    ones, twos = (x == 1).sum(1), (x == 2).sum(1)
    y = np.where(ones > twos, 0, np.where(ones < twos, 1, 2))
    return rtx.from_numpy(x.astype(np.int64)), rtx.from_numpy(y.astype(np.int64))


def transformer(args):
    rtx.manual_seed(0)
    x_train, y_train = counting_task(6000, 0)
    x_test, y_test = counting_task(1000, 1)
    model = fit(TinyTransformer(), x_train, y_train, epochs=args.tf_epochs, lr=2e-3)

    def static_target(m):
        m.qconfig = C.get_default_qconfig("x86")
        return m

    def finetune(m):
        fit(m, x_train, y_train, epochs=1, lr=5e-4)

    models, frac = variants(model, x_train[:512], static_target, finetune, attention=True)
    return models, x_test, y_test, x_test[:64], frac


def report(name, result):
    models, x_test, y_test, x_lat, frac = result
    base = models["fp32"]
    base_bytes = C.state_dict_bytes(base)
    lat = latencies(models, x_lat)
    print(f"\n{name}")
    print("| variant | accuracy | weight bytes | fp32 / this | latency (batch 64) | this / fp32 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, m in models.items():
        acc = accuracy(m, x_test, y_test)
        size = C.state_dict_bytes(m)
        extra = f" ({frac:.0%} zeros)" if label.startswith("pruned") else ""
        print(f"| {label}{extra} | {acc * 100:.2f}% | {size:,} | {base_bytes / size:.2f}x | "
              f"{lat[label] * 1e3:.2f} ms | {lat[label] / lat['fp32']:.2f}x |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15, help="digits CNN training epochs")
    p.add_argument("--tf-epochs", type=int, default=6, help="transformer training epochs")
    p.add_argument("--only", choices=["digits", "transformer"], help="run one of the two models")
    args = p.parse_args()
    print(f"BLAS: {'; '.join(blas_info())}; threads OMP={os.environ.get('OMP_NUM_THREADS')}")
    start = time.perf_counter()
    if args.only in (None, "digits"):
        report(f"digits CNN (rtx.demo, {args.epochs} epochs; 360 test images)", digits(args))
    if args.only in (None, "transformer"):
        report(f"small transformer (2 layers, d_model 64, {args.tf_epochs} epochs; 1,000 test sequences)",
               transformer(args))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
