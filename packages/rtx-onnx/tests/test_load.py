"""rtx.onnx.load: sources, clear errors for bad files, the Module it returns (parameters,
buffers, names, inputs), fine-tuning, and outputs against onnxruntime."""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import rtx
import rtx.onnx
from rtx import nn

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_block(marker):
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if marker in b]
    assert blocks, f"no README python block contains {marker!r}"
    return blocks[0]


def test_readme_import_example():
    exec(compile(_readme_block("rtx.onnx.load("), "README.md", "exec"), {"__name__": "__readme__"})


def test_readme_backend_example():
    exec(compile(_readme_block("backend.prepare("), "README.md", "exec"), {"__name__": "__readme__"})


def mlp_model(seed=0, opset=17, dtype=np.float32):
    rng = np.random.default_rng(seed)
    inits = {"fc1.weight": rng.standard_normal((4, 8)), "fc1.bias": rng.standard_normal(8),
             "fc2.weight": rng.standard_normal((8, 2)), "fc2.bias": rng.standard_normal(2)}
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"]),
         helper.make_node("Tanh", ["h"], ["a"]),
         helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", elem, ["batch", 4])],
        [helper.make_tensor_value_info("y", elem, ["batch", 2])],
        [numpy_helper.from_array(v.astype(dtype), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), inits


def _mlp_ref(x, w):
    return np.tanh(x @ w["fc1.weight"] + w["fc1.bias"]) @ w["fc2.weight"] + w["fc2.bias"]


# ---- sources --------------------------------------------------------------------------------------
def test_load_from_every_kind_of_source(tmp_path):
    model, w = mlp_model()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    expected = _mlp_ref(x.astype(np.float64), w)
    sources = [str(path), path, path.read_bytes(), io.BytesIO(path.read_bytes()), model]
    for src in sources:
        m = rtx.onnx.load(src)
        with rtx.no_grad():
            y = m(x)
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert isinstance(m, rtx.onnx.ModelModule) and isinstance(m, nn.Module)


def test_load_is_one_callable_object_whichever_import_came_first():
    import inspect
    import sys
    load_module = sys.modules["rtx.onnx.load"]  # importing the submodule rebinds rtx.onnx.load to it
    assert rtx.onnx.load is load_module
    model, _ = mlp_model()
    assert isinstance(rtx.onnx.load(model), rtx.onnx.ModelModule)
    assert list(inspect.signature(rtx.onnx.load).parameters) == ["f", "check", "expand_functions"]
    ops = rtx.onnx.supported_ops()
    assert ("ai.onnx", "Conv") in ops and ("ai.onnx.ml", "TreeEnsemble") in ops and len(ops) > 190


def test_dynamic_batch_and_named_inputs():
    model, w = mlp_model()
    m = rtx.onnx.load(model)
    for n in (1, 7):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        with rtx.no_grad():
            np.testing.assert_allclose(m(x=x).numpy(), _mlp_ref(x.astype(np.float64), w), rtol=1e-5, atol=1e-5)
    assert m.input_names == ["x"] and m.output_names == ["y"]


# ---- errors ---------------------------------------------------------------------------------------
def test_missing_file_and_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        rtx.onnx.load(tmp_path / "nope.onnx")
    with pytest.raises(rtx.onnx.ONNXLoadError, match="is a folder"):
        rtx.onnx.load(tmp_path)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.onnx"
    p.write_bytes(b"")
    with pytest.raises(rtx.onnx.ONNXLoadError, match=r"empty.onnx.*empty \(0 bytes\)"):
        rtx.onnx.load(p)


@pytest.mark.parametrize("data", [b"\x00" * 3, b"not an onnx model at all", bytes(range(256)) * 4,
                                  b"\x0a\xff\xff\xff\xff\x0f"])
def test_garbage_bytes(tmp_path, data):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(data)
    with pytest.raises(rtx.onnx.ONNXLoadError, match="garbage.onnx"):
        rtx.onnx.load(p)


def test_every_truncation_is_a_clear_error_never_a_crash(tmp_path):
    model, _ = mlp_model()
    data = model.SerializeToString()
    p = tmp_path / "cut.onnx"
    loaded = 0
    for n in range(0, len(data), 3):
        p.write_bytes(data[:n])
        try:
            m = rtx.onnx.load(p)
        except rtx.onnx.ONNXLoadError as e:
            assert "cut.onnx" in str(e)
            continue
        # a cut on a field boundary can leave a complete, valid model (only trailing metadata lost)
        loaded += 1
        with rtx.no_grad():
            assert m(np.zeros((1, 4), np.float32)).shape == (1, 2)
    assert loaded <= 2, f"{loaded} truncated files loaded"


def test_external_data(tmp_path):
    model, w = mlp_model()
    path = tmp_path / "m.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
                    size_threshold=0)
    x = np.ones((2, 4), np.float32)
    with rtx.no_grad():
        np.testing.assert_allclose(rtx.onnx.load(path)(x).numpy(), _mlp_ref(x.astype(np.float64), w), rtol=1e-5)
    (tmp_path / "w.bin").write_bytes(b"\0" * 10)
    with pytest.raises(rtx.onnx.ONNXLoadError, match="m.onnx: cannot read the model's external data"):
        rtx.onnx.load(path)
    (tmp_path / "w.bin").unlink()
    with pytest.raises(rtx.onnx.ONNXLoadError, match="external data"):
        rtx.onnx.load(path)


