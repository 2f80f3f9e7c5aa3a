"""`rtx nlg train` and `rtx nlg sample`."""
from __future__ import annotations

import argparse
import sys


def nlg_command(argv=None) -> int:
    """train a small GPT on the bundled public-domain corpus, and sample text from it"""
    p = argparse.ArgumentParser(prog="rtx nlg", description=nlg_command.__doc__)
    sub = p.add_subparsers(dest="cmd", metavar="{train,sample}")
    t = sub.add_parser("train", help="train a GPT-2 on the bundled corpus, with a checkpoint",
                       description="Train a small GPT-2 (byte-level BPE, 512 tokens) on the bundled public-domain "
                                   "corpus until the validation loss reaches --target-loss or --steps run out.")
    t.add_argument("--steps", type=int, default=600, help="most training steps (default 600)")
    t.add_argument("--out", default="nlg_gpt.rtx", help="checkpoint path (default nlg_gpt.rtx)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    t.add_argument("--target-loss", type=float, default=None,
                   help="stop at this validation loss, nats/token (default 4.0; 0 disables)")
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--eval-interval", type=int, default=25, help="steps between validation passes")
    t.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (default 1: this model's matrices are small, and on a shared machine "
                        "more threads mostly wait on each other; 0 leaves the BLAS default)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    s = sub.add_parser("sample", help="generate text from a checkpoint",
                       description="Continue a prompt with a model written by `rtx nlg train`, printing the text "
                                   "as it is generated.")
    s.add_argument("--checkpoint", default="nlg_gpt.rtx")
    s.add_argument("--prompt", default="Shall I compare thee")
    s.add_argument("--max-new-tokens", type=int, default=100)
    s.add_argument("--temperature", type=float, default=0.8, help="0: greedy decoding")
    s.add_argument("--top-k", type=int, default=40, help="0: off")
    s.add_argument("--top-p", type=float, default=0.95)
    s.add_argument("--repetition-penalty", type=float, default=1.0)
    s.add_argument("--num-beams", type=int, default=1, help="> 1: beam search (no streaming)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if args.cmd == "train":
        return _train(p, args)
    if args.cmd == "sample":
        return _sample(p, args)
    p.print_help(sys.stderr)
    return 2


def _train(p, args) -> int:
    from rtx.nlg.train import DEFAULT_TARGET_VAL_LOSS, TrainConfig, train
    if args.steps < 1:
        p.error(f"--steps must be at least 1, got {args.steps}")
    target = DEFAULT_TARGET_VAL_LOSS if args.target_loss is None else (args.target_loss or None)
    cfg = TrainConfig(max_steps=args.steps, target_val_loss=target, seed=args.seed, device=args.device,
                      batch_size=args.batch_size, eval_interval=args.eval_interval)
    if args.threads < 0:
        p.error(f"--threads must be >= 0, got {args.threads}")
    from rtx.runtime.threads import limit_threads
    with limit_threads(args.threads or None):  # 0: BLAS's own default
        r = train(cfg, out=args.out, progress=not args.no_progress)
    line = "-" * 60
    print(line)
    print("rtx nlg train: GPT-2 on the bundled public-domain corpus")
    print(f"  steps            {r.steps}  ({r.seconds:.1f} s, device {args.device})")
    print(f"  train loss       {r.train_loss:.4f} nats/token")
    print(f"  val loss         {r.val_loss:.4f} nats/token (best {r.best_val_loss:.4f}; "
          f"{r.best_val_loss * r.tokens_per_char / 0.6931471805599453:.3f} bits/char)")
    if target is not None:
        print(f"  target           {target:.2f}: {'reached' if r.reached_target else 'NOT reached'}")
    print(f"  parameters       {r.parameters:,}")
    print(f"  checkpoint       {r.path}")
    print(line)
    return 0 if (target is None or r.reached_target) else 1


def _sample(p, args) -> int:
    import os

    import rtx
    from rtx.nlg.generation import stream_text
    from rtx.nlg.train import load_checkpoint
    if not os.path.exists(args.checkpoint):
        p.error(f"no checkpoint at {args.checkpoint}; run `rtx nlg train --out {args.checkpoint}` first")
    if args.max_new_tokens < 0:
        p.error(f"--max-new-tokens must be >= 0, got {args.max_new_tokens}")
    model, tok, _ = load_checkpoint(args.checkpoint, device=args.device)
    gen = rtx.Generator(args.device if args.device.startswith("cuda") else "cpu").manual_seed(args.seed)
    sampling = args.temperature > 0
    opts = dict(max_new_tokens=args.max_new_tokens, do_sample=sampling,
                temperature=args.temperature if sampling else 1.0, top_k=args.top_k or None, top_p=args.top_p,
                repetition_penalty=args.repetition_penalty)
    limit = model.config.n_positions
    ids = tok.encode(args.prompt)
    if not ids:
        p.error("--prompt must not be empty")
    sys.stdout.write(args.prompt)
    sys.stdout.flush()
    if args.num_beams > 1:
        from rtx.nlg.generation import generate
        if len(ids) + args.max_new_tokens > limit:
            p.error(f"beam search needs prompt + --max-new-tokens within the model's context ({limit} tokens)")
        x = rtx.tensor([ids]).to(args.device)
        opts.update(do_sample=False, num_beams=args.num_beams)
        out = generate(model, x, generator=gen, **opts)
        sys.stdout.write(tok.decode(out[0, x.shape[1]:]))
    else:
        # GPT-2's positions are absolute: past the context, continue from the last half of the text
        left = args.max_new_tokens
        ids = ids[-(limit // 2):] if len(ids) >= limit else ids
        while left > 0:
            n = min(left, limit - len(ids))
            new: list[int] = []
            for piece in stream_text(model, tok, ids, generator=gen, device=args.device, ids_out=new,
                                     **{**opts, "max_new_tokens": n}):
                sys.stdout.write(piece)
                sys.stdout.flush()
            if len(new) < n:  # eos
                break
            left -= n
            ids = (ids + new)[-(limit // 2):]
    sys.stdout.write("\n")
    return 0
