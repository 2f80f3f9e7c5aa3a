"""`rtx rl`: train an agent with evaluation, best-model saving and a learning-curve PNG; evaluate a saved run.

    rtx rl train --algo ppo --env CartPole-v1 --timesteps 100000 --seed 0 --out DIR
    rtx rl eval DIR --episodes 20

Exit status: 0 on success, 1 on an error (message on stderr), 2 on a usage error."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

PROG = "rtx rl"
ALGOS = ("ppo", "a2c", "dqn", "sac", "td3")


def rl_command(argv: list[str]) -> int:
    """Reinforcement learning: train and eval agents on Gymnasium environments."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required (train, eval)", file=sys.stderr)
        return 2
    try:
        return _train(args) if args.cmd == "train" else _eval(args)
    except (ValueError, FileNotFoundError, NotImplementedError) as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")
    t = sub.add_parser("train", help="train an agent, evaluating it as it learns")
    t.add_argument("--algo", required=True, choices=ALGOS)
    t.add_argument("--env", required=True, help="Gymnasium environment id, e.g. CartPole-v1")
    t.add_argument("--timesteps", type=int, default=None, help="environment steps (default: the zoo's budget)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True, help="run folder: model.zip, best_model.zip, evaluations.csv, PNG")
    t.add_argument("--hyperparams", choices=("zoo", "default"), default="zoo",
                   help="RL Baselines3 Zoo's tuned values where it has them (default), or SB3's defaults")
    t.add_argument("--n-envs", type=int, default=None, help="parallel environments (default: the zoo's)")
    t.add_argument("--async-envs", action="store_true", help="gymnasium AsyncVectorEnv (worker processes)")
    t.add_argument("--eval-freq", type=int, default=None, help="evaluate every N timesteps (default: budget / 20)")
    t.add_argument("--eval-episodes", type=int, default=10)
    t.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (default 1: small networks run faster on one thread)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--verbose", type=int, default=0)
    e = sub.add_parser("eval", help="evaluate a run folder written by `rtx rl train`")
    e.add_argument("run", help="run folder (or a model .zip, with --algo and --env)")
    e.add_argument("--episodes", type=int, default=20)
    e.add_argument("--model", choices=("best", "final"), default="best")
    e.add_argument("--stochastic", action="store_true", help="sample actions instead of taking the mode")
    e.add_argument("--seed", type=int, default=12345)
    return p


def _algo_class(name: str):
    import rtx.rl as rl
    return {"ppo": rl.PPO, "a2c": rl.A2C, "dqn": rl.DQN, "sac": rl.SAC, "td3": rl.TD3}[name]


def _train(args) -> int:
    import gymnasium as gym
    from gymnasium.vector import AsyncVectorEnv

    import rtx
    from rtx.rl.common.callbacks import EvalCallback
    from rtx.rl.common.logger import configure
    from rtx.rl.common.vec_env import make_vec_env
    from rtx.rl.zoo import zoo_hyperparams

    rtx.set_num_threads(args.threads)
    probe = gym.make(args.env)
    action_dim = int(probe.action_space.shape[0]) if isinstance(probe.action_space, gym.spaces.Box) else 1
    probe.close()
    kwargs, n_envs, budget = zoo_hyperparams(args.algo, args.env, action_dim) if args.hyperparams == "zoo" \
        else ({}, 1, None)
    n_envs = args.n_envs or n_envs
    timesteps = args.timesteps or budget
    if timesteps is None:
        raise ValueError(f"the zoo has no budget for {args.algo} on {args.env}: pass --timesteps")
    os.makedirs(args.out, exist_ok=True)
    env = make_vec_env(args.env, n_envs=n_envs, seed=args.seed, monitor_dir=os.path.join(args.out, "monitor"),
                       vec_env_cls=AsyncVectorEnv if args.async_envs else None)
    eval_env = make_vec_env(args.env, n_envs=1, seed=args.seed + 10_000)
    model = _algo_class(args.algo)("MlpPolicy", env, seed=args.seed, verbose=args.verbose, **kwargs)
    model.set_logger(configure(args.out, ["csv", "stdout"] if args.verbose else ["csv"]))
    eval_freq = args.eval_freq or max(timesteps // 20, 1)
    callback = EvalCallback(eval_env, n_eval_episodes=args.eval_episodes, eval_freq=max(eval_freq // n_envs, 1),
                            log_path=args.out, best_model_save_path=args.out, verbose=args.verbose)
    start = time.perf_counter()
    model.learn(timesteps, callback=callback, progress_bar=not args.no_progress)
    seconds = time.perf_counter() - start
    model.save(os.path.join(args.out, "model"))
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump({"algo": args.algo, "env": args.env, "seed": args.seed, "timesteps": timesteps, "n_envs": n_envs,
                   "hyperparams": args.hyperparams, "seconds": round(seconds, 2),
                   "best_mean_reward": callback.best_mean_reward}, f, indent=2)
    png = _plot(args.out, f"{args.algo.upper()} on {args.env} (seed {args.seed})")
    env.close()
    print(f"trained {args.algo} on {args.env} for {model.num_timesteps} steps in {seconds:.1f} s; "
          f"best mean eval return {callback.best_mean_reward:.1f}; wrote {args.out} ({os.path.basename(png)})")
    return 0


def _plot(out: str, title: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    data = np.load(os.path.join(out, "evaluations.npz"))
    t, r = data["timesteps"], data["results"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(t, r.mean(axis=1), label="mean eval return")
    ax.fill_between(t, r.mean(axis=1) - r.std(axis=1), r.mean(axis=1) + r.std(axis=1), alpha=0.3)
    ax.set_xlabel("timesteps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    path = os.path.join(out, "learning_curve.png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _eval(args) -> int:
    from rtx.rl.common.evaluation import evaluate_policy
    from rtx.rl.common.vec_env import make_vec_env

    run_json = os.path.join(args.run, "run.json")
    if not os.path.isfile(run_json):
        raise FileNotFoundError(f"{args.run} is not a run folder of `rtx rl train` (no run.json)")
    with open(run_json) as f:
        run = json.load(f)
    name = "best_model.zip" if args.model == "best" else "model.zip"
    path = os.path.join(args.run, name)
    if not os.path.isfile(path):
        path = os.path.join(args.run, "model.zip")
    env = make_vec_env(run["env"], n_envs=1, seed=args.seed)
    model = _algo_class(run["algo"]).load(path, env=env)
    mean, std = evaluate_policy(model, model.get_env(), n_eval_episodes=args.episodes,
                                deterministic=not args.stochastic)
    print(f"{run['algo']} on {run['env']} ({os.path.basename(path)}): mean return {mean:.2f} +/- {std:.2f} "
          f"over {args.episodes} episodes")
    return 0
