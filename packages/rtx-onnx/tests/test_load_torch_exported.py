"""Models exported by PyTorch's own exporter (torch.onnx.export, TorchScript path, opset 17) load,
match torch's outputs at two batch sizes, and fine-tune. The files come from
tests/data/make_torch_onnx_fixtures.py (run once with torch; the tests need no torch)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.onnx

DATA = Path(__file__).resolve().parent / "data"
NAMES = ["torch_cnn", "torch_recurrent", "torch_encoder"]


@pytest.mark.parametrize("name", NAMES)
def test_outputs_match_torch(name):
    m = rtx.onnx.load(DATA / f"{name}.onnx")
    ref = np.load(DATA / f"{name}.npz")
    for b in (2, 5):  # the export used batch 2; batch 5 exercises the dynamic axis
        with rtx.no_grad():
            y = m(ref[f"x{b}"]).numpy()
        assert y.shape == ref[f"y{b}"].shape
        np.testing.assert_allclose(y, ref[f"y{b}"], rtol=1e-5, atol=1e-5)


def test_torch_parameter_names_survive():
    m = rtx.onnx.load(DATA / "torch_recurrent.onnx")
    keys = set(m.state_dict())
    assert {"embed.weight", "head.weight", "head.bias"} <= keys
    assert m.embed.weight.shape == (20, 6)
    assert any(k.startswith("onnx::LSTM_") for k in keys)  # the exporter's names for reordered gate weights


@pytest.mark.parametrize("name", NAMES)
def test_fine_tuning_reduces_the_loss(name):
    from rtx.optim import Adam
    m = rtx.onnx.load(DATA / f"{name}.onnx")
    ref = np.load(DATA / f"{name}.npz")
    x = ref["x5"]
    with rtx.no_grad():
        target = rtx.tensor(np.roll(ref["y5"], 1, axis=-1))  # something the model does not output yet
    opt = Adam(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = ((m(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert all(p.grad is not None for p in m.parameters())
    assert losses[-1] < 0.7 * losses[0], losses
