"""rtx.onnx.export against onnxruntime: every exported model passes
onnx.checker.check_model(full_check=True) and matches rtx within 1e-5 relative (float32:
|ort - rtx| <= 1e-5 * (|rtx| + max|rtx|)) at two batch sizes (dynamic batch)."""
import inspect
import io
import re
from pathlib import Path

import numpy as np
import onnx
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
import rtx.onnx
from rtx.onnx.export import EXPORTED_OPS, ExportError

ort = pytest.importorskip("onnxruntime")


def _run_rtx(model, args):
    with rtx.no_grad():
        out = model(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    flat = []
    for o in out:
        flat.extend(o if isinstance(o, (tuple, list)) else [o])
    return [o.numpy() for o in flat]


def check(model, args, other_args, names, dynamic_axes, opset=17, output_names=None):
    """Export, check, and compare with onnxruntime on `args` and `other_args` (another batch size)."""
    if hasattr(model, "eval"):
        model.eval()  # export runs the model in eval mode and restores its mode afterwards
    args = args if isinstance(args, tuple) else (args,)
    other_args = other_args if isinstance(other_args, tuple) else (other_args,)
    buf = io.BytesIO()
    proto = rtx.onnx.export(model, args, buf, input_names=names, output_names=output_names,
                            dynamic_axes=dynamic_axes, opset_version=opset)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == opset
    emitted = {n.op_type for n in proto.graph.node}
    assert emitted <= set(EXPORTED_OPS), emitted - set(EXPORTED_OPS)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    for a in (args, other_args):
        want = _run_rtx(model, a)
        got = sess.run(None, {n: t.numpy() for n, t in zip(names, a)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            scale = float(np.abs(w).max()) if w.size else 0.0
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale + 1e-30)
    return proto


def _batch(name, *dims):
    return {name: {0: "batch", **{d: f"d{d}" for d in dims}}}


# ---- MLP ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [13, 17, 20])
def test_mlp(opset):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 8), nn.GELU(),
                          nn.Linear(8, 3), nn.Softmax(dim=-1))
    proto = check(model, rtx.randn(4, 6), rtx.randn(9, 6), ["x"], {"x": {0: "batch"}, "probs": {0: "batch"}},
                  opset, output_names=["probs"])
    out = proto.graph.output[0]
    assert out.name == "probs" and [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == \
        ["batch", 3]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert {i.name for i in proto.graph.initializer} >= {"0.weight", "0.bias", "5.bias"}
    ops = {n.op_type for n in proto.graph.node}
    assert "Gemm" in ops and ("Gelu" in ops) == (opset >= 20)


# ---- CNN: conv, batch norm (eval), max pool, residual, adaptive average pool, flatten -----------------

class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.down = nn.Conv2d(8, 16, 1, stride=2)
        self.avg = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.gap = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool(self.relu(self.bn0(self.stem(x))))
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        out = self.relu(out)
        out = self.avg(self.down(out))
        return self.fc(rtx.flatten(self.gap(out), 1))


@pytest.mark.parametrize("opset", [13, 17])
def test_cnn(opset):
    model = ResNetish()
    for bn in (model.bn0, model.bn1, model.bn2):
        bn.running_mean.copy_(rtx.randn(8) * 0.1)
        bn.running_var.copy_(rtx.rand(8) + 0.5)
        bn.weight.data = rtx.rand(8) + 0.5
    model.eval()
    proto = check(model, rtx.randn(2, 3, 16, 16), rtx.randn(3, 3, 16, 16), ["image"], {"image": {0: "batch"}},
                  opset)
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "Relu"} <= ops
    assert "BatchNormalization" not in ops  # folded into a per-channel scale and shift
    assert model.training is False


def test_export_keeps_training_mode_and_writes_a_file(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    model.train()
    path = tmp_path / "m.onnx"
    rtx.onnx.export(model, (rtx.randn(5, 3),), str(path), input_names=["x"], dynamic_axes={"x": [0]})
    assert model.training
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded, full_check=True)
    assert loaded.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"


# ---- activations and assorted ops ---------------------------------------------------------------------

