"""Small ONNX models built with onnx.helper (independent of rtx.onnx) and rtx checkpoints."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def make_onnx(path=None, *, in_type=TensorProto.FLOAT, shape=("batch", 4), out_shape=("batch", 3), seed=0):
    """y = x @ W (W an initializer), or Identity for non-float element types."""
    rng = np.random.default_rng(seed)
    x = helper.make_tensor_value_info("x", in_type, list(shape))
    if in_type == TensorProto.FLOAT:
        W = numpy_helper.from_array(rng.standard_normal((shape[-1], out_shape[-1])).astype(np.float32), "W")
        # older exporters list initializers among the graph inputs too: they are not model inputs
        inputs = [x, helper.make_tensor_value_info("W", TensorProto.FLOAT, list(W.dims))]
        g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], [W])
    else:
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", in_type, list(shape))])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    if path is not None:
        onnx.save(model, str(path))
    return model


@pytest.fixture(name="make_onnx")
def make_onnx_fixture():
    return make_onnx


@pytest.fixture
def onnx_file(tmp_path):
    p = tmp_path / "model.onnx"
    make_onnx(p)
    return p


@pytest.fixture
def registry(tmp_path):
    from rtx.hub import Registry

    return Registry(tmp_path / "registry")
