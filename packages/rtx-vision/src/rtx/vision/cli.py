"""`rtx vision`: train ResNet-18 on the digits (`rtx vision train`), and look at its predictions
(`rtx vision show`)."""
from __future__ import annotations

import argparse

_USAGE = """usage: rtx vision <subcommand> [args...]

subcommands:
  train   train ResNet-18 (small-image stem) on scikit-learn's digits with augmentation; save a checkpoint
  show    draw a PNG grid of test digits with the checkpoint's predicted labels (matplotlib)

rtx vision <subcommand> --help shows its options."""


def vision_command(argv=None) -> int:
    """vision models on the digits: `rtx vision train`, `rtx vision show`"""
    argv = list(argv or [])
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    sub, rest = argv[0], argv[1:]
    if sub == "train":
        return _train(rest)
    if sub == "show":
        return _show(rest)
    print(f"rtx vision: unknown subcommand {sub!r}\n\n{_USAGE}")
    return 2


def _train(argv):
    p = argparse.ArgumentParser(prog="rtx vision train",
                                description="Train ResNet-18 (3x3 stride-1 stem, no max pool, 1 channel) on "
                                            "scikit-learn's 8x8 digits upscaled to 12x12, with random crops and "
                                            "rotations; report test accuracy; save a checkpoint.")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="digits_resnet18.safetensors", help="checkpoint path (rtx.save format)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--width", type=int, default=64,
                   help="channels of the first stage (64 is ResNet-18; smaller trains faster)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (AdamW, one-cycle schedule)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error(f"--epochs must be at least 1, got {args.epochs}")
    if args.width < 1:
        p.error(f"--width must be at least 1, got {args.width}")
    from rtx.vision.train import train

    r = train(epochs=args.epochs, seed=args.seed, out=args.out, device=args.device, width=args.width,
              batch_size=args.batch_size, lr=args.lr, progress=not args.no_progress)
    line = "-" * 60
    print(line)
    name = "ResNet-18" if args.width == 64 else f"ResNet-18 (width {args.width})"
    print(f"rtx vision train: {name} on scikit-learn digits (12x12, 10 classes)")
    print(f"  test accuracy   {r.accuracy * 100:6.2f} %  (359 held-out digits)")
    print(f"  training time   {r.seconds:6.1f} s  ({r.epochs} epochs, device {args.device})")
    print(f"  parameters      {r.parameters:,}")
    print(f"  checkpoint      {r.path}")
    print(f"  look at it:     rtx vision show --checkpoint {r.path} --out digits_grid.png")
    print(line)
    return 0


def _show(argv):
    p = argparse.ArgumentParser(prog="rtx vision show",
                                description="Draw test digits with the predicted (and true) labels as a PNG grid.")
    p.add_argument("--checkpoint", required=True, help="a checkpoint written by `rtx vision train`")
    p.add_argument("--out", default="digits_grid.png", help="PNG file to write")
    p.add_argument("--rows", type=int, default=6)
    p.add_argument("--cols", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0, help="which test digits are drawn")
    args = p.parse_args(argv)
    if args.rows < 1 or args.cols < 1:
        p.error("--rows and --cols must be at least 1")
    from rtx.vision.show import show

    r = show(args.checkpoint, args.out, rows=args.rows, cols=args.cols, device=args.device, seed=args.seed)
    print(f"rtx vision show: {r['shown']} test digits, {r['wrong']} predicted wrong (red), written to {args.out}")
    return 0
