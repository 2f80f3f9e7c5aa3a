"""`rtx diffuse`: train a class-conditional diffusion model on the digits, sample it, evaluate it."""
from __future__ import annotations

import argparse

_USAGE = """usage: rtx diffuse <subcommand> [args...]

subcommands:
  train     train a class-conditional UNet (DDPM noise, EMA, label dropout for guidance) on scikit-learn's digits
  sample    draw a PNG grid of one digit class from a trained folder (DDIM, classifier-free guidance)
  evaluate  score samples with a separately trained DigitsCNN and by nearest-neighbour distance

rtx diffuse <subcommand> --help shows its options."""


def diffuse_command(argv=None) -> int:
    """diffusion models: `rtx diffuse train`, `rtx diffuse sample`, `rtx diffuse evaluate`"""
    argv = list(argv or [])
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    sub, rest = argv[0], argv[1:]
    handlers = {"train": _train, "sample": _sample, "evaluate": _evaluate}
    if sub not in handlers:
        print(f"rtx diffuse: unknown subcommand {sub!r}\n\n{_USAGE}")
        return 2
    return handlers[sub](rest)


def _train(argv):
    p = argparse.ArgumentParser(prog="rtx diffuse train", description="Train a class-conditional diffusion UNet on "
                                "scikit-learn's 8x8 digits; writes a pipeline folder (EMA weights) at checkpoints.")
    p.add_argument("--dataset", default="digits", choices=["digits"])
    p.add_argument("--out", required=True, help="pipeline folder to write (model_index.json, unet/, scheduler/)")
    p.add_argument("--minutes", type=float, default=10.0, help="wall-time budget")
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the time budget)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.minutes <= 0 or (a.steps is not None and a.steps < 1):
        p.error("--minutes must be positive and --steps at least 1")
    from rtx.diffuse.train import train
    r = train(a.dataset, a.out, minutes=a.minutes, max_steps=a.steps, batch_size=a.batch_size, lr=a.lr, seed=a.seed,
              checkpoint_every=a.checkpoint_every, progress=not a.no_progress)
    print(f"rtx diffuse train: {r.steps} steps in {r.seconds:.0f} s, loss {r.final_loss:.4f}, "
          f"{r.parameters:,} parameters -> {r.path}")
    print(f"  look at it: rtx diffuse sample {r.path} --label 3 --n 16 --out grid.png")
    return 0


def _sample(argv):
    p = argparse.ArgumentParser(prog="rtx diffuse sample", description="Sample one digit class as a PNG grid.")
    p.add_argument("path", help="a folder written by `rtx diffuse train`")
    p.add_argument("--label", type=int, required=True)
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--out", default="grid.png")
    p.add_argument("--guidance", type=float, default=3.0, help="classifier-free guidance scale (1 = none)")
    p.add_argument("--steps", type=int, default=50, help="DDIM steps")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.n < 1:
        p.error(f"--n must be at least 1, got {a.n}")
    from rtx.diffuse.train import sample, save_grid
    images = sample(a.path, a.label, a.n, a.guidance, a.steps, a.seed, progress=True)
    save_grid(images, a.out)
    print(f"rtx diffuse sample: {a.n} samples of label {a.label} (guidance {a.guidance}) -> {a.out}")
    return 0


def _evaluate(argv):
    p = argparse.ArgumentParser(prog="rtx diffuse evaluate", description="Classify samples of every label with a "
                                "separately trained DigitsCNN; report nearest-neighbour distances to training images.")
    p.add_argument("path")
    p.add_argument("--n-per-class", type=int, default=20)
    p.add_argument("--guidance", type=float, default=3.0)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--grid", default=None, help="also write all samples as a PNG grid (one row per label)")
    a = p.parse_args(argv)
    from rtx.diffuse.train import evaluate, save_grid
    r, images = evaluate(a.path, a.n_per_class, a.guidance, a.steps, a.seed)
    print(f"rtx diffuse evaluate: {r.samples} samples, guidance {a.guidance}, {a.steps} DDIM steps")
    print(f"  classified as the requested label: {r.accuracy * 100:.1f}%  (classifier test accuracy "
          f"{r.classifier_test_accuracy * 100:.1f}%)")
    print("  per label: " + " ".join(f"{i}:{v * 100:.0f}%" for i, v in enumerate(r.per_class)))
    print(f"  nearest training image (L2, pixels in [0,1]): samples median {r.nn_sample_median:.2f} "
          f"(min {r.nn_sample_min:.2f}); held-out test digits median {r.nn_test_median:.2f}")
    if a.grid:
        save_grid(images, a.grid, cols=a.n_per_class)
        print(f"  grid -> {a.grid}")
    return 0
