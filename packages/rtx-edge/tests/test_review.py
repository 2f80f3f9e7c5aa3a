"""Regression tests from the review: empty batches in the runtime, degenerate calibration ranges
(constant, tiny, denormal, empty, NaN), and models the edge runtime cannot run."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import rtx
import rtx.edge
import rtx.nn as nn
from rtx.edge.quantize import activation_params

ort = pytest.importorskip("onnxruntime")


def _ort(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _mlp():
    rtx.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()


def _cnn():
    rtx.manual_seed(1)
    return nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)).eval()


@pytest.mark.parametrize("quantize", ["int8", None])
def test_an_empty_batch_runs_like_onnxruntime(tmp_path, quantize):
    # Conv and Flatten used to reshape (0, ...) with -1, which NumPy cannot infer for 0 rows
    x = np.random.default_rng(0).standard_normal((16, 1, 8, 8)).astype(np.float32)
    path = tmp_path / "cnn.onnx"
    rtx.edge.export(_cnn(), x[:1], path, quantize=quantize, calibration_data=x, measure_latency=False)
    empty = np.zeros((0, 1, 8, 8), np.float32)
    (ours,), (theirs,) = rtx.edge.Session(path).run(None, {"input": empty}), _ort(path).run(None, {"input": empty})
    assert ours.shape == theirs.shape == (0, 3)


@pytest.mark.parametrize("axis", [1, 2])
def test_old_opset_softmax_of_an_empty_batch(axis):
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (2, 0):
        x = np.random.default_rng(n).standard_normal((n, 3, 4)).astype(np.float32)
        (ours,), (theirs,) = rtx.edge.Session(m).run(None, {"x": x}), ref.run(None, {"x": x})
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_scales_that_underflow_float32_become_one():
    # the scale is decided in float32: a range of 1e-44 gave a stored scale of exactly 0
    for lo, hi, sym in [(0.0, 0.0, False), (0.0, 0.0, True), (1e-44, 1e-44, False), (0.0, 1e-44, True),
                        (-1e-40, 1e-40, False)]:
        scale, zp = activation_params(lo, hi, symmetric=sym)
        assert scale == np.float32(1.0) and zp == 0


@pytest.mark.parametrize("name, make, cal", [
    ("zeros", _mlp, lambda r: np.zeros((16, 6), np.float32)),
    ("constant 5", _mlp, lambda r: np.full((16, 6), 5.0, np.float32)),
    ("tiny range", _mlp, lambda r: r.random((16, 6)).astype(np.float32) * 1e-6),
    ("denormal", _mlp, lambda r: np.full((16, 6), 1e-44, np.float32)),
    ("conv, tiny range", _cnn, lambda r: r.random((16, 1, 8, 8)).astype(np.float32) * 1e-7),
])
def test_degenerate_calibration_gives_finite_scales_and_the_float_results(tmp_path, name, make, cal):
    # A tiny input range made bias / (x_scale * w_scale) pass 2**31: the int32 bias was clipped, and the
    # results were off by the whole bias (0.11 here) in both runtimes. Now the weight scale is raised.
    rng = np.random.default_rng(0)
    data = cal(rng)
    model = make()
    path = tmp_path / "m.onnx"
    rtx.edge.export(model, data[:1], path, calibration_data=data, measure_latency=False)
    proto = onnx.load(str(path))
    for init in proto.graph.initializer:
        if init.name.endswith("_scale"):
            s = numpy_helper.to_array(init)
            assert np.isfinite(s).all() and (s >= np.finfo(np.float32).tiny).all(), (init.name, s)
    x = data[:4]
    with rtx.no_grad():
        expected = model(rtx.from_numpy(x)).numpy()
    ours = rtx.edge.Session(path).run(None, {"input": x})[0]
    theirs = _ort(path).run(None, {"input": x})[0]
    assert np.abs(ours - expected).max() < 0.01, name
    assert np.abs(theirs - expected).max() < 0.01, name


@pytest.mark.parametrize("data, match", [
    (np.zeros((0, 6), np.float32), "no samples: its 1 batch"),
    (np.full((4, 6), np.nan, np.float32), "NaN/inf in tensor 'input'"),
    (np.full((4, 6), np.inf, np.float32), "NaN/inf in tensor 'input'"),
])
def test_calibration_data_without_usable_values_is_refused(tmp_path, data, match):
    with pytest.raises(ValueError, match=match):
        rtx.edge.export(_mlp(), np.zeros((1, 6), np.float32), tmp_path / "m.onnx", calibration_data=data,
                        measure_latency=False)


def test_empty_eval_data_is_refused_clearly(tmp_path):
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    # was: "max() arg is an empty sequence"
    with pytest.raises(ValueError, match=r"eval_data has no samples \(0 rows\)"):
        rtx.edge.export(_mlp(), x[:1], tmp_path / "m.onnx", calibration_data=x, eval_data=(x[:0], np.zeros(0)),
                        measure_latency=False)


@pytest.mark.parametrize("make, example, op", [
    (lambda: nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)), (3, 4), "LayerNormalization"),
    (lambda: nn.Sequential(nn.Linear(4, 4), nn.GELU()), (3, 4), "Erf"),
    (lambda: nn.LSTM(4, 4, batch_first=True), (2, 3, 4), "LSTM"),   # nested outputs (out, (h, c)) too
])
@pytest.mark.parametrize("quantize", ["int8", None])
def test_models_the_runtime_cannot_run_are_refused_before_writing(tmp_path, make, example, op, quantize):
    rtx.manual_seed(0)
    x = rtx.randn(*example)
    path = tmp_path / "m.onnx"
    with pytest.raises(rtx.edge.UnsupportedOpError, match=f"nothing was written: .*support op\\(s\\) {op}"):
        rtx.edge.export(make().eval(), x, path, quantize=quantize, calibration_data=x, measure_latency=False)
    assert not path.exists()


@pytest.mark.parametrize("quantize", ["int8", "fp16"])
def test_a_float64_model_is_refused_for_int8_and_fp16(tmp_path, quantize):
    # int8 used to write QuantizeLinear on a double input, a file onnxruntime refuses to load; fp16
    # converted nothing (float32 initializers only) and reported success
    model = _mlp().double()
    x = np.random.default_rng(0).standard_normal((8, 6))
    path = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match=r"converts float32 models; this one has float64 tensors \['0.weight'"):
        rtx.edge.export(model, x[:1], path, quantize=quantize, calibration_data=x, measure_latency=False)
    assert not path.exists()
    report = rtx.edge.export(model, x[:1], path, quantize=None, eval_data=x, measure_latency=False)
    assert report.max_abs_diff == 0.0
    np.testing.assert_allclose(rtx.edge.Session(path).run(None, {"input": x})[0], _ort(path).run(None, {"input": x})[0],
                               rtol=1e-12)
