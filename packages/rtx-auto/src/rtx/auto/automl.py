"""AutoClassifier / AutoRegressor: tabular AutoML over rtx-classical under a time budget.

The search (Optuna TPE, each model family's default configuration tried first, cheapest families first)
scores every candidate pipeline (a scaler where the family needs one, standard or min-max as searched, + an
rtx-classical estimator)
by k-fold cross-validation (repeated with other shuffles on small data) and keeps its out-of-fold
predictions. Caruana ensemble selection (greedy
forward selection with replacement over the out-of-fold predictions) then weights the best, and each chosen
candidate predicts as the mean of its k fold models (AutoGluon's bagging): the budget covers the whole fit.

Two options, off by default: one_se_rule=True keeps the simplest model whose CV score is within one standard error
of the best (Breiman et al. 1984; ESL 7.10: a single default configuration before a tuned one, a linear model before
a kernel, tree or neural one, any single model before the ensemble); refit=True refits the chosen candidates on all
training rows when the budget allows. Off because, judged inside the training rows only (tools/nested_selection.py:
breast cancer, 10 outer training splits each split again 75/25, 120 s), the bagged Caruana ensemble scored 97.20% on
the inner held-out rows, refitted 97.01%, the one-SE pick 96.82% bagged and 96.73% refitted."""
from __future__ import annotations

import time
import warnings

import numpy as np
import optuna
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.metrics import (
    balanced_accuracy_score,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
    roc_auc_score,
)
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, MinMaxScaler, StandardScaler
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

import rtx.nn as nn

__all__ = ["AutoClassifier", "AutoRegressor", "caruana_ensemble"]


class MLP(nn.Module):
    """The rtx MLP the search trains through rtx-classical's NeuralNetClassifier/Regressor."""

    def __init__(self, in_features, out_features, hidden=128, layers=1, dropout=0.0):
        super().__init__()
        mods, d = [], in_features
        for _ in range(layers):
            mods += [nn.Linear(d, hidden), nn.ReLU(), nn.Dropout(dropout)]
            d = hidden
        mods.append(nn.Linear(d, out_features))
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)


# ---- metrics: name -> (function of (y, prediction) where higher is better, needs probabilities) ----

def _acc(y, P):
    # accuracy_score's value; its input checks cost ~0.1-3 ms a call, and ensemble selection makes thousands
    return float(np.mean(P.argmax(axis=1) == y))


def _bacc(y, P):
    return balanced_accuracy_score(y, P.argmax(axis=1))


def _nll(y, P):
    return -log_loss(y, np.clip(P, 1e-15, 1), labels=np.arange(P.shape[1]))


def _auc(y, P):
    return roc_auc_score(y, P[:, 1]) if P.shape[1] == 2 else roc_auc_score(y, P, multi_class="ovr")


CLASSIFICATION_METRICS = {"accuracy": _acc, "balanced_accuracy": _bacc, "log_loss": _nll, "roc_auc": _auc}
REGRESSION_METRICS = {"r2": r2_score,
                      "rmse": lambda y, p: -np.sqrt(mean_squared_error(y, p)),
                      "mae": lambda y, p: -mean_absolute_error(y, p)}


def caruana_ensemble(predictions, y, score, n_iter=50):
    """Caruana et al. (2004) ensemble selection: start empty, add (with replacement) the model whose addition
    gives the best score of the averaged prediction, n_iter times. Ties go to the lowest index. Returns the
    weights (counts / n_iter) and the score after each step."""
    preds = [np.asarray(p, dtype=np.float64) for p in predictions]
    if not preds:
        raise ValueError("caruana_ensemble needs at least one prediction, got none")
    counts = np.zeros(len(preds))
    ens = np.zeros_like(preds[0])
    trace = []
    for it in range(n_iter):
        scores = [score(y, (ens * it + p) / (it + 1)) for p in preds]
        best = int(np.argmax(scores))
        counts[best] += 1
        ens = (ens * it + preds[best]) / (it + 1)
        trace.append(scores[best])
    return counts / n_iter, trace


# ---- the search space: per family the estimator, whether it wants scaling, its default and its space ----

