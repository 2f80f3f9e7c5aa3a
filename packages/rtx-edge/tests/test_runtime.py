"""The NumPy runtime: its standalone property, its session API and errors, and its numbers against
onnxruntime on graphs written with onnx.helper (the exported models are checked in test_export.py)."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

RUNTIME_FILE = Path(__file__).resolve().parents[1] / "src" / "rtx" / "edge" / "runtime.py"
_spec = importlib.util.spec_from_file_location("rtx_edge_runtime_file", RUNTIME_FILE)
runtime = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runtime)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model


def _cnn(rng):
    """A CNN covering the runtime's float ops: grouped/strided/asymmetric-padded conv, both poolings
    (ceil mode, count_include_pad), Transpose, Flatten, Gemm, MatMul, Softmax, Sigmoid, Mul/Sub/Div."""
    f32 = np.float32
    inits = [("w1", rng.standard_normal((8, 3, 3, 3)).astype(f32) * 0.3), ("b1", rng.standard_normal(8).astype(f32)),
             ("w2", rng.standard_normal((8, 2, 3, 3)).astype(f32) * 0.3), ("s", np.array([1.5], f32)),
             ("w3", rng.standard_normal((32, 144)).astype(f32) * 0.2), ("w4", rng.standard_normal((32, 5)).astype(f32)),
             ("c", rng.standard_normal(5).astype(f32)), ("two", np.array(2.0, f32))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 0, 2, 1], strides=[1, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], group=4, auto_pad="SAME_UPPER", dilations=[1, 1]),
        helper.make_node("MaxPool", ["c2"], ["p1"], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["p1"], ["p2"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                         count_include_pad=1),
        helper.make_node("Mul", ["p2", "s"], ["m"]),
        helper.make_node("Transpose", ["m"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Flatten", ["t"], ["f"], axis=1),
        helper.make_node("Sigmoid", ["f"], ["sg"]),
        helper.make_node("Gemm", ["w3", "sg"], ["g"], transB=1, alpha=0.5),
        helper.make_node("Transpose", ["g"], ["gt"]),
        helper.make_node("MatMul", ["gt", "w4"], ["mm"]),
        helper.make_node("Sub", ["mm", "c"], ["sb"]),
        helper.make_node("Div", ["sb", "two"], ["d"]),
        helper.make_node("Softmax", ["d"], ["y"], axis=-1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 11, 12])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])], inits)


def test_runtime_file_imports_only_numpy_and_onnx():
    tree = ast.parse(RUNTIME_FILE.read_text())
    roots = set()
    for node in ast.walk(tree):  # every import statement, at any depth (functions included)
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots <= {"__future__", "argparse", "sys", "pathlib", "numpy", "onnx"}, roots
    assert "__import__" not in RUNTIME_FILE.read_text() and "importlib" not in RUNTIME_FILE.read_text()


def test_runtime_copied_alone_runs_and_loads_no_rtx_module(tmp_path):
    """A device gets runtime.py alone: imported by path and run as a script (the CLI), it works and
    no rtx module gets loaded, although rtx is installed (editable) in this interpreter."""
    device = tmp_path / "device"
    device.mkdir()
    (device / "runtime.py").write_text(RUNTIME_FILE.read_text())
    model = _cnn(np.random.default_rng(0))
    onnx.save(model, device / "m.onnx")
    x = np.random.default_rng(1).standard_normal((3, 3, 11, 12)).astype(np.float32)
    np.save(device / "x.npy", x)
    code = ("import importlib.util, json, runpy, sys\n"
            "import numpy as np\n"
            "spec = importlib.util.spec_from_file_location('runtime', 'runtime.py')\n"
            "rt = importlib.util.module_from_spec(spec); spec.loader.exec_module(rt)\n"
            "np.save('api.npy', rt.Session('m.onnx').run(None, {'x': np.load('x.npy')})[0])\n"
            "sys.argv = ['runtime.py', 'm.onnx', 'x.npy', '-o', 'out.npz']\n"
            "try:\n"
            "    runpy.run_path('runtime.py', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "print('RTX', json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'rtx')))\n"
            "import rtx\n"
            "print('IMPORTABLE', rtx.__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=device, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "RTX []" in r.stdout and "IMPORTABLE rtx" in r.stdout
    assert "y: shape [3, 5] dtype float32" in r.stdout
    expected = runtime.Session(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(device / "api.npy"), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.load(device / "out.npz")["y"], expected, rtol=1e-6, atol=1e-7)


def test_cli_refuses_a_wrong_number_of_inputs(tmp_path, capsys):
    onnx.save(_cnn(np.random.default_rng(0)), tmp_path / "m.onnx")
    with pytest.raises(SystemExit) as e:
        runtime.main([str(tmp_path / "m.onnx")])
    assert e.value.code == 2 and "inputs" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 11, 12), np.float32))
    with pytest.raises(SystemExit) as e:
        runtime.main([str(tmp_path / "m.onnx"), str(tmp_path / "x.npy"), str(tmp_path / "x.npy")])
    assert e.value.code == 2 and "the model has 1 input(s) ['x']; got 2" in capsys.readouterr().err


def test_float_graph_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    model = _cnn(np.random.default_rng(0))
    sess = runtime.Session(model.SerializeToString())
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 4):
        x = np.random.default_rng(n).standard_normal((n, 3, 11, 12)).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_qlinear_graph_matches_onnxruntime():
    """QLinearConv -> QLinearMatMul with per-channel weight scales, as onnxruntime's QOperator format writes."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    u8, i8, f32 = np.uint8, np.int8, np.float32
    inits = [("xs", np.array(0.02, f32)), ("xz", np.array(128, u8)),
             ("w", rng.integers(-127, 128, (4, 2, 3, 3)).astype(i8)), ("ws", rng.uniform(0.001, 0.01, 4).astype(f32)),
             ("wz", np.zeros(4, i8)), ("ys", np.array(0.05, f32)), ("yz", np.array(10, u8)),
             ("b", rng.integers(-2000, 2000, 4).astype(np.int32)), ("shape", np.array([0, -1], np.int64)),
             ("m", rng.integers(0, 255, (100, 3)).astype(u8)), ("ms", np.array(0.01, f32)), ("mz", np.array(127, u8)),
             ("zs", np.array(0.3, f32)), ("zz", np.array(100, u8))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"],
                              pads=[1] * 4),
             helper.make_node("Reshape", ["yq", "shape"], ["flat"]),
             helper.make_node("QLinearMatMul", ["flat", "ys", "yz", "m", "ms", "mz", "zs", "zz"], ["zq"]),
             helper.make_node("DequantizeLinear", ["zq", "zs", "zz"], ["z"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 5, 5])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 3])], inits)
    x = rng.uniform(-2.5, 2.5, (6, 2, 5, 5)).astype(f32)
    ours = runtime.Session(model).run(None, {"x": x})[0]
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # integer outputs: equal, up to one step where a rounding tie falls differently
    assert np.abs(ours - theirs).max() <= 0.3 + 1e-6
    assert np.mean(ours == theirs) > 0.9


