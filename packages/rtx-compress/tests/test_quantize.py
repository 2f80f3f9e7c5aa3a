"""Fusion, static / dynamic quantized layers against NumPy integer references, QAT, serialization."""
import numpy as np
import pytest

import rtx
import rtx.compress as C
import rtx.nn as nn
import rtx.nn.functional as F


def _np(t):
    return t.detach().numpy()


def _qparams(x, qmin=0, qmax=255):
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    s = max((hi - lo) / (qmax - qmin), np.finfo(np.float32).eps)
    return np.float32(s), int(np.clip(qmin - np.rint(lo / np.float32(s)), qmin, qmax))


def _per_channel_weight(w):
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    s = (amax / 127.5).astype(np.float32)
    shape = (-1,) + (1,) * (w.ndim - 1)
    return np.clip(np.rint(w / s.reshape(shape)), -128, 127).astype(np.int64), s


class ConvBnReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = C.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.fc = nn.Linear(8 * 4 * 4, 6)
        self.relu2 = nn.ReLU()
        self.out = nn.Linear(6, 3)
        self.dequant = C.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(self.quant(x))))
        return self.dequant(self.out(self.relu2(self.fc(x.flatten(1)))))


def _model(seed=0):
    rtx.manual_seed(seed)
    m = ConvBnReLU()
    with rtx.no_grad():   # BatchNorm with statistics worth folding
        m.bn1.running_mean.copy_(rtx.randn(8) * 0.3)
        m.bn1.running_var.copy_(rtx.rand(8) + 0.5)
        m.bn1.weight.copy_(rtx.rand(8) + 0.5)
        m.bn1.bias.copy_(rtx.randn(8) * 0.1)
    return m.eval()


def test_fusion_equals_unfused_in_eval():
    m = _model()
    fused = C.fuse_modules(m, [["conv1", "bn1", "relu1"], ["fc", "relu2"]])
    assert isinstance(fused.conv1, C.intrinsic.ConvReLU2d) and isinstance(fused.bn1, nn.Identity)
    assert isinstance(fused.fc, C.intrinsic.LinearReLU) and isinstance(m.conv1, nn.Conv2d)  # not in place
    x = rtx.randn(5, 3, 4, 4)
    with rtx.no_grad():
        np.testing.assert_allclose(_np(fused(x)), _np(m(x)), rtol=1e-5, atol=1e-5)
    conv_bn = C.fuse_modules(m, ["conv1", "bn1"])
    with rtx.no_grad():
        np.testing.assert_allclose(_np(conv_bn.conv1(x)), _np(m.bn1(m.conv1(x))), rtol=1e-5, atol=1e-5)


def test_fusion_errors():
    m = _model().train()
    with pytest.raises(ValueError, match="eval mode"):
        C.fuse_modules(m, [["conv1", "bn1", "relu1"]])
    with pytest.raises(ValueError, match="no fusion"):
        C.fuse_modules(m.eval(), [["conv1", "fc"]])
    with pytest.raises(ValueError, match="no submodule 'conv9'"):
        C.fuse_modules(m, [["conv9", "bn1"]])


def test_quantized_linear_matches_integer_reference():
    rtx.manual_seed(1)
    lin = nn.Linear(20, 7)
    m = nn.Sequential(C.QuantStub(), lin, C.DeQuantStub())
    m.qconfig = C.QConfig(activation=C.MinMaxObserver, weight=C.default_per_channel_weight_observer)
    p = C.prepare(m.eval())
    calib = rtx.randn(32, 20)
    with rtx.no_grad():
        y_float = p(calib)
    q = C.convert(p)
    ql = q[1]
    assert ql.weight.dtype == rtx.int8 and ql.weight_scale.shape == (7,)
    x = _np(calib)
    si, zi = _qparams(x)                               # what MinMaxObserver saw at the input
    so, zo = _qparams(_np(y_float))                    # and at the output
    assert float(ql.input_scale) == pytest.approx(si) and int(ql.zero_point) == zo
    wq, sw = _per_channel_weight(_np(lin.weight))
    np.testing.assert_array_equal(ql.weight.numpy(), wq)
    xq = np.clip(np.rint(x / si) + zi, 0, 255).astype(np.int64) - zi
    acc = xq @ wq.T + np.rint(_np(lin.bias) / (np.float64(si) * sw))
    out_q = np.clip(np.rint(acc * (np.float64(si) * sw.astype(np.float64) / np.float64(so))) + zo, 0, 255)
    expected = ((out_q - zo) * np.float32(so)).astype(np.float32)
    with rtx.no_grad():
        got = _np(q(calib))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    assert np.abs(got - _np(y_float)).max() < 4 * so     # and it approximates the float layer


