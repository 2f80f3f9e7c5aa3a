"""`rtx vision train` and `rtx vision show`, through the rtx command line. The quick tests train a
width-4 ResNet-18 for one epoch; the full default run (ResNet-18, >= 98 %) takes minutes on two
cores and runs only with RTX_VISION_FULL_TRAIN=1."""
import os

import numpy as np
import pytest
from PIL import Image

import rtx
from rtx.runtime.cli import main as rtx_main
from rtx.vision.train import digits_resnet18, load_checkpoint


def test_vision_command_is_installed_and_helps(capsys):
    assert rtx_main(["vision", "--help"]) == 0
    assert "train" in capsys.readouterr().out
    assert rtx_main(["vision", "fly"]) == 2
    with pytest.raises(SystemExit):
        rtx_main(["vision", "train", "--epochs", "0"])


def test_train_then_show(tmp_path, capsys):
    ckpt = tmp_path / "run" / "digits.safetensors"
    assert rtx_main(["vision", "train", "--epochs", "1", "--width", "4", "--out", str(ckpt), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "epoch  1" in out and "test accuracy" in out and "ResNet-18 (width 4)" in out
    model, config = load_checkpoint(str(ckpt))
    assert config["width"] == 4 and config["image_size"] == 12 and not model.training
    assert type(model.maxpool).__name__ == "Identity" and tuple(model.conv1.weight.shape) == (4, 1, 3, 3)
    png = tmp_path / "grid.png"
    assert rtx_main(["vision", "show", "--checkpoint", str(ckpt), "--out", str(png), "--rows", "2",
                     "--cols", "3"]) == 0
    assert "6 test digits" in capsys.readouterr().out
    with Image.open(png) as img:
        assert img.format == "PNG" and img.size[0] > 100
    with pytest.raises(FileNotFoundError, match="rtx vision train --out"):
        load_checkpoint(str(tmp_path / "none.safetensors"))
    rtx.save({"weights": rtx.zeros(2)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="not a checkpoint written by"):
        load_checkpoint(str(tmp_path / "other.safetensors"))


def test_default_model_is_resnet18_with_small_image_stem():
    model = digits_resnet18()
    n = sum(p.numel() for p in model.parameters())
    # resnet18's 11,689,512 - the 7x7x3 stem (9,408) + a 3x3x1 stem (576) - the 1000-class head
    # (513,000) + a 10-class head (5,130)
    assert n == 11_689_512 - 9_408 + 576 - 513_000 + 5_130 == 11_172_810
    out = model.eval()(rtx.randn(2, 1, 12, 12))
    assert tuple(out.shape) == (2, 10) and np.isfinite(out.detach().numpy()).all()


@pytest.mark.skipif(os.environ.get("RTX_VISION_FULL_TRAIN") != "1",
                    reason="minutes on 2 cores: set RTX_VISION_FULL_TRAIN=1")
def test_full_training_reaches_98_percent(tmp_path):
    from rtx.vision.train import train
    result = train(out=str(tmp_path / "r18.safetensors"), progress=False, log=lambda *_: None)
    assert result.accuracy >= 0.98
