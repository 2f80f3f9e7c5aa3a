"""Tracing is thread-local: a trace in one thread while another thread trains a different model
in a loop gives the same graph as alone, and the training gives bit-identical parameters."""
import sys
import threading

import numpy as np
import pytest

import rtx
import rtx.graph as G
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import run_while_working


class Block(nn.Module):
    """In-place ReLU and `out += y`: the tracer follows in-place ops through the hook."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = F.relu(self.bn(self.conv1(x)), inplace=True)
        out = self.conv2(y)
        out += y
        out = F.max_pool2d(out.relu_(), 2)
        return F.softmax(self.fc(out.view(out.size(0), -1)), -1)


def _trainer():
    rtx.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))
    x = rtx.randn(32, 6)
    y = (x[:, :2] * 2 + 1).detach()
    return model, x, y


def train(steps, progress=None):
    """Plain SGD with in-place updates and operators on the fast paths; returns the parameters."""
    model, x, y = _trainer()
    for _ in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with rtx.no_grad():
            for p in model.parameters():
                p -= 0.05 * p.grad
        if progress is not None:
            progress.append(1)
    return [p.detach().numpy().copy() for p in model.parameters()], float(loss)


def run_while_training(fn, steps=150, min_runs=3):
    """fn()'s results while another thread trains, the trainer's result, and how many runs overlapped it."""
    return run_while_working(fn, lambda progress: train(steps, progress), min_runs)


@pytest.fixture(scope="module")
def alone():
    return train(150)


def test_trace_while_another_thread_trains(alone):
    rtx.manual_seed(0)
    model = Block().eval()
    x = rtx.randn(2, 3, 8, 8)
    ref = G.trace(model, x)
    graphs, trained, overlapped = run_while_training(lambda: G.trace(model, x))
    assert overlapped >= 1  # at least one trace ran while the trainer stepped
    names = {n for n, _ in model.named_parameters()} | {n for n, _ in model.named_buffers()}
    for g in graphs:
        assert repr(g) == repr(ref)          # same nodes, names, shapes, attributes
        assert g.op_counts() == ref.op_counts()
        assert all(c.name in names or c.name.startswith("_const") for c in g.consts)
        assert "tanh" not in g.op_counts()   # none of the trainer's ops
        for b in (2, 5):
            xb = rtx.randn(b, 3, 8, 8)
            with rtx.no_grad():
                np.testing.assert_array_equal(g(xb).numpy(), model(xb).numpy())
    for p, q in zip(trained[0], alone[0]):
        np.testing.assert_array_equal(p, q)
    assert trained[1] == alone[1]


def test_module_routing_is_for_the_tracing_thread_only(alone):
    """A leaf module's calls go to the recorder in the tracing thread; the same module called
    from another thread meanwhile runs as usual."""
    lstm = nn.LSTM(4, 5, batch_first=True)
    x = rtx.randn(2, 3, 4)
    with rtx.no_grad():
        want = lstm(x)[0].numpy()
    got, stop = [], threading.Event()

    def other():
        while not stop.is_set():
            with rtx.no_grad():
                got.append(lstm(x)[0].numpy())

    t = threading.Thread(target=other)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        t.start()
        for _ in range(3):
            g = G.trace(lstm, x, leaf_modules=nn.LSTM)
            assert [n.op for n in g.nodes] == ["LSTM"]
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert got and all(np.array_equal(a, want) for a in got)
