"""rtx.onnx.backend as an onnx.backend.base.Backend: prepare/run, run_model, run_node, devices."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.backend.base import Backend, BackendRep

import rtx
import rtx.onnx
import rtx.onnx.backend as backend


def _add_mul_model():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["p"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("p", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_it_is_an_onnx_backend():
    assert issubclass(backend.RtxBackend, Backend)
    rep = backend.prepare(_add_mul_model(), "CPU")
    assert isinstance(rep, BackendRep) and isinstance(rep, backend.RtxBackendRep)
    assert rtx.onnx.backend is backend


def test_run_with_lists_dicts_and_named_outputs():
    rep = backend.prepare(_add_mul_model())
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    out = rep.run([a, b])
    np.testing.assert_array_equal(out[0], [4, 6])
    np.testing.assert_array_equal(out["p"], [12, 24])
    np.testing.assert_array_equal(out.p, [12, 24])
    out2 = rep.run({"b": b, "a": a})
    np.testing.assert_array_equal(out2.s, out.s)
    assert all(isinstance(o, np.ndarray) and o.dtype == np.float32 for o in out)
    # repeated runs reuse the prepared model
    np.testing.assert_array_equal(rep.run([b, a]).s, [4, 6])


def test_run_model_and_serialized_models(tmp_path):
    model = _add_mul_model()
    ones = np.ones(2, np.float32)
    np.testing.assert_array_equal(backend.run_model(model, [ones, ones]).p, [2, 2])
    np.testing.assert_array_equal(backend.prepare(model.SerializeToString()).run([ones, ones]).s, [2, 2])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    np.testing.assert_array_equal(backend.prepare(str(path)).run([ones, ones]).s, [2, 2])


def test_prepare_checks_the_model():
    model = _add_mul_model()
    model.graph.node[1].input[0] = "missing"
    with pytest.raises(rtx.onnx.ONNXLoadError, match="checker"):
        backend.prepare(model)


def test_run_node():
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, alpha=2.0)
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.ones((3, 4), np.float32)
    c = np.full(4, 0.5, np.float32)
    (y,) = backend.run_node(node, [a, b, c])
    np.testing.assert_allclose(y, 2 * a.T @ b + c)
    x = np.zeros((2, 3, 2), np.float32)
    (y11,) = backend.run_node(helper.make_node("Softmax", ["x"], ["y"]), [x], opset_version=11)
    np.testing.assert_allclose(y11, np.full(x.shape, 1 / 6))  # opset 11: axis 1 coerces to 2-D, 6 entries a row
    (y13,) = backend.run_node(helper.make_node("Softmax", ["x"], ["y"]), [x], opset_version=13)
    np.testing.assert_allclose(y13, np.full(x.shape, 1 / 2))  # opset 13: the last axis


def test_run_node_rejects_invalid_nodes():
    with pytest.raises(onnx.checker.ValidationError):
        backend.run_node(helper.make_node("Relu", [], ["y"]), [])


def test_devices():
    assert backend.supports_device("CPU")
    assert not backend.supports_device("CUDA")  # not claimed until the GPU path has run (see the module doc)
    assert not backend.supports_device("TPU")
    with pytest.raises(ValueError, match="unknown device 'TPU'"):
        backend.prepare(_add_mul_model(), "TPU")
    with pytest.raises(ValueError, match="'CPU' only"):
        backend.prepare(_add_mul_model(), "CUDA:0")


def test_is_compatible():
    assert backend.is_compatible(_add_mul_model())
    node = helper.make_node("Frobnicate", ["a"], ["y"], domain="com.example")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    assert not backend.is_compatible(model)
    with pytest.raises(rtx.onnx.UnsupportedOpError, match="Frobnicate"):
        backend.prepare(model)


def test_sequences_and_optionals_round_trip():
    seq = helper.make_node("SequenceConstruct", ["a", "b"], ["s"])
    at = helper.make_node("SequenceAt", ["s", "i"], ["y"])
    length = helper.make_node("SequenceLength", ["s"], ["n"])
    graph = helper.make_graph(
        [seq, at, length], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [None]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    s, y, n = rep.run([np.zeros(2, np.float32), np.ones(3, np.float32), np.array(-1)])
    assert isinstance(s, list) and [x.shape for x in s] == [(2,), (3,)]
    np.testing.assert_array_equal(y, np.ones(3))
    assert n == 2 and n.dtype == np.int64


def test_loop_with_zero_and_some_iterations_against_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "one"], ["v_out"]),
         helper.make_node("Mul", ["v_out", "v_out"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("scan", TensorProto.FLOAT, [2])])
    graph = helper.make_graph([helper.make_node("Loop", ["n", "", "v0"], ["vf", "stacked"], body=body)], "g",
                              [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                               helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("vf", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("stacked", TensorProto.FLOAT, [None, 2])],
                              [helper.make_tensor("one", TensorProto.FLOAT, [2], [1.0, 0.5])])  # the body reads it
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rep = backend.prepare(model)
    for n in (0, 1, 4):
        feeds = [np.array(n, np.int64), np.array([1.0, -2.0], np.float32)]
        for got, want in zip(rep.run(feeds), sess.run(None, dict(zip(["n", "v0"], feeds)))):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want)


def test_strings_and_integers_keep_onnx_semantics():
    nodes = [helper.make_node("Div", ["i", "j"], ["q"]), helper.make_node("Mod", ["i", "j"], ["r"]),
             helper.make_node("StringConcat", ["s", "t"], ["u"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("i", TensorProto.INT32, [3]),
                                           helper.make_tensor_value_info("j", TensorProto.INT32, [3]),
                                           helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
                                           helper.make_tensor_value_info("t", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("q", TensorProto.INT32, [3]),
                               helper.make_tensor_value_info("r", TensorProto.INT32, [3]),
                               helper.make_tensor_value_info("u", TensorProto.STRING, [2])])
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]))
    q, r, u = rep.run([np.array([7, -7, 9], np.int32), np.array([2, 2, -4], np.int32),
                       np.array(["ab", "c"], object), np.array(["x", ""], object)])
    np.testing.assert_array_equal(q, [3, -3, -2])  # C-style truncation, int32 kept
    np.testing.assert_array_equal(r, [1, 1, -3])   # fmod=0: the divisor's sign, as Python's %
    assert q.dtype == np.int32 and list(u) == ["abx", "c"]
