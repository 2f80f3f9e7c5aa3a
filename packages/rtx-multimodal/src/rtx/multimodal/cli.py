"""`rtx multimodal`: train a small CLIP on the digits, classify images zero-shot with a trained folder."""
from __future__ import annotations

import argparse

_USAGE = """usage: rtx multimodal <subcommand> [args...]

subcommands:
  train-clip  contrastive training of a small CLIP on scikit-learn's digits paired with varied captions
  zero-shot   classify image files with a CLIP folder against class names (prompt ensembling)
  train-captioner  train a small ViT + GPT-2 captioner (VisionEncoderDecoderModel) on the digits

rtx multimodal <subcommand> --help shows its options."""


def multimodal_command(argv=None) -> int:
    """vision-language models: `rtx multimodal train-clip`, `rtx multimodal zero-shot`"""
    argv = list(argv or [])
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    sub, rest = argv[0], argv[1:]
    handlers = {"train-clip": _train_clip, "zero-shot": _zero_shot, "train-captioner": _train_captioner}
    if sub not in handlers:
        print(f"rtx multimodal: unknown subcommand {sub!r}\n\n{_USAGE}")
        return 2
    return handlers[sub](rest)


def _train_clip(argv):
    p = argparse.ArgumentParser(prog="rtx multimodal train-clip", description="Train a small CLIP on scikit-learn's "
                                "8x8 digits with varied captions; writes a CLIP folder (model, tokenizer, "
                                "image processor) at checkpoints and reports zero-shot accuracy and recall on "
                                "held-out digits.")
    p.add_argument("--dataset", default="digits", choices=["digits"])
    p.add_argument("--out", required=True, help="folder to write (config.json, model.safetensors, vocab.json, ...)")
    p.add_argument("--minutes", type=float, default=10.0, help="wall-time budget")
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the time budget)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.minutes <= 0 or (a.steps is not None and a.steps < 1):
        p.error("--minutes must be positive and --steps at least 1")
    from rtx.multimodal.train import train
    r = train(a.dataset, a.out, minutes=a.minutes, max_steps=a.steps, batch_size=a.batch_size, lr=a.lr, seed=a.seed,
              checkpoint_every=a.checkpoint_every, progress=not a.no_progress)
    print(f"rtx multimodal train-clip: {r.steps} steps in {r.seconds:.0f} s, loss {r.final_loss:.4f}, "
          f"{r.parameters:,} parameters -> {r.path}")
    print(f"  try it: rtx multimodal zero-shot {r.path} --images img.png --classes zero,one,two")
    return 0


def _train_captioner(argv):
    p = argparse.ArgumentParser(prog="rtx multimodal train-captioner", description="Train a small "
                                "VisionEncoderDecoderModel (ViT + GPT-2 with cross-attention) on scikit-learn's 8x8 "
                                "digits with varied captions; writes the model and vocab.json and reports how many "
                                "greedy captions of held-out digits name the digit.")
    p.add_argument("--dataset", default="digits", choices=["digits"])
    p.add_argument("--out", required=True, help="folder to write (config.json, model.safetensors, vocab.json)")
    p.add_argument("--minutes", type=float, default=10.0, help="wall-time budget")
    p.add_argument("--steps", type=int, default=1500, help="stop after this many steps")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.minutes <= 0 or a.steps < 1:
        p.error("--minutes must be positive and --steps at least 1")
    from rtx.multimodal.train_captioner import train_captioner
    r = train_captioner(a.dataset, a.out, minutes=a.minutes, max_steps=a.steps, batch_size=a.batch_size, lr=a.lr,
                        seed=a.seed, progress=not a.no_progress)
    print(f"rtx multimodal train-captioner: {r.steps} steps in {r.seconds:.0f} s, loss {r.final_loss:.4f}, "
          f"{r.parameters:,} parameters -> {r.path}")
    return 0


def _zero_shot(argv):
    p = argparse.ArgumentParser(prog="rtx multimodal zero-shot", description="Zero-shot classification of image "
                                "files with a CLIP folder (model + tokenizer + image processor).")
    p.add_argument("path", help="a CLIP folder (from train-clip, or a transformers CLIP checkpoint folder)")
    p.add_argument("--images", nargs="+", required=True, help="image files (PNG, JPEG, ...)")
    p.add_argument("--classes", default=",".join(["zero", "one", "two", "three", "four", "five", "six", "seven",
                                                  "eight", "nine"]), help="comma-separated class names")
    p.add_argument("--templates", help="'|'-separated prompt templates, each with {} for the class name",
                   default="a blurry photo of the number {}.|an image of a handwritten {}.|this is a {}.")
    a = p.parse_args(argv)
    from PIL import Image

    from rtx.multimodal import CLIPModel, CLIPProcessor, zero_shot_classify
    model = CLIPModel.from_pretrained(a.path)
    processor = CLIPProcessor.from_pretrained(a.path)
    classes = [c.strip() for c in a.classes.split(",") if c.strip()]
    images = [Image.open(f) for f in a.images]
    probs = zero_shot_classify(model, processor, images, classes, a.templates.split("|")).numpy()
    for f, row in zip(a.images, probs):
        best = row.argsort()[::-1][:3]
        print(f"{f}: " + ", ".join(f"{classes[i]} {row[i]:.3f}" for i in best))
    return 0
