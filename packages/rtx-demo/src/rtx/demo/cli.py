"""`rtx demo`: train a small CNN on the digits data set and report."""
from __future__ import annotations

import argparse


def demo_command(argv=None) -> int:
    """train a small CNN on scikit-learn's digits: progress, accuracy, save and reload"""
    p = argparse.ArgumentParser(prog="rtx demo", description=demo_command.__doc__)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--out", default="digits_cnn.safetensors", help="where to save the trained weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error(f"--epochs must be at least 1, got {args.epochs}")
    from rtx.demo.train import train

    r = train(epochs=args.epochs, device=args.device, out=args.out, seed=args.seed, progress=not args.no_progress)
    line = "-" * 52
    print(line)
    print("rtx demo: DigitsCNN on scikit-learn digits (8x8, 10 classes)")
    print(f"  test accuracy   {r.accuracy * 100:6.2f} %")
    print(f"  training time   {r.seconds:6.1f} s  ({args.epochs} epochs, device {args.device})")
    print(f"  parameters      {r.parameters:,}")
    print(f"  saved to        {r.path}  ({r.file_bytes / 1024:.1f} KiB, safetensors)")
    print("  reloaded        same predictions on the test set")
    print(line)
    return 0