def test_corrupted_initializer_bytes():
    model, _ = mlp_model()
    model.graph.initializer[2].raw_data = model.graph.initializer[2].raw_data[:-4]
    with pytest.raises(rtx.onnx.ONNXLoadError, match="checker rejected the model.*fc2.weight.*too small"):
        rtx.onnx.load(model.SerializeToString())
    with pytest.raises(rtx.onnx.ONNXLoadError, match="initializer 'fc2.weight' is corrupted"):
        rtx.onnx.load(model.SerializeToString(), check=False)


@pytest.mark.parametrize("check", [True, False])
def test_random_byte_corruption_is_a_clear_error_never_a_crash(check):
    data = mlp_model()[0].SerializeToString()
    rng = np.random.default_rng(7)
    outcomes = {"loaded": 0, "rejected": 0}
    for _ in range(300):
        d = bytearray(data)
        for i in rng.integers(0, len(d), size=rng.integers(1, 4)):
            d[i] = rng.integers(0, 256)
        try:
            rtx.onnx.load(bytes(d), check=check)  # flips inside float data or a name can leave a valid model
            outcomes["loaded"] += 1
        except (rtx.onnx.ONNXLoadError, rtx.onnx.UnsupportedOpError):
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 100, outcomes


def test_checker_errors_are_reported():
    node = helper.make_node("Relu", ["undefined"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    bad = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(rtx.onnx.ONNXLoadError, match="onnx.checker rejected the model.*undefined"):
        rtx.onnx.load(bad.SerializeToString())


def test_bad_argument_type():
    with pytest.raises(TypeError, match="expects a path, bytes, a file object or an onnx.ModelProto, got int"):
        rtx.onnx.load(3)


def _custom_op_model(domain="com.example", op_type="Frobnicate", version=3):
    node = helper.make_node(op_type, ["x"], ["y"], domain=domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, version)])


def test_unsupported_op_names_op_domain_and_opset():
    with pytest.raises(rtx.onnx.UnsupportedOpError, match=r"'Frobnicate' \(domain 'com.example', opset 3\)") as e:
        rtx.onnx.load(_custom_op_model())
    assert isinstance(e.value, NotImplementedError)
    assert (e.value.op_type, e.value.domain, e.value.opset) == ("Frobnicate", "com.example", 3)


def test_unknown_default_domain_op():
    model = _custom_op_model(domain="", op_type="NoSuchOp", version=17)
    with pytest.raises(rtx.onnx.ONNXLoadError, match="NoSuchOp"):  # the checker knows every ai.onnx op
        rtx.onnx.load(model)
    with pytest.raises(rtx.onnx.UnsupportedOpError, match=r"'NoSuchOp' \(domain 'ai.onnx', opset 17\)"):
        rtx.onnx.load(model, check=False)


def test_function_bodies_can_be_turned_off():
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(0).standard_normal((2, 2, 3, 2)).astype(np.float32)
    with rtx.no_grad():
        y = rtx.onnx.load(model)(x).numpy()
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True))
    np.testing.assert_allclose(y, (x - mean) / std, rtol=1e-4, atol=1e-5)
    with pytest.raises(rtx.onnx.UnsupportedOpError, match="MeanVarianceNormalization.*expand_functions=False"):
        rtx.onnx.load(model, expand_functions=False)


def test_forward_argument_errors():
    m = rtx.onnx.load(mlp_model()[0])
    x = np.zeros((1, 4), np.float32)
    with pytest.raises(TypeError, match=r"missing model input\(s\) \['x'\]"):
        m()
    with pytest.raises(TypeError, match="has no input 'z'"):
        m(z=x)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        m(x, x)


