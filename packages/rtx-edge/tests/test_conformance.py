"""The edge runtime against onnx's own node conformance cases (onnx.backend.test builds them in
memory; the wheel ships no data/node folder) for every op it claims: the expected outputs come from
the ONNX spec's reference implementation, not from this code. Each case is checked with the suite's
own comparison (shapes, dtypes, the case's rtol/atol)."""
from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import onnx.backend.test.case.node as node_cases
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.runner import Runner

# The runtime is loaded from its file, as a device that has only runtime.py would load it.
_spec = importlib.util.spec_from_file_location(
    "rtx_edge_runtime_file", Path(__file__).resolve().parents[1] / "src" / "rtx" / "edge" / "runtime.py")
runtime = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runtime)

# The node cases of the ops the runtime implements: all of their cases run, except the variants below.
INCLUDED = (r"^test_(basic_)?conv_with|^test_basic_conv|^test_gemm_|^test_matmul_\dd|^test_matmul_bcast|"
            r"^test_relu$|^test_maxpool_|^test_averagepool_|^test_global(average|max)pool|^test_flatten_|"
            r"^test_reshape_|^test_transpose_(default|all)|^test_softmax_(?!.*expanded)|^test_identity$|"
            r"^test_constant$|^test_add(_bcast)?$|^test_(sub|mul|div)(_bcast|_example)?$|^test_sigmoid|"
            r"^test_tanh|^test_(de)?quantizelinear|^test_qlinearconv$|^test_qlinearmatmul_")
# regex -> why the runtime does not run it (it raises an error naming the variant or type instead)
EXCLUDED = {
    r"^test_maxpool_with_argmax": "MaxPool's optional Indices output is not implemented",
    r"e4m3fn|e5m2|float4e2m1|uint4|int4|uint2|int2": "float8/float4/4-bit/2-bit types need ml_dtypes; the "
                                                     "runtime quantizes to 8/16/32-bit integers only",
    r"^test_qlinearmatmul_.*_float16$": "QLinearMatMul with float16 scales: no rtx.edge export emits it",
}


# The case modules of these ops build their cases when imported (importing all ~190 takes 15 s).
MODULES = ("conv", "gemm", "matmul", "relu", "maxpool", "averagepool", "globalaveragepool", "globalmaxpool",
           "flatten", "reshape", "transpose", "softmax", "identity", "constant", "add", "sub", "mul", "div", "sigmoid",
           "tanh", "quantizelinear", "dequantizelinear", "qlinearconv", "qlinearmatmul")


def _cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators cast out-of-range floats on purpose
        for module in MODULES:
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
    cases = {c.name: c for c in node_cases._NodeTestCases}  # also holds cases other test files built
    return [c for name, c in sorted(cases.items())
            if re.search(INCLUDED, name) and not any(re.search(p, name) for p in EXCLUDED)]


CASES = _cases()


def test_every_claimed_op_has_cases():
    names = [c.name for c in CASES]
    assert len(names) >= 100, len(names)
    for op in ("conv", "gemm", "matmul", "maxpool", "averagepool", "dequantizelinear", "quantizelinear",
               "qlinearconv", "qlinearmatmul", "softmax", "reshape", "transpose", "flatten", "relu", "identity",
               "constant", "add"):
        assert any(op in n for n in names), op


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case):
    session = runtime.Session(case.model)
    names = [i.name for i in session.get_inputs()]
    for inputs, expected in case.data_sets:
        outputs = session.run(None, dict(zip(names, inputs)))
        # a few cases store their expected output as a TensorProto (16-bit types)
        expected = [numpy_helper.to_array(e) if isinstance(e, TensorProto) else e for e in expected]
        Runner.assert_similar_outputs(list(expected), outputs, rtol=case.rtol, atol=case.atol)


def test_unsupported_quantized_type_is_refused_by_name():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT4, [2])],
                              [helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]),
                               helper.make_tensor("z", TensorProto.INT4, [], [0])])
    sess = runtime.Session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    with pytest.raises(runtime.UnsupportedOpError, match="int4"):
        sess.run(None, {"x": np.zeros(2, np.float32)})


def test_maxpool_indices_output_is_refused():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    with pytest.raises(runtime.UnsupportedOpError, match="Indices"):
        runtime.Session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