def test_session_api_like_onnxruntime():
    sess = runtime.Session(_cnn(np.random.default_rng(0)))
    (inp,) = sess.get_inputs()
    assert (inp.name, inp.shape, inp.type) == ("x", ["n", 3, 11, 12], "tensor(float)")
    assert [o.name for o in sess.get_outputs()] == ["y"]
    x = np.zeros((2, 3, 11, 12), np.float32)
    assert sess.run(["y"], {"x": x})[0].shape == (2, 5)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0].sum(axis=1), 1, rtol=1e-6)


@pytest.mark.parametrize("feed, outputs, match", [
    ({"z": np.zeros((1, 3, 11, 12), np.float32)}, None, r"unknown input\(s\) \['z'\] and lacks \['x'\]"),
    ({"x": np.zeros((1, 3, 11, 12), np.float64)}, None, "must have dtype float32"),
    ({"x": np.zeros((1, 3, 12, 12), np.float32)}, None, r"must have shape \['n', 3, 11, 12\]"),
    ({"x": np.zeros((3, 11, 12), np.float32)}, None, "must have shape"),
    ({"x": np.zeros((1, 3, 11, 12), np.float32)}, ["logits"], r"unknown output name\(s\) \['logits'\]"),
])
def test_bad_feed_is_a_value_error(feed, outputs, match):
    sess = runtime.Session(_cnn(np.random.default_rng(0)))
    with pytest.raises(ValueError, match=match):
        sess.run(outputs, feed)


def test_unsupported_op_names_the_op_and_lists_the_supported_ones():
    model = _model([helper.make_node("Erf", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(runtime.UnsupportedOpError, match=r"op\(s\) Erf;.*supported.*Conv.*DequantizeLinear.*MaxPool"):
        runtime.Session(model)
    assert isinstance(runtime.UnsupportedOpError(), NotImplementedError)


def test_bad_model_sources(tmp_path):
    with pytest.raises(FileNotFoundError, match="no ONNX model"):
        runtime.Session(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="could not parse"):
        runtime.Session(b"\xff\x00 this is not protobuf")
    with pytest.raises(TypeError, match="path, bytes or an onnx.ModelProto"):
        runtime.Session(42)


def test_a_failing_node_is_named():
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "k"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
                   [("w", np.ones((4, 2), np.float32))])
    with pytest.raises(RuntimeError, match=r"MatMul node 'proj' failed on inputs \[\(\(2, 3\), 'float32'\)"):
        runtime.Session(model).run(None, {"x": np.ones((2, 3), np.float32)})


def test_constant_nodes_and_weights_are_folded_at_load():
    w = np.arange(6, dtype=np.int8).reshape(2, 3)
    nodes = [helper.make_node("Constant", [], ["s"], value_float=0.5),
             helper.make_node("DequantizeLinear", ["wq", "s"], ["w"]),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [("wq", w)])
    sess = runtime.Session(model)
    assert [n[0] for n in sess._nodes] == ["MatMul"]  # only the data-dependent node is left to run
    np.testing.assert_allclose(sess.run(None, {"x": np.array([[1, 2]], np.float32)})[0], [[3, 4.5, 6]])