def test_runtime_errors_name_the_node():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="the_reshape")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                            helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(Exception) as e:
        m(np.zeros((2, 3), np.float32), np.array([4, 4]))
    assert "the_reshape" in "".join(getattr(e.value, "__notes__", []))


# ---- the module -----------------------------------------------------------------------------------
def test_initializer_names_that_collide_with_module_attributes():
    inits = [numpy_helper.from_array(np.ones(2, np.float32), n) for n in ("forward", "a..b", "training")]
    nodes = [helper.make_node("Sum", ["x", "forward", "a..b", "training"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], inits)
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert sorted(m.state_dict()) == ["a__b", "forward_1", "training_1"]
    assert m.initializer_keys["forward"][1] == "forward_1"
    with rtx.no_grad():
        np.testing.assert_array_equal(m(np.zeros(2, np.float32)).numpy(), [3.0, 3.0])


def test_initializers_become_parameters_and_buffers():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((3, 3)).astype(np.float32), "encoder.layer.0.weight"),
             numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "encoder.layer.0.bias"),
             numpy_helper.from_array(np.array([1, 3], np.int64), "onnx::Reshape_7"),
             numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "/blocks/scale:0")]
    nodes = [helper.make_node("Gemm", ["x", "encoder.layer.0.weight", "encoder.layer.0.bias"], ["h"]),
             helper.make_node("Mul", ["h", "/blocks/scale:0"], ["s"]),
             helper.make_node("Reshape", ["s", "onnx::Reshape_7"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    params = dict(m.named_parameters())
    assert sorted(params) == ["/blocks/scale:0", "encoder.layer.0.bias", "encoder.layer.0.weight"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params.values())
    assert dict(m.named_buffers()).keys() == {"onnx::Reshape_7"}
    assert sorted(m.state_dict()) == ["/blocks/scale:0", "encoder.layer.0.bias", "encoder.layer.0.weight",
                                      "onnx::Reshape_7"]
    assert m.encoder.layer.get_submodule("0").weight.shape == (3, 3)
    # load_state_dict changes what the graph computes
    sd = m.state_dict()
    sd["/blocks/scale:0"] = rtx.zeros(3)
    m.load_state_dict(sd)
    with rtx.no_grad():
        assert np.all(m(np.ones((1, 3), np.float32)).numpy() == 0)


def test_graph_inputs_with_initializer_defaults():
    # IR < 4 style: an initializer listed among the inputs is an input with a default value
    w = numpy_helper.from_array(np.full((2,), 3.0, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.array([1.0, 2.0], np.float32)
    with rtx.no_grad():
        np.testing.assert_array_equal(m(x).numpy(), [3.0, 6.0])
        np.testing.assert_array_equal(m(x, np.array([2.0, 2.0], np.float32)).numpy(), [2.0, 4.0])
    assert m.input_names == ["x"] and m.optional_input_names == ["w"]


def test_one_training_step_changes_the_initializers_and_the_loss_falls():
    from rtx.optim import SGD
    model, _ = mlp_model(seed=3)
    m = rtx.onnx.load(model)
    before = {k: v.detach().numpy().copy() for k, v in m.named_parameters()}
    rtx.manual_seed(0)
    x = rtx.randn(64, 4)
    target = rtx.stack([x[:, 0] - x[:, 1], x[:, 2] * 0.5], 1)
    opt = SGD(m.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        loss = ((m(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    for k, v in m.named_parameters():
        assert not np.allclose(v.detach().numpy(), before[k]), f"{k} did not change"
    assert losses[-1] < losses[0] * 0.5


def test_exported_model_round_trip_and_fine_tune():
    rtx.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).eval()
    x = rtx.randn(2, 3, 8, 8)
    proto = rtx.onnx.export(net, (x,), None, input_names=["image"], output_names=["logits"],
                            dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    m = rtx.onnx.load(proto)
    with rtx.no_grad():
        for batch in (1, 5):
            xb = rtx.randn(batch, 3, 8, 8)
            np.testing.assert_allclose(m(xb).numpy(), net(xb).numpy(), rtol=1e-5, atol=1e-5)
    loss = m(x).square().mean()
    loss.backward()
    assert all(p.grad is not None for p in m.parameters())


# ---- against onnxruntime --------------------------------------------------------------------------
ort = pytest.importorskip("onnxruntime")


def _ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _compare(model, feeds, rtol=1e-4, atol=1e-5):
    expected = _ort_run(model, feeds)
    m = rtx.onnx.load(model)
    with rtx.no_grad():
        got = m(**feeds)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        assert g.numpy().dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.numpy(), e, rtol=rtol, atol=atol)


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def test_cnn_against_onnxruntime():
    rng = np.random.default_rng(0)
    f = np.float32
    inits = [_init("w1", rng.standard_normal((6, 3, 3, 3)).astype(f)), _init("b1", rng.standard_normal(6).astype(f)),
             _init("s", rng.random(6).astype(f) + 0.5), _init("bb", rng.standard_normal(6).astype(f)),
             _init("m", rng.standard_normal(6).astype(f)), _init("v", rng.random(6).astype(f) + 0.5),
             _init("w2", rng.standard_normal((6, 2, 3, 3)).astype(f)),
             _init("wt", rng.standard_normal((6, 2, 2, 2)).astype(f)),
             _init("fc", rng.standard_normal((2, 5)).astype(f)), _init("fcb", rng.standard_normal(5).astype(f))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 0, 2, 1], strides=[2, 1]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"], epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], group=3, auto_pad="SAME_UPPER"),
        helper.make_node("MaxPool", ["c2"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         ceil_mode=1),
        helper.make_node("ConvTranspose", ["p1", "wt"], ["t1"], strides=[2, 2], pads=[0, 1, 1, 0],
                         output_padding=[1, 1]),
        helper.make_node("AveragePool", ["t1"], ["p2"], kernel_shape=[2, 2], pads=[1, 1, 0, 0],
                         count_include_pad=0),
        helper.make_node("GlobalAveragePool", ["p2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["fl"]),
        helper.make_node("Gemm", ["fl", "fc", "fcb"], ["z"]),
        helper.make_node("Softmax", ["z"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 11, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _compare(model, {"x": rng.standard_normal((2, 3, 11, 9)).astype(f)})


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
def test_recurrent_against_onnxruntime(op_type):
    rng = np.random.default_rng(1)
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op_type]
    H, I, T, B = 3, 4, 5, 2
    f = np.float32
    inits = [_init("W", rng.standard_normal((2, gates * H, I)).astype(f)),
             _init("R", rng.standard_normal((2, gates * H, H)).astype(f)),
             _init("B", rng.standard_normal((2, 2 * gates * H)).astype(f)),
             _init("lens", np.array([5, 3], np.int32))]
    attrs = {"hidden_size": H, "direction": "bidirectional"}
    if op_type == "GRU":
        attrs["linear_before_reset"] = 1
    outs = ["Y", "Y_h"] + (["Y_c"] if op_type == "LSTM" else [])
    node = helper.make_node(op_type, ["x", "W", "R", "B", "lens"], outs, **attrs)
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT,
                                                             [T, 2, B, H] if o == "Y" else [2, B, H]) for o in outs],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    _compare(model, {"x": rng.standard_normal((T, B, I)).astype(f)})


def test_dynamic_shape_graph_against_onnxruntime():
    # the shape arithmetic exporters write for attention: Shape/Gather/Concat/Reshape/Transpose/MatMul/Where
    rng = np.random.default_rng(2)
    f = np.float32
    i64 = np.int64
    inits = [_init("wq", rng.standard_normal((8, 8)).astype(f)), _init("zero", np.array(0, i64)),
             _init("one", np.array(1, i64)), _init("heads", np.array([2], i64)), _init("hd", np.array([4], i64)),
             _init("ax0", np.array([0], i64)), _init("neg", np.array(-1e4, f)), _init("e", np.array([8], i64))]
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["shp", "one"], ["t"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["t", "ax0"], ["t1"]),
        helper.make_node("Concat", ["b1", "t1", "heads", "hd"], ["s4"], axis=0),
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("Reshape", ["q", "s4"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["sc"]),
        helper.make_node("Range", ["zero", "t", "one"], ["pos"]),
        helper.make_node("Unsqueeze", ["pos", "one"], ["col"]),
        helper.make_node("Less", ["col", "pos"], ["future"]),
        helper.make_node("Where", ["future", "neg", "sc"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "qt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["b1", "t1", "e"], ["s3"], axis=0),
        helper.make_node("Reshape", ["ot", "s3"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "T", 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for b, t in ((1, 3), (2, 6)):
        _compare(model, {"x": rng.standard_normal((b, t, 8)).astype(f)})
