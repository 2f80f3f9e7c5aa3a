"""`rtx vision train`: ResNet-18 on scikit-learn's digits, end to end.

The model is torchvision's resnet18 with the stem adapted to small one-channel images, the
change people make for CIFAR: conv1 becomes a 3x3 stride-1 convolution from 1 channel and the
max pool goes, so the 4 stages see 12x12, 6x6, 3x3 and 2x2 maps instead of shrinking a small
image to nothing. The 8x8 digits are upscaled to 12x12 (bilinear) and augmented with random
crops (shifts of up to 1 pixel) and rotations (up to 10 degrees); measured choices are in the
README.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.data import DataLoader
from rtx.vision import transforms as T
from rtx.vision.datasets import Digits
from rtx.vision.models.resnet import BasicBlock, ResNet

IMAGE_SIZE = 12
MEAN, STD = (0.5,), (0.5,)


def digits_resnet18(num_classes=10, width=64):
    """resnet18 with the small-image stem: 3x3 stride-1 conv1 from 1 channel, no max pool."""
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, _width=width)
    model.conv1 = nn.Conv2d(1, width, kernel_size=3, stride=1, padding=1, bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    model.maxpool = nn.Identity()
    return model


def train_transform(size=IMAGE_SIZE, generator=None):
    return T.Compose([
        T.Resize(size),
        T.RandomCrop(size, padding=max(1, size // 12), generator=generator),
        T.RandomRotation(10, interpolation=T.InterpolationMode.BILINEAR, generator=generator),
        T.ToTensor(),
        T.Normalize(MEAN, STD),
    ])


def eval_transform(size=IMAGE_SIZE):
    return T.Compose([T.Resize(size), T.ToTensor(), T.Normalize(MEAN, STD)])


@dataclass
class Result:
    accuracy: float
    seconds: float
    epochs: int
    parameters: int
    path: str
    history: list = field(default_factory=list)


def evaluate(model, loader, device):
    """(accuracy, predictions as a NumPy array) over a loader of (images, labels)."""
    model.eval()
    correct, total, preds = 0, 0, []
    with rtx.no_grad():
        for x, y in loader:
            p = model(x.to(device)).argmax(1).cpu()
            preds.append(p.numpy())
            correct += int((p == y).sum().item())
            total += len(y)
    return correct / total, np.concatenate(preds)


def train(epochs=6, seed=0, out="digits_resnet18.safetensors", device="cpu", width=64, batch_size=64, lr=2e-3,
          image_size=IMAGE_SIZE, progress=True, log=print):
    """Train, evaluate on the held-out digits after each epoch, save a checkpoint (rtx.save) with
    the weights and what is needed to rebuild the model. Returns a Result."""
    rtx.manual_seed(seed)
    gen = rtx.Generator().manual_seed(seed)
    train_set = Digits(train=True, transform=train_transform(image_size, gen))
    test_set = Digits(train=False, transform=eval_transform(image_size))
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                              generator=rtx.Generator().manual_seed(seed))
    test_loader = DataLoader(test_set, batch_size=256)
    model = digits_resnet18(width=width).to(device)
    optimizer = rtx.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    steps = epochs * len(train_loader)
    scheduler = rtx.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    history = []
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        total, seen = 0.0, 0
        batches = train_loader
        if progress:
            from tqdm import tqdm
            batches = tqdm(train_loader, desc=f"epoch {epoch}/{epochs}", unit="batch", leave=False)
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(y)
            seen += len(y)
            if progress:
                batches.set_postfix(loss=f"{total / seen:.4f}")
        acc, _ = evaluate(model, test_loader, device)
        history.append({"epoch": epoch, "loss": total / seen, "test_accuracy": acc})
        log(f"epoch {epoch:2d}  loss {total / seen:.4f}  test accuracy {acc * 100:.2f}%  "
            f"({time.perf_counter() - start:.0f} s)")
    seconds = time.perf_counter() - start
    accuracy = history[-1]["test_accuracy"]
    save_checkpoint(model, out, width=width, image_size=image_size, epochs=epochs, seed=seed, accuracy=accuracy)
    parameters = sum(p.numel() for p in model.parameters())
    return Result(accuracy, seconds, epochs, parameters, out, history)


def save_checkpoint(model, path, **config):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    rtx.save({"model": "digits_resnet18", "config": config, "state_dict": model.state_dict()}, path)


def load_checkpoint(path, device="cpu"):
    """(model in eval mode, config) from a checkpoint that `rtx vision train` wrote."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path}; make one with: rtx vision train --out {path}")
    ckpt = rtx.load(path, map_location=device)
    if not isinstance(ckpt, dict) or ckpt.get("model") != "digits_resnet18":
        raise ValueError(f"{path} is not a checkpoint written by `rtx vision train` (expected a dict with "
                         f"model='digits_resnet18')")
    config = ckpt["config"]
    model = digits_resnet18(width=int(config["width"]))
    model.load_state_dict(ckpt["state_dict"])
    return model.to(device).eval(), config
