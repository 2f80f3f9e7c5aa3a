"""rtx-edge figures: size, accuracy and latency of edge exports (float32, fp16 storage, int8 QDQ) of
the digits CNN (rtx.demo, trained here) and of an MLP trained on the same digits, run by the NumPy edge
runtime (rtx.edge.Session) and by onnxruntime on the same file. rtx and onnxruntime only.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python tools/bench/edge.py [--epochs 15]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import best_of, blas_info  # noqa: E402

import rtx  # noqa: E402
import rtx.edge  # noqa: E402
import rtx.nn as nn  # noqa: E402
from rtx.demo.model import DigitsCNN  # noqa: E402
from rtx.demo.train import digits_tensors, train  # noqa: E402


def train_mlp(x, y, epochs):
    rtx.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = rtx.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = rtx.from_numpy(x), rtx.from_numpy(y)
    for _ in range(epochs * 20):
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()
    return model.eval()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15, help="epochs of the digits CNN's training (rtx demo's default)")
    args = p.parse_args()
    import onnxruntime as ort

    tmp = Path(tempfile.mkdtemp())
    train(epochs=args.epochs, out=str(tmp / "digits.safetensors"), progress=False, log=lambda *a: None)
    cnn = DigitsCNN()
    cnn.load_state_dict(rtx.load(str(tmp / "digits.safetensors")))
    x_train, y_train, x_test, y_test = (t.numpy() for t in digits_tensors(0))
    flat = x_train.reshape(len(x_train), -1)
    mlp = train_mlp(flat, y_train, args.epochs)
    models = {"digits CNN": (cnn.eval(), x_train, x_test),
              "MLP 64-256-256-10": (mlp, flat, x_test.reshape(len(x_test), -1))}

    print(f"BLAS: {'; '.join(blas_info())}; onnxruntime {ort.__version__}")
    print("| model | export | file bytes | weight bytes | test accuracy | arg-max agreement with float | "
          "edge runtime, batch 1 / 64 | onnxruntime, batch 1 / 64 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (model, x_cal, x_eval) in models.items():
        for quantize in (None, "fp16", "int8"):
            path = tmp / f"{name.split()[0]}_{quantize}.onnx"
            rep = rtx.edge.export(model, x_eval[:1], path, quantize=quantize, calibration_data=x_cal[:512],
                                  eval_data=(x_eval, y_test), measure_latency=False)
            edge, ref = rtx.edge.Session(path), ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            times = []
            for sess in (edge, ref):
                for n in (1, 64):
                    feed = {"input": x_eval[:n]}
                    times.append(best_of(lambda s=sess, f=feed: s.run(None, f), repeat=7, min_time=0.2) * 1e3)
            print(f"| {name} | {quantize or 'float32'} | {rep.size_bytes:,} | {rep.weight_bytes:,} | "
                  f"{rep.accuracy * 100:.2f}% | {rep.agreement * 100:.2f}% | "
                  f"{times[0]:.3f} / {times[1]:.3f} ms | {times[2]:.3f} / {times[3]:.3f} ms |")


if __name__ == "__main__":
    main()
