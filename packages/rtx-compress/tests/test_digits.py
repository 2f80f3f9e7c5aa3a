"""The issue's goal on the digits CNN: int8 (dynamic and static) within 1 accuracy point of
fp32, with int8 weights 4x smaller; pruning and QAT keep it working."""
import numpy as np
import pytest

import rtx
import rtx.compress as C
import rtx.nn as nn
from rtx.demo.model import DigitsCNN
from rtx.demo.train import digits_tensors, evaluate, train


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    path = tmp_path_factory.mktemp("digits") / "cnn.safetensors"
    result = train(epochs=4, out=str(path), progress=False, log=lambda *_: None)
    model = DigitsCNN()
    model.load_state_dict(rtx.load(path))
    return model.eval(), result.accuracy, digits_tensors(0)


def _weight_bytes(model):
    return sum(t.numel() * t.element_size() for k, t in model.state_dict().items() if k.endswith("weight"))


def test_int8_dynamic_within_one_point(trained):
    model, acc, (_, _, x_test, y_test) = trained
    assert acc > 0.9
    q = C.quantize_dynamic(model, {nn.Linear}, dtype=rtx.qint8)
    q_acc, _ = evaluate(q, x_test, y_test, "cpu")
    assert q_acc >= acc - 0.01


def test_int8_static_within_one_point_and_4x_smaller(trained, tmp_path):
    model, acc, (x_train, _, x_test, y_test) = trained
    wrapped = C.QuantWrapper(model)
    wrapped.qconfig = C.get_default_qconfig("x86")
    prepared = C.prepare(wrapped)
    with rtx.no_grad():
        prepared(x_train[:256])                  # calibration
    q = C.convert(prepared)
    assert type(q.module.conv1) is C.quantized.Conv2d and type(q.module.fc2) is C.quantized.Linear
    q_acc, _ = evaluate(q, x_test, y_test, "cpu")
    assert q_acc >= acc - 0.01
    assert _weight_bytes(model) == 4 * _weight_bytes(q)
    assert C.state_dict_bytes(q) < C.state_dict_bytes(model) / 3.5   # scales, zero points, fp32 biases on top
    path = tmp_path / "int8.safetensors"
    rtx.save(q.state_dict(), path)
    fp32_path = tmp_path / "fp32.safetensors"
    rtx.save(model.state_dict(), fp32_path)
    # the file also holds a JSON header naming 34 tensors (8 in fp32), a few kB at this size
    assert path.stat().st_size < fp32_path.stat().st_size / 2
    again = C.convert(prepared)
    again.load_state_dict(rtx.load(path))
    with rtx.no_grad():
        np.testing.assert_array_equal(again(x_test[:64]).numpy(), q(x_test[:64]).numpy())


def test_pruned_half_keeps_most_accuracy(trained):
    import copy
    model, acc, (_, _, x_test, y_test) = trained
    pruned = copy.deepcopy(model)
    params = [(m, "weight") for m in (pruned.conv1, pruned.conv2, pruned.fc1, pruned.fc2)]
    C.prune.global_unstructured(params, C.prune.L1Unstructured, amount=0.5)
    for m, name in params:
        C.prune.remove(m, name)
    zeros = sum(int((m.weight == 0).sum()) for m, _ in params)
    assert zeros == round(0.5 * sum(m.weight.numel() for m, _ in params))
    p_acc, _ = evaluate(pruned, x_test, y_test, "cpu")
    assert p_acc >= acc - 0.05
