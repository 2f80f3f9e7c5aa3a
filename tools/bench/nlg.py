#!/usr/bin/env python3
"""NLG benchmarks (issue: rtx-nlg).

1. A GPT training step, the configuration `rtx nlg train` uses (vocabulary 512, context 128,
   width 128, 3 layers, 4 heads, batch 16, AdamW, gradient clipping), written once against the
   PyTorch API and run with rtx and with PyTorch's CPU build, side by side (goal: rtx <= 1.5x).
2. Generation with rtx.nlg.generate on rtx.transformers' GPT2LMHeadModel: tokens/s for 256 new
   tokens (greedy, one 16-token prompt) with the KV cache and without it (every step recomputes
   the whole sequence), for two model sizes (goal: cache >= 5x faster).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/nlg.py \
        --torch-python /work/torch-venv/bin/python
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402

VOCAB, BLOCK, WIDTH, LAYERS, HEADS, BATCH = 512, 128, 128, 3, 4, 16


def gpt_train_step(lib):
    """One optimisation step of a GPT-2-shaped model, in PyTorch API terms only."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH)
            self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
            self.c_proj = nn.Linear(WIDTH, WIDTH)
            self.ln_2 = nn.LayerNorm(WIDTH)
            self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
            self.mlp_proj = nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, WIDTH)
            self.wpe = nn.Embedding(BLOCK, WIDTH)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(WIDTH)

        def forward(self, idx):
            pos = lib.arange(idx.shape[1])
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.t()  # tied output layer, as GPT-2

    model = GPT()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    x = lib.randint(0, VOCAB, (BATCH, BLOCK))
    y = lib.randint(0, VOCAB, (BATCH, BLOCK))

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return best_of(step, repeat=5, min_time=0.5)


WORKLOADS = {f"GPT train step (b{BATCH}, T{BLOCK}, d{WIDTH}, L{LAYERS})": gpt_train_step}


def generation_benchmark(new_tokens=256, prompt_len=16):
    import rtx
    from rtx.nlg import generate
    from rtx.transformers import GPT2Config, GPT2LMHeadModel
    print(f"\ngeneration: rtx.nlg.generate, GPT2LMHeadModel (random weights), greedy, prompt {prompt_len}, "
          f"{new_tokens} new tokens")
    print(f"{'model':<28} {'KV cache':>14} {'no cache':>14} {'speed-up':>9}")
    for width, layers, heads in ((128, 3, 4), (256, 6, 8)):
        rtx.manual_seed(0)
        cfg = GPT2Config(vocab_size=VOCAB, n_positions=prompt_len + new_tokens, n_embd=width, n_layer=layers,
                         n_head=heads)
        model = GPT2LMHeadModel(cfg).eval()
        ids = rtx.randint(0, VOCAB, (1, prompt_len))
        rates = {}
        outs = {}
        for use_cache in (True, False):
            generate(model, ids, max_new_tokens=8, use_cache=use_cache)  # warm up
            best = math.inf
            for _ in range(2 if use_cache else 1):
                t = time.perf_counter()
                outs[use_cache] = generate(model, ids, max_new_tokens=new_tokens, use_cache=use_cache,
                                           eos_token_id=[])
                best = min(best, time.perf_counter() - t)
            rates[use_cache] = new_tokens / best
        same = outs[True].tolist() == outs[False].tolist()
        name = f"d{width} L{layers} H{heads}"
        print(f"{name:<28} {rates[True]:10.1f} t/s {rates[False]:10.1f} t/s {rates[True] / rates[False]:8.1f}x"
              f"{'' if same else '  (tokens differ!)'}")


if __name__ == "__main__":
    main(WORKLOADS, __doc__)
    if "--json" not in sys.argv:
        generation_benchmark()