class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleList([nn.LeakyReLU(0.2), nn.ELU(0.7), nn.SELU(), nn.CELU(1.3), nn.Hardtanh(-0.5, 0.7),
                                   nn.SiLU(), nn.Softplus(beta=2.0, threshold=3.0), nn.Mish(), nn.Hardswish(),
                                   nn.Hardsigmoid(), nn.LogSigmoid(), nn.GELU(approximate="tanh"), nn.Sigmoid(),
                                   nn.Tanh(), nn.ReLU6()])
        self.ln = nn.LayerNorm(6)
        self.emb = nn.Embedding(10, 6)

    def forward(self, x, idx):
        h = x
        for act in self.acts:
            h = h + act(x)
        h = self.ln(h) + self.emb(idx)
        a, b = h.chunk(2, dim=-1)
        c = rtx.cat([b, a], dim=-1).permute(0, 2, 1)               # (B, 6, T)
        d = c[:, 1:5:2, :].mean(dim=-1) + c[:, -1].sum(-1, keepdim=True)
        e = rtx.where(d > 0, d, d * 0.1).clamp(-1.0, 1.0)
        f = F.pad(e[:, None, :], (1, 2), value=0.5).squeeze(1)
        g = (f * 3).to(rtx.float64).exp().float() / (f.abs() + 1).sqrt()
        return F.log_softmax(g, dim=1), h[..., 0]


@pytest.mark.parametrize("opset", [13, 17, 20])
def test_activation_and_op_zoo(opset):
    model = Zoo().eval()
    x, idx = rtx.randn(2, 5, 6) * 3, rtx.randint(0, 10, (2, 5))
    x2, idx2 = rtx.randn(4, 5, 6) * 3, rtx.randint(0, 10, (4, 5))
    check(model, (x, idx), (x2, idx2), ["x", "idx"], {"x": {0: "batch"}, "idx": {0: "batch"}}, opset)


# ---- recurrent: ONNX LSTM / GRU / RNN, dynamic batch and sequence length -------------------------------

