"""AutoClassifier / AutoRegressor: Caruana selection on a hand-made case, the time budget, held-out accuracy with a
short budget, scikit-learn compatibility. The 120 s figures: tools/automl_figure.py (README)."""
import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.model_selection import train_test_split

from rtx.auto import AutoClassifier, AutoRegressor
from rtx.auto.automl import caruana_ensemble


def test_caruana_hand_made():
    # y = 0 everywhere, score = -|mean prediction|. By hand: step 1 A and B tie at -1 (A, lower index); step 2 adding
    # B brings the mean to 0; step 3 A and B tie at -1/3 (A); step 4 B brings it back to 0. C (always 3) never helps.
    y = np.zeros(2)
    A, B, C = np.ones(2), -np.ones(2), 3 * np.ones(2)
    w, trace = caruana_ensemble([A, B, C], y, lambda y, p: -float(np.abs(p - y).mean()), n_iter=4)
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0])
    np.testing.assert_allclose(trace, [-1, 0, -1 / 3, 0])


def test_caruana_beats_its_members():
    # two classifiers each right on a different half, a third right on 3/4 with low confidence: the blend of the
    # first two with the third to break ties is right everywhere
    y = np.array([0, 0, 1, 1])
    A = np.array([[.9, .1], [.9, .1], [.9, .1], [.9, .1]])      # right on 0, 1
    B = np.array([[.1, .9], [.1, .9], [.1, .9], [.1, .9]])      # right on 2, 3
    acc = lambda y, P: float((P.argmax(1) == y).mean())          # noqa: E731
    w, trace = caruana_ensemble([A, B], y, acc, n_iter=3)
    assert trace[-1] == 0.5 and w.sum() == pytest.approx(1.0)
    C = np.array([[.6, .4], [.45, .55], [.4, .6], [.4, .6]])     # right on 0, 2, 3
    w, trace = caruana_ensemble([A, B, C], y, acc, n_iter=10)
    assert max(trace) >= 0.75 and w.sum() == pytest.approx(1.0)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    t = time.perf_counter()
    clf = AutoClassifier(time_budget=6, random_state=0).fit(Xtr, ytr)
    return clf, time.perf_counter() - t, Xte, yte


def test_time_budget_within_10_percent(cancer):
    clf, elapsed, _, _ = cancer
    assert 0.9 * 6 <= elapsed <= 1.1 * 6, elapsed
    assert len(clf.leaderboard()) >= 4


def test_breast_cancer_held_out(cancer):
    clf, _, Xte, yte = cancer
    assert clf.score(Xte, yte) >= 0.94
    P = clf.predict_proba(Xte)
    np.testing.assert_allclose(P.sum(1), 1, atol=1e-6)
    assert set(clf.predict(Xte)) <= set(clf.classes_)
    lb = clf.leaderboard()
    assert lb[0]["model"] == "ensemble" and sum(r["weight"] for r in lb[1:]) == pytest.approx(1.0)
    assert [r["score"] for r in lb[1:]] == sorted((r["score"] for r in lb[1:]), reverse=True)


def test_digits_short_budget():
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    clf = AutoClassifier(time_budget=10, cv=3, families=["lda", "knn", "logreg"], random_state=0).fit(Xtr, ytr)
    assert clf.score(Xte, yte) >= 0.96


def test_repeated_cv_out_of_fold_mean():
    # cv_repeats=2: each candidate keeps 2 x 3 fold models and its out-of-fold prediction is the mean of the two
    # repeats' out-of-fold predictions, recomputed here from scikit-learn's StratifiedKFold with the same shuffles
    from sklearn.model_selection import StratifiedKFold
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:200].astype(np.float32)
    y = y[:200]
    clf = AutoClassifier(time_budget=3, cv=3, cv_repeats=2, families=["lda"], refit=False, random_state=0).fit(X, y)
    c = clf.candidates_[0]
    assert clf.cv_repeats_ == 2 and len(c["models"]) == 6
    want, k = np.zeros((len(X), 2)), 0
    for seed in (0, 7919):
        for tr, va in StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y):
            m = clone(c["models"][k]).fit(X[tr], y[tr])
            want[va] += m.predict_proba(X[va]) / 2
            k += 1
    np.testing.assert_allclose(c["oof"], want, rtol=1e-6, atol=1e-9)
    # "auto": three repeats under 1000 rows, one above
    assert AutoClassifier(time_budget=2, families=["lda"], random_state=0).fit(X, y).cv_repeats_ == 3


