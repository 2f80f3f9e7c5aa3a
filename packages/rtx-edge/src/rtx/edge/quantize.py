"""Static int8 quantization of a float ONNX graph into the QDQ format.

Why QDQ (QuantizeLinear/DequantizeLinear pairs around float ops) and not QLinearConv/QLinearMatMul:
QDQ is the format onnxruntime's quantizer writes by default and the only one TensorRT accepts; the
runtime fuses each `DequantizeLinear -> Conv -> QuantizeLinear` group into its integer kernel, while
a runtime without int8 kernels (ours, NumPy) still runs the graph as float ops. The graph keeps the
float model's structure, so any op with no quantized kernel simply stays float between the pairs.

The rewrite (what onnxruntime's `quantize_static(..., QuantFormat.QDQ)` does for these ops):
- the weight of every Conv/Gemm/MatMul becomes an int8 initializer, symmetric (zero point 0, range
  [-127, 127]), with one scale per output channel (or one per tensor), read through DequantizeLinear;
- the bias of a Conv/Gemm becomes int32 with scale = input scale x weight scale (the integer
  accumulator's own scale), so the integer kernel adds it without rescaling;
- every activation these ops read or write gets a QuantizeLinear/DequantizeLinear pair whose scale
  and zero point come from ranges calibrated on representative data. A Relu right after the op is
  kept and the pair goes after it (runtimes fold the Relu into the kernel's output clamp). Graph
  outputs stay float: logits keep their resolution.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from rtx.kernel.quant import choose_qparams  # the workspace's one scale/zero-point rule, edge's options

QUANTIZED_OPS = ("Conv", "Gemm", "MatMul")
_TINY = np.finfo(np.float32).tiny   # the smallest normal float32: scales below it are treated as 0
_INT32_MAX = 2**31 - 1


def _float_initializers(graph):
    return {i.name: numpy_helper.to_array(i) for i in graph.initializer if i.data_type == TensorProto.FLOAT}


def _consumers(graph):
    out = {}
    for n in graph.node:
        for name in n.input:
            out.setdefault(name, []).append(n)
    return out


def _weight_of(node, weights):
    """The constant (initializer) weight input of a Conv/Gemm/MatMul node and its output-channel axis."""
    if len(node.input) < 2 or node.input[1] not in weights:
        return None, None
    w = weights[node.input[1]]
    if node.op_type == "Conv":
        return node.input[1], 0
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return node.input[1], 0 if trans_b else 1
    return node.input[1], w.ndim - 1  # MatMul: B is (..., K, N), channels are its last axis


def activation_tensors(model):
    """The float activations to quantize, in graph order: the inputs of every Conv/Gemm/MatMul and
    their outputs (after a directly following Relu), graph outputs excepted."""
    graph = model.graph
    weights = _float_initializers(graph)
    consumers = _consumers(graph)
    outputs = {o.name for o in graph.output}
    names = []
    for node in graph.node:
        if node.op_type not in QUANTIZED_OPS:
            continue
        weight, _ = _weight_of(node, weights)
        data_inputs = [node.input[0]] + ([] if weight else [node.input[1]])  # MatMul of two activations
        names += [x for x in data_inputs if x not in weights]
        y = node.output[0]
        after = consumers.get(y, [])
        if (node.op_type == "MatMul" and len(after) == 1 and after[0].op_type == "Add" and y not in outputs
                and any(x in weights for x in after[0].input)):  # a Linear on 3-D input: MatMul + bias Add
            y = after[0].output[0]
            after = consumers.get(y, [])
        if len(after) == 1 and after[0].op_type == "Relu" and y not in outputs:
            y = after[0].output[0]
        if y not in outputs:
            names.append(y)
    return list(dict.fromkeys(names))


def _per_channel(c, rank, channels):
    """c as one value per channel (axis 1 of a rank-`rank` tensor), or None if it is not such a constant."""
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,)).astype(np.float32)


def fold_batchnorm(model):
    """A copy of `model` in which every `Conv -> Mul(per-channel constant) [-> Add(per-channel constant)]`
    (how rtx.onnx.export writes an eval BatchNorm after a conv) is one Conv with scaled weights and
    bias: the int8 weights then carry the BatchNorm's scale, and one Q/DQ pair follows the block."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    nodes = list(graph.node)
    weights = _float_initializers(graph)
    outputs = {o.name for o in graph.output}
    readers = {}
    for i, n in enumerate(nodes):
        for x in n.input:
            readers.setdefault(x, []).append(i)
    inits = {i.name: i for i in graph.initializer}
    dropped = set()
    for node in nodes:
        params = [x for x in node.input[1:] if x]
        if (node.op_type != "Conv" or not all(x in weights for x in params)
                or any(len(readers[x]) > 1 for x in params)):  # a shared weight cannot be rescaled for one node
            continue
        w = weights[node.input[1]]
        scale, shift = np.ones(w.shape[0], np.float32), np.zeros(w.shape[0], np.float32)
        y, chain = node.output[0], []
        for op in ("Mul", "Add"):
            after = readers.get(y, [])
            if y in outputs or len(after) != 1 or nodes[after[0]].op_type != op:
                break
            other = [x for x in nodes[after[0]].input if x != y]
            c = _per_channel(weights[other[0]], w.ndim, w.shape[0]) if len(other) == 1 and other[0] in weights \
                else None
            if c is None:
                break
            scale, shift = (scale * c, shift * c) if op == "Mul" else (scale, shift + c)
            chain.append(after[0])
            y = nodes[after[0]].output[0]
        if not chain:
            continue
        bias = weights[node.input[2]] if len(node.input) > 2 and node.input[2] else np.zeros(w.shape[0], np.float32)
        new_w = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(new_w, node.input[1]))
        new_b = numpy_helper.from_array((bias * scale + shift).astype(np.float32), f"{node.input[1]}_folded_bias")
        if len(node.input) > 2 and node.input[2]:
            new_b.name = node.input[2]
            inits[node.input[2]].CopyFrom(new_b)
        else:
            graph.initializer.append(new_b)
            del node.input[2:]
            node.input.append(new_b.name)
        node.output[0] = y
        dropped |= set(chain)
    del graph.node[:]
    graph.node.extend(n for i, n in enumerate(nodes) if i not in dropped)
    used = {x for n in graph.node for x in n.input} | {i.name for i in graph.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    return model


def quantize_weight(w, axis=None, min_scale=None):
    """Symmetric int8: q = round(w / scale) in [-127, 127], scale = max|w| / 127 per channel of `axis`
    (None: one scale for the tensor), raised to `min_scale` (broadcastable to the scale) where that is
    larger. Returns (q, scale); an all-zero channel gets scale 1."""
    w = np.asarray(w, np.float32)
    if axis is None:
        amax = np.abs(w).max(initial=0.0)
    else:
        amax = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis), initial=0.0)
    # a channel whose scale is 0 or a denormal (all-zero, or |w| < 1.5e-36) gets scale 1: its weights
    # round to 0, an error below 1e-36, where a zero scale would put inf/NaN into every runtime's math
    scale = choose_qparams(-amax, amax, -127, 127, symmetric=True, eps=_TINY, tiny_scale="one",
                           scale_dtype=np.float32)[0]
    if min_scale is not None:
        scale = np.maximum(scale, np.asarray(min_scale, np.float32)).astype(np.float32)
    shape = [-1 if i == axis else 1 for i in range(w.ndim)] if axis is not None else []
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def _bias_min_weight_scale(bias, x_scale, per_tensor):
    """The smallest weight scale whose int32 bias fits: the bias is stored as round(bias / (x_scale *
    w_scale)), and a tiny input range (a nearly constant activation) makes that pass 2**31, where
    clipping would silently replace the bias by a much smaller one (and onnxruntime, which fuses the
    op into its integer kernel, quantizes a float bias the same way). As onnxruntime's quantizer does,
    the weight scale of such a channel is raised instead: its weights get coarser, but they multiply
    an input that hardly varies. The bias scale must also stay a normal float32 (not 0)."""
    x = float(x_scale)
    need = np.maximum(np.abs(bias.astype(np.float64)) / (x * _INT32_MAX), _TINY / x) * (1 + 1e-5)
    return need.max() if per_tensor else need


