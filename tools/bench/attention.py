#!/usr/bin/env python3
"""Attention benchmark (issue: rtx-flash-attn): F.scaled_dot_product_attention forward +
backward, batch 1, 8 heads, head dim 64, float32, with the flash backend and with the naive
formula (rtx's math backend: the (L, S) score matrices in full), for seq 1024, 4096, 8192.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/attention.py \\
        [--seqs 1024,4096,8192] [--naive-max 4096] [--causal] [--torch-python /work/torch-venv/bin/python]
    .venv/bin/python tools/bench/attention.py --sweep      # where flash starts to pay (the SDPA size rule)
    .venv/bin/python tools/bench/attention.py --model 2048 # a Llama-style training step, flash vs math

Peak memory is the host peak of the whole step (rtx.memory.host_peak: tracemalloc, which NumPy
reports its arrays to), measured on a separate run from the timing. Times are the best of
--repeat runs (the machine is shared: the minimum is the least disturbed). The naive backend
is not run beyond --naive-max; for those lengths its score memory is given by the formula
(batch * heads * L * S * 4 bytes per score matrix; the math backward keeps about three at once).
PyTorch's SDPA (CPU, its own flash kernel) is timed in its own interpreter when --torch-python
(or $RTX_BENCH_TORCH_PYTHON) names one, for reference.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

B, H, D = 1, 8, 64


def _step(lib, L, causal, backend=None):
    lib.manual_seed(0)
    q, k, v = (lib.randn(B, H, L, D, requires_grad=True) for _ in range(3))
    g = lib.randn(B, H, L, D)
    F = lib.nn.functional

    def run():
        q.grad = k.grad = v.grad = None
        if backend is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            from rtx.nn.attention import sdpa_kernel
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(g)
    return run


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def peak(fn):
    import rtx.memory
    with rtx.memory.host_peak() as m:
        fn()
    return m.peak


def naive_score_bytes(L):
    return B * H * L * L * 4


def torch_times(python, seqs, causal, repeat):
    cmd = [python, __file__, "--torch-json", "--seqs", ",".join(map(str, seqs)), "--repeat", str(repeat)]
    if causal:
        cmd.append("--causal")
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    if out.returncode != 0:
        print("torch run failed:", out.stderr[-1500:])
        return {}
    return {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def sweep(repeat):
    import rtx
    print(f"{'L':>6} {'math ms':>9} {'flash ms':>9} {'flash/math':>10}   forward only (no_grad): "
          f"{'math':>7} {'flash':>7} {'ratio':>6}")
    for L in (64, 128, 192, 256, 384, 512, 768, 1024):
        row = []
        for backend in ("math", "flash_attention"):
            row.append(best(_step(rtx, L, False, backend), repeat))
        fwd = []
        for backend in ("math", "flash_attention"):
            q = rtx.randn(B, H, L, D)

            def f(backend=backend, q=q):
                from rtx.nn.attention import sdpa_kernel
                with rtx.no_grad(), sdpa_kernel(backend):
                    rtx.nn.functional.scaled_dot_product_attention(q, q, q)
            fwd.append(best(f, repeat))
        print(f"{L:>6} {row[0] * 1e3:9.2f} {row[1] * 1e3:9.2f} {row[1] / row[0]:10.2f}   {'':>23}"
              f"{fwd[0] * 1e3:7.2f} {fwd[1] * 1e3:7.2f} {fwd[1] / fwd[0]:6.2f}")


def model_step(seq, repeat):
    """A Llama-style model (rtx-transformers): a training step with each SDPA backend."""
    import rtx
    from rtx.nn.attention import sdpa_kernel
    from rtx.transformers import LlamaConfig, LlamaForCausalLM
    rtx.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=seq)
    model = LlamaForCausalLM(cfg)
    ids = rtx.randint(0, 1000, (1, seq))
    print(f"LlamaForCausalLM hidden 256, 4 layers, 8 heads / 2 kv heads, seq {seq}: forward + backward")
    for backend in ("flash_attention", "math"):
        def run(backend=backend):
            model.zero_grad()
            with sdpa_kernel(backend):
                model(ids, labels=ids).loss.backward()
        pk = peak(run)
        print(f"  {backend:<16} {best(run, repeat) * 1e3:9.1f} ms  peak {pk / 2**20:8.1f} MiB", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seqs", default="1024,4096,8192")
    p.add_argument("--naive-max", type=int, default=4096, help="longest seq to run the naive backend at")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sweep", action="store_true", help="flash vs math over short sequences (the size rule)")
    p.add_argument("--model", type=int, metavar="SEQ", help="a Llama-style training step at this length instead")
    p.add_argument("--torch-python", default=os.environ.get("RTX_BENCH_TORCH_PYTHON"))
    p.add_argument("--torch-json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    if args.torch_json:
        import torch
        print(json.dumps({L: best(_step(torch, L, args.causal), args.repeat) for L in seqs}))
        return
    from _harness import blas_info  # noqa: E402  (tools/bench is the script's folder)

    import rtx
    print(f"BLAS: {'; '.join(blas_info())}")
    if args.sweep:
        sweep(max(args.repeat, 5))
        return
    if args.model:
        model_step(args.model, args.repeat)
        return
    tt = torch_times(args.torch_python, seqs, args.causal, args.repeat) if args.torch_python else {}
    print(f"SDPA forward+backward, batch {B}, {H} heads, head dim {D}, float32{', causal' if args.causal else ''}")
    print(f"{'seq':>6} | {'flash ms':>9} {'flash peak':>11} | {'naive ms':>9} {'naive peak':>11} "
          f"{'1 score matrix':>14} | {'time ratio':>10} {'peak ratio':>10}" + (f" | {'torch ms':>9}" if tt else ""))
    for L in seqs:
        flash = _step(rtx, L, args.causal, "flash_attention")
        f_peak = peak(flash)
        f_time = best(flash, args.repeat if L <= 4096 else 1)
        del flash
        if L <= args.naive_max:
            naive = _step(rtx, L, args.causal, "math")
            n_peak = peak(naive)
            n_time = best(naive, args.repeat if L <= 1024 else 1)
            del naive
            n_ms, n_pk = f"{n_time * 1e3:9.1f}", f"{n_peak / 2**20:8.1f} MiB"
            ratios = f"{f_time / n_time:10.2f} {f_peak / n_peak:10.3f}"
        else:
            n_ms, n_pk, ratios = f"{'not run':>9}", f"{'':>12}", f"{'-':>10} {'-':>10}"
        score = naive_score_bytes(L) / 2**20
        line = (f"{L:>6} | {f_time * 1e3:9.1f} {f_peak / 2**20:7.1f} MiB | {n_ms} {n_pk} {score:10.0f} MiB | "
                f"{ratios}")
        if tt:
            line += f" | {tt[L] * 1e3:9.1f}" if L in tt else f" | {'-':>9}"
        print(line, flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
