"""Diagnostics behind the README's FNO Burgers paragraph: the same training loop as rtx.science.examples.fno_burgers
with the data scaling and the schedule as switches, evaluating a training subset and the test set alike.

    python packages/rtx-science/tools/fno_diagnostics.py ablation            # 200/100 samples, 256 points, 20 epochs
    python packages/rtx-science/tools/fno_diagnostics.py old --epochs 16     # the pre-fix loop, full size, eval every 4
"""
import argparse
import time

import numpy as np

import rtx
import rtx.optim as optim
from rtx.science.examples.fno_burgers import train_epoch
from rtx.science.operators import FNO1d, burgers_1d, grf_1d, relative_l2


def run(u0, uT, n_train, epochs, scale, schedule, eval_every=0, batch=20):
    t0 = time.time()
    sx, sy = (np.sqrt(np.mean(u0[:n_train] ** 2)), np.sqrt(np.mean(uT[:n_train] ** 2))) if scale else (1.0, 1.0)
    x, y = (rtx.tensor(a[..., None] / s, dtype=rtx.float32) for a, s in ((u0, sx), (uT, sy)))
    rtx.manual_seed(0)
    model = FNO1d(modes=16, width=64, layers=4)
    opt = optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = (optim.lr_scheduler.StepLR(opt, max(1, epochs // 5), 0.5) if schedule == "step"
             else optim.lr_scheduler.CosineAnnealingLR(opt, epochs))
    rng = np.random.default_rng(0)

    def evaluate():
        with rtx.no_grad():
            return (float(relative_l2(model(x[:200]), y[:200])), float(relative_l2(model(x[n_train:]), y[n_train:])))

    for epoch in range(epochs):
        train_loss = train_epoch(model, opt, x, y, n_train, batch, rng)
        sched.step()
        if eval_every and (epoch + 1) % eval_every == 0:
            tr, te = evaluate()
            print(f"  epoch {epoch + 1}: train epoch mean {train_loss:.2e}, eval train[:200] {tr:.2e}, "
                  f"test {te:.2e}", flush=True)
    tr, te = evaluate()
    print(f"scale={scale} schedule={schedule}: test {te:.3e}, train[:200] {tr:.3e} ({time.time() - t0:.0f} s)",
          flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["ablation", "old"])
    p.add_argument("--epochs", type=int, default=None)
    a = p.parse_args()
    if a.what == "ablation":
        n_train, n_test, n, epochs = 200, 100, 256, a.epochs or 20
    else:
        n_train, n_test, n, epochs = 1000, 200, 1024, a.epochs or 16
    u0 = grf_1d(n_train + n_test, n, seed=0)
    uT = burgers_1d(u0, nu=0.1, dt=min(1e-3, 1.0 / n))
    if a.what == "ablation":
        for scale in (False, True):
            for schedule in ("step", "cosine"):
                run(u0, uT, n_train, epochs, scale, schedule)
    else:
        # StepLR every epochs // 5 as the old example did at 40 epochs: pass --epochs 40 for its exact schedule
        run(u0, uT, n_train, epochs, False, "step", eval_every=4)


if __name__ == "__main__":
    main()