@pytest.mark.parametrize("stride,groups,relu", [(1, 1, False), (2, 2, True)])
def test_quantized_conv_matches_integer_reference(stride, groups, relu):
    rtx.manual_seed(2)
    conv = nn.Conv2d(4, 6, 3, stride=stride, padding=1, groups=groups)
    body = C.intrinsic.ConvReLU2d(conv, nn.ReLU()) if relu else conv
    m = nn.Sequential(C.QuantStub(), body, C.DeQuantStub()).eval()
    m.qconfig = C.QConfig(activation=C.MinMaxObserver, weight=C.default_per_channel_weight_observer)
    p = C.prepare(m)
    x_t = rtx.randn(2, 4, 7, 7)
    with rtx.no_grad():
        y_float = _np(p(x_t))
    q = C.convert(p)
    qc = q[1]
    assert isinstance(qc, C.quantized.ConvReLU2d if relu else C.quantized.Conv2d)
    x = _np(x_t)
    si, zi = float(qc.input_scale), int(qc.input_zero_point)
    so, zo = float(qc.scale), int(qc.zero_point)
    wq, sw = _per_channel_weight(_np(conv.weight))
    xq = np.clip(np.rint(x / np.float32(si)) + zi, 0, 255).astype(np.int64) - zi
    xq = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ho = (7 + 2 - 3) // stride + 1
    cin, cout = 4 // groups, 6 // groups
    acc = np.zeros((2, 6, ho, ho), np.int64)
    for o in range(6):                   # direct convolution, tap by tap
        g = o // cout
        for i in range(3):
            for j in range(3):
                patch = xq[:, g * cin:(g + 1) * cin, i:i + stride * ho:stride, j:j + stride * ho:stride]
                acc[:, o] += np.einsum("nchw,c->nhw", patch, wq[o, :, i, j])
    acc += np.rint(_np(conv.bias) / (np.float64(si) * sw)).astype(np.int64)[None, :, None, None]
    mult = (np.float64(si) * sw.astype(np.float64) / so)[None, :, None, None]
    out_q = np.clip(np.rint(acc * mult) + zo, zo if relu else 0, 255)
    with rtx.no_grad():
        got = _np(q(x_t))
    np.testing.assert_allclose(got, ((out_q - zo) * so).astype(np.float32), rtol=1e-6, atol=1e-7)
    assert np.abs(got - y_float).max() < 4 * so
    if relu:
        assert got.min() >= 0


def test_static_pipeline_on_fused_model_and_serialization(tmp_path):
    def build():
        m = C.fuse_modules(_model(), [["conv1", "bn1", "relu1"], ["fc", "relu2"]])
        m.qconfig = C.get_default_qconfig("x86")
        return C.prepare(m)

    p = build()
    calib = rtx.randn(64, 3, 4, 4)
    with rtx.no_grad():
        p(calib)
        ref = p(calib[:8])
    q = C.convert(p)
    assert type(q.conv1) is C.quantized.ConvReLU2d and type(q.fc) is C.quantized.LinearReLU
    assert type(q.quant) is C.quantized.Quantize and not hasattr(q, "qconfig")
    with rtx.no_grad():
        out = q(calib[:8])
    assert np.abs(_np(out) - _np(ref)).max() < 0.1 * np.abs(_np(ref)).max() + 4 * float(q.out.scale)
    path = tmp_path / "q.safetensors"
    rtx.save(q.state_dict(), path)
    other = build()
    with rtx.no_grad():
        other(rtx.randn(16, 3, 4, 4) * 3)      # different calibration, so different qparams
    other = C.convert(other)
    with rtx.no_grad():
        other(calib[:2])                         # caches the old weights' GEMM form: load must refresh it
    other.load_state_dict(rtx.load(path))
    with rtx.no_grad():
        np.testing.assert_array_equal(_np(other(calib[:8])), _np(out))
    assert C.state_dict_bytes(q) < C.state_dict_bytes(_model()) / 2.5


