"""CLIP forward for 32 image-text pairs with a ViT-B/32-shaped config at 224x224 (random weights), and one
contrastive training step (forward, loss, backward, AdamW), rtx beside transformers + torch CPU.

    .venv/bin/python tools/bench/multimodal.py --hf-python /work/venvs/hf5/bin/python
    .venv/bin/python tools/bench/multimodal.py --layers 4 --batch 8       # a smaller run

transformers runs in its own interpreter (the side venv given by --hf-python), never as an rtx
dependency; both sides build the same config and inputs from the same seeds. The ratio is rtx / torch
time (goal <= 1.5). Threads: whatever BLAS / torch use by default unless --threads is given. Each
figure is printed as wall time and as process CPU time (*_cpu): with --threads 1 and
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 the CPU time hardly depends on how busy the machine is.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def config(layers, text_len):
    text = dict(vocab_size=49408, hidden_size=512, intermediate_size=2048, num_hidden_layers=layers,
                num_attention_heads=8, max_position_embeddings=77, hidden_act="quick_gelu", eos_token_id=49407)
    vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=layers, num_attention_heads=12,
                  image_size=224, patch_size=32, hidden_act="quick_gelu")
    return dict(text_config=text, vision_config=vision, projection_dim=512)


def inputs(batch, text_len):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 49406, (batch, text_len)).astype(np.int64)
    ids[:, -1] = 49407
    px = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
    return ids, px


def best(fn, repeat):
    """(wall, CPU) seconds of the fastest call after a warm-up. With one thread per side the process
    CPU time is the work done, whatever share of the cores the process got on a shared machine."""
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def run_rtx(a):
    import rtx
    from rtx.multimodal import CLIPConfig, CLIPModel
    rtx.manual_seed(0)
    model = CLIPModel(CLIPConfig(**config(a.layers, a.text_len)))
    ids, px = inputs(a.batch, a.text_len)
    ids, px = rtx.from_numpy(ids), rtx.from_numpy(px)

    def fwd():
        with rtx.no_grad():
            model(input_ids=ids, pixel_values=px)
    opt = rtx.optim.AdamW(model.parameters(), lr=1e-5)

    def step():
        loss = model(input_ids=ids, pixel_values=px, return_loss=True).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    f = best(fwd, a.repeat)
    model.train()
    s = best(step, a.repeat)
    return {"forward": f[0], "train_step": s[0], "forward_cpu": f[1], "train_step_cpu": s[1]}


def run_hf(a):
    # tools/bench holds vision.py, optim.py, ...: as the script's folder it would shadow torch's own imports
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [q for q in sys.path if os.path.abspath(q or ".") != here]
    import torch
    from transformers import CLIPConfig, CLIPModel
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(**config(a.layers, a.text_len)))
    ids, px = inputs(a.batch, a.text_len)
    ids, px = torch.from_numpy(ids), torch.from_numpy(px)

    def fwd():
        with torch.no_grad():
            model(input_ids=ids, pixel_values=px)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step():
        loss = model(input_ids=ids, pixel_values=px, return_loss=True).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    f = best(fwd, a.repeat)
    model.train()
    s = best(step, a.repeat)
    return {"forward": f[0], "train_step": s[0], "forward_cpu": f[1], "train_step_cpu": s[1]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hf-python", default=os.environ.get("RTX_BENCH_HF_PYTHON"),
                   help="python of a venv with transformers and torch (e.g. /work/venvs/hf5/bin/python)")
    p.add_argument("--layers", type=int, default=12, help="layers per tower (ViT-B/32: 12)")
    p.add_argument("--batch", type=int, default=32, help="image-text pairs")
    p.add_argument("--text-len", type=int, default=77, help="tokens per text")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    p.add_argument("--side", choices=["rtx", "hf"], default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.side == "hf":
        print(json.dumps(run_hf(a)))
        return
    if a.side == "rtx":
        print(json.dumps(run_rtx(a)))
        return
    args = ["--layers", str(a.layers), "--batch", str(a.batch), "--text-len", str(a.text_len), "--repeat",
            str(a.repeat), "--threads", str(a.threads)]
    print(f"CLIP ViT-B/32 shape, {a.layers} layers per tower, {a.batch} pairs, text length {a.text_len}, "
          f"best of {a.repeat}")
    mine = run_rtx(a)
    other = None
    if a.hf_python:
        out = subprocess.run([a.hf_python, __file__, "--side", "hf", *args], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": ""})
        if out.returncode:
            print("transformers side failed:\n" + out.stderr[-2000:])
        else:
            other = json.loads(out.stdout.strip().splitlines()[-1])
    for k in ("forward", "train_step", "forward_cpu", "train_step_cpu"):
        line = f"{k:>14}: rtx {mine[k] * 1e3:9.1f} ms"
        if other:
            line += f" | transformers {other[k] * 1e3:9.1f} ms | ratio {mine[k] / other[k]:.2f}x"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
