"""rtx.edge.export on the digits CNN (trained by rtx.demo) and MLPs: the files onnxruntime runs, the
edge runtime's numbers against onnxruntime's, int8 accuracy against float, sizes, and argument errors."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import rtx
import rtx.edge
import rtx.nn as nn
from rtx.edge.calibrate import activation_ranges
from rtx.edge.quantize import activation_params, activation_tensors, quantize_weight

ort = pytest.importorskip("onnxruntime")


def _ort(path_or_bytes):
    return ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The demo's CNN trained by the demo's own training function (3 epochs, about 5 s), and the data."""
    from rtx.demo.model import DigitsCNN
    from rtx.demo.train import digits_tensors, train
    path = tmp_path_factory.mktemp("digits") / "digits.safetensors"
    result = train(epochs=3, out=str(path), progress=False, log=lambda *a: None)
    model = DigitsCNN()
    model.load_state_dict(rtx.load(str(path)))
    x_train, y_train, x_test, y_test = digits_tensors(0)
    assert result.accuracy > 0.9
    return model.eval(), x_train.numpy(), y_train.numpy(), x_test.numpy(), y_test.numpy()


@pytest.fixture(scope="module")
def digits_int8(digits, tmp_path_factory):
    model, x_train, _, x_test, y_test = digits
    path = tmp_path_factory.mktemp("edge") / "digits_int8.onnx"
    report = rtx.edge.export(model, x_test[:1], path, quantize="int8", calibration_data=x_train[:512],
                             eval_data=(x_test, y_test))
    return path, report


def _mlp(seed=0, sizes=(64, 48, 10)):
    rtx.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    return nn.Sequential(*layers).eval()


def test_digits_int8_accuracy_within_one_point_of_float(digits_int8):
    path, report = digits_int8
    assert report.eval_samples == 359 and report.quantize == "int8"
    assert report.float_accuracy > 0.9
    assert abs(report.accuracy - report.float_accuracy) <= 0.01, report
    assert report.agreement >= 0.98
    assert str(path) == report.path


def test_digits_int8_runs_in_onnxruntime_and_the_edge_runtime_matches_it(digits, digits_int8):
    model, _, _, x_test, y_test = digits
    path, report = digits_int8
    theirs = _ort(str(path)).run(None, {"input": x_test})[0]
    ours = rtx.edge.Session(path).run(None, {"input": x_test})[0]
    # onnxruntime fuses DQ -> Conv -> Q into integer kernels; the runtime computes in float: a rounding
    # tie may land one int8 step apart, which moves a logit by a few hundredths at most.
    assert np.abs(ours - theirs).max() < 0.1
    assert np.mean(ours.argmax(1) == theirs.argmax(1)) >= 0.995
    ort_accuracy = float(np.mean(theirs.argmax(1) == y_test))
    assert abs(ort_accuracy - report.accuracy) <= 0.006
    with rtx.no_grad():
        float_logits = model(rtx.from_numpy(x_test)).numpy()
    assert abs(float(np.mean(float_logits.argmax(1) == y_test)) - report.float_accuracy) < 1e-9


def test_digits_int8_graph_is_qdq_with_int8_per_channel_weights(digits_int8):
    path, report = digits_int8
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    quantized = [n for n in model.graph.node if n.op_type in ("Conv", "Gemm")]
    assert len(quantized) == 4
    for node in quantized:
        x, w, b = (producer[i] for i in node.input)
        assert x.op_type == w.op_type == b.op_type == "DequantizeLinear"
        wq, ws = inits[w.input[0]], inits[w.input[1]]
        assert wq.dtype == np.int8 and np.abs(wq).max() == 127  # symmetric, full range per channel
        assert ws.shape == (wq.shape[0],) and [a.i for a in w.attribute if a.name == "axis"] == [0]
        assert inits[b.input[0]].dtype == np.int32
        np.testing.assert_allclose(inits[b.input[1]], inits[x.input[1]] * ws, rtol=1e-6)
    assert not any(v.dtype == np.float32 and v.size > 64 for v in inits.values())  # no float weights left
    assert report.ops == ["Conv", "DequantizeLinear", "Gemm", "MaxPool", "QuantizeLinear", "Relu", "Reshape"]


