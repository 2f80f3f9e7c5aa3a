#!/usr/bin/env python3
"""Diffusion benchmark (issue 16: rtx-diffuse): the same UNet2DModel and loops in rtx.diffuse and in
diffusers on torch CPU, side by side.

    .venv/bin/python tools/bench/diffuse.py [--repeat 5] [--rounds 3] \
        [--diffusers-python /work/venvs/diffusers/bin/python]
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/bench/diffuse.py --digits-steps 50

--conv-layers times the UNet's 3x3 convolution layers (forward, input gradient, weight gradient; CPU ms, best of 3)
on rtx-nn's channels-last column path against its other (column-matrix) path.

--digits-steps N times N steps of `rtx diffuse train --dataset digits` with its default recipe (rtx only) and says
how many steps fit in the 10-minute budget at that speed (run it on an idle machine: the figure scales with load).

Workloads: one training step of UNet2DModel (batch 32, 1x16x16, block_out_channels (32, 64),
DownBlock2D+AttnDownBlock2D, AdamW, MSE on DDPM noise) and a 50-step DDIM sampling loop (batch 8) with the
same UNet. diffusers runs in its own interpreter when --diffusers-python (or $RTX_BENCH_DIFFUSERS_PYTHON)
names one with diffusers installed (python3 -m venv /work/venvs/diffusers; pip install torch==2.13.0
diffusers==0.42.1); the ratio columns are rtx / diffusers (below 1: rtx is faster), for wall time and for
process CPU time
(which the shared machine's load moves less). Best of --repeat; with --rounds R the two sides take turns R times
(best of all), so that a load change between the two runs does not decide the ratio. Run both sides with one thread
(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1): on the 2-core machine shared by several jobs, multi-threaded
torch loses most to the contention (load ~12 once gave 0.43x/0.19x in rtx's favour that one thread a side
does not reproduce).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

RUNNER = r'''
import json, sys, time
lib, repeat = sys.argv[1], int(sys.argv[2])
if lib == "diffusers":
    import torch as T
    from diffusers import UNet2DModel, DDIMScheduler, DDPMScheduler
    T.manual_seed(0)
else:
    import rtx as T
    from rtx.diffuse import UNet2DModel, DDIMScheduler, DDPMScheduler
    T.manual_seed(0)
unet = UNet2DModel(sample_size=16, in_channels=1, out_channels=1, block_out_channels=(32, 64), layers_per_block=1,
                   down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                   norm_num_groups=8)
opt = T.optim.AdamW(unet.parameters(), lr=1e-4)
noise_sched = DDPMScheduler()
x0 = T.randn(32, 1, 16, 16)

def train_step():
    noise = T.randn(x0.shape)
    t = T.randint(0, 1000, (32,))
    loss = ((unet(noise_sched.add_noise(x0, noise, t), t).sample - noise) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()

def ddim_loop():
    s = DDIMScheduler()
    s.set_timesteps(50)
    x = T.randn(8, 1, 16, 16)
    with T.no_grad():
        for t in s.timesteps:
            x = s.step(unet(x, t).sample, t, x).prev_sample

def best(fn, n):
    """(min wall seconds, min process CPU seconds) over n runs after a warm-up: on the shared machine
    the CPU time moves less with the load than the wall time."""
    fn()
    walls, cpus = [], []
    for _ in range(n):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)

print(json.dumps({"train step (b32, 16x16)": best(train_step, repeat),
                  "DDIM 50 steps (b8, 16x16)": best(ddim_loop, max(1, repeat // 2))}))
'''


def run(python, lib, repeat):
    out = subprocess.run([python, "-c", RUNNER, lib, str(repeat)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ""})
    if out.returncode != 0:
        print(f"{lib} run failed:", out.stderr[-2000:])
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _best(a, b):
    """Per workload, the smaller wall and the smaller CPU time of two runs' results (None: no run)."""
    if a is None or b is None:
        return a or b
    return {k: [min(x, y) for x, y in zip(a[k], b[k])] for k in a}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1,
                   help="alternate rtx and diffusers runs this many times; best of all")
    p.add_argument("--diffusers-python", default=os.environ.get("RTX_BENCH_DIFFUSERS_PYTHON"))
    p.add_argument("--digits-steps", type=int, default=0)
    p.add_argument("--conv-layers", action="store_true")
    a = p.parse_args()
    if a.conv_layers:
        return conv_layers()
    if a.digits_steps:
        return digits_step_time(a.digits_steps)
    ours = theirs = None
    for _ in range(a.rounds):   # the two sides take turns, so that a change of load hits both
        ours = _best(ours, run(sys.executable, "rtx", a.repeat))
        if a.diffusers_python:
            theirs = _best(theirs, run(a.diffusers_python, "diffusers", a.repeat))
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"wall and process CPU time, best of --repeat x --rounds {a.rounds}; load average {load}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"{'workload':<28} {'rtx':>10} {'diffusers':>10} {'ratio':>7}   "
          f"{'rtx cpu':>10} {'diff. cpu':>10} {'ratio':>7}")
    for name, (t, c) in (ours or {}).items():
        d, dc = (theirs or {}).get(name, (None, None))
        if d:
            print(f"{name:<28} {t * 1e3:8.1f}ms {d * 1e3:8.1f}ms {t / d:6.2f}x   "
                  f"{c * 1e3:8.1f}ms {dc * 1e3:8.1f}ms {c / dc:6.2f}x")
        else:
            print(f"{name:<28} {t * 1e3:8.1f}ms {'-':>10} {'-':>7}   {c * 1e3:8.1f}ms")


