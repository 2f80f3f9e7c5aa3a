"""Gradients through imported models: every float kernel that a fine-tuned model backpropagates
through, checked against finite differences in float64 (rtx.autograd.gradcheck).

Each case is one ONNX node: its float inputs are graph inputs (perturbed by gradcheck), the
others (indices, shapes, axes) are initializers.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import rtx
import rtx.onnx
from rtx.autograd import gradcheck

R = np.random.default_rng(0)


def f(*shape, positive=False):
    a = R.standard_normal(shape)
    return np.abs(a) + 0.5 if positive else a


def i64(*v):
    return np.array(v, np.int64)


# (id, op_type, float inputs {name: array}, constant inputs {name: array}, attrs, opset, input order)
CASES = [
    ("gemm", "Gemm", {"a": f(3, 4), "b": f(5, 4), "c": f(5)}, {}, dict(transB=1, alpha=0.7, beta=1.3), 17,
     ["a", "b", "c"]),
    ("matmul_batched", "MatMul", {"a": f(2, 3, 4), "b": f(4, 2)}, {}, {}, 17, ["a", "b"]),
    ("conv_group_asym_pads", "Conv", {"x": f(1, 4, 5, 5), "w": f(4, 2, 3, 3), "b": f(4)}, {},
     dict(group=2, pads=[1, 0, 1, 2], strides=[2, 1]), 17, ["x", "w", "b"]),
    ("conv1d_dilated", "Conv", {"x": f(2, 2, 7), "w": f(3, 2, 2)}, {}, dict(dilations=[2], pads=[1, 1]), 17,
     ["x", "w"]),
    ("conv_transpose", "ConvTranspose", {"x": f(1, 2, 3, 3), "w": f(2, 3, 2, 2), "b": f(3)}, {},
     dict(strides=[2, 2], pads=[1, 0, 0, 1], output_padding=[1, 1]), 17, ["x", "w", "b"]),
    ("batchnorm", "BatchNormalization", {"x": f(2, 3, 4), "s": f(3), "b": f(3), "m": f(3), "v": f(3, positive=True)},
     {}, dict(epsilon=1e-3), 15, ["x", "s", "b", "m", "v"]),
    ("maxpool_ceil_pads", "MaxPool", {"x": f(1, 2, 5, 5)}, {},
     dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1), 17, ["x"]),
    ("maxpool_torch_path", "MaxPool", {"x": f(1, 2, 4, 4)}, {}, dict(kernel_shape=[2, 2], strides=[2, 2]), 17, ["x"]),
    ("avgpool_exclude_pad", "AveragePool", {"x": f(1, 1, 4, 5)}, {},
     dict(kernel_shape=[2, 3], pads=[1, 1, 0, 1], count_include_pad=0), 17, ["x"]),
    ("global_avgpool", "GlobalAveragePool", {"x": f(2, 3, 2, 2)}, {}, {}, 17, ["x"]),
    ("layernorm", "LayerNormalization", {"x": f(2, 3, 4), "s": f(4), "b": f(4)}, {}, dict(axis=-1), 17,
     ["x", "s", "b"]),
    ("groupnorm", "GroupNormalization", {"x": f(2, 4, 3), "s": f(4), "b": f(4)}, {}, dict(num_groups=2), 21,
     ["x", "s", "b"]),
    ("rmsnorm", "RMSNormalization", {"x": f(2, 3, 4), "s": f(3, 4)}, {}, dict(axis=1), 23, ["x", "s"]),
    ("instancenorm", "InstanceNormalization", {"x": f(2, 2, 5), "s": f(2), "b": f(2)}, {}, {}, 17, ["x", "s", "b"]),
    ("softmax", "Softmax", {"x": f(2, 5)}, {}, dict(axis=1), 17, ["x"]),
    ("logsoftmax", "LogSoftmax", {"x": f(2, 3, 4)}, {}, dict(axis=-2), 17, ["x"]),
    ("lrn", "LRN", {"x": f(1, 5, 2, 2)}, {}, dict(size=3), 17, ["x"]),
    ("lstm_peephole", "LSTM", {"x": f(3, 2, 4), "W": f(1, 12, 4), "R": f(1, 12, 3), "B": f(1, 24),
                                "h0": f(1, 2, 3), "c0": f(1, 2, 3), "P": f(1, 9)},
     {"lens": np.array([3, 2], np.int32)}, dict(hidden_size=3), 14, ["x", "W", "R", "B", "lens", "h0", "c0", "P"]),
    ("gru_reverse", "GRU", {"x": f(3, 2, 4), "W": f(1, 9, 4), "R": f(1, 9, 3), "B": f(1, 18)}, {},
     dict(hidden_size=3, direction="reverse", linear_before_reset=1), 14, ["x", "W", "R", "B"]),
    ("rnn_bidirectional", "RNN", {"x": f(2, 2, 3), "W": f(2, 2, 3), "R": f(2, 2, 2)}, {},
     dict(hidden_size=2, direction="bidirectional"), 14, ["x", "W", "R"]),
    ("gather_2d_indices", "Gather", {"x": f(5, 3)}, {"i": i64([0, 4], [-1, 2])}, dict(axis=0), 17, ["x", "i"]),
    ("gather_elements", "GatherElements", {"x": f(3, 4)}, {"i": i64([0, 3], [2, 2], [1, 0])}, dict(axis=1), 17,
     ["x", "i"]),
    ("slice_negative_step", "Slice", {"x": f(4, 5)},
     {"st": i64(3, 0), "en": i64(0, 5), "ax": i64(0, 1), "sp": i64(-1, 2)}, {}, 17, ["x", "st", "en", "ax", "sp"]),
    ("pad_reflect", "Pad", {"x": f(1, 2, 3, 4)}, {"p": i64(0, 0, 1, 2, 0, 0, 2, 1)}, dict(mode="reflect"), 17,
     ["x", "p"]),
    ("pad_constant_negative", "Pad", {"x": f(3, 4)}, {"p": i64(1, -1, 0, 2), "v": np.array(0.5)}, {}, 17,
     ["x", "p", "v"]),
    ("einsum", "Einsum", {"a": f(2, 3, 4), "b": f(2, 4, 2)}, {}, dict(equation="bij,bjk->bik"), 17, ["a", "b"]),
    ("where", "Where", {"a": f(3, 4), "b": f(4)}, {"c": R.random((3, 4)) > 0.5}, {}, 17, ["c", "a", "b"]),
    ("reduce_mean_axes", "ReduceMean", {"x": f(2, 3, 4)}, {"ax": i64(0, 2)}, dict(keepdims=0), 18, ["x", "ax"]),
    ("reduce_max", "ReduceMax", {"x": f(3, 4)}, {"ax": i64(1)}, {}, 18, ["x", "ax"]),
    ("reduce_l2", "ReduceL2", {"x": f(3, 4)}, {"ax": i64(-1)}, {}, 18, ["x", "ax"]),
    ("reduce_logsumexp", "ReduceLogSumExp", {"x": f(3, 4)}, {}, {}, 18, ["x"]),
    ("reduce_prod", "ReduceProd", {"x": f(2, 3)}, {"ax": i64(1)}, {}, 18, ["x", "ax"]),
    ("cumsum_exclusive_reverse", "CumSum", {"x": f(3, 4)}, {"ax": np.array(1)}, dict(exclusive=1, reverse=1), 17,
     ["x", "ax"]),
    ("pow", "Pow", {"a": f(3, 4, positive=True), "b": f(4)}, {}, {}, 17, ["a", "b"]),
    ("div_broadcast", "Div", {"a": f(3, 4), "b": f(3, 1, positive=True)}, {}, {}, 17, ["a", "b"]),
    ("sqrt", "Sqrt", {"x": f(3, positive=True)}, {}, {}, 17, ["x"]),
    ("erf", "Erf", {"x": f(5)}, {}, {}, 17, ["x"]),
    ("gelu_tanh", "Gelu", {"x": f(6)}, {}, dict(approximate="tanh"), 20, ["x"]),
    ("selu", "Selu", {"x": f(6)}, {}, {}, 17, ["x"]),
    ("hardswish", "HardSwish", {"x": f(6) * 2}, {}, {}, 17, ["x"]),
    ("prelu", "PRelu", {"x": f(2, 3), "s": f(3)}, {}, {}, 17, ["x", "s"]),
    ("clip", "Clip", {"x": f(8)}, {"lo": np.array(-0.5), "hi": np.array(0.7)}, {}, 17, ["x", "lo", "hi"]),
    ("softplus", "Softplus", {"x": f(6) * 3}, {}, {}, 17, ["x"]),
    ("resize_linear", "Resize", {"x": f(1, 1, 3, 4)}, {"roi": np.zeros(0, np.float32),
                                                         "sc": np.array([1, 1, 2, 1.5], np.float32)},
     dict(mode="linear"), 19, ["x", "roi", "sc"]),
    ("resize_cubic_sizes", "Resize", {"x": f(1, 1, 4, 4)},
     {"roi": np.zeros(0, np.float32), "sc": np.zeros(0, np.float32), "sz": i64(1, 1, 3, 5)},
     dict(mode="cubic", coordinate_transformation_mode="align_corners"), 19, ["x", "roi", "sc", "sz"]),
    ("expand_tile_concat", "Concat", {"a": f(2, 3), "b": f(1, 3)}, {}, dict(axis=0), 17, ["a", "b"]),
    ("split_uneven", "Split", {"x": f(5, 2)}, {}, dict(axis=0, num_outputs=2), 18, ["x"]),
    ("transpose", "Transpose", {"x": f(2, 3, 4)}, {}, dict(perm=[2, 0, 1]), 17, ["x"]),
    ("expand", "Expand", {"x": f(3, 1)}, {"s": i64(2, 3, 4)}, {}, 17, ["x", "s"]),
    ("tile", "Tile", {"x": f(2, 3)}, {"r": i64(2, 1)}, {}, 17, ["x", "r"]),
    ("depth_to_space", "DepthToSpace", {"x": f(1, 8, 2, 2)}, {}, dict(blocksize=2, mode="CRD"), 17, ["x"]),
    ("topk_values", "TopK", {"x": f(3, 5)}, {"k": i64(2)}, dict(axis=1), 17, ["x", "k"]),
    ("trilu", "Trilu", {"x": f(3, 4)}, {"k": np.array(1)}, dict(upper=0), 17, ["x", "k"]),
    ("grid_sample", "GridSample", {"x": f(1, 2, 3, 4), "g": R.uniform(-0.9, 0.9, (1, 2, 3, 2))}, {},
     dict(align_corners=1), 16, ["x", "g"]),
    ("attention_function_body", "Attention", {"q": f(1, 2, 3, 4), "k": f(1, 2, 3, 4), "v": f(1, 2, 3, 4)}, {},
     dict(is_causal=1), 23, ["q", "k", "v"]),
]


def _model(op_type, floats, consts, attrs, opset, order):
    n_out = {"Split": 2, "TopK": 1}.get(op_type, 1)
    outputs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op_type, order, outputs, **attrs)
    inputs = [helper.make_tensor_value_info(k, TensorProto.DOUBLE, list(v.shape)) for k, v in floats.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.DOUBLE, None) for o in outputs]
    for o in outs:  # a rank-less output type (the checker wants the shape field present)
        o.type.tensor_type.shape.SetInParent()
    graph = helper.make_graph([node], op_type, inputs, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(case):
    _id, op_type, floats, consts, attrs, opset, order = case
    model = rtx.onnx.load(_model(op_type, floats, consts, attrs, opset, order), check=False)
    names = list(floats)
    xs = [rtx.tensor(floats[k], dtype=rtx.float64, requires_grad=True) for k in names]

    def fn(*args):
        out = model(**dict(zip(names, args)))
        return out if isinstance(out, tuple) else (out,)

    assert gradcheck(fn, tuple(xs), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gradients_flow_through_loop_and_if_into_the_outer_scope():
    # y = (w * x) applied n times inside a Loop whose body reads w from the outer scope, then an If
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Mul", ["v", "w"], ["m"]),
         helper.make_node("Tanh", ["m"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.DOUBLE, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.DOUBLE, [3])])
    then_g = helper.make_graph([helper.make_node("Mul", ["vf", "w"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.DOUBLE, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["vf"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.DOUBLE, [3])])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["vf"], body=body),
             helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3]),
                                           helper.make_tensor_value_info("w", TensorProto.DOUBLE, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])],
                              [numpy_helper.from_array(np.array(3, np.int64), "n"),
                               numpy_helper.from_array(np.array(True), "flag")])
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = rtx.tensor(f(3), requires_grad=True)
    w = rtx.tensor(f(3), requires_grad=True)
    assert gradcheck(lambda a, b: m(a, b), (x, w))


def test_initializers_receive_gradients_through_a_whole_model():
    w = numpy_helper.from_array(f(4, 3, 3, 3), "conv.weight")
    b = numpy_helper.from_array(f(4), "conv.bias")
    fc = numpy_helper.from_array(f(4, 2), "fc.weight")
    nodes = [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["fl"]),
             helper.make_node("MatMul", ["fl", "fc.weight"], ["y"])]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 2])], [w, b, fc])
    m = rtx.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = rtx.tensor(f(2, 3, 5, 5))
    params = [m.conv.weight, m.conv.bias, m.fc.weight]

    def fn(*ps):
        with rtx.no_grad():  # swap the parameters' values for the perturbed ones
            for p, v in zip(params, ps):
                p.copy_(v)
        return m(x)

    m(x).sum().backward()
    analytic = [p.grad.numpy().copy() for p in params]
    base = [p.detach().numpy().copy() for p in params]
    for k in range(len(params)):  # central differences, one parameter entry at a time
        num = np.zeros_like(base[k])
        for idx in np.ndindex(base[k].shape):
            for sign in (1, -1):
                vals = [v.copy() for v in base]
                vals[k][idx] += sign * 1e-6
                with rtx.no_grad():
                    num[idx] += sign * float(fn(*[rtx.tensor(v) for v in vals]).sum()) / 2e-6
        np.testing.assert_allclose(analytic[k], num, rtol=1e-4, atol=1e-6)
