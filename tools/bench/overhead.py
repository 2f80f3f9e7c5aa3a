#!/usr/bin/env python3
"""Per-op overhead of the tensor core against PyTorch (issue 15: what PPO's ~8,000 small minibatch
updates pay per call): tiny ops, a Linear layer, and one PPO minibatch update of SB3's CartPole
policy (two 4-64-64 tanh MLPs, Categorical log_prob/entropy, clipped loss, backward,
clip_grad_norm_, Adam), plus its pieces. Each workload is written once against the PyTorch API.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/bench/overhead.py \\
        --torch-python /work/torch-venv/bin/python [--base-pythonpath P1:P2:...] [--rounds 5] [--ops]

--ops times small-tensor calls of the common ops (reshape, sum, indexing, std, ...) instead.

Each library runs in its own long-lived interpreter; the parent asks them in turn, workload by
workload and round by round (rtx, torch, rtx, torch, ...), so a change of load on the shared
machine lands on every side alike; the best round counts. Times are CPU time of the measuring
process (time.process_time), one BLAS thread a side. --base-pythonpath adds a third side:
rtx again with those source folders first on sys.path (e.g. an older checkout's packages/*/src
from `git archive`), for before/after figures from the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _harness import best_of_cpu  # this script's folder is first on sys.path, in its workers too

BATCH = 256  # PPO zoo CartPole: n_steps 32 x 8 envs = one minibatch of 256


def best_of(fn, repeat=5, min_time=0.1):
    """CPU seconds per call (the process's own CPU time: on a machine shared by several busy
    processes, wall time also counts the time spent waiting for a core), best of `repeat`."""
    return best_of_cpu(fn, repeat, min_time)


def add16(lib):
    a, b = lib.randn(16), lib.randn(16)
    return lambda: a + b


def chain10(lib):
    x = lib.randn(16, requires_grad=True)
    w = lib.randn(16, requires_grad=True)

    def run():
        y = x
        for _ in range(5):
            y = y * w
            y = y + 1.0
        y.sum().backward()
    return run


def linear_nograd(lib):
    lin = lib.nn.Linear(64, 64)
    x = lib.randn(8, 64)

    def run():
        with lib.no_grad():
            lin(x)
    return run


def linear_fwd_bwd(lib):
    lin = lib.nn.Linear(64, 64)
    x = lib.randn(BATCH, 64)
    return lambda: lin(x).sum().backward()


class _Policy:
    """SB3's ActorCriticPolicy for CartPole: separate pi/vf MLPs 4-64-64 (tanh), action and value heads."""

    def __init__(self, lib):
        nn = lib.nn
        lib.manual_seed(0)
        self.pi = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.vf = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.action_net, self.value_net = nn.Linear(64, 2), nn.Linear(64, 1)
        self.params = [p for m in (self.pi, self.vf, self.action_net, self.value_net) for p in m.parameters()]
        self.opt = lib.optim.Adam(self.params, lr=1e-3, eps=1e-5)
        self.obs = lib.randn(BATCH, 4)
        self.actions = lib.randint(0, 2, (BATCH,))
        self.adv, self.returns, self.old_logp = lib.randn(BATCH), lib.randn(BATCH), -lib.rand(BATCH)

    def loss(self, lib):
        dist = lib.distributions.Categorical(logits=self.action_net(self.pi(self.obs)), validate_args=False)
        values = self.value_net(self.vf(self.obs)).flatten()
        log_prob, entropy = dist.log_prob(self.actions), dist.entropy()
        adv = (self.adv - self.adv.mean()) / (self.adv.std() + 1e-8)
        ratio = lib.exp(log_prob - self.old_logp)
        policy_loss = -lib.minimum(adv * ratio, adv * lib.clamp(ratio, 0.8, 1.2)).mean()
        value_loss = lib.nn.functional.mse_loss(self.returns, values)
        return policy_loss + 0.0 * -lib.mean(entropy) + 0.5 * value_loss


def ppo_update(lib):
    pol = _Policy(lib)

    def run():
        loss = pol.loss(lib)
        pol.opt.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(pol.params, 0.5)
        pol.opt.step()
    return run


