#!/usr/bin/env python3
"""Optimizer benchmarks (issue: rtx-optim): one full training step of an MLP 784-512-512-10 at
batch 128 (forward, cross-entropy, backward, SGD momentum step), and the optimizer steps alone on
the same parameters. The workloads are written once against the PyTorch API and run with
lib = rtx and lib = torch.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/optim.py \
        --torch-python /work/torch-venv/bin/python

--profile prints cProfile's top costs of the rtx training step instead.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402

BATCH, SIZES = 128, (784, 512, 512, 10)


def _loss_kind():
    # Use F.cross_entropy only when rtx has it, so both libraries run the same loss code;
    # decided in the rtx process and passed to the torch run through the environment.
    kind = os.environ.get("RTX_BENCH_OPTIM_LOSS")
    if kind is None:
        try:
            import rtx.nn.functional as F
            kind = "fused" if hasattr(F, "cross_entropy") else "manual"
        except ImportError:
            kind = "manual"
        os.environ["RTX_BENCH_OPTIM_LOSS"] = kind
    return kind


def _mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _train_step(lib):
    F = lib.nn.functional
    model = _mlp(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(BATCH, SIZES[0])
    y = lib.randint(0, SIZES[-1], (BATCH,))
    manual = _loss_kind() == "manual"

    def step():
        opt.zero_grad()
        out = model(x)
        if manual:
            loss = -F.log_softmax(out, 1).gather(1, y[:, None]).mean()
        else:
            loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
    return step


def mlp_train_step(lib):
    return best_of(_train_step(lib), repeat=7)


def _opt_only(lib, name, **kw):
    model = _mlp(lib)
    params = list(model.parameters())
    for p in params:
        p.grad = lib.randn(*p.shape) * 1e-3
    opt = getattr(lib.optim, name)(params, **kw)
    opt.step()
    return best_of(opt.step, repeat=7)


def sgd_momentum_step(lib):
    return _opt_only(lib, "SGD", lr=0.01, momentum=0.9)


def adam_step(lib):
    return _opt_only(lib, "Adam", lr=1e-3)


def adamw_amsgrad_step(lib):
    return _opt_only(lib, "AdamW", lr=1e-3, amsgrad=True)


def rmsprop_centered_step(lib):
    return _opt_only(lib, "RMSprop", lr=1e-3, centered=True, momentum=0.9)


WORKLOADS = {"MLP train step (SGD momentum)": mlp_train_step, "SGD momentum step (670k params)": sgd_momentum_step,
             "Adam step (670k params)": adam_step, "AdamW amsgrad step": adamw_amsgrad_step,
             "RMSprop centered+momentum step": rmsprop_centered_step}


def profile():
    import cProfile
    import pstats

    import rtx
    import rtx.nn  # noqa: F401
    import rtx.optim  # noqa: F401
    step = _train_step(rtx)
    for _ in range(5):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        step()
    prof.disable()
    stats = pstats.Stats(prof).strip_dirs().sort_stats("tottime")
    print(f"loss: {_loss_kind()}; 200 steps, top costs by own time:")
    stats.print_stats(25)


if __name__ == "__main__":
    if "--profile" in sys.argv:
        profile()
    else:
        _loss_kind()
        main(WORKLOADS, __doc__)