@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("batch_first,bidirectional,layers", [(False, False, 1), (True, True, 2)])
def test_recurrent(cls, batch_first, bidirectional, layers):
    m = cls(4, 6, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    b, t = (0, 1) if batch_first else (1, 0)
    shape = [0, 0, 4]
    shape[b], shape[t] = 3, 5
    x = rtx.randn(*shape)
    shape[b], shape[t] = 2, 7
    x2 = rtx.randn(*shape)
    names = ["out", "h_n"] + (["c_n"] if cls is nn.LSTM else [])
    proto = check(m, x, x2, ["x"], {"x": {b: "batch", t: "seq"}}, 17, output_names=names)
    assert cls.__name__ in {n.op_type for n in proto.graph.node}


def test_rnn_relu_with_initial_state():
    m = nn.RNN(3, 4, num_layers=2, nonlinearity="relu")
    x, h = rtx.randn(6, 2, 3), rtx.randn(2, 2, 4)
    x2, h2 = rtx.randn(6, 5, 3), rtx.randn(2, 5, 4)
    check(m, (x, h), (x2, h2), ["x", "h0"], {"x": {1: "batch"}, "h0": {1: "batch"}})


def test_lstm_with_initial_state():
    m = nn.LSTM(3, 4, batch_first=True)
    h, c = rtx.randn(1, 2, 4), rtx.randn(1, 2, 4)
    h2, c2 = rtx.randn(1, 3, 4), rtx.randn(1, 3, 4)

    def fn(x, h, c):
        return m(x, (h, c))

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x, h, c):
            return fn(x, h, c)

    check(Wrap(), (rtx.randn(2, 5, 3), h, c), (rtx.randn(3, 5, 3), h2, c2), ["x", "h", "c"],
          {"x": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"}})


# ---- transformers ------------------------------------------------------------------------------------

class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer from rtx.nn parts (MHA, LayerNorm, MLP)."""

    def __init__(self, d=16, heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, d))

    def forward(self, x):
        x = self.norm1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.norm2(x + self.ff(x))


@pytest.mark.parametrize("opset", [13, 17])
def test_transformer_encoder_layer(opset):
    model = EncoderLayer().eval()
    proto = check(model, rtx.randn(2, 5, 16), rtx.randn(3, 5, 16), ["x"], _batch("x"), opset)
    assert ("LayerNormalization" in {n.op_type for n in proto.graph.node}) == (opset >= 17)


def test_nn_transformer_encoder_layer():
    if not hasattr(nn, "TransformerEncoderLayer"):
        pytest.skip("rtx.nn.TransformerEncoderLayer is not there yet")
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True).eval()
    check(layer, rtx.randn(2, 5, 16), rtx.randn(4, 5, 16), ["src"], _batch("src"), 17)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=32, d=16, heads=2, ctx=16, layers=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2

    def forward(self, idx):
        x = self.tok(idx) + self.pos(rtx.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


@pytest.mark.parametrize("opset", [14, 17, 20])
def test_gpt_decoder(opset):
    model = TinyGPT().eval()
    idx, idx2 = rtx.randint(0, 32, (2, 7)), rtx.randint(0, 32, (5, 7))
    proto = check(model, idx, idx2, ["idx"], {"idx": {0: "batch"}, "logits": {0: "batch"}}, opset,
                  output_names=["logits"])
    assert sum(i.name == "tok.weight" for i in proto.graph.initializer) == 1


def test_gpt_decoder_dynamic_sequence():
    model = TinyGPT().eval()
    proto = check(model, rtx.randint(0, 32, (2, 7)), rtx.randint(0, 32, (3, 4)), ["idx"],
                  {"idx": {0: "batch", 1: "seq"}}, 17)
    assert {"Range", "Trilu", "ConstantOfShape"} <= {n.op_type for n in proto.graph.node}


# ---- API ---------------------------------------------------------------------------------------------

def test_signature_follows_torch_onnx_export():
    # torch.onnx.export's parameters (PyTorch 2.x), in order
    torch_params = ["model", "args", "f", "export_params", "verbose", "training", "input_names", "output_names",
                    "operator_export_type", "opset_version", "do_constant_folding", "dynamic_axes",
                    "keep_initializers_as_inputs", "custom_opsets", "export_modules_as_functions"]
    params = list(inspect.signature(rtx.onnx.export).parameters)
    assert params[:len(torch_params)] == torch_params
    assert rtx.onnx.export is rtx.onnx.export.__globals__["export"]


def test_errors():
    model = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="between 13 and 20"):
        rtx.onnx.export(model, rtx.randn(2, 3), None, opset_version=11)
    with pytest.raises(ValueError, match="neither input_names"):
        rtx.onnx.export(model, rtx.randn(2, 3), None, input_names=["x"], dynamic_axes={"y": {0: "b"}})

    def squeezer(x):
        return x.squeeze() * 2

    with pytest.raises(ExportError, match="cannot be exported with dynamic axes"):
        rtx.onnx.export(squeezer, rtx.randn(1, 3), None, input_names=["x"], dynamic_axes={"x": {0: "b"}})

    def unsupported(x):
        return rtx.linalg.inv(x)

    with pytest.raises(ExportError, match="no ONNX export for the rtx op inv"):
        rtx.onnx.export(unsupported, rtx.randn(3, 3) + rtx.eye(3) * 3, None)


def test_static_export_without_dynamic_axes():
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    proto = rtx.onnx.export(model, rtx.randn(4, 3), None)
    onnx.checker.check_model(proto, full_check=True)
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [4, 3]
    assert proto.graph.input[0].name == "input" and proto.graph.output[0].name == "output"


def test_exported_ops_list_matches_the_handlers():
    src = "".join(Path(rtx.onnx.export.__globals__["__file__"]).with_name(n).read_text()
                  for n in ("export.py", "_export_ops.py", "_export_rnn.py"))
    src = re.sub(r"EXPORTED_OPS = sorted\(\{.*?\}\)", "", src, flags=re.S)  # the list itself does not count
    literal = set(re.findall(r'ctx\.add\("([A-Za-z]+)"', src)) | set(re.findall(r'self\.add\("([A-Za-z]+)"', src))
    literal |= set(re.findall(r'make_node\("([A-Za-z]+)"', src)) | set(re.findall(r'"(Reduce[A-Za-z]+)"', src))
    from rtx.onnx._export_ops import _BINARY, _UNARY
    from rtx.onnx._export_rnn import RNN_CLASSES
    literal |= set(_BINARY.values()) | set(_UNARY.values()) | {c.__name__ for c in RNN_CLASSES}
    assert literal == set(EXPORTED_OPS)
    assert EXPORTED_OPS == sorted(EXPORTED_OPS)
    schemas = {s.name for s in onnx.defs.get_all_schemas()}
    assert set(EXPORTED_OPS) <= schemas