def ppo_forward(lib):
    pol = _Policy(lib)
    return lambda: pol.loss(lib)


def ppo_backward(lib):
    pol = _Policy(lib)

    def run():  # the forward is timed too (a graph is used once); ppo_forward's time tells it apart
        pol.loss(lib).backward()
    return run


def adam_step(lib):
    pol = _Policy(lib)
    for p in pol.params:
        p.grad = lib.randn(*p.shape) * 1e-3
    return pol.opt.step


def zero_grad(lib):
    pol = _Policy(lib)

    def run():
        for p in pol.params:
            p.grad = lib.zeros(p.shape) if p.grad is None else p.grad
        pol.opt.zero_grad()
    return run


def clip_grad_norm(lib):
    pol = _Policy(lib)
    for p in pol.params:
        p.grad = lib.randn(*p.shape)
    return lambda: lib.nn.utils.clip_grad_norm_(pol.params, 0.5)


def categorical(lib):
    logits = lib.randn(BATCH, 2, requires_grad=True)
    actions = lib.randint(0, 2, (BATCH,))

    def run():
        d = lib.distributions.Categorical(logits=logits, validate_args=False)
        return d.log_prob(actions), d.entropy()
    return run


def rollout_step(lib):
    """The rollout's per-step policy call on 8 observations, under no_grad: sample, log_prob, value."""
    pol = _Policy(lib)
    obs = lib.randn(8, 4)

    def run():
        with lib.no_grad():
            d = lib.distributions.Categorical(logits=pol.action_net(pol.pi(obs)), validate_args=False)
            a = d.sample()
            return a, pol.value_net(pol.vf(obs)), d.log_prob(a)
    return run


WORKLOADS = {"a + b (16 floats)": add16, "10-op chain fwd+bwd": chain10, "Linear 8x64x64 no_grad": linear_nograd,
             "Linear 256x64x64 fwd+bwd": linear_fwd_bwd, "Categorical logp+entropy 256x2": categorical,
             "rollout step (8 obs, no_grad)": rollout_step, "PPO loss forward (256)": ppo_forward,
             "PPO loss fwd+backward (256)": ppo_backward, "zero_grad (12 params)": zero_grad,
             "clip_grad_norm_ (12 params)": clip_grad_norm, "Adam step (12 params)": adam_step,
             "PPO minibatch update (256)": ppo_update}


def _small(lib):
    lib.manual_seed(0)
    return lib.randn(16, 16), lib.randn(BATCH, 2), lib.randn(BATCH)


# Small-tensor calls of the common ops, no grad needed (what argument parsing costs around the array call).
def _op(make):
    def workload(lib):
        x, p, v = _small(lib)
        return make(lib, x, p, v)
    return workload


OPS = {
    "reshape(4, 64)": lambda lib, x, p, v: lambda: x.reshape(4, 64),
    "view(-1)": lambda lib, x, p, v: lambda: x.view(-1),
    "sum()": lambda lib, x, p, v: lambda: x.sum(),
    "sum(dim=1)": lambda lib, x, p, v: lambda: x.sum(dim=1),
    "mean(1, keepdim=True)": lambda lib, x, p, v: lambda: x.mean(1, keepdim=True),
    "expand(4, 16, 16)": lambda lib, x, p, v: lambda: x.expand(4, 16, 16),
    "transpose(0, 1)": lambda lib, x, p, v: lambda: x.transpose(0, 1),
    "permute(1, 0)": lambda lib, x, p, v: lambda: x.permute(1, 0),
    "x[0]": lambda lib, x, p, v: lambda: x[0],
    "x[:, 1]": lambda lib, x, p, v: lambda: x[:, 1],
    "x[long idx]": lambda lib, x, p, v: (lambda i: lambda: x[i])(lib.tensor([1, 3, 5])),
    "cat([x, x])": lambda lib, x, p, v: lambda: lib.cat([x, x]),
    "stack([x, x])": lambda lib, x, p, v: lambda: lib.stack([x, x]),
    "std() (256)": lambda lib, x, p, v: lambda: v.std(),
    "var(dim=0)": lambda lib, x, p, v: lambda: x.var(dim=0),
    "logsumexp(-1) (256x2)": lambda lib, x, p, v: lambda: p.logsumexp(-1),
    "max(dim=1)": lambda lib, x, p, v: lambda: x.max(dim=1),
    "argmax(-1)": lambda lib, x, p, v: lambda: x.argmax(-1),
    "clamp(-1, 1)": lambda lib, x, p, v: lambda: x.clamp(-1.0, 1.0),
    "where(x > 0, x, 0.)": lambda lib, x, p, v: (lambda m: lambda: lib.where(m, x, 0.0))(x > 0),
    "x > 0": lambda lib, x, p, v: lambda: x > 0,
    "x * 2.0": lambda lib, x, p, v: lambda: x * 2.0,
    "2.0 - x": lambda lib, x, p, v: lambda: 2.0 - x,
    "x ** 2": lambda lib, x, p, v: lambda: x ** 2,
    "v.sum().item()": lambda lib, x, p, v: (lambda s: lambda: s.item())(v.sum()),
    ".to(float64)": lambda lib, x, p, v: lambda: x.to(lib.float64),
}
OP_WORKLOADS = {f"op {name}": _op(make) for name, make in OPS.items()}


