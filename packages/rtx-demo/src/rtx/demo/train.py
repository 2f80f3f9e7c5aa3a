"""Train DigitsCNN on scikit-learn's digits (1,797 8x8 images, bundled: no download)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

import rtx
import rtx.nn as nn
from rtx.demo.model import DigitsCNN
from rtx.utils.data import DataLoader, TensorDataset


@dataclass
class Result:
    accuracy: float
    seconds: float
    parameters: int
    file_bytes: int
    path: str
    history: list


def digits_tensors(seed=0, test_fraction=0.2):
    """(x_train, y_train, x_test, y_test): images scaled to [0, 1], shape (N, 1, 8, 8)."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = perm[:n_test], perm[n_test:]
    return rtx.from_numpy(x[train]), rtx.from_numpy(y[train]), rtx.from_numpy(x[test]), rtx.from_numpy(y[test])


def evaluate(model, x, y, device, batch_size=512):
    model.eval()
    correct = 0
    preds = []
    with rtx.no_grad():
        for i in range(0, len(y), batch_size):
            p = model(x[i:i + batch_size].to(device)).argmax(1).cpu()
            preds.append(p)
            correct += int((p == y[i:i + batch_size]).sum().item())
    return correct / len(y), rtx.cat(preds)


def train(epochs=15, device="cpu", out="digits_cnn.safetensors", seed=0, lr=6e-3, batch_size=32,
          progress=True, log=print):
    rtx.manual_seed(seed)
    x_train, y_train, x_test, y_test = digits_tensors(seed)
    model = DigitsCNN().to(device)
    optimizer = rtx.optim.Adam(model.parameters(), lr=lr)
    scheduler = rtx.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=True,
                        generator=rtx.Generator().manual_seed(seed))
    history = []
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        total, seen = 0.0, 0
        batches = loader
        if progress:
            from tqdm import tqdm
            batches = tqdm(loader, desc=f"epoch {epoch}/{epochs}", leave=False, unit="batch")
        for xb, yb in batches:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(yb)
            seen += len(yb)
        scheduler.step()
        acc, _ = evaluate(model, x_test, y_test, device)
        history.append((total / seen, acc))
        log(f"epoch {epoch:2d}  loss {total / seen:.4f}  test accuracy {acc * 100:.2f}%")
    seconds = time.perf_counter() - start
    accuracy, predictions = evaluate(model, x_test, y_test, device)

    rtx.save(model.state_dict(), out)
    reloaded = DigitsCNN()
    reloaded.load_state_dict(rtx.load(out, map_location="cpu"))
    reloaded.to(device)
    _, again = evaluate(reloaded, x_test, y_test, device)
    if not bool((again == predictions).all()):
        raise RuntimeError(f"the model reloaded from {out} predicts differently from the trained one")
    parameters = sum(p.numel() for p in model.parameters())
    return Result(accuracy, seconds, parameters, os.path.getsize(out), out, history)
