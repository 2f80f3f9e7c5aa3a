"""nn.LSTM / nn.GRU / nn.RNN -> ONNX LSTM / GRU / RNN, one ONNX op per layer (both directions
in one op), so the sequence length and the batch stay dynamic.

Gate orders differ: PyTorch stacks LSTM gates as (input, forget, cell, output), ONNX as
(input, output, forget, cell); GRU as (reset, update, new) and ONNX as (update, reset, hidden),
with linear_before_reset=1 matching PyTorch's r * (W_hn h + b_hn). ONNX's Y is
(seq, directions, batch, hidden): transposed and reshaped to PyTorch's (seq, batch, D*hidden)."""
from __future__ import annotations

import numpy as np

import rtx.nn as nn
from rtx.onnx._export_ops import HANDLERS
from rtx.onnx.export import ExportError

RNN_CLASSES = (nn.LSTM, nn.GRU, nn.RNN)

_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


def _np(t):
    return t.detach().numpy()


def _gates(w, mode):
    parts = np.split(w, len(_ORDER[mode]), axis=0)
    return np.concatenate([parts[i] for i in _ORDER[mode]], axis=0)


def _layer_weights(m, mode, layer, dirs, dt):
    W, R, B = [], [], []
    H = m.hidden_size
    for d in range(dirs):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        W.append(_gates(_np(getattr(m, "weight_ih" + sfx)), mode))
        R.append(_gates(_np(getattr(m, "weight_hh" + sfx)), mode))
        if m.bias:
            B.append(np.concatenate([_gates(_np(getattr(m, "bias_ih" + sfx)), mode),
                                     _gates(_np(getattr(m, "bias_hh" + sfx)), mode)]))
        else:
            B.append(np.zeros(2 * len(_ORDER[mode]) * H, dtype=dt))
    return np.stack(W).astype(dt), np.stack(R).astype(dt), np.stack(B).astype(dt)


def _recurrent(ctx, node):
    m = node.target
    mode = type(m).__name__
    if getattr(m, "proj_size", 0):
        raise ExportError("LSTM with proj_size > 0 has no ONNX LSTM form; it is not exported")
    args = list(node.args)
    x, hx = args[0], (args[1] if len(args) > 1 else node.attrs.get("hx"))
    if len(x.shape) != 3:
        raise ExportError(f"{mode} export needs a batched (3-D) input, got shape {list(x.shape)}")
    dt = np.dtype(x.dtype.np)
    dirs = 2 if m.bidirectional else 1
    H, L = m.hidden_size, m.num_layers
    seq = ctx.value(x)
    if m.batch_first:
        seq = ctx.add("Transpose", [seq], perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        if mode == "LSTM":
            h0, c0 = (ctx.value(v) for v in hx)
        else:
            h0 = ctx.value(hx)
    hs, cs = [], []
    activations = None
    if mode == "RNN":
        act = "Relu" if m.nonlinearity == "relu" else "Tanh"
        activations = [act] * dirs
    for layer in range(L):
        W, R, B = _layer_weights(m, mode, layer, dirs, dt)
        ins = [seq, ctx.const(W, f"{node.name}.W{layer}"), ctx.const(R, f"{node.name}.R{layer}"),
               ctx.const(B, f"{node.name}.B{layer}"), ""]
        for state in ([h0, c0] if mode == "LSTM" else [h0]):
            if state is None:
                ins.append("")
            else:
                ins.append(ctx.add("Slice", [state, ctx.ints([layer * dirs]), ctx.ints([(layer + 1) * dirs]),
                                             ctx.ints([0])]))
        while ins and ins[-1] == "":
            ins.pop()
        extra = {"linear_before_reset": 1} if mode == "GRU" else {}
        if activations:
            extra["activations"] = activations
        n_out = 3 if mode == "LSTM" else 2
        outs = ctx.add(mode, ins, n_out=n_out, hidden_size=H,
                       direction="bidirectional" if dirs == 2 else "forward", **extra)
        y = ctx.add("Transpose", [outs[0]], perm=[0, 2, 1, 3])          # (seq, batch, dirs, H)
        seq = ctx.add("Reshape", [y, ctx.ints([0, 0, dirs * H])])        # (seq, batch, dirs*H)
        hs.append(outs[1])
        if mode == "LSTM":
            cs.append(outs[2])
    out = ctx.add("Transpose", [seq], perm=[1, 0, 2], name=node.name) if m.batch_first else \
        ctx.add("Identity", [seq], name=node.name)
    h_n = hs[0] if L == 1 else ctx.add("Concat", hs, axis=0)
    h_n = ctx.add("Identity", [h_n], name=node.name + ".h_n")
    if mode == "LSTM":
        c_n = cs[0] if L == 1 else ctx.add("Concat", cs, axis=0)
        return [out, h_n, ctx.add("Identity", [c_n], name=node.name + ".c_n")]
    return [out, h_n]


for _cls in RNN_CLASSES:
    HANDLERS["module:" + _cls.__name__] = _recurrent
