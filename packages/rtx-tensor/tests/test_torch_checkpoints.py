"""Checkpoints written by a real PyTorch (2.13, CPU wheel) load through rtx.load without torch.
The files and the expected values (an .npz written by NumPy) were made by data/make_torch_fixtures.py."""
from pathlib import Path

import numpy as np
import pytest

import rtx

DATA = Path(__file__).parent / "data"
EXPECTED = np.load(DATA / "torch_expected.npz")


def _check_state_dict(sd):
    assert list(sd) == ["linear.weight", "linear.bias", "bn.num_batches_tracked", "half", "bf16", "ints", "mask",
                        "transposed", "offset_view", "shared_a"]
    for key, value in sd.items():
        got = value.float() if value.dtype == rtx.bfloat16 else value
        np.testing.assert_array_equal(got.detach().numpy(), EXPECTED[key.replace(".", "__")], err_msg=key)
    assert sd["linear.weight"].requires_grad  # saved as an nn.Parameter
    assert sd["half"].dtype == rtx.float16 and sd["bf16"].dtype == rtx.bfloat16
    assert sd["ints"].dtype == rtx.int32 and sd["mask"].dtype == rtx.bool
    assert sd["bn.num_batches_tracked"].ndim == 0 and sd["bn.num_batches_tracked"].item() == 7


def test_zip_checkpoint_from_real_pytorch():
    obj = rtx.load(DATA / "torch_checkpoint.pt")
    assert obj["epoch"] == 3 and obj["names"] == ["a", "b"] and obj["lr"] == pytest.approx(0.01)
    _check_state_dict(obj["state_dict"])


def test_legacy_checkpoint_from_real_pytorch():
    _check_state_dict(rtx.load(DATA / "torch_legacy.pt"))


def test_pytorch_state_dict_loads_into_an_rtx_module():
    import rtx.nn as nn
    sd = rtx.load(DATA / "torch_checkpoint.pt")["state_dict"]
    layer = nn.Linear(5, 3)
    layer.load_state_dict({"weight": sd["linear.weight"], "bias": sd["linear.bias"]})
    x = rtx.randn(2, 5)
    expected = x.numpy() @ EXPECTED["linear__weight"].T + EXPECTED["linear__bias"]
    np.testing.assert_allclose(layer(x).detach().numpy(), expected, rtol=1e-6, atol=1e-6)