def worker(lib_name):
    """Answer workload names read from stdin with a time per call on stdout."""
    lib = __import__(lib_name)
    if lib_name == "torch":
        lib.set_num_threads(1)
        import torch.distributions  # noqa: F401
    else:
        lib.set_num_threads(1)
        import rtx.distributions  # noqa: F401
        import rtx.nn.utils  # noqa: F401
        import rtx.optim  # noqa: F401
    fns = {}
    for line in sys.stdin:
        name = line.strip()
        if name not in fns:
            fns[name] = {**WORKLOADS, **OP_WORKLOADS}[name](lib)
        print(json.dumps(best_of(fns[name])), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--torch-python", default=os.environ.get("RTX_BENCH_TORCH_PYTHON"))
    p.add_argument("--base-pythonpath", help="rtx sources to time as 'base' (before/after in one run)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", action="append", help="run only these workloads")
    p.add_argument("--ops", action="store_true", help="the small-tensor op calls instead of the PPO workloads")
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    names = [n for n in (OP_WORKLOADS if args.ops else WORKLOADS) if not args.only or n in args.only]
    me = os.path.abspath(__file__)
    sides = {"rtx": subprocess.Popen([sys.executable, me, "--worker", "rtx"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)}
    if args.base_pythonpath:
        sides["rtx base"] = subprocess.Popen([sys.executable, me, "--worker", "rtx"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, text=True,
                                             env={**os.environ, "PYTHONPATH": args.base_pythonpath})
    if args.torch_python:
        sides["torch"] = subprocess.Popen([args.torch_python, me, "--worker", "torch"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ""})
    best = {n: {s: float("inf") for s in sides} for n in names}
    for _ in range(args.rounds):
        for n in names:
            for s, proc in sides.items():
                proc.stdin.write(n + "\n")
                proc.stdin.flush()
                best[n][s] = min(best[n][s], json.loads(proc.stdout.readline()))
    for proc in sides.values():
        proc.stdin.close()
        proc.wait()
    print(f"load average {os.getloadavg()[0]:.1f}; best of {args.rounds} interleaved rounds; CPU microseconds per call")
    cols = list(sides)
    head = "".join(f"{c:>10}" for c in cols)
    ratios = ("  rtx/torch" if "torch" in sides else "") + ("  rtx/base" if "rtx base" in sides else "")
    print(f"{'workload':<34}{head}{ratios}")
    for n in names:
        row = "".join(f"{best[n][c] * 1e6:10.1f}" for c in cols)
        if "torch" in sides:
            row += f"{best[n]['rtx'] / best[n]['torch']:10.2f}x"
        if "rtx base" in sides:
            row += f"{best[n]['rtx'] / best[n]['rtx base']:9.2f}x"
        print(f"{n:<34}{row}")


if __name__ == "__main__":
    main()
