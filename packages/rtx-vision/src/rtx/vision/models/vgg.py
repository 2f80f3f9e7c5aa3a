"""VGG (Simonyan and Zisserman, 2014) as torchvision.models.vgg: `features` (conv/BN/ReLU/pool in
one Sequential), `avgpool` to 7x7 and a three-layer `classifier`; the same state_dict keys
(features.0.weight, ..., classifier.6.bias) and initialisation."""
from __future__ import annotations

import rtx
import rtx.nn as nn
from rtx.vision.models._utils import _check_weights

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(rtx.flatten(x, 1))


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm else \
                [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(name, cfg, batch_norm, weights, progress, **kwargs):
    _check_weights(name, weights, progress)
    return VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)


def vgg11(*, weights=None, progress=True, **kwargs):
    """VGG-11 (configuration A); 132,863,336 parameters."""
    return _vgg("vgg11", "A", False, weights, progress, **kwargs)


def vgg11_bn(*, weights=None, progress=True, **kwargs):
    """VGG-11 with batch normalization; 132,868,840 parameters."""
    return _vgg("vgg11_bn", "A", True, weights, progress, **kwargs)


def vgg13(*, weights=None, progress=True, **kwargs):
    """VGG-13 (configuration B); 133,047,848 parameters."""
    return _vgg("vgg13", "B", False, weights, progress, **kwargs)


def vgg13_bn(*, weights=None, progress=True, **kwargs):
    """VGG-13 with batch normalization; 133,053,736 parameters."""
    return _vgg("vgg13_bn", "B", True, weights, progress, **kwargs)


def vgg16(*, weights=None, progress=True, **kwargs):
    """VGG-16 (configuration D); 138,357,544 parameters."""
    return _vgg("vgg16", "D", False, weights, progress, **kwargs)


def vgg16_bn(*, weights=None, progress=True, **kwargs):
    """VGG-16 with batch normalization; 138,365,992 parameters."""
    return _vgg("vgg16_bn", "D", True, weights, progress, **kwargs)


def vgg19(*, weights=None, progress=True, **kwargs):
    """VGG-19 (configuration E); 143,667,240 parameters."""
    return _vgg("vgg19", "E", False, weights, progress, **kwargs)


def vgg19_bn(*, weights=None, progress=True, **kwargs):
    """VGG-19 with batch normalization; 143,678,248 parameters."""
    return _vgg("vgg19_bn", "E", True, weights, progress, **kwargs)
