"""Int8 kernels: exactness of the float-GEMM integer matmul against np.int32, and quantized ONNX
models (written with onnx.helper, and made by onnxruntime's quantizer) against onnxruntime."""

import numpy as np
import pytest

import rtx
import rtx.onnx
from rtx.inference import InferenceSession
from rtx.inference.quant import acc_dtype, centered_max

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def model_bytes(nodes, inputs, outputs, inits, opset=19):
    graph = helper.make_graph(nodes, "q", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    return m.SerializeToString()


def ort_run(data, feed):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def matmul_integer_model(w, a_zp, w_zp):
    return model_bytes([helper.make_node("MatMulInteger", ["a", "w", "a_zp", "w_zp"], ["y"])],
                       [vi("a", TensorProto.UINT8, ["n", w.shape[0]])], [vi("y", TensorProto.INT32, ["n", w.shape[1]])],
                       {"w": w, "a_zp": np.array(a_zp, np.uint8), "w_zp": w_zp})


def test_accumulator_choice():
    assert acc_dtype(1024, 128, 127) == np.float32           # 1024*128*127 < 2**24
    assert acc_dtype(1100, 128, 127) == np.float64
    assert acc_dtype(16, 255, 255) == np.float32
    assert centered_max(np.int8, 0) == 128 and centered_max(np.uint8, 10) == 245
    with pytest.raises(ValueError, match="overflow"):
        acc_dtype(2 ** 40, 255, 255)


@pytest.mark.parametrize("k", [64, 700, 4096])
def test_matmul_integer_is_exact_int32(k, rng):
    """Random and worst-case (all extremes) operands; K=4096 needs the float64 accumulator."""
    w = rng.integers(-128, 128, (k, 12), dtype=np.int8)
    w[:, 0] = -128                       # a column of extremes: partial sums beyond 2**24
    w_zp = rng.integers(-3, 4, 12).astype(np.int8)
    a = rng.integers(0, 256, (9, k), dtype=np.uint8)
    a[0] = 255
    data = matmul_integer_model(w, 3, w_zp)
    sess = InferenceSession(data)
    assert sess.op_counts() == {"IntLinear": 1}
    # |a - 3| <= 252, |w - w_zp| <= 131: float32 is exact up to K = 2**24 / (252 * 131) = 508
    assert sess.program.ops[0].attrs["w"].dtype == (np.float32 if k < 508 else np.float64)
    (y,) = sess.run(None, {"a": a})
    ref = (a.astype(np.int32) - 3) @ (w.astype(np.int32) - w_zp.astype(np.int32))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(y, ort_run(data, {"a": a})[0])
    if k == 4096:   # the float64 path is needed: a float32 GEMM of the same values is not exact
        lossy = (a.astype(np.float32) - 3) @ (w.astype(np.float32) - w_zp.astype(np.float32))
        assert not np.array_equal(lossy.astype(np.int64), ref)


def test_matmul_integer_3d_and_runtime_zero_point(rng):
    """DynamicQuantizeLinear's zero point is computed at run time (onnxruntime's quantize_dynamic)."""
    w = rng.integers(-128, 128, (16, 5), dtype=np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             helper.make_node("MatMulInteger", ["q", "w", "z"], ["acc"])]
    data = model_bytes(nodes, [vi("x", TensorProto.FLOAT, ["b", "t", 16])],
                       [vi("acc", TensorProto.INT32, ["b", "t", 5])], {"w": w})
    sess = InferenceSession(data)
    assert sess.op_counts()["IntLinear"] == 1
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ort_run(data, {"x": x})[0])


def test_qlinear_matmul_matches_onnxruntime(rng):
    w = rng.integers(-128, 128, (32, 6), dtype=np.int8)
    inits = {"a_s": np.array(0.02, np.float32), "a_zp": np.array(120, np.uint8), "w": w,
             "w_s": np.array(0.01, np.float32), "w_zp": np.array(0, np.int8),
             "y_s": np.array(0.05, np.float32), "y_zp": np.array(128, np.uint8)}
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"])
    data = model_bytes([node], [vi("a", TensorProto.UINT8, ["n", 32])], [vi("y", TensorProto.UINT8, ["n", 6])], inits)
    sess = InferenceSession(data)
    assert sess.op_counts() == {"IntLinear": 1}
    a = rng.integers(0, 256, (50, 32), dtype=np.uint8)
    (ours,), (ref,) = sess.run(None, {"a": a}), ort_run(data, {"a": a})
    assert ours.dtype == np.uint8
    diff = np.abs(ours.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99     # rounding ties may differ by one step
    # against the definition: round-half-even of the scaled int32 accumulator
    acc = (a.astype(np.int32) - 120) @ w.astype(np.int32)
    exact = np.clip(np.rint(acc * np.float32(0.02 * 0.01 / 0.05)) + 128, 0, 255)
    assert np.abs(ours.astype(int) - exact).max() <= 1


def test_qlinear_conv_and_conv_integer_match_onnxruntime(rng):
    w = rng.integers(-128, 128, (6, 3, 3, 3), dtype=np.int8)
    bias = rng.integers(-500, 500, 6).astype(np.int32)
    inits = {"x_s": np.array(0.03, np.float32), "x_zp": np.array(100, np.uint8), "w": w,
             "w_s": (rng.random(6).astype(np.float32) + 0.5) * 0.01, "w_zp": np.zeros(6, np.int8),
             "y_s": np.array(0.1, np.float32), "y_zp": np.array(90, np.uint8), "b": bias}
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp", "b"], ["y"],
                            pads=[1, 0, 2, 1], strides=[2, 1])
    data = model_bytes([node], [vi("x", TensorProto.UINT8, ["n", 3, 9, 7])],
                       [vi("y", TensorProto.UINT8, ["n", 6, 5, 6])], inits)
    sess = InferenceSession(data)
    assert sess.op_counts() == {"IntConv": 1}
    x = rng.integers(0, 256, (4, 3, 9, 7), dtype=np.uint8)
    (ours,), (ref,) = sess.run(None, {"x": x}), ort_run(data, {"x": x})
    assert ours.shape == ref.shape and ours.dtype == np.uint8
    diff = np.abs(ours.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99

    wu = rng.integers(0, 256, (4, 3, 2, 2), dtype=np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], pads=[1, 1, 1, 1])
    data = model_bytes([node], [vi("x", TensorProto.UINT8, ["n", 3, 9, 7])],
                       [vi("y", TensorProto.INT32, ["n", 4, 10, 8])],
                       {"w": wu, "x_zp": np.array(100, np.uint8), "w_zp": np.array(7, np.uint8)})
    sess = InferenceSession(data)
    assert sess.op_counts() == {"IntConv": 1}
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ort_run(data, {"x": x})[0])


