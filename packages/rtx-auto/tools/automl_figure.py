"""The issue's AutoML figure: AutoClassifier(time_budget=120) on scikit-learn's digits and breast cancer, scored
on a held-out 25% (stratified, random_state=0) never seen by the search.

    nice -n 10 .venv/bin/python packages/rtx-auto/tools/automl_figure.py [--budget 120]"""
import argparse
import time

from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split

from rtx.auto import AutoClassifier

ap = argparse.ArgumentParser()
ap.add_argument("--budget", type=float, default=120.0)
ap.add_argument("--verbose", type=int, default=0)
args = ap.parse_args()
for name, load in [("digits", load_digits), ("breast_cancer", load_breast_cancer)]:
    X, y = load(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    t = time.perf_counter()
    clf = AutoClassifier(time_budget=args.budget, random_state=0, verbose=args.verbose).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    lb = clf.leaderboard()
    members = ", ".join(f"{r['model']}:{r['weight']:.2f}" for r in lb[1:] if r["weight"] > 0)
    print(f"{name}: held-out accuracy {clf.score(Xte, yte):.4f}  fit {fit_s:.1f}s (budget {args.budget:.0f}s)  "
          f"{len(lb) - 1} candidates, cv ensemble {lb[0]['score']:.4f}, best single {lb[1]['model']} "
          f"{lb[1]['score']:.4f}; ensemble {members}", flush=True)