def _families(task, n_features, n_classes):
    import rtx.optim as optim
    from rtx.classical import ensemble, linear_model, naive_bayes, neighbors, neural, tree
    from rtx.classical.discriminant_analysis import LinearDiscriminantAnalysis
    out_dim = n_classes if task == "classification" else 1

    def mlp(p, seed):
        Net = neural.NeuralNetClassifier if task == "classification" else neural.NeuralNetRegressor
        return Net(MLP, module__in_features=n_features, module__out_features=out_dim,
                   module__hidden=p["hidden"], module__dropout=p["dropout"], optimizer=optim.Adam, lr=p["lr"],
                   max_epochs=p["epochs"], batch_size=64, random_state=seed)

    def mlp_space(t):
        return {"hidden": t.suggest_int("mlp__hidden", 32, 512, log=True),
                "lr": t.suggest_float("mlp__lr", 1e-4, 3e-2, log=True),
                "epochs": t.suggest_int("mlp__epochs", 10, 60),
                "dropout": t.suggest_float("mlp__dropout", 0.0, 0.5)}

    def rf_space(t):
        return {"n_estimators": t.suggest_int("rf__n_estimators", 50, 300, log=True),
                "max_features": t.suggest_categorical("rf__max_features", ["sqrt", "log2", 0.5, 1.0]),
                "min_samples_leaf": t.suggest_int("rf__min_samples_leaf", 1, 8)}

    def knn_space(t):
        return {"n_neighbors": t.suggest_int("knn__n_neighbors", 1, 40, log=True),
                "weights": t.suggest_categorical("knn__weights", ["uniform", "distance"])}

    def tree_space(t):
        return {"max_depth": t.suggest_int("tree__max_depth", 2, 32, log=True),
                "min_samples_leaf": t.suggest_int("tree__min_samples_leaf", 1, 16)}

    # name: (build(params, seed), scale, default params, space(trial)); listed roughly cheapest first
    F = {}
    if task == "classification":
        F["lda"] = (lambda p, s: LinearDiscriminantAnalysis(), True, {}, lambda t: {})
        F["gnb"] = (lambda p, s: naive_bayes.GaussianNB(var_smoothing=p["var_smoothing"]), False,
                    {"var_smoothing": 1e-9},
                    lambda t: {"var_smoothing": t.suggest_float("gnb__var_smoothing", 1e-10, 1e-1, log=True)})
        F["logreg"] = (lambda p, s: linear_model.LogisticRegression(C=p["C"], max_iter=300), True, {"C": 1.0},
                       lambda t: {"C": t.suggest_float("logreg__C", 1e-3, 1e2, log=True)})
        F["knn"] = (lambda p, s: neighbors.KNeighborsClassifier(**p), True,
                    {"n_neighbors": 5, "weights": "uniform"}, knn_space)
        F["sgd"] = (lambda p, s: linear_model.SGDClassifier(loss="log_loss", alpha=p["alpha"], random_state=s),
                    True, {"alpha": 1e-4}, lambda t: {"alpha": t.suggest_float("sgd__alpha", 1e-6, 1e-1, log=True)})
        F["tree"] = (lambda p, s: tree.DecisionTreeClassifier(**p, random_state=s), False,
                     {"max_depth": 32, "min_samples_leaf": 1}, tree_space)
        F["rf"] = (lambda p, s: ensemble.RandomForestClassifier(**p, random_state=s), False,
                   {"n_estimators": 100, "max_features": "sqrt", "min_samples_leaf": 1}, rf_space)
        hgb = getattr(ensemble, "HistGradientBoostingClassifier", None)
        try:   # optional: present when rtx-classical ships it
            from rtx.classical.svm import SVC
        except ImportError:
            SVC = None
        if SVC is not None:
            # gamma as a factor of 'scale' (1 / (n_features * X.var()) of the scaled data), so one range fits
            # either scaler; 'scale' alone leaves ~1 point on digits (sklearn: 98.6 vs 98.0% cv)
            F["svc"] = (lambda p, s: _DecisionProba(SVC(C=p["C"]), gamma_factor=p["gamma_factor"]), True,
                        {"C": 1.0, "gamma_factor": 1.0},
                        lambda t: {"C": t.suggest_float("svc__C", 1e-1, 1e3, log=True),
                                   "gamma_factor": t.suggest_float("svc__gamma_factor", 0.1, 10.0, log=True)})
    else:
        F["ridge"] = (lambda p, s: linear_model.Ridge(alpha=p["alpha"]), True, {"alpha": 1.0},
                      lambda t: {"alpha": t.suggest_float("ridge__alpha", 1e-4, 1e3, log=True)})
        F["lasso"] = (lambda p, s: linear_model.Lasso(alpha=p["alpha"]), True, {"alpha": 1e-2},
                      lambda t: {"alpha": t.suggest_float("lasso__alpha", 1e-5, 1e1, log=True)})
        F["knn"] = (lambda p, s: neighbors.KNeighborsRegressor(**p), True,
                    {"n_neighbors": 5, "weights": "uniform"}, knn_space)
        F["tree"] = (lambda p, s: tree.DecisionTreeRegressor(**p, random_state=s), False,
                     {"max_depth": 32, "min_samples_leaf": 1}, tree_space)
        F["rf"] = (lambda p, s: ensemble.RandomForestRegressor(**p, random_state=s), False,
                   {"n_estimators": 100, "max_features": 1.0, "min_samples_leaf": 1}, rf_space)
        hgb = getattr(ensemble, "HistGradientBoostingRegressor", None)
    if hgb is not None:   # optional: present when rtx-classical ships it
        F["hgb"] = (lambda p, s: hgb(**p, random_state=s), False,
                    {"learning_rate": 0.1, "max_leaf_nodes": 31},
                    lambda t: {"learning_rate": t.suggest_float("hgb__learning_rate", 0.01, 0.3, log=True),
                               "max_leaf_nodes": t.suggest_int("hgb__max_leaf_nodes", 8, 64, log=True)})
    F["mlp"] = (mlp, True, {"hidden": 256, "lr": 1e-3, "epochs": 30, "dropout": 0.1}, mlp_space)
    # the order the defaults run in: cheap and strong first, so a short budget is not spent on one slow family
    # (rtx-classical's SGD takes ~12 s a fold on digits, 50x logistic regression)
    order = ["lda", "gnb", "logreg", "ridge", "lasso", "knn", "svc", "tree", "rf", "mlp", "hgb", "sgd"]
    return {k: F[k] for k in sorted(F, key=order.index)}


