"""Mistakes get clear errors: un-calibrated convert, wrong qconfigs, wrong module types and
arguments, bad quantization parameters, non-finite data."""
import numpy as np
import pytest

import rtx
import rtx.compress as C
import rtx.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = C.QuantStub(), C.DeQuantStub()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
        self.head = nn.Linear(6, 3)
        self.unused = nn.Linear(3, 3)            # never called in forward

    def forward(self, x):
        return self.dequant(self.head(self.body(self.quant(x))))


def _prepared(qconfig):
    m = Net().eval()
    m.qconfig = qconfig
    return C.prepare(m)


def test_convert_refuses_observers_that_saw_no_data():
    p = _prepared(C.default_qconfig)
    with pytest.raises(ValueError, match=r"observers of quant \(QuantStub: activation_post_process\) saw no data"):
        C.convert(p)
    with rtx.no_grad():
        p(rtx.randn(8, 4))
    # calibration never reaches `unused`: converting it would quantize with made-up qparams
    with pytest.raises(ValueError, match=r"observers of unused \(Linear: activation_post_process, input_observer\)"):
        C.convert(p)
    p.unused.qconfig = None
    q = C.convert(p)
    assert type(q.head) is C.quantized.Linear and type(q.unused) is nn.Linear


def test_convert_refuses_a_qat_model_that_never_ran():
    m = nn.Sequential(C.QuantStub(), nn.Linear(4, 2), C.DeQuantStub()).train()
    m.qconfig = C.get_default_qat_qconfig("x86")
    p = C.prepare_qat(m).eval()
    with pytest.raises(ValueError, match="saw no data.*QAT: train it"):
        C.convert(p)
    p(rtx.randn(8, 4))                                # one forward: every fake quantizer has seen data
    assert type(C.convert(p)[1]) is C.quantized.Linear


def test_static_prepare_rejects_dynamic_and_float16_qconfigs():
    for qconfig, dtype in ((C.default_dynamic_qconfig, "quint8"), (C.float16_dynamic_qconfig, "float16")):
        with pytest.raises(ValueError, match=rf"PlaceholderObserver \(dtype rtx\.{dtype}\).*quantize_dynamic"):
            _prepared(qconfig)


def test_wrong_observer_dtypes_at_convert():
    def calibrated(qconfig):
        p = _prepared(qconfig)
        with rtx.no_grad():
            p(rtx.randn(8, 4))
        p.unused.qconfig = None
        return p

    with pytest.raises(ValueError, match="quint8 activations.*rtx.qint8"):
        C.convert(calibrated(C.QConfig(C.MinMaxObserver.with_args(dtype=rtx.qint8), C.default_weight_observer)))
    with pytest.raises(ValueError, match="qint8 weights.*rtx.quint8"):
        C.convert(calibrated(C.QConfig(C.MinMaxObserver, C.MinMaxObserver)))


def test_qconfig_arguments():
    with pytest.raises(TypeError, match="activation must be an observer class or factory"):
        C.QConfig(activation="minmax", weight=C.default_weight_observer)
    with pytest.raises(TypeError, match="weight must be"):
        C.QConfig(activation=C.MinMaxObserver, weight=None)
    with pytest.raises(TypeError, match="must be a QConfig"):
        _prepared("x86")
    with pytest.raises(TypeError, match="unexpected keyword argument 'reduce_rang'"):
        C.MovingAverageMinMaxObserver(reduce_rang=True)        # a typo is not silently dropped
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        C.MovingAveragePerChannelMinMaxObserver(chaxis=1)


def test_unsupported_custom_configs_are_errors_not_ignored():
    m = Net().eval()
    m.qconfig = C.default_qconfig
    with pytest.raises(NotImplementedError, match="prepare_custom_config_dict"):
        C.prepare(m, prepare_custom_config_dict={"float_to_observed_custom_module_class": {}})
    with pytest.raises(NotImplementedError, match="convert_custom_config_dict"):
        C.convert(m, convert_custom_config_dict={"x": 1})
    with pytest.raises(NotImplementedError, match="fuse_custom_config_dict"):
        C.fuse_modules(m, [["body.0", "body.1"]], fuse_custom_config_dict={"x": 1})


