"""InferenceSession on ONNX models, checked against onnxruntime on the same bytes."""
import io

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.onnx
from rtx.inference import InferenceSession

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def export(model, shape):
    buf = io.BytesIO()
    rtx.onnx.export(model, (rtx.randn(2, *shape),), buf, input_names=["x"], output_names=["y"],
                    dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return buf.getvalue()


def ort_run(data, feed):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)


@pytest.mark.parametrize("name", ["bnnet", "cnn", "mlp"])
def test_exported_models_match_onnxruntime(name, zoo, rng, tmp_path):
    shape = zoo.shapes[name]
    model = zoo.make(name)
    data = export(model, shape)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    for src in (str(path), path, data, onnx.load_from_string(data)):
        sess = InferenceSession(src)
        assert not any(k.startswith("Generic") for k in sess.op_counts()), sess.op_counts()
    for n in (1, 7, 64):
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        (ours,) = sess.run(None, {"x": x})
        (ref,) = ort_run(data, {"x": x})
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours, zoo.eager(model, x), rtol=1e-5, atol=1e-5)
    assert [(p.name, p.shape) for p in sess.get_inputs()] == [("x", ["batch", *shape])]


def test_transformer_layer_with_generic_ops_matches_onnxruntime(rng):
    rtx.manual_seed(4)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).eval()
    data = export(layer, (6, 16))
    sess = InferenceSession(data)
    assert "Linear" in sess.op_counts()
    x = rng.standard_normal((3, 6, 16)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ort_run(data, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_helper_graph_with_gemm_flags_and_elementwise(rng):
    w = rng.standard_normal((8, 4)).astype(np.float32)        # transB: (N, K)
    c = rng.standard_normal((1, 8)).astype(np.float32)
    s = rng.standard_normal((8,)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"], transB=1, alpha=0.5, beta=2.0),
             helper.make_node("Mul", ["g", "s"], ["m"]),
             helper.make_node("Sigmoid", ["m"], ["h"]),
             helper.make_node("Sub", ["h", "x2"], ["d"]),
             helper.make_node("Softmax", ["d"], ["y"], axis=-1),
             helper.make_node("Identity", ["g"], ["g_out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
                                           helper.make_tensor_value_info("x2", TensorProto.FLOAT, ["n", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8]),
                               helper.make_tensor_value_info("g_out", TensorProto.FLOAT, ["n", 8])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(c, "c"),
                               numpy_helper.from_array(s, "s")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    sess = InferenceSession(data)
    feed = {"x": rng.standard_normal((5, 4)).astype(np.float32), "x2": rng.standard_normal((5, 8)).astype(np.float32)}
    ours, ref = sess.run(None, feed), ort_run(data, feed)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ours2 = sess.run(None, feed)    # identity output is a copy, not the reused buffer
    np.testing.assert_array_equal(ours[1], ours2[1])
    assert sess.run(["g_out"], feed)[0].shape == (5, 8)


def test_onnx_input_errors(rng):
    data = export(nn.Linear(4, 3).eval(), (4,))
    sess = InferenceSession(data)
    with pytest.raises(ValueError, match=r"unknown input name 'input'.*\['x'\]"):
        sess.run(None, {"input": np.zeros((1, 4), np.float32)})
    with pytest.raises(ValueError, match=r"dtype int64, expected float32"):
        sess.run(None, {"x": np.zeros((1, 4), np.int64)})
    with pytest.raises(ValueError, match=r"dim 1 must be 4"):
        sess.run(None, {"x": np.zeros((1, 5), np.float32)})
    from rtx.onnx import ONNXLoadError
    with pytest.raises(ONNXLoadError):
        InferenceSession(b"not a model")
