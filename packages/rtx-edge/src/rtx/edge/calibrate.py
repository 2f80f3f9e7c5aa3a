"""Activation ranges for static quantization, observed by running the float ONNX graph with rtx.

The graph is run by rtx.onnx.load (not by onnxruntime, which rtx does not depend on) with the tensors
to observe added as graph outputs, one batch at a time.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

import rtx
import rtx.onnx

METHODS = ("minmax", "percentile")

# Percentile calibration keeps a random sample of each tensor's values (this many per batch) so that
# memory stays bounded on large calibration sets.
_SAMPLES_PER_BATCH = 1 << 18


def activation_ranges(model, names, batches, *, method="minmax", percentile=99.99, seed=0):
    """{name: (min, max)} of each tensor in `names` over the calibration batches (each a tuple of
    NumPy arrays, one per graph input). "minmax" takes the extremes; "percentile" takes the
    (100 - p)th and p-th percentiles, which ignores rare outliers at the price of clipping them."""
    if method not in METHODS:
        raise ValueError(f"calibration method must be one of {METHODS}, got {method!r}")
    if not names:
        return {}
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    del probe.graph.output[:]
    probe.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    module = rtx.onnx.load(probe, check=False).eval()  # outputs without shapes: the checker would refuse them
    rng = np.random.default_rng(seed)
    lo = {n: np.inf for n in names}
    hi = {n: -np.inf for n in names}
    samples = {n: [] for n in names}
    seen = rows = 0
    with rtx.no_grad():
        for batch in batches:
            seen += 1
            rows += len(batch[0]) if batch and np.ndim(batch[0]) else 1
            values = module(*[rtx.from_numpy(np.ascontiguousarray(b)) for b in batch])
            values = values if isinstance(values, tuple) else (values,)
            for name, value in zip(names, values):
                v = value.detach().cpu().numpy().ravel()
                if not np.isfinite(v).all():  # Python's min/max skip NaN: it would calibrate on the rest
                    raise ValueError(f"calibration produced NaN/inf in tensor {name!r}: the calibration data (or "
                                     "the model on it) has non-finite values")
                if method == "minmax":
                    lo[name] = min(lo[name], float(v.min(initial=np.inf)))
                    hi[name] = max(hi[name], float(v.max(initial=-np.inf)))
                else:
                    if v.size > _SAMPLES_PER_BATCH:
                        v = rng.choice(v, _SAMPLES_PER_BATCH, replace=False)
                    samples[name].append(v)
    if seen == 0:
        raise ValueError("calibration_data yielded no batch")
    if rows == 0:
        raise ValueError(f"calibration_data has no samples: its {seen} batch(es) have 0 rows")
    if method == "percentile":
        for name in names:
            v = np.concatenate(samples[name])
            lo[name], hi[name] = (float(p) for p in np.percentile(v, [100 - percentile, percentile]))
    return {n: (lo[n], hi[n]) for n in names}
