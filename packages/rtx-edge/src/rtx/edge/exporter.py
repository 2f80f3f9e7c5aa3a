"""rtx.edge.export: an rtx model to a small ONNX file for devices (int8 QDQ, fp16 storage or float32)."""
from __future__ import annotations

import collections.abc
from pathlib import Path

import numpy as np
import onnx

import rtx
import rtx.nn as nn
import rtx.onnx
from rtx.edge import report as _report
from rtx.edge.calibrate import METHODS, activation_ranges
from rtx.edge.fp16 import to_fp16_storage
from rtx.edge.quantize import activation_tensors, fold_batchnorm, quantize_model
from rtx.edge.runtime import Session, UnsupportedOpError, check_supported

QUANTIZE_MODES = ("int8", "fp16", None)
OPSETS = range(13, 21)  # per-axis DequantizeLinear needs 13; rtx.onnx.export writes up to 20


def _array(x, what):
    if isinstance(x, rtx.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{what} must be an rtx Tensor or a NumPy array, got {type(x).__name__}")


def _example_arrays(example):
    items = tuple(example) if isinstance(example, (tuple, list)) else (example,)
    if not items:
        raise ValueError("example must hold at least one input tensor")
    return tuple(_array(x, "example (a tensor or a tuple of tensors)") for x in items)


def _inputs_like(batch, examples, what):
    """One batch as a tuple of arrays matching the example inputs' rank and dtype."""
    items = tuple(batch) if isinstance(batch, (tuple, list)) else (batch,)
    if len(items) < len(examples):
        raise ValueError(f"{what}: the model takes {len(examples)} input(s), a batch holds {len(items)}")
    out = []
    for i, (x, ex) in enumerate(zip(items, examples)):  # extra items (labels of a DataLoader) are ignored
        x = _array(x, f"{what} item {i}")
        if x.ndim != ex.ndim or x.shape[1:] != ex.shape[1:]:
            raise ValueError(f"{what}: input {i} must have shape (batch, {', '.join(map(str, ex.shape[1:]))}) like "
                             f"the example, got {tuple(x.shape)}")
        if np.issubdtype(ex.dtype, np.floating):
            x = x.astype(ex.dtype, copy=False)
        elif x.dtype != ex.dtype:
            raise ValueError(f"{what}: input {i} must have dtype {ex.dtype} like the example, got {x.dtype}")
        out.append(np.ascontiguousarray(x))
    return tuple(out)


def _calibration_batches(data, examples):
    """calibration_data: one batch (a tensor, or a tuple of tensors for a multi-input model) or an
    iterable of batches (a list, a generator, a DataLoader of (x, y) pairs)."""
    if isinstance(data, (rtx.Tensor, np.ndarray)):
        return [_inputs_like(data, examples, "calibration_data")]
    if isinstance(data, tuple) and len(examples) > 1 and all(isinstance(d, (rtx.Tensor, np.ndarray)) for d in data):
        return [_inputs_like(data, examples, "calibration_data")]
    if not isinstance(data, collections.abc.Iterable) or isinstance(data, (str, bytes, dict)):
        raise TypeError(f"calibration_data must be a tensor/array or an iterable of batches, got {type(data).__name__}")
    return (_inputs_like(b, examples, "calibration_data batch") for b in data)


def _eval_split(data, n_inputs):
    """eval_data: x or (x, y); x is a tensor (a tuple of tensors for a multi-input model)."""
    if isinstance(data, (rtx.Tensor, np.ndarray)):
        return data, None
    if isinstance(data, (tuple, list)):
        if n_inputs == 1 and len(data) == 2:
            return data[0], data[1]
        if len(data) == n_inputs:
            return tuple(data), None
        if len(data) == 2 and isinstance(data[0], (tuple, list)) and len(data[0]) == n_inputs:
            return tuple(data[0]), data[1]
    raise ValueError(f"eval_data must be x or (x, y) with x a tensor (a tuple of {n_inputs} tensors for this model) "
                     f"and y the labels, got {type(data).__name__}")


def _float_outputs(model, inputs):
    if isinstance(model, nn.Module):
        was_training = model.training
        model.eval()
        try:
            with rtx.no_grad():
                out = model(*[rtx.from_numpy(x) for x in inputs])
        finally:
            model.train(was_training)
    else:
        with rtx.no_grad():
            out = model(*[rtx.from_numpy(x) for x in inputs])
    return [_array(o, "model output") for o in _flatten(out)]


def _flatten(out):
    """A model's outputs as a flat list, in the order rtx.onnx.export writes them (an LSTM returns
    (output, (h, c)))."""
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _flatten(o)]
    return [out]


