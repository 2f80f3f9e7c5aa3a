#!/usr/bin/env python3
"""Training benchmarks (issue: nn and training), each written once against the PyTorch API and
run with rtx and with PyTorch's CPU build:
- the digits CNN of `rtx demo`, one epoch (1,437 samples of 1x8x8, batch 32, Adam), synthetic
  data of the digits' shape so the PyTorch side needs no scikit-learn;
- MLP 784-512-512-10, batch 128, SGD with momentum: one full train step.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/training.py \
        --torch-python /path/to/torch-venv/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402


def digits_epoch(lib):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc1 = nn.Linear(128, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    model = DigitsCNN()
    opt = lib.optim.Adam(model.parameters(), lr=6e-3)
    x = lib.rand(1437, 1, 8, 8)
    y = lib.randint(0, 10, (1437,))

    def epoch():
        for i in range(0, 1437, 32):
            opt.zero_grad()
            loss = F.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
            loss.backward()
            opt.step()
    return best_of(epoch, repeat=3, min_time=0.5)


def mlp_step(lib):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = lib.randn(128, 784), lib.randint(0, 10, (128,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return best_of(step, repeat=7)


WORKLOADS = {"digits CNN, one epoch (45 steps)": digits_epoch, "MLP 784-512-512-10 step, b128": mlp_step}

if __name__ == "__main__":
    main(WORKLOADS, __doc__)