def test_convert_without_calibration_and_bad_input():
    m = nn.Sequential(C.QuantStub(), nn.Linear(4, 2), C.DeQuantStub()).eval()
    m[1].qconfig = C.default_qconfig
    with pytest.raises(ValueError, match="prepare"):
        C.convert(m)
    m.qconfig = C.default_qconfig
    prepared = C.prepare(m)
    with pytest.raises(ValueError, match=r"observers of 0 \(QuantStub.*saw no data"):
        C.convert(prepared)                  # observers never ran: no qparams to convert with
    prepared(rtx.randn(8, 4))
    q = C.convert(prepared)
    with pytest.raises(ValueError, match="last dimension 4"):
        q(rtx.randn(3, 5))
    with pytest.raises(TypeError, match="float"):
        q[1](rtx.ones(3, 4, dtype=rtx.int64))
    with pytest.warns(UserWarning, match="no submodule got a qconfig"):
        C.prepare(nn.Sequential(nn.Linear(2, 2)))


def test_dynamic_linear_matches_integer_reference():
    rtx.manual_seed(3)
    m = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
    q = C.quantize_dynamic(m, {nn.Linear}, dtype=rtx.qint8)
    assert type(q[0]) is C.dynamic.Linear and type(m[0]) is nn.Linear
    x = np.random.default_rng(0).normal(size=(5, 16)).astype(np.float32)
    s, z = _qparams(x, 0, 127)
    xq = np.clip(np.rint(x / s) + z, 0, 127).astype(np.int64) - z
    wq, sw = _per_channel_weight(_np(m[0].weight))
    expected = (xq @ wq.T) * (s * sw) + _np(m[0].bias)
    with rtx.no_grad():
        got = _np(q[0](rtx.from_numpy(x)))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(q(rtx.from_numpy(x))), _np(m(rtx.from_numpy(x))), atol=0.03)
    assert C.state_dict_bytes(q) < C.state_dict_bytes(m) / 2.5


def test_dynamic_quantization_leaves_subclasses_and_unlisted_types():
    rtx.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    q = C.quantize_dynamic(layer, {nn.Linear})
    assert type(q.linear1) is C.dynamic.Linear
    assert type(q.self_attn.out_proj).__name__ == "NonDynamicallyQuantizableLinear"   # as PyTorch
    x = rtx.randn(2, 5, 16)
    with rtx.no_grad():
        np.testing.assert_allclose(_np(q.eval()(x)), _np(layer.eval()(x)), atol=0.05)
    with pytest.raises(ValueError, match="no dynamic quantized version of Conv2d"):
        C.quantize_dynamic(layer, {nn.Conv2d})
    with pytest.raises(ValueError, match="dtype"):
        C.quantize_dynamic(layer, {nn.Linear}, dtype=rtx.int32)


def test_dynamic_lstm_close_to_float():
    rtx.manual_seed(4)
    lstm = nn.LSTM(6, 10, num_layers=2, batch_first=True, bidirectional=True)
    q = C.quantize_dynamic(nn.Sequential(lstm), {nn.LSTM})[0]
    assert type(q) is C.dynamic.LSTM and q.weight_ih_l1_reverse.dtype == rtx.int8
    x = rtx.randn(3, 9, 6)
    h0, c0 = rtx.randn(4, 3, 10) * 0.1, rtx.randn(4, 3, 10) * 0.1
    with rtx.no_grad():
        out, (h, c) = lstm(x, (h0, c0))
        qout, (qh, qc) = q(x, (h0, c0))
    assert qout.shape == out.shape and qh.shape == h.shape
    assert np.abs(_np(qout) - _np(out)).max() < 0.03
    assert np.abs(_np(qc) - _np(c)).max() < 0.05
    with pytest.raises(ValueError, match="input_size"):
        q(rtx.randn(3, 9, 5))


