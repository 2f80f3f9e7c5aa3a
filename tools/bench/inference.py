"""rtx-inference figures: InferenceSession latency against eager rtx (under no_grad) and against
onnxruntime on the exported model, for DigitsCNN and a small MLP at batch 1 and 64; the same
for int8 models made by onnxruntime's quantizer (QDQ format); and the dynamic batcher's
throughput for one-row requests from 32 client threads against the threads calling run directly.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python tools/bench/inference.py

onnxruntime runs with intra_op_num_threads=1 so that both sides use one core.
"""
from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import best_of, blas_info  # noqa: E402

import rtx  # noqa: E402
import rtx.nn as nn  # noqa: E402
import rtx.onnx  # noqa: E402
from rtx.demo.model import DigitsCNN  # noqa: E402
from rtx.inference import DynamicBatcher, InferenceSession  # noqa: E402


def ort_session(data):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def export(model, shape):
    buf = io.BytesIO()
    rtx.onnx.export(model, (rtx.randn(2, *shape),), buf, input_names=["x"], output_names=["y"],
                    dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return buf.getvalue()


def quantize(data, shape):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    rng = np.random.default_rng(0)
    calib = iter([{"x": rng.standard_normal((16, *shape)).astype(np.float32)} for _ in range(4)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(calib, None)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        Path(src).write_bytes(data)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt8)
        return Path(dst).read_bytes()


def fmt(t):
    return f"{t * 1e6:8.1f} us" if t < 1e-2 else f"{t * 1e3:8.2f} ms"


def main():
    rtx.manual_seed(0)
    models = {"DigitsCNN": (DigitsCNN().eval(), (1, 8, 8)),
              "MLP 64-256-256-10": (nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                                  nn.Linear(256, 10)).eval(), (64,))}
    print(f"BLAS: {'; '.join(blas_info())}")
    print(f"{'model':<20} {'batch':>5} {'eager':>11} {'session':>11} {'ort':>11} {'sess/eager':>10} {'sess/ort':>9} "
          f"{'int8 sess':>11} {'int8 ort':>11} {'int8 s/o':>9}")
    for name, (model, shape) in models.items():
        data = export(model, shape)
        sess = InferenceSession(model, rtx.randn(2, *shape))
        ort = ort_session(data)
        qdata = quantize(data, shape)
        qsess, qort = InferenceSession(qdata), ort_session(qdata)
        for n in (1, 64):
            x = np.random.default_rng(n).standard_normal((n, *shape)).astype(np.float32)
            xt = rtx.from_numpy(x)
            feed = {"x": x}
            sfeed = {sess.get_inputs()[0].name: x}
            with rtx.no_grad():
                t_eager = best_of(lambda m=model, xt=xt: m(xt))
            t_sess = best_of(lambda s=sess, f=sfeed: s.run(None, f))
            t_ort = best_of(lambda s=ort, f=feed: s.run(None, f))
            t_qs = best_of(lambda s=qsess, f=feed: s.run(None, f))
            t_qo = best_of(lambda s=qort, f=feed: s.run(None, f))
            print(f"{name:<20} {n:>5} {fmt(t_eager):>11} {fmt(t_sess):>11} {fmt(t_ort):>11} {t_sess / t_eager:9.2f}x "
                  f"{t_sess / t_ort:8.2f}x {fmt(t_qs):>11} {fmt(t_qo):>11} {t_qs / t_qo:8.2f}x")

    # dynamic batching, DigitsCNN: 32 client threads each sending 16 one-row requests one after
    # another (as a server's request handlers would), calling session.run directly or through the
    # batcher; and 512 requests submitted at once (open loop)
    model, shape = models["DigitsCNN"]
    sess = InferenceSession(model, rtx.randn(2, *shape))
    rows = [np.random.default_rng(i).standard_normal((1, *shape)).astype(np.float32) for i in range(512)]
    sess.warmup(batch_sizes=range(1, 33))

    def clients(call, rows=rows):
        t0 = time.perf_counter()
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda i: [call(r) for r in rows[i::32]], range(32)))
        return 512 / (time.perf_counter() - t0)
    direct = clients(lambda r, s=sess: s.run(None, {"x": r}))
    with DynamicBatcher(sess, max_batch_size=32, max_wait_ms=2.0) as b:
        closed = clients(lambda r, b=b: b.submit({"x": r}).result())
        t0 = time.perf_counter()
        for f in [b.submit({"x": r}) for r in rows]:
            f.result()
        opened = 512 / (time.perf_counter() - t0)
        st = b.stats()
    print(f"\nDigitsCNN, 512 one-row requests: 32 threads calling session.run {direct:,.0f} req/s; through "
          f"DynamicBatcher(32, 2 ms) {closed:,.0f} req/s; all submitted at once {opened:,.0f} req/s "
          f"(mean batch {st['mean_batch_size']:.1f}, request p50/p99 {st['latency']['p50_ms']:.2f}/"
          f"{st['latency']['p99_ms']:.2f} ms)")

if __name__ == "__main__":
    main()
