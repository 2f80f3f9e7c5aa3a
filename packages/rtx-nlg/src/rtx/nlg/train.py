"""Train a small GPT-2 on the bundled corpus (what `rtx nlg train` runs) and load it back.

The corpus (rtx.nlg.load_corpus) is split by paragraphs (every tenth held out), a byte-level BPE
is trained on the training part, and rtx.transformers' GPT2LMHeadModel learns next-token
prediction on random windows of it with AdamW, a warm-up and cosine decay of the learning rate
and gradient clipping. The validation loss (mean cross entropy in nats per token over the whole
held-out part) is measured every `eval_interval` steps; training stops at `max_steps` or as soon
as it reaches `target_val_loss`. The checkpoint (one rtx.save file) holds the weights, the model
config, the tokenizer (tokenizer.json structure) and the losses, and is written whenever the
validation loss improves.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

import rtx
from rtx.nlg.corpus import load_corpus, split_corpus
from rtx.nlg.tokenizers import ByteLevelBPETokenizer, tokenizer_from_json

__all__ = ["TrainConfig", "TrainResult", "train", "load_checkpoint", "DEFAULT_TARGET_VAL_LOSS"]

#: the validation loss `rtx nlg train` stops at by default (nats per token, vocabulary 512);
#: measured to be reached in about a minute on 2 CPU cores (README: figures)
DEFAULT_TARGET_VAL_LOSS = 4.0
EOS = "<|endoftext|>"


@dataclass
class TrainConfig:
    max_steps: int = 600
    target_val_loss: float | None = DEFAULT_TARGET_VAL_LOSS
    vocab_size: int = 512
    block_size: int = 64
    batch_size: int = 16
    n_embd: int = 128
    n_layer: int = 3
    n_head: int = 4
    dropout: float = 0.1
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 30
    grad_clip: float = 1.0
    eval_interval: int = 25
    seed: int = 0
    device: str = "cpu"


@dataclass
class TrainResult:
    steps: int
    train_loss: float
    val_loss: float
    best_val_loss: float
    reached_target: bool
    seconds: float
    parameters: int
    tokens_per_char: float
    path: str | None
    history: list = field(default_factory=list)


def _gpt2():
    try:
        from rtx.transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:  # pragma: no cover - rtx-transformers is a dependency
        raise ImportError(f"rtx nlg train needs rtx.transformers' GPT-2 ({e}); pip install rtx-transformers") from e
    return GPT2Config, GPT2LMHeadModel


def build_model(tok, cfg: TrainConfig):
    GPT2Config, GPT2LMHeadModel = _gpt2()
    mcfg = GPT2Config(vocab_size=len(tok), n_positions=cfg.block_size, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                      n_head=cfg.n_head, resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout,
                      bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)
    return GPT2LMHeadModel(mcfg)


def _val_loss(model, val_ids: np.ndarray, block: int, device, batch: int = 32) -> float:
    """Mean next-token cross entropy over the whole validation stream, cut into windows."""
    import rtx.nn.functional as F
    n = (len(val_ids) - 1) // block
    x = val_ids[:n * block].reshape(n, block)
    y = val_ids[1:n * block + 1].reshape(n, block)
    total, count = 0.0, 0
    model.eval()
    with rtx.no_grad():
        for i in range(0, n, batch):
            xb = rtx.from_numpy(x[i:i + batch]).to(device)
            yb = rtx.from_numpy(y[i:i + batch]).to(device)
            logits = model(xb).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1), reduction="sum")
            total += float(loss.item())
            count += yb.numel()
    model.train()
    return total / count


def train(cfg: TrainConfig | None = None, out: str | None = "nlg_gpt.rtx", progress: bool = True,
          log=print) -> TrainResult:
    import rtx.nn.functional as F
    cfg = cfg or TrainConfig()
    rtx.manual_seed(cfg.seed)
    text = load_corpus()
    train_text, val_text = split_corpus(text)
    tok = ByteLevelBPETokenizer.train(train_text, cfg.vocab_size, special_tokens=[EOS], eos_token=EOS)
    train_ids = np.asarray(tok.encode(train_text), dtype=np.int64)
    val_ids = np.asarray(tok.encode(val_text), dtype=np.int64)
    tokens_per_char = len(train_ids) / len(train_text)
    model = build_model(tok, cfg).to(cfg.device)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = rtx.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.99))

    def lr_at(step):  # linear warm-up, cosine decay to a tenth
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        t = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))

    sched = rtx.optim.lr_scheduler.LambdaLR(opt, lr_at)
    rng = np.random.default_rng(cfg.seed)
    log(f"corpus: {len(train_text):,} + {len(val_text):,} characters (train + validation), "
        f"{len(train_ids):,} + {len(val_ids):,} tokens (BPE vocabulary {len(tok)})")
    log(f"model: GPT-2, {cfg.n_layer} layers, {cfg.n_head} heads, width {cfg.n_embd}, context {cfg.block_size}, "
        f"{params:,} parameters; device {cfg.device}")
    target = cfg.target_val_loss
    log(f"training up to {cfg.max_steps} steps" + (f", stopping at validation loss <= {target}" if target else ""))

    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=cfg.max_steps, desc="rtx nlg train", unit="step", leave=False)
    start = time.perf_counter()
    history = []
    best = math.inf
    train_loss = val = math.nan
    smooth = None
    step = 0
    reached = False
    for step in range(1, cfg.max_steps + 1):
        starts = rng.integers(0, len(train_ids) - cfg.block_size - 1, size=cfg.batch_size)
        window = np.stack([train_ids[s:s + cfg.block_size + 1] for s in starts])
        xb = rtx.from_numpy(window[:, :-1]).to(cfg.device)
        yb = rtx.from_numpy(window[:, 1:]).to(cfg.device)
        logits = model(xb).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        if cfg.grad_clip:
            rtx.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        train_loss = float(loss.item())
        smooth = train_loss if smooth is None else 0.9 * smooth + 0.1 * train_loss
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{smooth:.3f}", val=f"{val:.3f}")
        if step % cfg.eval_interval == 0 or step == cfg.max_steps:
            val = _val_loss(model, val_ids, cfg.block_size, cfg.device)
            history.append((step, smooth, val))
            msg = f"step {step:5d}  train loss {smooth:.4f}  val loss {val:.4f}  ({time.perf_counter() - start:.0f} s)"
            if bar is not None:
                bar.write(msg)
            else:
                log(msg)
            if val < best:
                best = val
                if out:
                    save_checkpoint(out, model, tok, cfg, step, smooth, val)
            if target is not None and val <= target:
                reached = True
                break
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start
    return TrainResult(step, smooth, val, best, reached, seconds, params, tokens_per_char, out, history)


def save_checkpoint(path, model, tok, cfg: TrainConfig, step, train_loss, val_loss) -> None:
    rtx.save({"format": "rtx-nlg-gpt/1", "model": model.state_dict(), "config": model.config.to_dict(),
              "tokenizer": tok.to_json(), "train_config": asdict(cfg), "step": step,
              "train_loss": float(train_loss), "val_loss": float(val_loss)}, path)


def load_checkpoint(path, device="cpu"):
    """(model in eval mode, tokenizer, checkpoint dict) from a file `train` wrote."""
    ckpt = rtx.load(path, map_location="cpu")
    if not isinstance(ckpt, dict) or ckpt.get("format") != "rtx-nlg-gpt/1":
        raise ValueError(f"{path} is not an rtx nlg checkpoint (written by `rtx nlg train`)")
    GPT2Config, GPT2LMHeadModel = _gpt2()
    model = GPT2LMHeadModel(GPT2Config.from_dict(ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    model.to(device).eval()
    return model, tokenizer_from_json(ckpt["tokenizer"]), ckpt
