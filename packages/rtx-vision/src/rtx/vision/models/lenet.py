"""LeNet-5 (LeCun et al., 1998) in the form of PyTorch's "Neural Networks" tutorial (torchvision
has no LeNet): conv1 (1->6, 5x5), 2x2 max pool, conv2 (6->16, 5x5), 2x2 max pool, fc1 (400->120),
fc2 (120->84), fc3 (84->classes), ReLU between. Input 32x32 (pad 28x28 MNIST images by 2, e.g.
transforms.Pad(2)); 61,706 parameters with 10 classes."""
from __future__ import annotations

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.vision.models._utils import _check_weights

__all__ = ["LeNet", "lenet"]


class LeNet(nn.Module):
    def __init__(self, num_classes=10, in_channels=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        if x.dim() != 4 or tuple(x.shape[-2:]) != (32, 32):
            raise ValueError(f"LeNet expects images of shape (N, C, 32, 32), got {tuple(x.shape)}; "
                             "pad 28x28 images with transforms.Pad(2)")
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = rtx.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def lenet(*, weights=None, progress=True, **kwargs):
    """LeNet-5; 61,706 parameters with 10 classes and one input channel."""
    _check_weights("lenet", weights, progress)
    return LeNet(**kwargs)
