"""rtx-onnx import figures: how fast an imported model runs (rtx.onnx.load) against the same
model run natively in rtx and against onnxruntime on the same .onnx bytes, plus a fine-tuning
step of the imported model against the native one. rtx and onnxruntime only.

    .venv/bin/python tools/bench/onnx_import.py
"""
from __future__ import annotations

import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import best_of, blas_info  # noqa: E402

import rtx  # noqa: E402
import rtx.nn as nn  # noqa: E402
import rtx.onnx  # noqa: E402


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()


def mlp():
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 10)).eval()


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


def encoder():
    return nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True).eval()


CASES = [("cnn 3x32x32, batch 32", cnn, (32, 3, 32, 32)), ("mlp 256-512-512-10, batch 256", mlp, (256, 256)),
         ("lstm 32->64, seq 20, batch 16", lambda: Recurrent().eval(), (16, 20, 32)),
         ("transformer encoder d=64, seq 32, batch 8", encoder, (8, 32, 64))]


def row(name, value):
    print(f"{name:<58} {value}")


def bench(label, make, shape):
    import onnxruntime as ort
    model = make()
    x = rtx.randn(*shape)
    buf = io.BytesIO()
    rtx.onnx.export(model, (x,), buf, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    data = buf.getvalue()
    t0 = time.perf_counter()
    imported = rtx.onnx.load(data)
    load_ms = (time.perf_counter() - t0) * 1e3
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    feed = {"x": x.numpy()}
    with rtx.no_grad():
        native = best_of(lambda: model(x), repeat=5)
        loaded = best_of(lambda: imported(x), repeat=5)
    onnxrt = best_of(lambda: sess.run(None, feed), repeat=5)
    row(f"{label}: load", f"{load_ms:.1f} ms")
    row(f"{label}: native rtx / imported rtx / onnxruntime",
        f"{native * 1e3:.2f} / {loaded * 1e3:.2f} / {onnxrt * 1e3:.2f} ms")

    def step(m):
        def run():
            m(x).square().mean().backward()
            for p in m.parameters():
                p.grad = None
        return run
    row(f"{label}: train step native / imported",
        f"{best_of(step(model), repeat=3) * 1e3:.2f} / {best_of(step(imported), repeat=3) * 1e3:.2f} ms")


def main():
    rtx.manual_seed(0)
    print("BLAS:", "; ".join(blas_info()))
    for label, make, shape in CASES:
        bench(label, make, shape)


if __name__ == "__main__":
    main()
