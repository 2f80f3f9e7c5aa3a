"""Draw one learning-curve PNG from one or more `rtx rl train` run folders (one line per seed).

    python packages/rtx-rl/docs/plot_curves.py --out packages/rtx-rl/docs/ppo_cartpole.png \
        --goal 475 --title "PPO on CartPole-v1 (zoo hyper-parameters)" RUN_DIR [RUN_DIR ...]

Each run folder holds evaluations.npz (EvalCallback) and run.json (seed); the dashed line is the issue's bar."""
from __future__ import annotations

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders written by `rtx rl train`")
    p.add_argument("--out", required=True)
    p.add_argument("--title", required=True)
    p.add_argument("--goal", type=float, default=None, help="draw the target return as a dashed line")
    args = p.parse_args(argv)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for run in args.runs:
        with open(os.path.join(run, "run.json")) as f:
            seed = json.load(f)["seed"]
        data = np.load(os.path.join(run, "evaluations.npz"))
        t, r = data["timesteps"], data["results"]
        line, = ax.plot(t, r.mean(axis=1), marker=".", label=f"seed {seed}")
        if len(args.runs) == 1:  # one seed: show the spread over its evaluation episodes
            ax.fill_between(t, r.mean(axis=1) - r.std(axis=1), r.mean(axis=1) + r.std(axis=1),
                            alpha=0.25, color=line.get_color())
    if args.goal is not None:
        ax.axhline(args.goal, color="k", ls="--", lw=1, label=f"goal {args.goal:g}")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean eval return (10 episodes)")
    ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    plt.close(fig)
    print(f"wrote {args.out} ({os.path.getsize(args.out) // 1024} KB)")


if __name__ == "__main__":
    main()