def test_digits_int8_weights_are_about_four_times_smaller(digits_int8):
    path, report = digits_int8
    assert report.size_bytes == path.stat().st_size
    assert report.float_weight_bytes / report.weight_bytes > 3.4  # per-channel scales and int32 biases cost a bit
    assert report.compression > 2.5
    assert report.latency_batch == 1 and report.latency_ms > 0 and report.ort_latency_ms > 0
    assert "quantize=int8" in str(report) and "accuracy" in str(report)


def test_digits_float_and_fp16_exports_match_onnxruntime(digits, tmp_path):
    model, x_train, _, x_test, y_test = digits
    for quantize, tol in ((None, 1e-4), ("fp16", 1e-4)):
        path = tmp_path / f"digits_{quantize}.onnx"
        report = rtx.edge.export(model, x_test[:4], path, quantize=quantize, eval_data=x_test, measure_latency=False)
        ours = rtx.edge.Session(str(path)).run(None, {"input": x_test})[0]
        theirs = _ort(str(path)).run(None, {"input": x_test})[0]
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)
        assert report.agreement >= 0.997 and report.accuracy is None
        if quantize is None:
            assert report.max_abs_diff < 1e-4 and report.size_bytes == report.float_size_bytes
        else:
            assert report.max_abs_diff < 0.05
            assert 1.9 < report.float_weight_bytes / report.weight_bytes <= 2.0


@pytest.fixture(scope="module")
def digits_mlp(digits):
    """An MLP trained on the flattened digits (full-batch Adam)."""
    _, x_train, y_train, x_test, y_test = digits
    x_train, x_test = x_train.reshape(len(x_train), -1), x_test.reshape(len(x_test), -1)
    return _train_mlp(x_train, y_train), x_train, x_test, y_test


def _train_mlp(x, y, steps=60):
    model = _mlp(0, (64, 64, 10)).train()
    opt = rtx.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = rtx.from_numpy(x), rtx.from_numpy(y)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("options", [
    {},
    {"per_channel": False},
    {"symmetric_activations": True},
    {"calibration": "percentile", "percentile": 99.9},
])
def test_mlp_int8_matches_onnxruntime(digits_mlp, tmp_path, options):
    model, x_train, x_test, y_test = digits_mlp
    path = tmp_path / "mlp.onnx"
    batches = [x_train[i:i + 200] for i in range(0, 1000, 200)]  # an iterable of batches
    report = rtx.edge.export(model, x_test[:8], path, calibration_data=batches, eval_data=(x_test, y_test),
                             measure_latency=False, **options)
    ours = rtx.edge.Session(path.read_bytes()).run(None, {"input": x_test})[0]
    theirs = _ort(str(path)).run(None, {"input": x_test})[0]
    assert np.abs(ours - theirs).max() < 0.1
    assert np.mean(ours.argmax(1) == theirs.argmax(1)) >= 0.99
    assert report.float_accuracy > 0.9 and abs(report.accuracy - report.float_accuracy) <= 0.02
    zero_points = [numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer
                   if i.name.endswith("_zero_point") and i.data_type == onnx.TensorProto.INT8]
    if options.get("symmetric_activations"):
        assert all((z == 0).all() for z in zero_points)


def test_matmul_graph_of_a_3d_linear_is_quantized(tmp_path):
    model = _mlp(1, (16, 32, 4))
    x = np.random.default_rng(0).standard_normal((64, 5, 16)).astype(np.float32)
    path = tmp_path / "seq.onnx"
    report = rtx.edge.export(model, x[:2], path, calibration_data=x, eval_data=x, measure_latency=False)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("MatMul") == 2 and ops.count("QuantizeLinear") == 2  # the input and the ReLU output
    ours = rtx.edge.Session(path).run(None, {"input": x})[0]
    theirs = _ort(str(path)).run(None, {"input": x})[0]
    assert np.abs(ours - theirs).max() < 0.02 and report.max_abs_diff < 0.1