# the one-standard-error rule's notion of "simpler", fixed before any measurement: roughly by how much a family can
# fit (variance), linear models with one weight per feature first, then the naive Bayes and discriminant models, the
# local/kernel ones, trees and their ensembles, the MLP last
SIMPLICITY = ["logreg", "ridge", "lasso", "sgd", "lda", "gnb", "svc", "knn", "tree", "rf", "hgb", "mlp"]


_SCALERS = {"standard": StandardScaler, "minmax": MinMaxScaler}


class _DecisionProba(ClassifierMixin, BaseEstimator):
    """A classifier without predict_proba (rtx-classical's SVC) made blendable: the softmax of its one-vs-rest
    decision function (a logistic of it for two classes). Scores, not calibrated probabilities (no Platt
    scaling): enough for the ensemble's argmax metrics, rougher for log_loss. gamma_factor (not None) sets the
    estimator's gamma to that multiple of gamma='scale' on the data fitted."""

    def __init__(self, estimator, gamma_factor=None):
        self.estimator = estimator
        self.gamma_factor = gamma_factor

    def fit(self, X, y):
        est = clone(self.estimator)
        if self.gamma_factor is not None:
            var = float(np.var(X))
            est.set_params(gamma=self.gamma_factor / (X.shape[1] * var) if var > 0 else 1.0)
        self.estimator_ = est.fit(X, y)
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, X):
        D = np.asarray(self.estimator_.decision_function(X), dtype=np.float64)
        if D.ndim == 1:
            D = np.stack([-D, D], axis=1) / 2
        D = D - D.max(axis=1, keepdims=True)
        P = np.exp(D)
        return P / P.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.estimator_.predict(X)