@pytest.mark.parametrize("dtype", [rtx.float16, rtx.bfloat16])
def test_half_precision_weights(dtype):
    rtx.manual_seed(5)
    m = nn.Sequential(nn.Linear(12, 6), nn.LSTM(6, 4))
    q = C.quantize_dynamic(m, {nn.Linear, nn.LSTM}, dtype=dtype)
    assert q[0].weight.dtype == dtype and q[1].weight_hh_l0.dtype == dtype
    x = rtx.randn(3, 12)
    w = m[0].weight.detach().to(dtype).to(rtx.float32)
    with rtx.no_grad():
        np.testing.assert_allclose(_np(q[0](x)), _np(x @ w.T + m[0].bias), rtol=1e-5, atol=1e-6)
        seq = rtx.randn(5, 2, 6)
        np.testing.assert_allclose(_np(q[1](seq)[0]), _np(m[1](seq)[0]), atol=0.02 if dtype is rtx.bfloat16 else 2e-3)
    def weight_bytes(model):
        return sum(t.numel() * t.element_size() for k, t in model.state_dict().items() if "weight" in k)

    assert weight_bytes(q) * 2 == weight_bytes(m)


def test_qat_straight_through_gradients():
    rtx.manual_seed(6)
    m = nn.Sequential(C.QuantStub(), nn.Linear(5, 3), C.DeQuantStub()).train()
    m.qconfig = C.get_default_qat_qconfig("x86")
    p = C.prepare_qat(m)
    lin = p[1]
    assert type(lin) is C.qat.Linear and isinstance(lin.weight_fake_quant, C.FakeQuantize)
    x = rtx.randn(4, 5)
    y = p(x)
    g = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    y.backward(rtx.from_numpy(g))
    # closed form: dL/dW = (g^T @ fq(x)) * [round(W / s_w) inside [-128, 127]], dL/db = sum g
    fq_in = lin.input_observer
    s, z = float(fq_in.scale[0]), int(fq_in.zero_point[0])
    xa = _np(x)
    x_fq = (np.clip(np.rint(xa / s) + z, fq_in.quant_min, fq_in.quant_max) - z) * s
    w, sw = _np(lin.weight), _np(lin.weight_fake_quant.scale)
    inside = np.abs(np.rint(w / sw[:, None]) + 0.5) <= 128   # the channel's largest |w| can round out to 128
    np.testing.assert_allclose(lin.weight.grad.numpy(), (g.T @ x_fq) * inside, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-5)


