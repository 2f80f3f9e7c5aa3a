"""rtx-graph and rtx-onnx figures (rtx only; PyTorch has no counterpart run here):
trace time, a traced graph's call against eager, elementwise fusion on and off, export time,
and onnxruntime against rtx on the exported model.

    .venv/bin/python tools/bench/graph_onnx.py
"""
from __future__ import annotations

import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import best_of  # noqa: E402

import rtx  # noqa: E402
import rtx.graph  # noqa: E402
import rtx.nn as nn  # noqa: E402
import rtx.onnx  # noqa: E402


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()


def mlp():
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.SiLU(), nn.Linear(512, 10)).eval()


def elementwise(x, y):
    return ((x * 2 + y).tanh() * (y - 1).sigmoid() + x.exp() * 0.1).relu()


def row(name, value):
    print(f"{name:<58} {value}")


def bench_model(label, model, x):
    import onnxruntime as ort
    t0 = time.perf_counter()
    g = rtx.graph.trace(model, x)
    row(f"{label}: trace (2 runs + fit)", f"{(time.perf_counter() - t0) * 1e3:.1f} ms")
    with rtx.no_grad():
        eager = best_of(lambda: model(x))
        graph = best_of(lambda: g(x))
        g.optimize()
        opt = best_of(lambda: g(x))
    row(f"{label}: eager / graph / optimized graph", f"{eager * 1e3:.2f} / {graph * 1e3:.2f} / {opt * 1e3:.2f} ms")
    rtx.onnx.export(model, x, None)  # the first export also imports onnx and the SDPA backends
    buf = io.BytesIO()
    t0 = time.perf_counter()
    rtx.onnx.export(model, x, buf, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    row(f"{label}: export (warm)", f"{(time.perf_counter() - t0) * 1e3:.1f} ms")
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    feed = {"x": x.numpy()}
    row(f"{label}: onnxruntime run", f"{best_of(lambda: sess.run(None, feed)) * 1e3:.2f} ms")


def main():
    bench_model("CNN 32x32, batch 32", cnn(), rtx.randn(32, 3, 32, 32))
    bench_model("MLP 256-512-512-10, batch 64", mlp(), rtx.randn(64, 256))
    x, y = rtx.randn(1024, 1024), rtx.randn(1024, 1024)
    g = rtx.graph.trace(elementwise, (x, y))
    with rtx.no_grad():
        unfused = best_of(lambda: g(x, y))
        n = g.fuse_elementwise()
        fused = best_of(lambda: g(x, y))
        eager = best_of(lambda: elementwise(x, y))
    row(f"elementwise chain 1024x1024 ({len(g.nodes)} ops, {n} group): eager / graph / fused",
        f"{eager * 1e3:.2f} / {unfused * 1e3:.2f} / {fused * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