class _AutoBase(BaseEstimator):
    def __init__(self, time_budget=60.0, metric=None, cv=5, *, cv_repeats="auto", families=None, ensemble_size=50,
                 ensemble_nbest=20, one_se_rule=False, refit=False, random_state=None, verbose=0):
        self.time_budget = time_budget
        self.one_se_rule = one_se_rule
        self.refit = refit
        self.metric = metric
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.families = families
        self.ensemble_size = ensemble_size
        self.ensemble_nbest = ensemble_nbest
        self.random_state = random_state
        self.verbose = verbose

    # -- subclass hooks --
    def _metrics(self):
        raise NotImplementedError

    def _oof(self, model, X):
        raise NotImplementedError

    def fit(self, X, y):
        start = time.perf_counter()
        if not (isinstance(self.time_budget, (int, float)) and self.time_budget > 0):
            raise ValueError(f"time_budget must be a positive number of seconds, got {self.time_budget!r}")
        deadline = start + float(self.time_budget)
        X, y = check_X_y(X, y, dtype=np.float32, y_numeric=self._task == "regression")
        metrics = self._metrics()
        metric = self.metric or next(iter(metrics))
        if metric not in metrics:
            raise ValueError(f"metric must be one of {sorted(metrics)}, got {metric!r}")
        self.metric_ = metric
        score = metrics[metric]
        y_fit = self._prepare_y(y)
        self.n_features_in_ = X.shape[1]
        fam = _families(self._task, X.shape[1], len(getattr(self, "classes_", [])))
        names = list(fam) if self.families is None else list(self.families)
        unknown = [n for n in names if n not in fam]
        if unknown:
            raise ValueError(f"families must be among {list(fam)}, got unknown {unknown}")
        if not (self.cv_repeats == "auto" or (isinstance(self.cv_repeats, int) and self.cv_repeats >= 1)):
            raise ValueError(f"cv_repeats must be 'auto' or a positive int, got {self.cv_repeats!r}")
        # small data: repeat the k-fold split with other shuffles (auto-sklearn / AutoGluon do the same) and average
        # each row's out-of-fold predictions. On breast cancer's 426 rows one 5-fold CV ranks candidates by noise
        # (98-99% CV, 94-96.5% held out on split 0); three repeats cost 3x a candidate but rank on 3x the folds.
        repeats = (3 if len(X) < 1000 else 1) if self.cv_repeats == "auto" else self.cv_repeats
        self.cv_repeats_ = repeats if isinstance(self.cv, int) else 1
        splits = [sp for r in range(self.cv_repeats_) for sp in self._splitter(r).split(X, y_fit)]
        seed = self.random_state if isinstance(self.random_state, int) else None

        score_time = []

        def reserve():
            # time to keep for the ensemble selection at the end: n_iter x candidates x one score, with a margin. The
            # median score time, not the slowest or the mean: one score slowed 10x by a busy machine made the slowest
            # reserve 4 s of a 6 s budget (and the mean 2 s at load 9). Plus, with refit, refitting the three best
            # candidates on all rows (a fold fit on (k-1)/k of them, with a margin); members beyond that are
            # refitted only if time is left.
            typical = float(np.median(score_time)) if score_time else 0.0
            keep = 1.5 * self.ensemble_size * min(len(self.candidates_) + 1, self.ensemble_nbest) * typical
            if self.refit:
                keep += sum(1.5 * c["fold_time"] for c in top3)
            return keep

        top3 = []   # the three best candidates so far (for the refit reserve)

        fold_times = {}   # family -> fold fit times seen, to skip a fold that would overrun the budget
        self.candidates_ = []
        with warnings.catch_warnings(), _quiet_optuna():
            warnings.simplefilter("ignore")
            study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
            for n in names:   # every family's default first: a sound baseline before the sampler explores
                default = {"family": n, **{f"{n}__{k}": v for k, v in fam[n][2].items()}}
                # distance- and kernel-based families with both scalers: standardising digits' near-constant edge
                # pixels costs them 1-1.5 points of cv accuracy against min-max (scikit-learn's SVC and kNN)
                scalers = list(_SCALERS) if n in ("knn", "svc") else ["standard"]
                for scaler in scalers if fam[n][1] else [None]:
                    study.enqueue_trial({**default, f"{n}__scaler": scaler} if scaler else default,
                                        skip_if_exists=True)
            while time.perf_counter() + reserve() < deadline:
                trial = study.ask()
                name = trial.suggest_categorical("family", names)
                build, scale, _, space = fam[name]
                params = space(trial)
                est = build(params, seed)
                if scale:
                    params["scaler"] = trial.suggest_categorical(f"{name}__scaler", list(_SCALERS))
                    model = make_pipeline(_SCALERS[params["scaler"]](), est)
                else:
                    model = make_pipeline(est)
                oof, seen, models, t0, ok = None, np.zeros(len(X)), [], time.perf_counter(), True
                mine = []
                for tr, va in splits:
                    # a fold cannot be interrupted: start it only if it should end in time. Before this candidate's
                    # first fold, guess twice the family's slowest fold (its parameters may cost more), or for a
                    # family not run yet the slowest fold of any family (on breast cancer at load 10 an unguarded
                    # first MLP fold near the end overran a 6 s budget by 2 s); after, the candidate's own slowest
                    # fold with a margin.
                    if mine:
                        expect = 1.2 * max(mine)
                    elif name in fold_times:
                        expect = 2.0 * max(fold_times[name])
                    else:
                        expect = max((max(v) for v in fold_times.values()), default=0.0)
                    if time.perf_counter() + expect + reserve() > deadline:
                        ok = False
                        break
                    t1 = time.perf_counter()
                    m = clone(model).fit(X[tr], y_fit[tr])
                    mine.append(time.perf_counter() - t1)
                    fold_times.setdefault(name, []).append(mine[-1])
                    p = self._oof(m, X[va])
                    if oof is None:
                        oof = np.zeros((len(X),) + p.shape[1:])
                    oof[va] += p
                    seen[va] += 1
                    models.append(m)
                if not ok:
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                    if self.verbose > 1:
                        print(f"[{time.perf_counter() - start:7.1f}s] {name:7s} skipped: its next fold would "
                              f"overrun the budget ({len(mine)} of {len(splits)} folds run)")
                    continue
                oof /= seen.reshape((-1,) + (1,) * (oof.ndim - 1))   # the mean over the repeats
                t1 = time.perf_counter()
                s = float(score(y_fit, oof))
                score_time.append(time.perf_counter() - t1)
                if not np.isfinite(s):
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                    continue
                study.tell(trial, s)
                own = {k: v for k, v in params.items() if k != "scaler"}
                self.candidates_.append({"model": name, "params": params, "score": s,
                                         "fit_time": time.perf_counter() - t0, "oof": oof, "models": models,
                                         "pipeline": model, "default": own == fam[name][2],
                                         "fold_time": float(np.mean(mine))})
                top3 = sorted(top3 + [self.candidates_[-1]], key=lambda c: -c["score"])[:3]
                if self.verbose:
                    print(f"[{time.perf_counter() - start:7.1f}s] {name:7s} {metric}={s:.4f} {params} "
                          f"(folds {max(mine):.2f}s max)")
        if not self.candidates_:
            raise RuntimeError(f"no candidate finished its cross-validation within time_budget={self.time_budget}s")
        # the selection looks at the ensemble_nbest best candidates only (auto-sklearn's ensemble_nbest)
        best = sorted(range(len(self.candidates_)), key=lambda i: -self.candidates_[i]["score"])[:self.ensemble_nbest]
        t1 = time.perf_counter()
        weights, _ = caruana_ensemble([self.candidates_[i]["oof"] for i in best], y_fit, score, self.ensemble_size)
        if self.verbose:
            print(f"[{time.perf_counter() - start:7.1f}s] ensemble selection over {len(best)} candidates took "
                  f"{time.perf_counter() - t1:.2f}s (reserved {reserve():.2f}s)")
        for c in self.candidates_:
            c["weight"] = 0.0
        for i, w in zip(best, weights):
            self.candidates_[i]["weight"] = float(w)
        for c in self.candidates_:
            c["caruana_weight"] = c["weight"]
        ens_oof = sum(c["oof"] * c["weight"] for c in self.candidates_)
        self.ensemble_score_ = float(score(y_fit, ens_oof))
        self.selected_ = "ensemble"
        if self.one_se_rule:
            self._one_se(y_fit, splits, score, ens_oof)
        members = [c for c in self.candidates_ if c["weight"] > 0]
        if self.refit:
            # refit on all rows, heaviest member first, each only if it should end in time (a fold fit saw
            # (k-1)/k of the rows); a member not refitted keeps its fold models
            k = len(splits) / self.cv_repeats_
            for c in sorted(members, key=lambda c: -c["weight"]):
                c["refit"] = False
                if time.perf_counter() + 1.3 * c["fold_time"] * k / max(k - 1, 1) < deadline:
                    c["models"] = [clone(c["pipeline"]).fit(X, y_fit)]
                    c["refit"] = True
        self.ensemble_ = [(c["models"], c["weight"]) for c in members]
        if self.verbose:
            print(f"[{time.perf_counter() - start:7.1f}s] final model: {self.selected_} "
                  f"({', '.join(c['model'] + (' refit' if c.get('refit') else ' bagged') for c in members)}); "
                  f"one-SE rule {getattr(self, 'one_se_', None)}")
        self.fit_time_ = time.perf_counter() - start
        return self

    def _one_se(self, y, splits, score, ens_oof):
        """The one-standard-error rule over the candidates and the ensemble: the standard error is the spread of the
        best one's per-fold scores over sqrt(k) (k folds a repeat: repeats reshuffle the same rows, so they do not
        shrink the sampling noise of n rows); the simplest entry scoring within it of the best wins (SIMPLICITY's
        family order, a family's default configuration before a tuned one, then the higher score; the ensemble
        last). The ensemble's own score was selected on these predictions and is optimistic: taken as the best, it
        only makes a single model harder to prefer."""
        k = len(splits) / self.cv_repeats_

        def fold_scores(oof):
            return [float(score(y[va], oof[va])) for _, va in splits]

        lead = max(self.candidates_, key=lambda c: c["score"])
        if self.ensemble_score_ > lead["score"]:
            spread = np.std(fold_scores(ens_oof), ddof=1)
        else:
            spread = np.std(fold_scores(lead["oof"]), ddof=1)
        se = float(spread / np.sqrt(k)) if len(splits) > 1 else 0.0
        top = max(self.ensemble_score_, lead["score"])
        rank = {n: i for i, n in enumerate(SIMPLICITY)}
        within = [c for c in self.candidates_ if c["score"] >= top - se]
        self.one_se_ = {"best": top, "se": se}
        if not within:
            return
        pick = min(within, key=lambda c: (rank.get(c["model"], len(rank)), not c["default"], -c["score"]))
        for c in self.candidates_:
            c["weight"] = 0.0
        pick["weight"] = 1.0
        self.selected_ = pick["model"]

    def leaderboard(self):
        """The candidates, best cross-validated score first: model, params, score, fit_time, weight in the final
        model (plus the Caruana ensemble's own out-of-fold score as the first row; its weight is 1 when the
        ensemble is the final model, 0 when the one standard error rule chose a single candidate)."""
        check_is_fitted(self, "ensemble_")
        rows = [{"model": "ensemble", "params": {}, "score": self.ensemble_score_, "fit_time": self.fit_time_,
                 "weight": float(self.selected_ == "ensemble")}]
        rows += sorted(({k: c[k] for k in ("model", "params", "score", "fit_time", "weight")}
                        for c in self.candidates_), key=lambda r: -r["score"])
        return rows

    def _blend(self, X, fn):
        check_is_fitted(self, "ensemble_")
        X = check_array(X, dtype=np.float32)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return sum(w * np.mean([fn(m, X) for m in models], axis=0) for models, w in self.ensemble_)