def activation_params(lo, hi, symmetric=False):
    """(scale, zero_point) of int8 for a calibrated range; the range is widened to contain 0, so 0 is
    exact (zero padding and ReLU's zeros survive). Asymmetric uses all 256 levels on [lo, hi];
    symmetric (zero point 0, what TensorRT requires) spends [-127, 127] on [-max|x|, max|x|]."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"calibrated range [{lo}, {hi}] is not finite: the calibration data produced inf/NaN")
    # The scale is decided in float32, the type the file stores: a range so narrow that its scale is 0
    # or a denormal there (a constant activation, all zeros) gets scale 1 and zero point 0: 0 stays
    # exact and the few values around it round to 0, where a zero scale would divide by zero.
    qmin, qmax = (-127, 127) if symmetric else (-128, 127)
    scale, zero_point = choose_qparams(lo, hi, qmin, qmax, symmetric=symmetric, eps=_TINY, tiny_scale="one",
                                       zero_point_rounding="shift_then_round", scale_dtype=np.float32)
    return scale[()], np.int8(int(zero_point))


class _Names:
    """Fresh tensor names that collide with nothing in the graph."""

    def __init__(self, graph):
        self.used = {i.name for i in graph.initializer} | {i.name for i in graph.input}
        self.used |= {o for n in graph.node for o in list(n.output) + list(n.input)}

    def __call__(self, base):
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name


def quantize_model(model, ranges, *, per_channel=True, symmetric_activations=False):
    """The QDQ int8 model of a float ModelProto. `ranges` maps each name of `activation_tensors(model)`
    to its calibrated (min, max); the input model is not modified."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    missing = [n for n in activation_tensors(model) if n not in ranges]
    if missing:
        raise ValueError(f"no calibrated range for activation(s) {missing}")
    weights = _float_initializers(graph)
    fresh = _Names(graph)
    inits, nodes, renamed, act = [], [], {}, {}

    def add_init(base, array):
        name = fresh(base)
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def qdq(tensor):
        """Q/DQ pair on `tensor`; later readers see the dequantized copy."""
        scale, zp = activation_params(*ranges[tensor], symmetric=symmetric_activations)
        s, z = add_init(f"{tensor}_scale", scale), add_init(f"{tensor}_zero_point", zp)
        q, dq = fresh(f"{tensor}_quantized"), fresh(f"{tensor}_dequantized")
        nodes.append(helper.make_node("QuantizeLinear", [tensor, s, z], [q]))
        nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dq]))
        renamed[tensor], act[tensor] = dq, scale

    def dequantize(base, q, scale, axis, with_zero_point=True):
        inputs = [add_init(f"{base}_quantized", q), add_init(f"{base}_scale", scale)]
        if with_zero_point:  # int8 weights keep theirs (quantizers and TensorRT look for it); int32 biases skip it
            inputs.append(add_init(f"{base}_zero_point", np.zeros(np.shape(scale), q.dtype)))
        out = fresh(f"{base}_dequantized")
        attrs = {"axis": axis} if np.ndim(scale) else {}
        nodes.append(helper.make_node("DequantizeLinear", inputs, [out], **attrs))
        return out

    for i in graph.input:
        if i.name in ranges:
            qdq(i.name)
    for node in graph.node:
        inputs = list(node.input)
        if node.op_type in QUANTIZED_OPS:
            weight, axis = _weight_of(node, weights)
            if weight:
                x_scale = act.get(inputs[0])
                fold_bias = x_scale is not None and _bias_is_foldable(node, weights, weights[weight].shape[axis])
                min_scale = (_bias_min_weight_scale(weights[inputs[2]], x_scale, not per_channel) if fold_bias
                             else None)
                q, w_scale = quantize_weight(weights[weight], axis if per_channel else None, min_scale)
                inputs[1] = dequantize(weight, q, w_scale, axis)
                if fold_bias:
                    bias = weights[inputs[2]]
                    b_scale = (x_scale * np.broadcast_to(w_scale, bias.shape)).astype(np.float32)
                    b_q = np.clip(np.rint(bias.astype(np.float64) / b_scale), -_INT32_MAX, _INT32_MAX).astype(np.int32)
                    inputs[2] = dequantize(inputs[2], b_q, b_scale, 0, with_zero_point=False)
        inputs = [renamed.get(x, x) for x in inputs]
        nodes.append(helper.make_node(node.op_type, inputs, list(node.output), name=node.name or None,
                                      domain=node.domain or None, doc_string=node.doc_string or None))
        nodes[-1].attribute.extend(node.attribute)
        for out in node.output:
            if out in ranges:
                qdq(out)
    used = {x for n in nodes for x in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + inits)
    return model


def _bias_is_foldable(node, weights, channels):
    """An int32 bias needs a constant 1-D bias of one value per output channel, added once (beta=1,
    alpha=1): otherwise the bias stays float."""
    if len(node.input) < 3 or node.input[2] not in weights:
        return False
    if weights[node.input[2]].shape != (channels,):
        return False
    attrs = {a.name: a.f for a in node.attribute if a.name in ("alpha", "beta")}
    return node.op_type == "Conv" or (node.op_type == "Gemm" and attrs.get("alpha", 1.0) == 1.0
                                      and attrs.get("beta", 1.0) == 1.0)