def conv_layers():
    """Per-layer CPU ms of the UNet's 3x3 convolutions (batch 32) with rtx-nn's column-matrix path and with
    the channels-last columns that replaced it for >= 16 channels."""
    import time

    import numpy as np

    from rtx.nn._functional import conv as C

    def cpu_ms(fn, n=5):
        fn()
        best = 1e9
        for _ in range(3):
            start = time.process_time()
            for _ in range(n):
                fn()
            best = min(best, (time.process_time() - start) / n)
        return best * 1e3

    rng = np.random.default_rng(0)
    default = C._CL_MIN_CHANNELS
    geom = C._Geom((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"CPU ms, best of 3; load average {load}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"{'3x3 layer (batch 32)':<24} {'forward':>16} {'input grad':>16} {'weight grad':>16}")
    for cin, size, cout in ((32, 16, 32), (64, 8, 64), (96, 16, 32), (64, 16, 64), (128, 8, 64)):
        x = rng.standard_normal((32, cin, size, size)).astype(np.float32)
        w = rng.standard_normal((cout, cin, 3, 3)).astype(np.float32)
        dy = rng.standard_normal((32, cout, size, size)).astype(np.float32)
        cells = []
        for fn in (lambda x=x, w=w: C._conv_fwd(x, w, None, geom),
                   lambda dy=dy, w=w, size=size: C._convT_fwd(dy, w, geom, (size, size)),
                   lambda x=x, dy=dy: C._convW_fwd(x, dy, geom, (3, 3))):
            times = []
            for minimum in (10 ** 9, default):   # the column-matrix path, then the channels-last one
                C._CL_MIN_CHANNELS = minimum
                times.append(cpu_ms(fn))
            cells.append(f"{times[0]:6.2f} -> {times[1]:5.2f}")
        print(f"{cin}->{cout} at {size}x{size}".ljust(24) + " ".join(f"{c:>16}" for c in cells))
    C._CL_MIN_CHANNELS = default


def digits_step_time(n):
    import tempfile

    from rtx.diffuse.train import train
    with tempfile.TemporaryDirectory() as d:
        r = train(out=d, max_steps=n, checkpoint_every=0, progress=False, log=lambda *_: None)
    per = r.seconds / r.steps
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"rtx diffuse train (digits default recipe, {r.parameters:,} parameters): {r.steps} steps in "
          f"{r.seconds:.1f} s = {per * 1e3:.0f} ms/step -> {int(600 / per)} steps in 10 minutes "
          f"(load average {load}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})")


if __name__ == "__main__":
    main()