def _check_float32(model, quantize):
    """int8 and fp16 rewrite float32 tensors: a float64 model would come out unchanged (fp16) or invalid
    (int8: QuantizeLinear takes no double input, so onnxruntime refuses the file)."""
    g = model.graph
    doubles = [t.name for t in g.initializer if t.data_type == onnx.TensorProto.DOUBLE]
    doubles += [i.name for i in g.input if i.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE]
    if doubles:
        raise ValueError(f"quantize={quantize!r} converts float32 models; this one has float64 tensors "
                         f"{doubles[:4]}{' ...' if len(doubles) > 4 else ''}: call model.float() (and pass float32 "
                         "examples) first, or export it with quantize=None")


def _check_args(quantize, calibration_data, per_channel, opset, calibration, percentile, path):
    if quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES}, got {quantize!r}")
    if quantize == "int8" and calibration_data is None:
        raise ValueError("quantize='int8' needs calibration_data: a batch (or an iterable of batches) of "
                         "representative inputs, from which the activation scales are computed")
    if not isinstance(per_channel, bool):
        raise TypeError(f"per_channel must be a bool, got {type(per_channel).__name__}")
    if isinstance(opset, bool) or not isinstance(opset, int) or opset not in OPSETS:
        raise ValueError(f"opset must be an int in {OPSETS.start}..{OPSETS.stop - 1} (per-axis quantization needs "
                         f"13), got {opset!r}")
    if calibration not in METHODS:
        raise ValueError(f"calibration must be one of {METHODS}, got {calibration!r}")
    if not isinstance(percentile, (int, float)) or not 50 < percentile <= 100:
        raise ValueError(f"percentile must be a number in (50, 100], got {percentile!r}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"the folder {str(parent)!r} for {str(path)!r} does not exist")


def export(model, example, path, *, quantize="int8", calibration_data=None, eval_data=None, per_channel=True,
           opset=17, calibration="minmax", percentile=99.99, symmetric_activations=False, input_names=None,
           output_names=None, dynamic_batch=True, measure_latency=True):
    """Export an rtx model to an ONNX file for edge devices and report its size, accuracy and latency.

    model: an rtx `nn.Module` (exported with `rtx.onnx.export` in eval mode) or a float
        `onnx.ModelProto` (then the float reference is `rtx.onnx.load` of it).
    example: an input tensor (or tuple of tensors) of the model; it fixes every dim but the batch
        (dim 0 stays dynamic unless dynamic_batch=False) and is the batch latency is measured on.
    quantize: "int8" (QDQ: int8 weights per output channel, int8 activations calibrated on
        `calibration_data`), "fp16" (float16 weights, float32 math) or None (float32).
    calibration_data: for "int8": one batch (tensor or array), or an iterable of batches (a DataLoader of
        (x, y) pairs works: extra items are ignored).
    eval_data: x or (x, y): the export, run by the edge runtime, is compared with the float model on x,
        and both are scored on the labels y.
    calibration: "minmax" or "percentile" (the `percentile`-th and (100 - percentile)-th values).
    symmetric_activations: zero points 0 for activations too (TensorRT's requirement); the default,
        asymmetric, uses all 256 levels on post-ReLU activations.
    Returns an `EdgeReport`.
    """
    _check_args(quantize, calibration_data, per_channel, opset, calibration, percentile, path)
    examples = _example_arrays(example)
    if isinstance(model, onnx.ModelProto):
        float_model = model
        reference = rtx.onnx.load(model).eval()
    elif isinstance(model, nn.Module):
        n = len(examples)
        input_names = input_names or (["input"] if n == 1 else [f"input_{i}" for i in range(n)])
        probe = _float_outputs(model, examples)
        output_names = output_names or (["output"] if len(probe) == 1 else [f"output_{i}" for i in range(len(probe))])
        axes = {name: {0: "batch"} for name in list(input_names) + list(output_names)} if dynamic_batch else None
        float_model = rtx.onnx.export(model, tuple(rtx.from_numpy(x) for x in examples), None,
                                      input_names=list(input_names), output_names=list(output_names),
                                      dynamic_axes=axes, opset_version=opset)
        reference = model
    else:
        raise TypeError(f"model must be an rtx nn.Module or an onnx.ModelProto, got {type(model).__name__}")

    try:   # before calibrating or writing anything: the file must run on the edge runtime
        check_supported(float_model)
    except UnsupportedOpError as e:
        raise UnsupportedOpError(f"rtx.edge.export: nothing was written: {e}. For onnxruntime, export the model "
                                 "with rtx.onnx.export instead") from None
    if quantize in ("int8", "fp16"):
        _check_float32(float_model, quantize)
    if quantize == "int8":
        folded = fold_batchnorm(float_model)  # BatchNorm scales go into the conv weights before they are rounded
        names = activation_tensors(folded)
        ranges = activation_ranges(folded, names, _calibration_batches(calibration_data, examples),
                                   method=calibration, percentile=percentile)
        edge_model = quantize_model(folded, ranges, per_channel=per_channel,
                                    symmetric_activations=symmetric_activations)
    elif quantize == "fp16":
        edge_model = to_fp16_storage(float_model)
    else:
        edge_model = float_model
    onnx.checker.check_model(edge_model)
    edge_bytes, float_bytes = edge_model.SerializeToString(), float_model.SerializeToString()
    Path(path).expanduser().write_bytes(edge_bytes)

    rep = _report.EdgeReport(
        path=str(path), quantize=quantize, opset=opset, size_bytes=len(edge_bytes), float_size_bytes=len(float_bytes),
        weight_bytes=_report.weight_bytes(edge_model), float_weight_bytes=_report.weight_bytes(float_model),
        ops=sorted({n.op_type for n in edge_model.graph.node}))
    session = Session(edge_bytes)
    feed_names = [i.name for i in session.get_inputs()]
    if eval_data is not None:
        x, y = _eval_split(eval_data, len(examples))
        x = _inputs_like(x, examples, "eval_data")
        if len(x[0]) == 0:
            raise ValueError("eval_data has no samples (0 rows): pass some, or eval_data=None to skip the comparison")
        step = 512 if dynamic_batch or isinstance(model, onnx.ModelProto) else len(examples[0])
        if len(x[0]) % step and step != 512:
            raise ValueError(f"eval_data: with dynamic_batch=False the model takes batches of {step} (the example's "
                             f"size); {len(x[0])} samples do not split into them")
        outputs, reference_outputs = [], []
        for start in range(0, len(x[0]), step):  # batches bound the im2col buffers
            chunk = tuple(a[start:start + step] for a in x)
            outputs.append(session.run(None, dict(zip(feed_names, chunk))))
            reference_outputs.append(_float_outputs(reference, chunk))
        outputs = [np.concatenate(o) for o in zip(*outputs)]
        reference_outputs = [np.concatenate(o) for o in zip(*reference_outputs)]
        labels = None if y is None else _array(y, "eval_data labels")
        if labels is not None and len(labels) != len(x[0]):
            raise ValueError(f"eval_data: {len(x[0])} inputs but {len(labels)} labels")
        rep.eval_samples = len(x[0])
        rep.max_abs_diff, rep.agreement, rep.accuracy, rep.float_accuracy = _report.compare(
            outputs, reference_outputs, labels)
    if measure_latency:
        feed = dict(zip(feed_names, examples))
        rep.latency_batch = len(examples[0])
        rep.latency_ms = _report.best_ms(lambda: session.run(None, feed))
        float_session = Session(float_bytes)
        rep.float_latency_ms = _report.best_ms(lambda: float_session.run(None, feed))
        ort = _report.onnxruntime_session(edge_bytes)
        if ort is not None:
            rep.ort_latency_ms = _report.best_ms(lambda: ort.run(None, feed))
            ort_float = _report.onnxruntime_session(float_bytes)
            rep.ort_float_latency_ms = _report.best_ms(lambda: ort_float.run(None, feed))
    return rep
