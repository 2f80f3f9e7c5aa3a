"""ai.onnx.preview.training: the optimizer steps Adagrad, Adam and Momentum (one update of any
number of tensors; inputs R, T, then the per-tensor groups)."""
from __future__ import annotations

import numpy as np

from rtx.onnx._ops import arr, const, op, scalar

TRAINING = "ai.onnx.preview.training"


def _groups(inputs, k):
    rest = [arr(v) for v in inputs[2:]]
    n = len(rest) // k
    return [rest[i * n:(i + 1) * n] for i in range(k)]


@op("Adagrad", domain=TRAINING)
def adagrad(inputs, attrs, opset):
    r, t = float(scalar(inputs[0])), float(scalar(inputs[1]))
    xs, gs, hs = _groups(inputs, 3)
    eps, decay, l2 = attrs.get("epsilon", 1e-6), attrs.get("decay_factor", 0.0), attrs.get("norm_coefficient", 0.0)
    lr = r / (1 + t * decay)
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        g = g + l2 * x
        h2 = h + g * g
        new_x.append((x - lr * g / (np.sqrt(h2) + eps)).astype(x.dtype))
        new_h.append(h2.astype(h.dtype))
    return tuple(const(v) for v in new_x + new_h)


@op("Adam", domain=TRAINING)
def adam(inputs, attrs, opset):
    r, t = float(scalar(inputs[0])), float(scalar(inputs[1]))
    xs, gs, vs, hs = _groups(inputs, 4)
    alpha, beta = attrs.get("alpha", 0.9), attrs.get("beta", 0.999)
    eps, l2 = attrs.get("epsilon", 1e-6), attrs.get("norm_coefficient", 0.0)
    l2_post = attrs.get("norm_coefficient_post", 0.0)
    out_x, out_v, out_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g = g + l2 * x
        v2 = alpha * v + (1 - alpha) * g
        h2 = beta * h + (1 - beta) * g * g
        lr = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
        x2 = x - lr * v2 / (np.sqrt(h2) + eps)
        x2 = (1 - l2_post) * x2
        out_x.append(x2.astype(x.dtype))
        out_v.append(v2.astype(v.dtype))
        out_h.append(h2.astype(h.dtype))
    return tuple(const(v) for v in out_x + out_v + out_h)


@op("Momentum", domain=TRAINING)
def momentum(inputs, attrs, opset):
    r, t = float(scalar(inputs[0])), float(scalar(inputs[1]))
    xs, gs, vs = _groups(inputs, 3)
    alpha, beta, l2 = attrs["alpha"], attrs["beta"], attrs["norm_coefficient"]
    nesterov = attrs.get("mode", "standard") == "nesterov"
    out_x, out_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g = g + l2 * x
        b = beta if t > 0 else 1.0
        v2 = alpha * v + b * g
        x2 = x - r * (g + alpha * v2) if nesterov else x - r * v2
        out_x.append(x2.astype(x.dtype))
        out_v.append(v2.astype(v.dtype))
    return tuple(const(v) for v in out_x + out_v)