def test_qdq_matmul_pattern_runs_as_integer_matmul(rng):
    """QuantizeLinear -> DequantizeLinear -> MatMul <- DequantizeLinear(int8 weight, per channel)."""
    w = rng.integers(-127, 128, (24, 8), dtype=np.int8)
    inits = {"x_s": np.array(0.02, np.float32), "x_zp": np.array(-5, np.int8), "w": w,
             "w_s": (rng.random(8).astype(np.float32) + 0.5) * 0.01, "w_zp": np.zeros(8, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_zp"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    data = model_bytes(nodes, [vi("x", TensorProto.FLOAT, ["n", 24])], [vi("y", TensorProto.FLOAT, ["n", 8])],
                       inits)
    sess = InferenceSession(data)
    assert sess.op_counts() == {"Quantize": 1, "IntLinear": 1}
    x = rng.standard_normal((10, 24)).astype(np.float32)
    (ours,), (ref,) = sess.run(None, {"x": x}), ort_run(data, {"x": x})
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    plain = InferenceSession(data, optimize=False)   # node by node through rtx.onnx's kernels
    np.testing.assert_allclose(plain.run(None, {"x": x})[0], ref, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """DigitsCNN and an MLP exported by rtx.onnx, quantized by onnxruntime (QDQ, QOperator, dynamic)."""
    quant = pytest.importorskip("onnxruntime.quantization")
    import rtx.nn as nn
    from rtx.demo.model import DigitsCNN
    d = tmp_path_factory.mktemp("q")
    rng = np.random.default_rng(0)
    out = {}
    rtx.manual_seed(0)
    for name, model, shape in [("cnn", DigitsCNN().eval(), (1, 8, 8)),
                               ("mlp", nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 10)).eval(), (64,))]:
        f = d / f"{name}.onnx"
        rtx.onnx.export(model, (rtx.randn(2, *shape),), str(f), input_names=["x"], output_names=["y"],
                        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
        calib = [{"x": rng.standard_normal((8, *shape)).astype(np.float32)} for _ in range(3)]

        class Reader(quant.CalibrationDataReader):
            def __init__(self, calib=calib):
                self.it = iter(calib)

            def get_next(self):
                return next(self.it, None)
        for fmt in ("QDQ", "QOperator"):
            q = d / f"{name}_{fmt}.onnx"
            quant.quantize_static(str(f), str(q), Reader(), quant_format=getattr(quant.QuantFormat, fmt),
                                  weight_type=quant.QuantType.QInt8)
            out[name, fmt] = (q.read_bytes(), shape)
        q = d / f"{name}_dynamic.onnx"
        quant.quantize_dynamic(str(f), str(q), weight_type=quant.QuantType.QInt8)
        out[name, "dynamic"] = (q.read_bytes(), shape)
    return out


@pytest.mark.parametrize("name", ["cnn", "mlp"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator", "dynamic"])
def test_onnxruntime_quantized_models(quantized, name, fmt, rng):
    data, shape = quantized[name, fmt]
    sess = InferenceSession(data)
    counts = sess.op_counts()
    if (name, fmt) == ("cnn", "QDQ"):   # DQ -> MaxPool/Reshape -> Q pairs run on the integers
        assert counts == {"Quantize": 1, "IntConv": 2, "MaxPool": 2, "Reshape": 1, "IntLinear": 2, "Dequantize": 1}
    assert counts.get("IntLinear", 0) == 2 and counts.get("IntConv", 0) == (2 if name == "cnn" else 0), counts
    assert not any(k in counts for k in ("Generic:MatMulInteger", "Generic:ConvInteger", "Generic:QLinearConv"))
    for n in (1, 16):
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        (ours,), (ref,) = sess.run(None, {"x": x}), ort_run(data, {"x": x})
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
