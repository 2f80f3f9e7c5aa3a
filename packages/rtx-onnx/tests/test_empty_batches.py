"""Imported models run on a batch of zero rows, as onnxruntime does (old-opset Softmax flattens,
ceil-mode pooling windows: neither may reshape with -1, which a zero-size tensor cannot infer)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import rtx
import rtx.onnx

ort = pytest.importorskip("onnxruntime")


def _model(node, opset, xshape, yshape):
    xshape, yshape = ["N"] + xshape[1:], ["N"] + yshape[1:]  # a symbolic batch
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


CASES = {
    "softmax_opset11": (helper.make_node("Softmax", ["x"], ["y"], axis=1), 11, [0, 3, 4], [0, 3, 4]),
    "logsoftmax_opset11": (helper.make_node("LogSoftmax", ["x"], ["y"], axis=1), 11, [0, 3, 4], [0, 3, 4]),
    "maxpool_ceil": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                     13, [0, 1, 5, 5], [0, 1, 3, 3]),
    "avgpool_ceil": (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                                      ceil_mode=1), 13, [0, 1, 5, 5], [0, 1, 3, 3]),
    "lppool": (helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
               13, [0, 1, 4, 4], [0, 1, 2, 2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("batch", [0, 2])
def test_matches_onnxruntime_with_and_without_rows(tmp_path, name, batch):
    node, opset, xshape, yshape = CASES[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(_model(node, opset, xshape, yshape), path)
    x = np.random.default_rng(0).standard_normal([batch] + xshape[1:]).astype(np.float32)
    expected = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    got = rtx.onnx.load(path)(rtx.tensor(x))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
