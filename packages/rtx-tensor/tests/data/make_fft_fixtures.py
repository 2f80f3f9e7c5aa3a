"""Writes fft_torch_grads.npz: torch.fft outputs and vector-Jacobian products for a few cases,
the reference for rtx.fft's complex-gradient convention (PyTorch's conjugate Wirtinger one).
Run once with a real torch (CPU wheel, side venv):
    /work/torch-venv/bin/python make_fft_fixtures.py
Each case stores its input x, a cotangent v shaped like the output, torch's output y and
torch's gradient g = autograd.grad(y, x, v), plus the call as JSON, so the tests need no torch."""
import json

import numpy as np
import torch

CASES = [  # (name, function, input shape, input dtype, kwargs)
    ("fft_c", "fft", (3, 6), "complex128", {}),
    ("fft_r", "fft", (3, 6), "float64", {"n": 8, "norm": "ortho"}),
    ("ifft_c_crop", "ifft", (4, 7), "complex128", {"n": 5, "dim": 0}),
    ("ifft_r", "ifft", (5,), "float64", {"norm": "forward"}),
    ("rfft_pad", "rfft", (2, 5), "float64", {"n": 8}),
    ("rfft_odd", "rfft", (2, 7), "float64", {"norm": "ortho"}),
    ("irfft_even", "irfft", (2, 5), "complex128", {}),
    ("irfft_odd", "irfft", (2, 5), "complex128", {"n": 9, "norm": "forward"}),
    ("hfft", "hfft", (4,), "complex128", {"n": 7}),
    ("ihfft", "ihfft", (2, 6), "float64", {"norm": "ortho"}),
    ("fftn_s", "fftn", (2, 3, 4), "complex128", {"s": [4, 3], "dim": [0, 2]}),
    ("ifft2", "ifft2", (3, 4), "complex128", {"norm": "ortho"}),
    ("rfft2", "rfft2", (3, 6), "float64", {}),
    ("rfftn_s", "rfftn", (2, 3, 5), "float64", {"s": [4, 6]}),
    ("irfftn", "irfftn", (3, 4, 3), "complex128", {"dim": [0, -1]}),
    ("irfft2_s", "irfft2", (3, 4), "complex128", {"s": [2, 5], "norm": "ortho"}),
    ("hfftn", "hfftn", (3, 4), "complex128", {"s": [3, 6]}),
    ("ihfft2", "ihfft2", (4, 5), "float64", {"norm": "forward"}),
]

rng = np.random.default_rng(18)


def sample(shape, dtype):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if dtype.startswith("complex") else a


arrays = {}
for name, fn, shape, dtype, kwargs in CASES:
    x = torch.tensor(sample(shape, dtype), requires_grad=True)
    y = getattr(torch.fft, fn)(x, **kwargs)
    v = torch.tensor(sample(tuple(y.shape), "complex" if y.is_complex() else "float"))
    (g,) = torch.autograd.grad(y, x, v)
    arrays[f"{name}__x"] = x.detach().numpy()
    arrays[f"{name}__v"] = v.numpy()
    arrays[f"{name}__y"] = y.detach().resolve_conj().numpy()
    arrays[f"{name}__g"] = g.resolve_conj().numpy()
    arrays[f"{name}__call"] = np.array(json.dumps({"fn": fn, "kwargs": kwargs}))
np.savez("fft_torch_grads.npz", **arrays)
print("torch", torch.__version__, len(CASES), "cases")
