#!/usr/bin/env python3
"""RL benchmark (issue 15: rtx-rl): wall-clock of the same algorithm, hyper-parameters (RL Baselines3
Zoo's, rtx.rl.zoo) and timesteps in rtx.rl and in Stable-Baselines3 on torch CPU, side by side.

    .venv/bin/python tools/bench/rl.py [--cases ppo,dqn,sac] [--threads 1] [--fraction 1.0] [--repeat 1] \\
        [--sb3-python /work/venvs/sb3/bin/python] [--base-pythonpath OLD/packages/a/src:OLD/packages/b/src:...]

Cases: PPO CartPole-v1 100k steps, DQN CartPole-v1 100k, SAC Pendulum-v1 20k. Both sides run with
one BLAS/intra-op thread (small networks: waking threads costs more than it saves) and seed 0.
SB3 runs in its own interpreter when --sb3-python (or $RTX_BENCH_SB3_PYTHON) names one with
stable-baselines3 installed (python3 -m venv /work/venvs/sb3; pip install torch==2.13.0
stable-baselines3==2.9.*); the ratio columns are rtx / SB3 (below 1: rtx is faster), for wall-clock
time and, next to it, for each process's own CPU time (on a shared machine the fairer of the two:
wall time also counts the time a process waits for a core).
--fraction runs that share of each budget on both sides (a quicker estimate of the same ratio on a
busy machine; the learning itself is not judged here: `rtx rl train` is).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CASES = {"ppo": ("CartPole-v1", 100_000), "dqn": ("CartPole-v1", 100_000), "sac": ("Pendulum-v1", 20_000)}

# Run by both sides: `lib` is rtx.rl or stable_baselines3; hyper-parameters are the zoo's.
RUNNER = r'''
import json, sys, time
import numpy as np
lib, algo, env_id, steps, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if lib == "sb3":
    import torch
    torch.set_num_threads(threads)
    import stable_baselines3 as L
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.utils import get_linear_fn
    lin = lambda v: get_linear_fn(v, 0.0, 1.0)
else:
    import rtx
    rtx.set_num_threads(threads)
    import rtx.rl as L
    from rtx.rl import make_vec_env
    from rtx.rl.common.utils import linear_schedule as lin
ZOO = {
    "ppo": dict(n_envs=8, kw=dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
                                  learning_rate=lin(1e-3), clip_range=lin(0.2))),
    "dqn": dict(n_envs=1, kw=dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000,
                                  gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
                                  exploration_fraction=0.16, exploration_final_eps=0.04,
                                  policy_kwargs=dict(net_arch=[256, 256]))),
    "sac": dict(n_envs=1, kw=dict(learning_rate=1e-3)),
}[algo]
cls = {"ppo": L.PPO, "dqn": L.DQN, "sac": L.SAC}[algo]
model = cls("MlpPolicy", make_vec_env(env_id, n_envs=ZOO["n_envs"], seed=0), seed=0, device="cpu", **ZOO["kw"])
t, c = time.perf_counter(), time.process_time()
model.learn(steps)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}))
'''


def run(python, lib, algo, env_id, steps, threads, pythonpath=None):
    """(wall seconds, CPU seconds) of one learn() call."""
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run([python, "-c", RUNNER, lib, algo, env_id, str(steps), str(threads)],
                         capture_output=True, text=True, check=True, env=env)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["seconds"], r["cpu"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="ppo,dqn,sac")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sb3-python", default=os.environ.get("RTX_BENCH_SB3_PYTHON"))
    p.add_argument("--fraction", type=float, default=1.0, help="share of each case's timesteps to run")
    p.add_argument("--repeat", type=int, default=1,
                   help="rtx and SB3 runs per case, alternated (rtx, SB3, rtx, SB3, ...); medians are reported")
    p.add_argument("--base-pythonpath",
                   help="also time rtx with these source folders first on sys.path (e.g. an older checkout's "
                        "packages/*/src from `git archive`), alternated with the others: before/after in one run")
    args = p.parse_args(argv)
    if not 0 < args.fraction <= 1:
        raise SystemExit(f"--fraction must be in (0, 1], got {args.fraction}")
    if args.repeat < 1:
        raise SystemExit(f"--repeat must be >= 1, got {args.repeat}")
    # The load average is printed with the figures: on a shared machine it decides how noisy they are.
    print(f"load average {os.getloadavg()[0]:.1f} at start; {args.repeat} run(s) per side, medians")
    print(f"{'case':<28} {'rtx s':>8} {'SB3 s':>8} {'rtx/SB3':>8} {'rtx cpu':>8} {'SB3 cpu':>8} {'cpu ratio':>9}")
    for algo in args.cases.split(","):
        env_id, budget = CASES[algo]
        steps = int(budget * args.fraction)
        rtx_runs, sb3_runs, base_runs = [], [], []
        for _ in range(args.repeat):  # alternated, so a change of load hits both sides alike
            rtx_runs.append(run(sys.executable, "rtx", algo, env_id, steps, args.threads))
            if args.sb3_python:
                sb3_runs.append(run(args.sb3_python, "sb3", algo, env_id, steps, args.threads))
            if args.base_pythonpath:
                base_runs.append(run(sys.executable, "rtx", algo, env_id, steps, args.threads, args.base_pythonpath))
        # Wall clock is what the issue asks about; CPU time (the process's own) is printed next to
        # it because on a shared machine wall time also counts the waits for a core.
        cols = []
        for k in (0, 1):
            rtx_s = statistics.median(r[k] for r in rtx_runs)
            sb3_s = statistics.median(r[k] for r in sb3_runs) if sb3_runs else None
            cols.append(f"{rtx_s:8.1f} " + (f"{sb3_s:8.1f} {rtx_s / sb3_s:8.2f}" if sb3_s else f"{'-':>8} {'-':>8}"))
        case = f"{algo.upper()} {env_id} {steps / 1000:g}k"
        runs = ""
        if args.repeat > 1:  # every run, so the spread is visible next to the medians
            runs = "   wall runs: rtx " + "/".join(f"{t:.1f}" for t, _ in rtx_runs)
            runs += (", SB3 " + "/".join(f"{t:.1f}" for t, _ in sb3_runs)) if sb3_runs else ""
        if base_runs:
            base_wall, base_cpu = (statistics.median(r[k] for r in base_runs) for k in (0, 1))
            runs += (f"   rtx base: {base_wall:.1f} s, cpu {base_cpu:.1f} s (runs " +
                     "/".join(f"{t:.1f}" for t, _ in base_runs) + ")")
        print(f"{case:<28} {cols[0]} {cols[1]} {runs}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
