"""UNet2DModel / UNet2DConditionModel load diffusers 0.42 checkpoints (fixtures/make_unet_fixtures.py) and
give diffusers' outputs; save_pretrained writes the same files back."""
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import rtx
from rtx.diffuse import UNet2DConditionModel, UNet2DModel

FIX = Path(__file__).resolve().parent / "fixtures"
CASES = {"unet2d_class": UNet2DModel, "unet2d_3level_scale_shift": UNet2DModel,
         "unet2d_condition": UNet2DConditionModel}


def run(model, io, dtype):
    kw = {}
    if "class_labels" in io:
        kw["class_labels"] = rtx.from_numpy(io["class_labels"])
    if "encoder_hidden_states" in io:
        kw["encoder_hidden_states"] = rtx.as_tensor(io["encoder_hidden_states"], dtype=dtype)
    with rtx.no_grad():
        return model(rtx.as_tensor(io["sample"], dtype=dtype), rtx.from_numpy(io["timestep"]), **kw).sample.numpy()


@pytest.mark.parametrize("name", list(CASES))
def test_diffusers_checkpoint_loads_and_matches(name):
    folder = FIX / name
    io = np.load(folder / "io.npz")
    model = CASES[name].from_pretrained(folder)
    keys = set(load_file(folder / "diffusion_pytorch_model.safetensors"))
    assert set(model.state_dict()) == keys  # the same parameter names, none missing or extra
    out32 = run(model, io, rtx.float32)
    scale = max(1.0, np.abs(io["out32"]).max())
    np.testing.assert_allclose(out32, io["out32"], rtol=0, atol=1e-5 * scale)
    out64 = run(model.to(rtx.float64), io, rtx.float64)
    # both compute the sinusoidal timestep embedding in float32 (as diffusers does) before the float64 network,
    # so float32 sin/cos rounding (~1e-7) is what is left
    np.testing.assert_allclose(out64, io["out64"], rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("name", list(CASES))
def test_save_pretrained_round_trip(name, tmp_path):
    folder = FIX / name
    model = CASES[name].from_pretrained(folder)
    model.save_pretrained(tmp_path)
    theirs = json.loads((folder / "config.json").read_text())
    ours = json.loads((tmp_path / "config.json").read_text())
    assert {k: v for k, v in ours.items() if k in theirs} == {k: theirs[k] for k in ours if k in theirs}
    a, b = load_file(folder / "diffusion_pytorch_model.safetensors"), load_file(tmp_path /
                                                                                "diffusion_pytorch_model.safetensors")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    again = CASES[name].from_pretrained(tmp_path)
    io = np.load(folder / "io.npz")
    np.testing.assert_array_equal(run(again, io, rtx.float32), run(model, io, rtx.float32))


def test_unsupported_condition_options_are_refused(tmp_path):
    config = json.loads((FIX / "unet2d_condition" / "config.json").read_text())
    config["addition_embed_type"] = "text_time"
    with pytest.raises(NotImplementedError, match="addition_embed_type"):
        UNet2DConditionModel.from_config(config)


def test_gradients_flow_and_errors():
    m = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, block_out_channels=(8, 16), layers_per_block=1,
                    down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                    norm_num_groups=4, num_class_embeds=3)
    x = rtx.randn(2, 1, 8, 8)
    out = m(x, rtx.tensor([1, 5]), class_labels=rtx.tensor([0, 2])).sample
    out.pow(2).mean().backward()
    assert all(p.grad is not None for p in m.parameters())
    with pytest.raises(ValueError, match="class_labels should be provided"):
        m(x, 3)
    with pytest.raises(ValueError, match="block_out_channels"):
        UNet2DModel(block_out_channels=(8,), down_block_types=("DownBlock2D", "DownBlock2D"),
                    up_block_types=("UpBlock2D", "UpBlock2D"))