def test_larger_mlp_weights_shrink_almost_four_times(tmp_path):
    model = _mlp(2, (256, 512, 512, 10))
    x = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float32)
    report = rtx.edge.export(model, x[:1], tmp_path / "big.onnx", calibration_data=x, measure_latency=False)
    assert report.float_weight_bytes / report.weight_bytes > 3.85
    assert report.compression > 3.8


def test_exporting_an_onnx_model_proto(tmp_path):
    model = _mlp(3)
    float_proto = rtx.onnx.export(model, (rtx.randn(2, 64),), None, input_names=["x"], output_names=["y"],
                                  dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    x = np.random.default_rng(1).standard_normal((50, 64)).astype(np.float32)
    report = rtx.edge.export(float_proto, x[:2], tmp_path / "m.onnx", calibration_data=x, eval_data=x,
                             measure_latency=False)
    assert report.agreement >= 0.9 and report.max_abs_diff < 0.2


def test_calibrated_ranges_are_the_activations_extremes(digits):
    model, x_train, _, _, _ = digits
    proto = rtx.onnx.export(model, (rtx.from_numpy(x_train[:2]),), None, input_names=["input"],
                            dynamic_axes={"input": {0: "b"}})
    names = activation_tensors(proto)
    batches = [(x_train[:100],), (x_train[100:300],)]
    ranges = activation_ranges(proto, names, batches)
    with rtx.no_grad():  # the first conv + ReLU, computed by the rtx model's own layers
        h = rtx.nn.functional.relu(model.conv1(rtx.from_numpy(x_train[:300]))).numpy()
    assert names[0] == "input" and ranges["input"] == (float(x_train[:300].min()), float(x_train[:300].max()))
    np.testing.assert_allclose(ranges[names[1]], (h.min(), h.max()), rtol=1e-5)
    lo, hi = activation_ranges(proto, names, batches, method="percentile", percentile=99.0)[names[1]]
    assert hi < h.max() and np.isclose(hi, np.percentile(h, 99.0), rtol=0.05)


def test_weight_and_activation_quantization_formulas():
    w = np.random.default_rng(0).standard_normal((6, 3, 2, 2)).astype(np.float32) * np.arange(1, 7)[:, None, None, None]
    q, s = quantize_weight(w, axis=0)
    np.testing.assert_allclose(s, np.abs(w).reshape(6, -1).max(1) / 127, rtol=1e-6)
    assert np.abs(q.astype(np.float32) * s[:, None, None, None] - w).max() <= s.max() / 2 + 1e-7
    q, s = quantize_weight(np.zeros((2, 3)), axis=1)
    assert (q == 0).all() and (s == 1).all()
    scale, zp = activation_params(0.0, 5.1)
    assert zp == -128 and np.isclose(scale, 0.02)                    # post-ReLU: all levels on [0, max]
    scale, zp = activation_params(-1.0, 3.0)
    zp = int(zp)
    assert np.isclose((-128 - zp) * scale, -1.0, atol=scale / 2) and np.isclose((127 - zp) * scale, 3.0, atol=scale)
    assert activation_params(-1.0, 3.0, symmetric=True) == (np.float32(3.0 / 127), 0)
    assert activation_params(2.0, 4.0)[1] == -128                    # the range is widened to contain 0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"quantize": "int4"}, ValueError, r"quantize must be one of \('int8', 'fp16', None\), got 'int4'"),
    ({"quantize": "int8", "calibration_data": None}, ValueError, "needs calibration_data"),
    ({"opset": 11}, ValueError, "opset must be an int in 13..20"),
    ({"calibration": "kl"}, ValueError, "calibration must be one of"),
    ({"percentile": 20}, ValueError, r"percentile must be a number in \(50, 100\]"),
    ({"per_channel": "yes"}, TypeError, "per_channel must be a bool"),
    ({"calibration_data": np.zeros((4, 32), np.float32)}, ValueError, r"must have shape \(batch, 64\)"),
    ({"calibration_data": []}, ValueError, "yielded no batch"),
    ({"calibration_data": 3}, TypeError, "calibration_data must be a tensor/array or an iterable"),
    ({"eval_data": (np.zeros((4, 64), np.float32), np.zeros(3))}, ValueError, "4 inputs but 3 labels"),
    ({"eval_data": "x"}, ValueError, "eval_data must be x or"),
])
def test_bad_arguments_are_refused_clearly(tmp_path, kwargs, error, match):
    args = {"calibration_data": np.zeros((4, 64), np.float32), "measure_latency": False, **kwargs}
    with pytest.raises(error, match=match):
        rtx.edge.export(_mlp(), rtx.randn(1, 64), tmp_path / "m.onnx", **args)


