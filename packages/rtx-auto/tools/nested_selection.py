"""How the final-model rules compare without touching the figure's held-out test rows: inside each outer training
split (75% of the data, random_state = split, as automl_figure.py), an inner stratified 75/25 split (random_state =
100 + split); AutoClassifier searches the inner 75% once and the four ways to turn its candidates into a model are
scored on the inner 25%: the Caruana ensemble of fold-model bags (the earlier default), the same refitted on all
inner training rows, the one-standard-error pick bagged, and refitted (the default now).

    nice -n 5 env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python \\
        packages/rtx-auto/tools/nested_selection.py [--budget 30] [--splits 0,1,2,3,4] [--dataset breast_cancer]"""
import argparse

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

from rtx.auto import AutoClassifier

ap = argparse.ArgumentParser()
ap.add_argument("--budget", type=float, default=30.0)
ap.add_argument("--splits", default="0,1,2,3,4")
ap.add_argument("--dataset", default="breast_cancer")
args = ap.parse_args()
X, y = {"digits": load_digits, "breast_cancer": load_breast_cancer}[args.dataset](return_X_y=True)
rules = ["ensemble bagged", "ensemble refit", "one-SE bagged", "one-SE refit"]
acc = {r: [] for r in rules}
for split in [int(s) for s in args.splits.split(",")]:
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.25, random_state=split, stratify=y)   # the test part unused
    Xa, Xb, ya, yb = train_test_split(Xtr.astype(np.float32), ytr, test_size=0.25, random_state=100 + split,
                                      stratify=ytr)
    clf = AutoClassifier(time_budget=args.budget, one_se_rule=True, refit=False, random_state=0).fit(Xa, ya)

    def proba(c, refit, clf=clf, Xa=Xa, ya=ya, Xb=Xb):
        models = [clone(c["pipeline"]).fit(Xa, clf._le.transform(ya))] if refit else c["models"]
        return np.mean([clf._oof(m, Xb) for m in models], axis=0)

    ens = [c for c in clf.candidates_ if c["caruana_weight"] > 0]
    pick = [c for c in clf.candidates_ if c["weight"] > 0]
    for rule, members, key, refit in [("ensemble bagged", ens, "caruana_weight", False),
                                      ("ensemble refit", ens, "caruana_weight", True),
                                      ("one-SE bagged", pick, "weight", False), ("one-SE refit", pick, "weight", True)]:
        P = sum(c[key] * proba(c, refit) for c in members)
        acc[rule].append(float(np.mean(clf.classes_[P.argmax(1)] == yb)))
    print(f"split {split}: one-SE picked {clf.selected_} {clf.one_se_}; "
          + ", ".join(f"{r} {acc[r][-1] * 100:.2f}" for r in rules), flush=True)
for r in rules:
    print(f"{r:16s} mean {np.mean(acc[r]) * 100:.2f}% over inner held-out sets "
          f"({' '.join(f'{a * 100:.2f}' for a in acc[r])})")
