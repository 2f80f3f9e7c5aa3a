"""The issue's ASHA figure: a random search over an rtx MLP's learning rate and width on digits (validation
accuracy, up to --epochs epochs a trial), run twice with the same seeded sampler (so the same configurations in
the same order): once with pruner="asha" (Optuna's SuccessiveHalvingPruner), once without pruning. Prints the
epochs each search trained and the best validation accuracy of each.

    nice -n 10 .venv/bin/python packages/rtx-auto/tools/asha_figure.py [--trials 24 --epochs 27]"""
import argparse
import time

import numpy as np
import optuna
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import rtx
import rtx.nn as nn
import rtx.optim as optim
from rtx.auto import tune

ap = argparse.ArgumentParser()
ap.add_argument("--trials", type=int, default=24)
ap.add_argument("--epochs", type=int, default=27)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
optuna.logging.set_verbosity(optuna.logging.WARNING)

X, y = load_digits(return_X_y=True)
X = (X / 16.0).astype(np.float32)
Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
Xva_t = rtx.tensor(Xva)
SPACE = {"lr": ("loguniform", 1e-4, 3e-1), "width": ("int", 4, 256)}


def make_objective(counter):
    def objective(trial):
        rtx.manual_seed(trial.number)   # trial k of both searches trains the same net from the same start
        net = nn.Sequential(nn.Linear(64, trial["width"]), nn.ReLU(), nn.Linear(trial["width"], 10))
        opt = optim.SGD(net.parameters(), lr=trial["lr"], momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        rng = np.random.default_rng(trial.number)
        acc = 0.0
        for epoch in range(args.epochs):
            net.train()
            for idx in np.array_split(rng.permutation(len(Xtr)), len(Xtr) // 64):
                opt.zero_grad()
                loss_fn(net(rtx.tensor(Xtr[idx])), rtx.tensor(ytr[idx].astype(np.int64))).backward()
                opt.step()
            counter[0] += 1
            net.eval()
            with rtx.no_grad():
                acc = 100.0 * float((net(Xva_t).numpy().argmax(1) == yva).mean())
            trial.report(acc, epoch)
            if trial.should_prune():
                trial.prune()
        return acc
    return objective


res = {}
for pruner in (None, "asha"):
    counter, t = [0], time.perf_counter()
    study = tune(make_objective(counter), SPACE, n_trials=args.trials, sampler="random", pruner=pruner,
                 direction="maximize", seed=args.seed)
    res[pruner] = (counter[0], study.best_value, study.best_params, time.perf_counter() - t)
    pruned = sum(tr.state == optuna.trial.TrialState.PRUNED for tr in study.trials)
    print(f"pruner={pruner}: {counter[0]} epochs, best val acc {study.best_value:.2f}% {study.best_params}, "
          f"{pruned} pruned, {res[pruner][3]:.0f}s", flush=True)
(e0, b0, _, _), (e1, b1, _, _) = res[None], res["asha"]
print(f"ASHA used {100 * e1 / e0:.1f}% of the epochs (<= 50%: {e1 <= 0.5 * e0}); best {b1:.2f}% vs {b0:.2f}% "
      f"(within 0.5 points: {b0 - b1 <= 0.5})")
