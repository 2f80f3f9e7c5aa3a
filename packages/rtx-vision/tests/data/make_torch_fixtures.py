"""Writes the PyTorch-made fixtures the model tests read. Run once with a real torch (CPU wheel,
side venv; torchvision is not needed and not used):

    /work/torch-venv/bin/python packages/rtx-vision/tests/data/make_torch_fixtures.py

The architectures below are torchvision's (torchvision/models/{resnet,mobilenetv2,efficientnet,
vision_transformer}.py and torchvision/ops/misc.py), written out in plain torch.nn with the same
module names, so their state_dict keys are torchvision's. Files written next to this script:

- torchvision_keys.json: for full-size resnet18, resnet50 and mobilenet_v2, every state_dict key
  with its shape and dtype (a few KB instead of 45 MB of weights);
- <name>.pth + <name>.npz for small variants (LeNet, a width-8 ResNet-18, a width-4 ResNet-50,
  MobileNetV2 x0.25, EfficientNet at width/depth 0.25, a 2-layer ViT): random weights and random
  BatchNorm statistics, eval mode; the .npz holds an input and PyTorch's output for it.

`--live DIR` writes full-size resnet18.pth / mobilenet_v2.pth and their .npz into DIR instead;
test_models.py runs that when RTX_TORCH_PYTHON names a Python with torch.
"""
import argparse
import copy
import json
import math
import os
import sys
from collections import OrderedDict
from functools import partial

import numpy as np
import torch
from torch import nn


# ---- torchvision.ops.misc ---------------------------------------------------------------------
class Conv2dNormActivation(nn.Sequential):
    def __init__(self, cin, cout, kernel_size=3, stride=1, padding=None, groups=1, norm_layer=nn.BatchNorm2d,
                 activation_layer=nn.ReLU):
        if padding is None:
            padding = (kernel_size - 1) // 2
        layers = [nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=norm_layer is None)]
        if norm_layer is not None:
            layers.append(norm_layer(cout))
        if activation_layer is not None:
            layers.append(activation_layer(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, cin, csq, activation=nn.ReLU):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(cin, csq, 1)
        self.fc2 = nn.Conv2d(csq, cin, 1)
        self.activation = activation()
        self.scale_activation = nn.Sigmoid()

    def forward(self, x):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return s * x


def _make_divisible(v, divisor, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


# ---- LeNet (PyTorch tutorial) -------------------------------------------------------------------
class LeNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        F = nn.functional
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))))


