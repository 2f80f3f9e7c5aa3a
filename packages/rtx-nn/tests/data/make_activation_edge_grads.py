"""Writes activation_edge_grads.json: PyTorch's forward values and gradients for activation_edge_cases.CASES.
Run once with PyTorch (not a test dependency):
    /work/torch-venv/bin/python packages/rtx-nn/tests/data/make_activation_edge_grads.py
(written with torch 2.13.0+cpu)."""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from activation_edge_cases import CASES, grad_output  # noqa: E402


def main():
    out = {"torch": torch.__version__}
    for name, (fn, inputs, wrt) in CASES.items():
        ts = [torch.tensor(v, dtype=getattr(torch, d), requires_grad=(i in wrt)) for i, (v, d) in enumerate(inputs)]
        y = fn(F, torch, *ts)
        g = torch.tensor(grad_output(y.numel()), dtype=y.dtype).reshape(y.shape)
        grads = torch.autograd.grad(y, [ts[i] for i in wrt], g, allow_unused=True)
        out[name] = {"out": y.detach().double().tolist(), "grads": [None if gr is None else gr.double().tolist()
                                                                   for gr in grads]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activation_edge_grads.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=0)
    print("wrote", path)


if __name__ == "__main__":
    main()