def test_quantize_dynamic_spec():
    m = Net()
    by_name = C.quantize_dynamic(m, {"body"})              # a name covers its submodules, as PyTorch
    assert type(by_name.body[0]) is C.dynamic.Linear and type(by_name.head) is nn.Linear
    mixed = C.quantize_dynamic(m, {nn.Linear: C.per_channel_dynamic_qconfig, "head": None})   # None excludes
    assert type(mixed.body[0]) is C.dynamic.Linear and type(mixed.head) is nn.Linear
    assert C.quantize_dynamic(m, {nn.Linear}, dtype=rtx.qint8).head.weight.dtype == rtx.int8
    with pytest.raises(ValueError, match="no submodule named 'bodi'"):
        C.quantize_dynamic(m, {"bodi"})
    with pytest.raises(ValueError, match="no dynamic quantized version of Conv2d"):
        C.quantize_dynamic(m, {nn.Conv2d})
    with pytest.raises(TypeError, match="qconfig for Linear must be a QConfig.*got str"):
        C.quantize_dynamic(m, {nn.Linear: "int8"})
    with pytest.raises(TypeError, match="qconfig_spec must be a set"):
        C.quantize_dynamic(m, nn.Linear)
    with pytest.raises(ValueError, match="dtype must be rtx.qint8, rtx.float16 or rtx.bfloat16, got rtx.quint8"):
        C.quantize_dynamic(m, {nn.Linear}, dtype=rtx.quint8)
    with pytest.raises(TypeError, match="expects an rtx nn.Module, got str"):
        C.quantize_dynamic("model")


def test_quantize_functions_check_their_parameters():
    x = rtx.randn(5, 4)
    for scale in (0.0, -0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="scale must be positive and finite"):
            C.quantize_per_tensor(x, scale, 0, rtx.quint8)
    with pytest.raises(ValueError, match=r"zero_point must lie in \[0, 255\], got 300"):
        C.quantize_per_tensor(x, 0.1, 300, rtx.quint8)
    with pytest.raises(ValueError, match=r"zero_point must lie in \[-128, 127\], got 128"):
        C.quantize_per_tensor(x, 0.1, 128, rtx.qint8)
    with pytest.raises(TypeError, match="floating point input, got int64"):
        C.quantize_per_tensor(rtx.ones(3, dtype=rtx.int64), 0.1, 0, rtx.qint8)
    with pytest.raises(ValueError, match="scale must be positive"):
        C.quantize_per_channel(x, rtx.tensor([0.1, 0.0, 0.1, 0.1, 0.1]), rtx.zeros(5, dtype=rtx.int64), 0, rtx.qint8)
    with pytest.raises(ValueError, match="zero_points must lie in"):
        C.quantize_per_channel(x, rtx.ones(5), rtx.full((5,), -1, dtype=rtx.int64), 0, rtx.quint8)
    q = rtx.ones(5, 4, dtype=rtx.int8)
    with pytest.raises(ValueError, match="4 scales need the axis"):
        C.dequantize(q, rtx.ones(4), rtx.zeros(4, dtype=rtx.int64))
    with pytest.raises(ValueError, match=r"expected 5 scales \(q.size\(0\)\), got 4"):
        C.dequantize(q, rtx.ones(4), rtx.zeros(4, dtype=rtx.int64), axis=0)
    np.testing.assert_array_equal(C.dequantize(q, rtx.full((4,), 2.0), rtx.zeros(4, dtype=rtx.int64), axis=1).numpy(),
                                  np.full((5, 4), 2.0, np.float32))
    with pytest.raises(ValueError, match="scale must be positive"):
        C.fake_quantize_per_tensor_affine(x, 0.0, 0, 0, 255)
    with pytest.raises(ValueError, match=r"zero_point must lie in \[0, 127\]"):
        C.fake_quantize_per_tensor_affine(x, 0.1, 200, 0, 127)
    with pytest.raises(ValueError, match="scale must be positive"):
        C.fake_quantize_per_channel_affine(x, rtx.zeros(4), rtx.zeros(4, dtype=rtx.int64), 1, -128, 127)


def test_observers_refuse_non_finite_data_and_warn_when_empty():
    for obs in (C.MinMaxObserver(), C.HistogramObserver(), C.PerChannelMinMaxObserver()):
        with pytest.raises(ValueError, match="observed non-finite values"):
            obs(rtx.tensor([[1.0, float("nan")], [0.0, 1.0]]))
        assert not obs.has_observed()
        with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
            scale, zp = obs.calculate_qparams()
        assert float(scale[0]) == 1.0 and int(zp[0]) == 0      # PyTorch's default values
        obs(rtx.tensor([[1.0, -2.0], [0.0, 1.0]]))
        assert obs.has_observed()


def test_fuse_modules_arguments():
    m = Net().eval()
    with pytest.raises(TypeError, match="list of submodule names"):
        C.fuse_modules(m, "body")
    with pytest.raises(TypeError, match="expects an rtx nn.Module"):
        C.fuse_modules(object(), [["a", "b"]])
    fused = C.fuse_modules(m, ["body.0", "body.1"])
    assert type(fused.body[0]) is C.intrinsic.LinearReLU and type(fused.body[1]) is nn.Identity


def test_quantized_modules_take_quint8_activations_only():
    with pytest.raises(ValueError, match="quint8 .* only, got dtype=rtx.qint8"):
        C.quantized.Linear(4, 2, dtype=rtx.qint8)
    with pytest.raises(ValueError, match="quint8"):
        C.quantized.Quantize(0.1, 0, dtype=rtx.qint8)
    with pytest.raises(ValueError, match="quint8"):
        C.quantized.Conv2d(3, 4, 3, dtype=rtx.qint32)
