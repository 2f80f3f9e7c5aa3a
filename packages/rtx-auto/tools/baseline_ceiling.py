"""The ceiling a practitioner's plain scikit-learn baselines reach on the AutoML figure's held-out splits
(25% stratified, random_state = split, the same as automl_figure.py): each baseline is fitted on the 75% and
scored on the held-out 25%, nothing tuned, so the figure shows what the data allows without search.

    nice -n 5 .venv/bin/python packages/rtx-auto/tools/baseline_ceiling.py [--splits 0,1,2,3,4,5,6,7,8,9]
        [--datasets breast_cancer,digits]"""
import argparse

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

BASELINES = {
    "std+logreg C=1": lambda: make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)),
    "std+svc rbf": lambda: make_pipeline(StandardScaler(), SVC()),
    "std+knn 5": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier()),
    "rf 300": lambda: RandomForestClassifier(300, random_state=0),
    "hgb": lambda: HistGradientBoostingClassifier(random_state=0),
}

ap = argparse.ArgumentParser()
ap.add_argument("--splits", default="0,1,2,3,4,5,6,7,8,9")
ap.add_argument("--datasets", default="breast_cancer,digits")
args = ap.parse_args()
splits = [int(s) for s in args.splits.split(",")]
loaders = {"digits": load_digits, "breast_cancer": load_breast_cancer}
for name in args.datasets.split(","):
    X, y = loaders[name](return_X_y=True)
    print(f"{name}: held-out accuracy per split {splits}")
    for label, make in BASELINES.items():
        accs = []
        for split in splits:
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=split, stratify=y)
            accs.append(make().fit(Xtr, ytr).score(Xte, yte))
        print(f"  {label:16s} {' '.join(f'{a * 100:6.2f}' for a in accs)}  mean {np.mean(accs) * 100:6.2f} +- "
              f"{np.std(accs, ddof=1) * 100:.2f}%  (first 3: {np.mean(accs[:3]) * 100:6.2f}%)", flush=True)
