"""`rtx diffuse`: train a class-conditional diffusion model on the digits, sample it, evaluate it."""
from __future__ import annotations

import argparse

_USAGE = """usage: rtx diffuse <subcommand> [args...]

subcommands:
  train     train a class-conditional UNet (DDPM noise, EMA, label dropout for guidance) on scikit-learn's digits
  sample    draw a PNG grid of one digit class from a trained folder (DPM-Solver++, classifier-free guidance)
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
    p.add_argument("--steps", type=int, default=None, help="step budget: stop after this many steps and decay the "
                   "learning rate over them (default: over the wall-time budget)")
    # recipe options: None keeps the default of rtx.diffuse.train.train (the tuned digits recipe)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (AdamW)")
    p.add_argument("--warmup-steps", type=int, default=None)
    p.add_argument("--channels", default=None, help="UNet block_out_channels, e.g. 32,64")
    p.add_argument("--no-attention", dest="attention", action="store_const", const=False, default=None,
                   help="drop the UNet's attention blocks")
    p.add_argument("--prediction-type", choices=["epsilon", "v_prediction"], default=None)
    p.add_argument("--beta-schedule", choices=["linear", "scaled_linear", "squaredcos_cap_v2"], default=None)
    p.add_argument("--snr-gamma", type=float, default=None, help="Min-SNR loss weighting gamma (0 = off)")
    p.add_argument("--ema-decay", type=float, default=None)
    p.add_argument("--p-uncond", type=float, default=None, help="label dropout rate (trains the guidance's "
                   "unconditional model)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.minutes <= 0 or (a.steps is not None and a.steps < 1):
        p.error("--minutes must be positive and --steps at least 1")
    recipe = {k: getattr(a, k) for k in ("batch_size", "lr", "warmup_steps", "attention", "prediction_type",
                                         "beta_schedule", "ema_decay", "p_uncond") if getattr(a, k) is not None}
    if a.channels is not None:
        try:
            recipe["channels"] = tuple(int(c) for c in a.channels.split(","))
        except ValueError:
            p.error(f"--channels must be integers separated by commas, e.g. 32,64; got {a.channels!r}")
    if a.snr_gamma is not None:
        recipe["snr_gamma"] = a.snr_gamma or None
    from rtx.diffuse.train import train
    r = train(a.dataset, a.out, minutes=a.minutes, max_steps=a.steps, seed=a.seed,
              checkpoint_every=a.checkpoint_every, progress=not a.no_progress, **recipe)
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
    p.add_argument("--steps", type=int, default=25, help="sampling steps")
    p.add_argument("--sampler", choices=["ddim", "dpmsolver++"], default=None,
                   help="default: the folder's scheduler (DPM-Solver++ for folders `rtx diffuse train` writes)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.n < 1:
        p.error(f"--n must be at least 1, got {a.n}")
    from rtx.diffuse.train import sample, save_grid
    images = sample(a.path, a.label, a.n, a.guidance, a.steps, a.seed, progress=True, sampler=a.sampler)
    save_grid(images, a.out)
    print(f"rtx diffuse sample: {a.n} samples of label {a.label} (guidance {a.guidance}) -> {a.out}")
    return 0


def _evaluate(argv):
    p = argparse.ArgumentParser(prog="rtx diffuse evaluate", description="Classify samples of every label with a "
                                "separately trained DigitsCNN; report nearest-neighbour distances to training images.")
    p.add_argument("path")
    p.add_argument("--n-per-class", type=int, default=20)
    p.add_argument("--guidance", type=float, default=3.0)
    p.add_argument("--steps", type=int, default=25, help="sampling steps")
    p.add_argument("--sampler", choices=["ddim", "dpmsolver++"], default=None,
                   help="default: the folder's scheduler (DPM-Solver++ for folders `rtx diffuse train` writes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--classifier", default=None, help="a DigitsCNN state file (`rtx demo train --out F`) to score "
                   "with, instead of training one (same split: it never sees the held-out digits either)")
    p.add_argument("--grid", default=None, help="also write all samples as a PNG grid (one row per label)")
    a = p.parse_args(argv)
    from rtx.diffuse.train import evaluate, save_grid
    r, images = evaluate(a.path, a.n_per_class, a.guidance, a.steps, a.seed, sampler=a.sampler,
                         classifier=a.classifier)
    sampler = a.sampler or "the folder's sampler,"
    print(f"rtx diffuse evaluate: {r.samples} samples, guidance {a.guidance}, {sampler} {a.steps} steps")
    print(f"  classified as the requested label: {r.accuracy * 100:.1f}%  (classifier test accuracy "
          f"{r.classifier_test_accuracy * 100:.1f}%)")
    print("  per label: " + " ".join(f"{i}:{v * 100:.0f}%" for i, v in enumerate(r.per_class)))
    print(f"  nearest training image (L2, pixels in [0,1]): samples median {r.nn_sample_median:.2f} "
          f"(min {r.nn_sample_min:.2f}); held-out test digits median {r.nn_test_median:.2f}")
    if a.grid:
        save_grid(images, a.grid, cols=a.n_per_class)
        print(f"  grid -> {a.grid}")
    return 0