def test_qat_training_then_convert():
    rtx.manual_seed(7)
    rng = np.random.default_rng(7)
    x = rtx.from_numpy(rng.normal(size=(256, 4)).astype(np.float32))
    y = rtx.from_numpy((_np(x) @ np.array([1.0, -2.0, 0.5, 0.0], np.float32) > 0).astype(np.int64))
    m = nn.Sequential(C.QuantStub(), nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2), C.DeQuantStub())
    m = C.fuse_modules_qat(m, [["1", "2"]])
    m.qconfig = C.get_default_qat_qconfig("x86")
    p = C.prepare_qat(m.train())
    opt = rtx.optim.Adam(p.parameters(), lr=0.05)
    for _ in range(60):
        opt.zero_grad()
        loss = F.cross_entropy(p(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.3
    p.eval()
    with rtx.no_grad():
        fake = _np(p(x))
    q = C.convert(p)
    assert type(q[1]) is C.quantized.LinearReLU
    with rtx.no_grad():
        real = _np(q(x))
    # the int8 model decides as the QAT model did (values differ where QAT clipped at its reduced
    # 7-bit range while the int8 layers clamp at 255, as PyTorch's do)
    assert (real.argmax(1) == fake.argmax(1)).mean() > 0.95
    assert (real.argmax(1) == _np(y)).mean() > 0.95
    with pytest.raises(ValueError, match="training mode"):
        C.prepare_qat(m.eval())


@pytest.mark.parametrize("batch_first", [True, False])
def test_dynamic_multihead_attention_close_to_float(batch_first):
    rtx.manual_seed(8)
    mha = nn.MultiheadAttention(16, 4, batch_first=batch_first).eval()
    with rtx.no_grad():
        mha.in_proj_bias.copy_(rtx.randn(48) * 0.1)
    q = C.quantize_dynamic(nn.Sequential(mha), {nn.MultiheadAttention})[0]
    assert type(q) is C.dynamic.MultiheadAttention and q.in_proj.weight.dtype == rtx.int8
    shape = (3, 5, 16) if batch_first else (5, 3, 16)
    x, kv = rtx.randn(*shape), rtx.randn(*shape)
    pad = rtx.tensor([[False] * 4 + [True]] * 3)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    with rtx.no_grad():
        for args, kw in [((x, x, x), {}), ((x, kv, kv), {"key_padding_mask": pad}),
                         ((x, x, x), {"attn_mask": causal, "average_attn_weights": False})]:
            out, w = mha(*args, **kw)
            qout, qw = q(*args, **kw)
            assert qout.shape == out.shape and qw.shape == w.shape
            np.testing.assert_allclose(_np(qout), _np(out), atol=0.03)
            np.testing.assert_allclose(_np(qw), _np(w), atol=0.02)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True).eval()
    ql = C.quantize_dynamic(layer, {nn.Linear, nn.MultiheadAttention})
    with rtx.no_grad():
        np.testing.assert_allclose(_np(ql(x)), _np(layer(x)), atol=0.06)
    assert C.state_dict_bytes(ql) < C.state_dict_bytes(layer) / 2.5


def test_quantize_helpers_and_qconfig_spec_by_name():
    rtx.manual_seed(9)
    m = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 2))
    only_first = C.quantize_dynamic(m, {"0": C.per_channel_dynamic_qconfig})
    assert type(only_first[0]) is C.dynamic.Linear and type(only_first[2]) is nn.Linear
    half = C.quantize_dynamic(m, {nn.Linear: C.float16_dynamic_qconfig})
    assert half[2].weight.dtype == rtx.float16
    x = rtx.randn(16, 6)

    def calibrate(model, data):
        with rtx.no_grad():
            model(data)

    wrapped = C.QuantWrapper(m)
    wrapped.qconfig = C.default_qconfig
    q = C.quantize(wrapped, calibrate, (x,))
    assert type(q.module[0]) is C.quantized.Linear and type(wrapped.module[0]) is nn.Linear
    with rtx.no_grad():
        np.testing.assert_allclose(_np(q(x)), _np(m(x)), atol=0.1)

    def train_step(model):
        opt = rtx.optim.SGD(model.parameters(), lr=0.01)
        F.mse_loss(model(x), rtx.zeros(16, 2)).backward()
        opt.step()

    wrapped.qconfig = C.default_qat_qconfig
    q2 = C.quantize_qat(wrapped, train_step, ())
    assert type(q2.module[2]) is C.quantized.Linear and not q2.training


def test_qat_conv_bn_relu_folds_batchnorm():
    m = _model(seed=10)
    fused = C.fuse_modules_qat(m.train(), [["conv1", "bn1", "relu1"], ["fc", "relu2"]])
    assert type(fused.conv1) is C.intrinsic.ConvBnReLU2d
    fused.qconfig = C.get_default_qat_qconfig("x86")
    p = C.prepare_qat(fused)
    assert type(p.conv1) is C.qat.ConvBnReLU2d and p.conv1.bn is not None
    x = rtx.randn(16, 3, 4, 4)
    # without fake quantization, in eval, the folded QAT form computes the float model exactly
    p.eval().apply(C.disable_fake_quant)
    with rtx.no_grad():
        np.testing.assert_allclose(_np(p(x)), _np(m.eval()(x)), rtol=1e-4, atol=1e-5)
    p.train().apply(C.enable_fake_quant)
    before = _np(p.conv1.bn.running_mean).copy()
    opt = rtx.optim.SGD(p.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        p(x).square().mean().backward()
        assert p.conv1.weight.grad is not None and float(p.conv1.weight.grad.abs().sum()) > 0
        opt.step()
    assert not np.allclose(_np(p.conv1.bn.running_mean), before)     # BN trains with batch statistics
    p.eval()
    with rtx.no_grad():
        fake = _np(p(x))
    q = C.convert(p)
    assert type(q.conv1) is C.quantized.ConvReLU2d
    with rtx.no_grad():
        real = _np(q(x))
    assert np.abs(real - fake).max() < 0.1 * np.abs(fake).max() + 4 * float(q.out.scale)
