#!/usr/bin/env python3
"""Vision benchmarks (issue: rtx-vision): ResNet-18 (torchvision's architecture, 1000 classes)
forward+backward at batch 8 on 64x64 images, and inference alone, with lib = rtx and lib = torch
(CPU) in one invocation. rtx runs rtx.vision.models.resnet18; PyTorch (which has no torchvision
in its side venv) runs the same architecture written below with torch.nn, module for module.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/vision.py \\
        --torch-python /work/torch-venv/bin/python

The "cpu" rows time the same calls in process CPU time (summed over threads) instead of wall
time: on a shared machine, where a descheduled process loses wall time but not CPU time, they
are the steadier figure for one-thread runs (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1); with
more threads they count spinning and waiting threads too, so compare wall time there.
"""
import os
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402


def _plain_resnet18(lib):
    """torchvision's resnet18, written with the PyTorch API (for lib = torch)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cfg, layers, inplanes = [(64, 1), (128, 2), (256, 2), (512, 2)], [], 64
            for planes, stride in cfg:
                layers.append(nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)))
                inplanes = planes
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet18()


def _resnet18(lib):
    lib.manual_seed(0)
    if lib.__name__ == "rtx":
        import rtx.vision.models as models
        return models.resnet18()
    return _plain_resnet18(lib)


def _train_step(lib):
    model = _resnet18(lib).train()
    x = lib.randn(8, 3, 64, 64)
    y = lib.randint(0, 1000, (8,))
    F = lib.nn.functional

    def step():
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
    return step


def _inference(lib):
    model = _resnet18(lib).eval()
    x = lib.randn(8, 3, 64, 64)

    def run():
        with lib.no_grad():
            model(x)
    return run


def _cpu_best_of(fn, repeat=5, number=5):
    """best_of in process CPU time: the least CPU one call took, over `repeat` runs of `number`."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number


def resnet18_fwd_bwd(lib):
    return best_of(_train_step(lib), repeat=5, min_time=0.5)


def resnet18_inference(lib):
    return best_of(_inference(lib), repeat=5, min_time=0.5)


def resnet18_fwd_bwd_cpu(lib):
    return _cpu_best_of(_train_step(lib))


def resnet18_inference_cpu(lib):
    return _cpu_best_of(_inference(lib), number=10)


WORKLOADS = {
    "resnet18 b8 64x64 fwd+bwd": resnet18_fwd_bwd,
    "resnet18 b8 64x64 inference": resnet18_inference,
    "resnet18 b8 64x64 fwd+bwd cpu": resnet18_fwd_bwd_cpu,
    "resnet18 b8 64x64 inference cpu": resnet18_inference_cpu,
}

if __name__ == "__main__":
    main(WORKLOADS, __doc__)
