#!/usr/bin/env python3
"""Autocast benchmarks (issue: rtx.amp autocast in the ops): what an op pays for consulting the
autocast state when autocast is off (F.linear on a 1x64 input, where per-call overhead shows), and
what autocast("cpu") costs or saves on a linear layer and an MLP training step. The workloads are
written once against the PyTorch API and run with lib = rtx and lib = torch.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python tools/bench/autocast.py --torch-python /work/torch-venv/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402


def _linear(lib, n, d, autocast):
    lib.manual_seed(0)
    x, w, b = lib.randn(n, d), lib.randn(d, d), lib.randn(d)
    F = lib.nn.functional
    if not autocast:
        return best_of(lambda: F.linear(x, w, b))
    with lib.autocast("cpu"):
        return best_of(lambda: F.linear(x, w, b))


def _mlp_step(lib, autocast):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.randn(64, 256), lib.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        with lib.autocast("cpu", enabled=autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return best_of(step, repeat=5)


WORKLOADS = {
    "linear 1x64, autocast off": lambda lib: _linear(lib, 1, 64, False),
    "linear 1x64, autocast(cpu)": lambda lib: _linear(lib, 1, 64, True),
    "linear 64x256, autocast off": lambda lib: _linear(lib, 64, 256, False),
    "linear 64x256, autocast(cpu)": lambda lib: _linear(lib, 64, 256, True),
    "mlp step 64x256, autocast off": lambda lib: _mlp_step(lib, False),
    "mlp step 64x256, autocast(cpu)": lambda lib: _mlp_step(lib, True),
}

if __name__ == "__main__":
    main(WORKLOADS, __doc__)