def test_one_se_rule_and_refit():
    # the rule recomputed here from the candidates' out-of-fold predictions and scikit-learn's StratifiedKFold: the
    # standard error is the best entry's per-fold accuracy spread over sqrt(5); the pick is the simplest candidate
    # (logreg < lda < knn, default before tuned) within it of the best. The pick is refitted on all rows: its
    # predictions equal one fit of its pipeline on the whole training set.
    from sklearn.model_selection import StratifiedKFold
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X.astype(np.float32), y, test_size=0.25, random_state=0, stratify=y)
    clf = AutoClassifier(time_budget=4, families=["knn", "lda", "logreg"], one_se_rule=True, refit=True,
                         random_state=0).fit(Xtr, ytr)
    splits = [va for seed in (0, 7919, 2 * 7919)
              for _, va in StratifiedKFold(5, shuffle=True, random_state=seed).split(Xtr, ytr)]
    acc = lambda P, va: float(np.mean(P[va].argmax(1) == ytr[va]))       # noqa: E731
    ens = sum(c["oof"] * c["caruana_weight"] for c in clf.candidates_)
    lead = max(clf.candidates_, key=lambda c: c["score"])
    best = max(acc(ens, np.arange(len(ytr))), lead["score"])
    se = np.std([acc(ens if best > lead["score"] else lead["oof"], va) for va in splits], ddof=1) / np.sqrt(5)
    assert clf.one_se_ == pytest.approx({"best": best, "se": se})
    within = [c for c in clf.candidates_ if c["score"] >= best - se]
    rank = {"logreg": 0, "lda": 1, "knn": 2}
    chosen = [c for c in clf.candidates_ if c["weight"] > 0]
    if within:
        want = min(within, key=lambda c: (rank[c["model"]], not c["default"], -c["score"]))
        assert chosen == [want] and clf.selected_ == want["model"] and want["weight"] == 1.0
    else:   # the ensemble beat every single candidate by more than the standard error: it stays
        assert clf.selected_ == "ensemble" and all(c["weight"] == c["caruana_weight"] for c in clf.candidates_)
    assert all(c["refit"] and len(c["models"]) == 1 for c in chosen)
    want_P = sum(c["weight"] * clone(c["pipeline"]).fit(Xtr, ytr).predict_proba(Xte) for c in chosen)
    np.testing.assert_allclose(clf.predict_proba(Xte), want_P, rtol=1e-6, atol=1e-9)
    # without the rule and the refit: the Caruana ensemble of fold-model bags
    off = AutoClassifier(time_budget=2, families=["knn", "lda", "logreg"], one_se_rule=False, refit=False,
                         random_state=0).fit(Xtr, ytr)
    assert off.selected_ == "ensemble" and all(len(m) == 15 for m, _ in off.ensemble_)


def test_regressor_and_sklearn_api():
    X, y = load_diabetes(return_X_y=True)
    reg = AutoRegressor(time_budget=3, metric="rmse", families=["ridge", "knn"], random_state=0)
    assert clone(reg).get_params() == reg.get_params()
    reg.set_params(cv=4)
    reg.fit(X[:300], y[:300])
    assert reg.score(X[300:], y[300:]) > 0.35      # ridge alone reaches ~0.45 here
    assert reg.predict(X[300:]).shape == (len(X) - 300,)
    with pytest.raises(ValueError, match="features"):
        reg.predict(X[:5, :3])


def test_bad_arguments():
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match="metric must be one of"):
        AutoClassifier(time_budget=1, metric="f1").fit(X, y)
    with pytest.raises(ValueError, match="unknown"):
        AutoClassifier(time_budget=1, families=["svm"]).fit(X, y)
    with pytest.raises(ValueError, match="time_budget"):
        AutoClassifier(time_budget=0).fit(X, y)
    with pytest.raises(ValueError, match="cv_repeats"):
        AutoClassifier(time_budget=1, cv_repeats=0).fit(X, y)