# ---- ResNet -----------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, width=64):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], 2)
        self.layer3 = self._make_layer(block, 4 * width, layers[2], 2)
        self.layer4 = self._make_layer(block, 8 * width, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- MobileNetV2 ------------------------------------------------------------------------------
class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, 1, activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden, activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0):
        super().__init__()
        setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                   [6, 320, 1, 1]]
        cin = _make_divisible(32 * width_mult, 8)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), 8)
        features = [Conv2dNormActivation(3, cin, stride=2, activation_layer=nn.ReLU6)]
        for t, c, n, s in setting:
            cout = _make_divisible(c * width_mult, 8)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(Conv2dNormActivation(cin, self.last_channel, 1, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---- EfficientNet -----------------------------------------------------------------------------
class MBConvConfig:
    def __init__(self, expand_ratio, kernel, stride, cin, cout, num_layers, width_mult, depth_mult):
        self.expand_ratio, self.kernel, self.stride = expand_ratio, kernel, stride
        self.input_channels = _make_divisible(cin * width_mult, 8)
        self.out_channels = _make_divisible(cout * width_mult, 8)
        self.num_layers = int(math.ceil(num_layers * depth_mult))


class MBConv(nn.Module):
    def __init__(self, cnf):
        super().__init__()
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded = _make_divisible(cnf.input_channels * cnf.expand_ratio, 8)
        layers = []
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, 1, activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, cnf.kernel, cnf.stride, groups=expanded,
                                           activation_layer=nn.SiLU))
        layers.append(SqueezeExcitation(expanded, max(1, cnf.input_channels // 4), activation=partial(nn.SiLU,
                                                                                                      inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, 1, activation_layer=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        out = self.block(x)  # stochastic depth is the identity in eval mode
        return out + x if self.use_res_connect else out


class EfficientNet(nn.Module):
    def __init__(self, width_mult, depth_mult, num_classes=1000):
        super().__init__()
        conf = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
        setting = [conf(1, 3, 1, 32, 16, 1), conf(6, 3, 2, 16, 24, 2), conf(6, 5, 2, 24, 40, 2),
                   conf(6, 3, 2, 40, 80, 3), conf(6, 5, 1, 80, 112, 3), conf(6, 5, 2, 112, 192, 4),
                   conf(6, 3, 1, 192, 320, 1)]
        layers = [Conv2dNormActivation(3, setting[0].input_channels, 3, 2, activation_layer=nn.SiLU)]
        for cnf in setting:
            stage = []
            for _ in range(cnf.num_layers):
                c = copy.copy(cnf)
                if stage:
                    c.input_channels, c.stride = c.out_channels, 1
                stage.append(MBConv(c))
            layers.append(nn.Sequential(*stage))
        last_in = setting[-1].out_channels
        layers.append(Conv2dNormActivation(last_in, 4 * last_in, 1, activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(4 * last_in, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# ---- Vision Transformer -----------------------------------------------------------------------
class MLPBlock(nn.Sequential):
    def __init__(self, dim, mlp_dim):
        super().__init__(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp_dim, dim),
                         nn.Dropout(0.0))


class EncoderBlock(nn.Module):
    def __init__(self, heads, dim, mlp_dim):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = MLPBlock(dim, mlp_dim)

    def forward(self, inp):
        x = self.ln_1(inp)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + inp
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq, layers, heads, dim, mlp_dim):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq, dim).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", EncoderBlock(heads, dim, mlp_dim))
                                                for i in range(layers)))
        self.ln = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, num_classes=1000):
        super().__init__()
        self.patch_size, self.hidden_dim = patch_size, hidden_dim
        self.conv_proj = nn.Conv2d(3, hidden_dim, patch_size, patch_size)
        seq = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq, num_layers, num_heads, hidden_dim, mlp_dim)
        self.heads = nn.Sequential(OrderedDict(head=nn.Linear(hidden_dim, num_classes)))

    def forward(self, x):
        n, _, h, w = x.shape
        x = self.conv_proj(x).reshape(n, self.hidden_dim, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


# ---- writing ----------------------------------------------------------------------------------
def randomize(model, seed):
    """Random weights everywhere (also BN affine and running statistics), so eval mode is not
    an identity and every parameter matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if t.dtype.is_floating_point:
                if name.endswith("running_var"):
                    t.copy_(torch.rand(t.shape, generator=g) + 0.5)
                elif t.ndim > 1:
                    fan_in = max(1, t[0].numel())
                    t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(fan_in))
                else:
                    t.copy_(torch.randn(t.shape, generator=g) * 0.2 + (1.0 if name.endswith(".weight") else 0.0))
    return model.eval()


SMALL = {
    "lenet": (lambda: LeNet(10), (2, 1, 32, 32)),
    "resnet18_w8": (lambda: ResNet(BasicBlock, [2, 2, 2, 2], 10, width=8), (2, 3, 32, 32)),
    "resnet50_w4": (lambda: ResNet(Bottleneck, [3, 4, 6, 3], 10, width=4), (2, 3, 32, 32)),
    "mobilenet_v2_x025": (lambda: MobileNetV2(10, width_mult=0.25), (2, 3, 32, 32)),
    "efficientnet_w025": (lambda: EfficientNet(0.25, 0.25, 10), (2, 3, 32, 32)),
    "vit_tiny_2layer": (lambda: VisionTransformer(32, 8, 2, 2, 32, 64, 10), (2, 3, 32, 32)),
}

FULL = {
    "resnet18": (lambda: ResNet(BasicBlock, [2, 2, 2, 2]), (1, 3, 64, 64)),
    "resnet50": (lambda: ResNet(Bottleneck, [3, 4, 6, 3]), (1, 3, 64, 64)),
    "mobilenet_v2": (lambda: MobileNetV2(), (1, 3, 64, 64)),
}


def write(name, make, shape, out, seed):
    torch.manual_seed(seed)
    model = randomize(make(), seed)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        y = model(x)
    torch.save(model.state_dict(), os.path.join(out, f"{name}.pth"))
    np.savez(os.path.join(out, f"{name}.npz"), input=x.numpy(), output=y.numpy())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--live", metavar="DIR", help="write full-size resnet18 and mobilenet_v2 fixtures into DIR")
    args = p.parse_args()
    if args.live:
        for name in ("resnet18", "mobilenet_v2"):
            make, shape = FULL[name]
            write(name, make, shape, args.live, seed=7)
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    keys = {}
    for name, (make, _) in FULL.items():
        keys[name] = [[k, list(v.shape), str(v.dtype).removeprefix("torch.")] for k, v in make().state_dict().items()]
    with open(os.path.join(here, "torchvision_keys.json"), "w") as f:
        json.dump({"torch": torch.__version__, "models": keys}, f, separators=(",", ":"))
    for i, (name, (make, shape)) in enumerate(SMALL.items()):
        write(name, make, shape, here, seed=100 + i)
    print("torch", torch.__version__, "wrote", ", ".join(SMALL), "and torchvision_keys.json to", here)
    return 0


if __name__ == "__main__":
    sys.exit(main())
