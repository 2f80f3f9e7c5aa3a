"""Model families: parameter counts against torchvision's published figures, state_dict keys and
shapes against torchvision's (read from a JSON the fixture script wrote with torch), outputs of
PyTorch-made checkpoints loaded through rtx.load, output shapes, and errors.

The PyTorch fixtures (tests/data/*.pth, *.npz) come from tests/data/make_torch_fixtures.py; no
torch is needed here. With RTX_TORCH_PYTHON set to a Python that has torch, the full-size
ResNet-18 and MobileNetV2 comparison runs too (the script makes their checkpoints in a temp dir).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.vision.models as M
from rtx.vision.models._utils import _no_init
from rtx.vision.models.efficientnet import EfficientNet, _efficientnet_conf

DATA = Path(__file__).parent / "data"

# torchvision's published parameter counts (1000 classes; the model cards' "num_params").
PUBLISHED = {
    "resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032, "resnet101": 44_549_160,
    "resnet152": 60_192_808, "resnext50_32x4d": 25_028_904, "wide_resnet50_2": 68_883_240,
    "vgg11": 132_863_336, "vgg11_bn": 132_868_840, "vgg13": 133_047_848, "vgg13_bn": 133_053_736,
    "vgg16": 138_357_544, "vgg16_bn": 138_365_992, "vgg19": 143_667_240, "vgg19_bn": 143_678_248,
    "mobilenet_v2": 3_504_872, "efficientnet_b0": 5_288_548, "efficientnet_b1": 7_794_184,
    "vit_b_16": 86_567_656, "vit_b_32": 88_224_232,
}


def count(model):
    return sum(p.numel() for p in model.parameters())


def vit_count(dim, depth, mlp, patch=16, image=224, classes=1000, channels=3):
    """ViT parameters by formula: patch embedding, class token, position embedding, per layer
    two LayerNorms + attention (in_proj 3d x d + 3d, out_proj d x d + d) + MLP, final norm, head."""
    seq = (image // patch) ** 2 + 1
    embed = dim * channels * patch * patch + dim
    layer = 2 * (2 * dim) + (3 * dim * dim + 3 * dim) + (dim * dim + dim) + (dim * mlp + mlp) + (mlp * dim + dim)
    return embed + dim + seq * dim + depth * layer + 2 * dim + dim * classes + classes


def test_vit_formula_matches_the_published_base_count():
    assert vit_count(768, 12, 3072) == PUBLISHED["vit_b_16"]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_torchvision(name):
    with _no_init():   # shapes only: a 138M-parameter VGG builds in milliseconds
        model = M.get_model(name)
    assert count(model) == PUBLISHED[name]


def test_small_vits_and_lenet_by_formula():
    with _no_init():
        assert count(M.vit_t_16()) == vit_count(192, 12, 768) == 5_717_416      # timm's vit_tiny_patch16_224
        assert count(M.vit_s_16()) == vit_count(384, 12, 1536) == 22_050_664    # timm's vit_small_patch16_224
    lenet = (1 * 6 * 25 + 6) + (6 * 16 * 25 + 16) + (400 * 120 + 120) + (120 * 84 + 84) + (84 * 10 + 10)
    assert count(M.lenet()) == lenet == 61_706


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
def test_state_dict_keys_and_shapes_are_torchvisions(name):
    expected = json.loads((DATA / "torchvision_keys.json").read_text())["models"][name]
    with _no_init():
        sd = M.get_model(name).state_dict()
    got = [[k, list(v.shape), str(v.dtype).removeprefix("rtx.")] for k, v in sd.items()]
    assert got == expected


def test_state_dict_key_samples_of_other_families():
    with _no_init():
        eff = M.efficientnet_b0().state_dict()
        vgg = M.vgg16_bn().state_dict()
        vit = M.vit_t_16().state_dict()
    for k in ("features.0.0.weight", "features.1.0.block.1.fc1.weight", "features.2.0.block.0.1.running_var",
              "features.8.0.weight", "classifier.1.bias"):
        assert k in eff
    assert tuple(eff["features.1.0.block.0.0.weight"].shape) == (32, 1, 3, 3)   # depthwise, no expansion
    for k in ("features.0.weight", "features.1.num_batches_tracked", "classifier.0.weight", "classifier.6.bias"):
        assert k in vgg
    assert tuple(vgg["classifier.0.weight"].shape) == (4096, 25088)
    for k in ("conv_proj.weight", "class_token", "encoder.pos_embedding",
              "encoder.layers.encoder_layer_0.self_attention.in_proj_weight",
              "encoder.layers.encoder_layer_11.mlp.3.weight", "encoder.ln.weight", "heads.head.weight"):
        assert k in vit
    assert tuple(vit["encoder.pos_embedding"].shape) == (1, 197, 192)


SMALL = {
    "lenet": lambda: M.LeNet(10),
    "resnet18_w8": lambda: M.resnet18(num_classes=10, _width=8),
    "resnet50_w4": lambda: M.resnet50(num_classes=10, _width=4),
    "mobilenet_v2_x025": lambda: M.mobilenet_v2(num_classes=10, width_mult=0.25),
    "efficientnet_w025": lambda: EfficientNet(_efficientnet_conf(0.25, 0.25), 0.2, num_classes=10),
    "vit_tiny_2layer": lambda: M.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=10),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_pytorch_checkpoint_loads_and_gives_pytorchs_outputs(name):
    model = SMALL[name]()
    result = model.load_state_dict(rtx.load(DATA / f"{name}.pth"))
    assert not result.missing_keys and not result.unexpected_keys
    model.eval()
    ref = np.load(DATA / f"{name}.npz")
    with rtx.no_grad():
        out = model(rtx.from_numpy(ref["input"])).numpy()
    np.testing.assert_allclose(out, ref["output"], rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not os.environ.get("RTX_TORCH_PYTHON"), reason="set RTX_TORCH_PYTHON to a Python with torch")
def test_full_size_pytorch_checkpoints_live(tmp_path):
    subprocess.run([os.environ["RTX_TORCH_PYTHON"], str(DATA / "make_torch_fixtures.py"), "--live", str(tmp_path)],
                   check=True, env={**os.environ, "PYTHONPATH": ""})
    for name in ("resnet18", "mobilenet_v2"):
        model = M.get_model(name)
        model.load_state_dict(rtx.load(tmp_path / f"{name}.pth"))
        model.eval()
        ref = np.load(tmp_path / f"{name}.npz")
        with rtx.no_grad():
            out = model(rtx.from_numpy(ref["input"])).numpy()
        np.testing.assert_allclose(out, ref["output"], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name,shape", [
    ("resnet18", (2, 3, 32, 32)), ("resnet34", (1, 3, 32, 32)), ("resnet50", (1, 3, 32, 32)),
    ("mobilenet_v2", (2, 3, 32, 32)), ("efficientnet_b0", (1, 3, 32, 32)), ("vit_t_16", (1, 3, 224, 224)),
    ("vit_s_16", (1, 3, 224, 224)),
])
def test_output_shape(name, shape):
    model = M.get_model(name, num_classes=7).eval()
    with rtx.no_grad():
        assert tuple(model(rtx.randn(*shape)).shape) == (shape[0], 7)


@pytest.mark.parametrize("name", ["vgg11_bn", "vgg16_bn"])
def test_vgg_output_shape(name):
    with _no_init():
        model = M.get_model(name, num_classes=7).eval()
    for p in model.parameters():
        p.data.fill_(1e-3)   # definite values without drawing 138M random numbers
    with rtx.no_grad():
        out = model(rtx.randn(1, 3, 32, 32))
    assert tuple(out.shape) == (1, 7) and bool(rtx.isfinite(out).all())


def test_lenet_shape_and_input_check():
    model = M.lenet()
    assert tuple(model(rtx.randn(3, 1, 32, 32)).shape) == (3, 10)
    with pytest.raises(ValueError, match="32, 32"):
        model(rtx.randn(3, 1, 28, 28))


def test_resnet_trains_every_parameter():
    rtx.manual_seed(0)
    model = M.resnet18(num_classes=10, _width=8)
    loss = rtx.nn.functional.cross_entropy(model(rtx.randn(4, 3, 32, 32)), rtx.tensor([0, 1, 2, 3]))
    loss.backward()
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in model.parameters())


def test_zero_init_residual_and_initialisation():
    model = M.resnet18(zero_init_residual=True)
    assert float(model.layer1[0].bn2.weight.abs().sum()) == 0
    assert float(model.bn1.weight.sum()) == 64 and float(model.bn1.bias.abs().sum()) == 0
    # kaiming_normal_(fan_out, relu): std = sqrt(2 / (64 * 7 * 7))
    assert abs(float(model.conv1.weight.std()) - (2 / (64 * 49)) ** 0.5) < 2e-3


def test_vit_head_starts_at_zero_and_checks_image_size():
    model = M.vit_t_16(image_size=32, num_classes=3)
    assert float(model.heads.head.weight.abs().sum()) == 0
    with pytest.raises(ValueError, match="Expected 32 but got 64"):
        model(rtx.randn(1, 3, 64, 64))
    with pytest.raises(ValueError, match="indivisible"):
        M.vit_t_16(image_size=30)


def test_errors():
    with pytest.raises(ValueError, match="downloads no pretrained weights"):
        M.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="Unknown model 'resnet19'"):
        M.get_model("resnet19")
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        M.resnet18(groups=2)
    with pytest.raises(ValueError, match="stride should be 1 or 2"):
        M.InvertedResidual(8, 8, 3, 6)
    assert "resnet18" in M.list_models() and "vit_t_16" in M.list_models()


def test_no_init_restores_initialisation():
    with _no_init():
        pass
    rtx.manual_seed(0)
    w = M.lenet().conv1.weight
    assert float(w.abs().sum()) > 0 and bool(rtx.isfinite(w).all())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
