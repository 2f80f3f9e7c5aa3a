"""`rtx vision show`: a grid of test digits with the checkpoint's predictions, drawn with
matplotlib (Agg backend: no display needed) into a PNG."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.vision.datasets import Digits
from rtx.vision.train import eval_transform, load_checkpoint


def show(checkpoint, out, rows=6, cols=8, device="cpu", seed=0):
    """Draw rows x cols random test digits, titled "pred (true)", wrong ones in red.
    Returns {"shown", "wrong", "path"}."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    model, config = load_checkpoint(checkpoint, device)
    size = int(config.get("image_size", 12))
    raw = Digits(train=False)
    tf = eval_transform(size)
    n = min(rows * cols, len(raw))
    picks = np.sort(np.random.default_rng(seed).choice(len(raw), size=n, replace=False))
    images = [raw[int(i)][0] for i in picks]
    labels = [raw[int(i)][1] for i in picks]
    with rtx.no_grad():
        x = rtx.stack([tf(img) for img in images]).to(device)
        pred = model(x).argmax(1).cpu().numpy()
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.2, rows * 1.4))
    wrong = 0
    for k, ax in enumerate(np.atleast_1d(axes).ravel()):
        ax.axis("off")
        if k >= n:
            continue
        ok = int(pred[k]) == labels[k]
        wrong += not ok
        ax.imshow(np.asarray(images[k]), cmap="gray_r", interpolation="nearest")
        ax.set_title(f"{pred[k]}" + ("" if ok else f" ({labels[k]})"), color="black" if ok else "red", fontsize=10)
    fig.suptitle(f"predicted label (true label when wrong): {n - wrong}/{n} right", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return {"shown": n, "wrong": wrong, "path": out}
