"""rtx.onnx.export and InferenceSession construction trace the model on a thread-local hook:
run while another thread trains a different model, they give the same ONNX model and the same
plan as alone, and the training gives bit-identical parameters."""

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.onnx
from rtx.inference import InferenceSession
from rtx.testing import run_while_working


def _model():
    rtx.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10), nn.Softmax(-1)).eval()


def train(steps, progress):
    rtx.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))
    x = rtx.randn(32, 6)
    y = (x[:, :2] * 2 + 1).detach()
    for _ in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with rtx.no_grad():
            for p in model.parameters():
                p -= 0.05 * p.grad
        progress.append(1)
    return [p.detach().numpy().copy() for p in model.parameters()], float(loss)


def run_while_training(fn, steps=150, min_runs=2):
    return run_while_working(fn, lambda progress: train(steps, progress), min_runs)


@pytest.fixture(scope="module")
def alone():
    return train(150, [])


def _check_training(trained, alone):
    for p, q in zip(trained[0], alone[0]):
        np.testing.assert_array_equal(p, q)
    assert trained[1] == alone[1]


def test_onnx_export_while_another_thread_trains(alone):
    model, x = _model(), rtx.randn(2, 1, 8, 8)
    ref = rtx.onnx.export(model, x, None, dynamic_axes={"input": {0: "batch"}}).SerializeToString()
    protos, trained, overlapped = run_while_training(
        lambda: rtx.onnx.export(model, x, None, dynamic_axes={"input": {0: "batch"}}).SerializeToString())
    assert overlapped >= 1
    assert all(p == ref for p in protos)   # byte-identical models: nothing of the trainer's in them
    _check_training(trained, alone)


def test_inference_session_while_another_thread_trains(alone):
    model, x = _model(), rtx.randn(2, 1, 8, 8)
    ref = InferenceSession(model, x)
    sessions, trained, overlapped = run_while_training(lambda: InferenceSession(model, x))
    assert overlapped >= 1
    feed = np.random.default_rng(0).standard_normal((5, 1, 8, 8)).astype(np.float32)
    (want,) = ref.run(None, {ref.get_inputs()[0].name: feed})
    for s in sessions:
        assert s.op_counts() == ref.op_counts()
        (got,) = s.run(None, {s.get_inputs()[0].name: feed})
        np.testing.assert_array_equal(got, want)
    _check_training(trained, alone)
