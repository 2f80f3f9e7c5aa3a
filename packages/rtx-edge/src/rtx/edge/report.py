"""EdgeReport: what an edge export weighs, how close it stays to the float model, and how fast it runs."""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field

import numpy as np
from onnx import numpy_helper


@dataclass
class EdgeReport:
    """The result of `rtx.edge.export`.

    Sizes are bytes of the serialized ONNX model (`*_size_bytes`) and of its initializers alone
    (`*_weight_bytes`), for the export and for the float32 export of the same model. Accuracy fields
    compare the exported model, run by the edge runtime, with the float rtx model on `eval_data`:
    `max_abs_diff` over all outputs, `agreement` = fraction of rows whose arg-max (last axis of the first
    output) is the same, `accuracy`/`float_accuracy` against the labels when given. Latencies are the
    best wall-clock milliseconds of one `run` on the example batch (`latency_batch` rows): the edge
    runtime on the export and on the float export, and onnxruntime (None when it is not installed).
    """

    path: str
    quantize: str | None
    opset: int
    size_bytes: int
    float_size_bytes: int
    weight_bytes: int
    float_weight_bytes: int
    ops: list = field(default_factory=list)
    eval_samples: int = 0
    max_abs_diff: float | None = None
    agreement: float | None = None
    accuracy: float | None = None
    float_accuracy: float | None = None
    latency_batch: int | None = None
    latency_ms: float | None = None
    float_latency_ms: float | None = None
    ort_latency_ms: float | None = None
    ort_float_latency_ms: float | None = None

    @property
    def compression(self):
        """float file size / exported file size."""
        return self.float_size_bytes / self.size_bytes

    def __str__(self):
        def ms(v):
            return "-" if v is None else f"{v:.3f} ms"

        lines = [f"rtx.edge export {self.path} (quantize={self.quantize}, opset {self.opset})",
                 f"  size      {self.size_bytes:,} B (float {self.float_size_bytes:,} B, {self.compression:.2f}x); "
                 f"weights {self.weight_bytes:,} B (float {self.float_weight_bytes:,} B)"]
        if self.eval_samples:
            acc = "" if self.accuracy is None else (f"; accuracy {self.accuracy:.4f} (float "
                                                    f"{self.float_accuracy:.4f})")
            agree = "" if self.agreement is None else f"; arg-max agreement {self.agreement:.4f}"
            lines.append(f"  vs float  {self.eval_samples} samples: max |diff| {self.max_abs_diff:.4g}{agree}{acc}")
        if self.latency_ms is not None:
            lines.append(f"  latency   batch {self.latency_batch}: edge runtime {ms(self.latency_ms)} "
                         f"(float {ms(self.float_latency_ms)}); onnxruntime {ms(self.ort_latency_ms)} "
                         f"(float {ms(self.ort_float_latency_ms)})")
        return "\n".join(lines)


def weight_bytes(model):
    """Bytes of the model's initializers (the weights as stored)."""
    return sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer)


def best_ms(fn, repeat=5, min_seconds=0.02):
    """Least wall-clock milliseconds of one call (the least disturbed estimate on a busy machine)."""
    fn()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_seconds or number >= 1 << 12:
            break
        number *= 2
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e3


def onnxruntime_session(model_bytes):
    """An onnxruntime InferenceSession when onnxruntime is installed, else None. rtx-edge does not
    depend on onnxruntime: it is only used, when present, to report its latency."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    import onnxruntime
    return onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])


def compare(outputs, reference, labels=None):
    """(max_abs_diff, agreement, accuracy, float_accuracy) of outputs against the float reference."""
    diff = max(float(np.abs(o.astype(np.float64) - r).max(initial=0.0)) for o, r in zip(outputs, reference))
    first, ref = outputs[0], reference[0]
    agreement = accuracy = float_accuracy = None
    if first.ndim >= 2 and first.shape[-1] > 1:
        pred, ref_pred = first.argmax(-1), ref.argmax(-1)
        agreement = float((pred == ref_pred).mean())
        if labels is not None:
            labels = np.asarray(labels).reshape(pred.shape)
            accuracy, float_accuracy = float((pred == labels).mean()), float((ref_pred == labels).mean())
    elif labels is not None:
        raise ValueError(f"labels need a classifier output (batch, classes); the model's first output has shape "
                         f"{list(first.shape)}")
    return diff, agreement, accuracy, float_accuracy