def test_bad_model_example_and_path_are_refused(tmp_path):
    x = np.zeros((4, 64), np.float32)
    with pytest.raises(TypeError, match="model must be an rtx nn.Module or an onnx.ModelProto, got str"):
        rtx.edge.export("model.onnx", x, tmp_path / "m.onnx", calibration_data=x)
    with pytest.raises(TypeError, match="example .* must be an rtx Tensor or a NumPy array, got list"):
        rtx.edge.export(_mlp(), [[0.0] * 64], tmp_path / "m.onnx", calibration_data=x)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        rtx.edge.export(_mlp(), x, tmp_path / "no" / "m.onnx", calibration_data=x)


def _bn_cnn():
    rtx.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, bias=False),
                          nn.BatchNorm2d(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    with rtx.no_grad():  # running statistics far from (0, 1), so the fold has something to do
        for _ in range(3):
            model(rtx.randn(16, 3, 8, 8) * 2 + 1)
    return model.eval()


def test_batchnorm_is_folded_into_the_conv_before_quantization(tmp_path):
    from onnx.reference import ReferenceEvaluator

    from rtx.edge.quantize import fold_batchnorm
    model = _bn_cnn()
    proto = rtx.onnx.export(model, (rtx.randn(2, 3, 8, 8),), None, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    assert [n.op_type for n in proto.graph.node][:4] == ["Conv", "Mul", "Add", "Relu"]
    folded = fold_batchnorm(proto)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Relu", "Conv", "GlobalAveragePool", "Reshape", "Gemm"]
    x = np.random.default_rng(0).standard_normal((5, 3, 8, 8)).astype(np.float32)
    expected = ReferenceEvaluator(proto).run(None, {"x": x})[0]  # onnx's reference: an independent evaluator
    np.testing.assert_allclose(ReferenceEvaluator(folded).run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)

    data = np.random.default_rng(1).standard_normal((200, 3, 8, 8)).astype(np.float32)
    path = tmp_path / "bn.onnx"
    report = rtx.edge.export(model, data[:1], path, calibration_data=data[:100], eval_data=data[100:],
                             measure_latency=False)
    assert "Mul" not in report.ops and "Add" not in report.ops
    assert report.agreement >= 0.95 and report.max_abs_diff < 0.05
    ours = rtx.edge.Session(path).run(None, {"input": data})[0]
    theirs = _ort(str(path)).run(None, {"input": data})[0]
    assert np.abs(ours - theirs).max() < 0.02


def test_fixed_batch_export(tmp_path):
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    path = tmp_path / "fixed.onnx"
    report = rtx.edge.export(_mlp(), x[:4], path, calibration_data=x, eval_data=x, dynamic_batch=False,
                             measure_latency=False)
    assert report.eval_samples == 8
    assert rtx.edge.Session(path).get_inputs()[0].shape == [4, 64]
    with pytest.raises(ValueError, match="batches of 4"):
        rtx.edge.export(_mlp(), x[:4], path, calibration_data=x, eval_data=x[:6], dynamic_batch=False)