def _repeat_seed(random_state, repeat):
    # repeat 0 keeps the one-split shuffle; the others shuffle differently (None stays None: fresh shuffles)
    if repeat == 0 or not isinstance(random_state, int):
        return random_state
    return random_state + 7919 * repeat


class _quiet_optuna:
    def __enter__(self):
        self.level = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)

    def __exit__(self, *a):
        optuna.logging.set_verbosity(self.level)


class AutoClassifier(ClassifierMixin, _AutoBase):
    """Model selection + Caruana ensemble over rtx-classical classifiers within `time_budget` seconds.
    metric: "accuracy" (default), "balanced_accuracy", "log_loss", "roc_auc"; cv: folds or a splitter."""
    _task = "classification"

    def _metrics(self):
        return CLASSIFICATION_METRICS

    def _prepare_y(self, y):
        self._le = LabelEncoder().fit(y)
        self.classes_ = self._le.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"AutoClassifier needs at least 2 classes in y, got {len(self.classes_)}")
        return self._le.transform(y)

    def _splitter(self, repeat=0):
        if isinstance(self.cv, int):
            return StratifiedKFold(self.cv, shuffle=True, random_state=_repeat_seed(self.random_state, repeat))
        return self.cv

    def _oof(self, model, X):
        # a fold may lack a rare class: put each model's columns where its classes go
        P = np.zeros((len(X), len(self.classes_)))
        P[:, np.asarray(model.classes_, dtype=int)] = model.predict_proba(X)
        return P

    def predict_proba(self, X):
        return self._blend(X, self._oof)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


class AutoRegressor(RegressorMixin, _AutoBase):
    """Model selection + Caruana ensemble over rtx-classical regressors within `time_budget` seconds.
    metric: "r2" (default), "rmse", "mae"; cv: folds or a splitter."""
    _task = "regression"

    def _metrics(self):
        return REGRESSION_METRICS

    def _prepare_y(self, y):
        return np.asarray(y, dtype=np.float32)

    def _splitter(self, repeat=0):
        if isinstance(self.cv, int):
            return KFold(self.cv, shuffle=True, random_state=_repeat_seed(self.random_state, repeat))
        return self.cv

    def _oof(self, model, X):
        return np.asarray(model.predict(X), dtype=np.float64).reshape(len(X))

    def predict(self, X):
        return self._blend(X, self._oof)
