#!/usr/bin/env python3
"""Writes <stem>_edge_grads.json next to <stem>_edge_cases.py: PyTorch's forward values and gradients for every
case, the reference of rtx.testing.check_edge_case. Run once with PyTorch (not a test dependency), e.g.

    /work/torch-venv/bin/python tools/make_edge_grads.py packages/rtx-nn/tests/data/activation_edge_cases.py
    /work/torch-venv/bin/python tools/make_edge_grads.py packages/rtx-losses/tests/data/loss_edge_cases.py

(the stored files were written with torch 2.13.0+cpu)."""
import importlib.util
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F


def main(cases_path):
    cases_path = Path(cases_path).resolve()
    if not cases_path.name.endswith("_edge_cases.py"):
        raise SystemExit(f"expected a file named <stem>_edge_cases.py, got {cases_path.name}")
    spec = importlib.util.spec_from_file_location(cases_path.stem, cases_path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    out = {"torch": torch.__version__}
    for name, (fn, inputs, wrt) in cases.CASES.items():
        ts = [torch.tensor(v, dtype=getattr(torch, d), requires_grad=(i in wrt)) for i, (v, d) in enumerate(inputs)]
        y = fn(F, torch, *ts)
        g = torch.tensor(cases.grad_output(y.numel()), dtype=y.dtype).reshape(y.shape)
        grads = torch.autograd.grad(y, [ts[i] for i in wrt], g, allow_unused=True)
        out[name] = {"out": y.detach().double().tolist(), "grads": [None if gr is None else gr.double().tolist()
                                                                   for gr in grads]}
    path = cases_path.with_name(cases_path.name.replace("_edge_cases.py", "_edge_grads.json"))
    path.write_text(json.dumps(out, indent=0))
    print("wrote", path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
