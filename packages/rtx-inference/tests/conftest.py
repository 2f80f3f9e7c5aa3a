import numpy as np
import pytest

import rtx
import rtx.nn as nn


class BNNet(nn.Module):
    """Conv + eval BatchNorm + ReLU, strided/padded max pool, 1x1 and grouped convs, adaptive pool,
    a residual add, GELU MLP head with softmax: exercises the folding of BN into the conv."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.c3 = nn.Conv2d(8, 8, 1)
        self.head = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 5))

    def forward(self, x):
        y = self.pool(nn.functional.relu(self.bn(self.c1(x))))
        y = y + self.c3(nn.functional.silu(self.c2(y)))
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return nn.functional.softmax(self.head(y), dim=-1)


def make_bnnet():
    rtx.manual_seed(0)
    m = BNNet()
    with rtx.no_grad():   # non-trivial running statistics
        m.bn.running_mean.copy_(rtx.randn(8) * 0.1)
        m.bn.running_var.copy_(rtx.rand(8) + 0.5)
        m.bn.weight.copy_(rtx.rand(8) + 0.5)
        m.bn.bias.copy_(rtx.randn(8) * 0.1)
    return m.eval()


def make_mlp():
    rtx.manual_seed(1)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10)).eval()


def make_cnn():
    from rtx.demo.model import DigitsCNN
    rtx.manual_seed(2)
    return DigitsCNN().eval()


def eager(model, x):
    with rtx.no_grad():
        return model(rtx.from_numpy(x)).numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


class Zoo:
    """The test models and the eager reference, handed to tests as the `zoo` fixture (tests are
    imported with --import-mode=importlib, so they cannot import this module)."""
    make_bnnet = staticmethod(make_bnnet)
    make_mlp = staticmethod(make_mlp)
    make_cnn = staticmethod(make_cnn)
    eager = staticmethod(eager)
    shapes = {"cnn": (1, 8, 8), "mlp": (64,), "bnnet": (3, 12, 12)}

    def make(self, name):
        return {"cnn": make_cnn, "mlp": make_mlp, "bnnet": make_bnnet}[name]()


@pytest.fixture
def zoo():
    return Zoo()
