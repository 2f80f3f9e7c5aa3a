#!/usr/bin/env python3
"""NLG benchmarks (issue: rtx-nlg).

1. A GPT training step, the configuration `rtx nlg train` uses (vocabulary 512, context 64,
   width 128, 3 layers, 4 heads, dropout 0.1, batch 16, AdamW, gradient clipping), written once
   against the PyTorch API and run with rtx and with PyTorch's CPU build (goal: rtx <= 1.5x).
2. Generation with rtx.nlg.generate on rtx.transformers' GPT2LMHeadModel: tokens/s for 256 new
   tokens (greedy, one 16-token prompt) with the KV cache and without it (every step recomputes
   the whole sequence), for three model sizes, the first being the `rtx nlg train` model
   (goal: cache >= 5x faster).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/nlg.py \
        --torch-python /work/torch-venv/bin/python [--rounds 3]

The training comparison alternates rtx and PyTorch `--rounds` times and keeps each side's best
(the machine is shared; its load comes and goes). OMP_NUM_THREADS / OPENBLAS_NUM_THREADS apply
to both sides.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, blas_info, main  # noqa: E402

VOCAB, BLOCK, WIDTH, LAYERS, HEADS, BATCH, DROPOUT = 512, 64, 128, 3, 4, 16, 0.1


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
            self.drop = nn.Dropout(DROPOUT)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT, is_causal=True)
            x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))
            return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, WIDTH)
            self.wpe = nn.Embedding(BLOCK, WIDTH)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(WIDTH)
            self.drop = nn.Dropout(DROPOUT)

        def forward(self, idx):
            pos = lib.arange(idx.shape[1])
            x = self.drop(self.wte(idx) + self.wpe(pos))
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


WORKLOADS = {f"GPT train step (b{BATCH}, T{BLOCK}, d{WIDTH}, L{LAYERS}, p{DROPOUT})": gpt_train_step}


def generation_benchmark(new_tokens=256, prompt_len=16):
    import rtx
    from rtx.nlg import generate
    from rtx.transformers import GPT2Config, GPT2LMHeadModel
    print(f"\ngeneration: rtx.nlg.generate, GPT2LMHeadModel (random weights), greedy, prompt {prompt_len}, "
          f"{new_tokens} new tokens")
    print(f"{'model':<28} {'KV cache':>14} {'no cache':>14} {'speed-up':>9}")
    for width, layers, heads in ((128, 3, 4), (256, 6, 8), (512, 8, 8)):
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
            for _ in range(3 if use_cache else 1):
                t = time.perf_counter()
                outs[use_cache] = generate(model, ids, max_new_tokens=new_tokens, use_cache=use_cache,
                                           eos_token_id=[])
                best = min(best, time.perf_counter() - t)
            rates[use_cache] = new_tokens / best
        same = outs[True].tolist() == outs[False].tolist()
        name = f"d{width} L{layers} H{heads}"
        print(f"{name:<28} {rates[True]:10.1f} t/s {rates[False]:10.1f} t/s {rates[True] / rates[False]:8.1f}x"
              f"{'' if same else '  (tokens differ!)'}")


def alternating(rounds):
    """The training comparison in `rounds` alternating rounds (rtx here, then PyTorch in its own
    interpreter), keeping each side's best: on a shared machine whose load comes and goes, this
    compares the two at their least disturbed instead of at whatever moment each ran."""
    import json
    import subprocess

    import rtx
    torch_python = os.environ.get("RTX_BENCH_TORCH_PYTHON")
    if "--torch-python" in sys.argv:
        torch_python = sys.argv[sys.argv.index("--torch-python") + 1]
    best_rtx, best_torch = {}, {}
    for _ in range(rounds):
        for name, fn in WORKLOADS.items():
            best_rtx[name] = min(best_rtx.get(name, math.inf), fn(rtx))
        if torch_python:
            out = subprocess.run([torch_python, sys.argv[0], "--lib", "torch", "--json"], capture_output=True,
                                 text=True, env={**os.environ, "PYTHONPATH": ""})
            if out.returncode:
                print("torch run failed:", out.stderr[-2000:])
                torch_python = None
                continue
            for name, t in json.loads(out.stdout.strip().splitlines()[-1]).items():
                best_torch[name] = min(best_torch.get(name, math.inf), t)
    print(f"BLAS: {'; '.join(blas_info())}; best of {rounds} alternating rounds")
    print(f"{'workload':<38} {'rtx':>10} {'torch':>10} {'rtx/torch':>10}")
    for name in WORKLOADS:
        r, t = best_rtx[name], best_torch.get(name)
        ts, ratio = (f"{t * 1e3:8.1f}ms", f"{r / t:9.2f}x") if t else (f"{'-':>10}", f"{'-':>10}")
        print(f"{name:<38} {r * 1e3:8.1f}ms {ts} {ratio}")


if __name__ == "__main__":
    if "--lib" in sys.argv:  # the PyTorch side, called by alternating()
        main(WORKLOADS, __doc__)
    else:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
        alternating(rounds)
        generation_benchmark()
