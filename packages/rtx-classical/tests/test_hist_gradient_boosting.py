"""HistGradientBoosting against scikit-learn's with the same hyper-parameters: held-out accuracy within
1 point (R^2 within 0.03), and the early-stopping bookkeeping."""
import numpy as np
import pytest
from sklearn import datasets, ensemble
from sklearn.model_selection import train_test_split

from rtx.classical.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor


@pytest.mark.parametrize("name,params", [("breast_cancer", {}), ("iris", {"max_leaf_nodes": 8}),
                                         ("wine", {"max_depth": 3, "l2_regularization": 1.0, "max_iter": 20})])
def test_classifier_accuracy_matches_sklearn(name, params):
    X, y = getattr(datasets, "load_" + name)(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    ours = HistGradientBoostingClassifier(random_state=0, **params).fit(Xtr, ytr)
    ref = ensemble.HistGradientBoostingClassifier(random_state=0, **params).fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) <= 0.01 + 1 / len(yte)
    P = ours.predict_proba(Xte)
    np.testing.assert_allclose(P.sum(1), 1)
    assert (ours.classes_[P.argmax(1)] == ours.predict(Xte)).all()


def test_regressor_r2_matches_sklearn():
    X, y = datasets.load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    ours = HistGradientBoostingRegressor(random_state=0, max_iter=50).fit(Xtr, ytr)
    ref = ensemble.HistGradientBoostingRegressor(random_state=0, max_iter=50).fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) < 0.03
    # a first tree with one split moves each side by -learning_rate * mean gradient: the closed form
    one = HistGradientBoostingRegressor(max_iter=1, max_leaf_nodes=2, learning_rate=1.0).fit(Xtr, ytr)
    assert len(np.unique(one.predict(Xtr))) == 2
    for v in np.unique(one.predict(Xtr)):
        np.testing.assert_allclose(v, ytr[one.predict(Xtr) == v].mean())


def test_early_stopping():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12_000, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=len(X)) > 0).astype(int)
    m = HistGradientBoostingClassifier(max_iter=200, random_state=0).fit(X, y)  # 'auto': on above 10k samples
    assert m.do_early_stopping_ and m.n_iter_ < 200
    assert len(m.validation_score_) == m.n_iter_ + 1
    best = m.validation_score_[:-10].max()
    assert not (m.validation_score_[-10:] > m.validation_score_[-11] + m.tol).any() and best >= m.validation_score_[0]
    off = HistGradientBoostingClassifier(max_iter=5, early_stopping=False).fit(X, y)
    assert off.n_iter_ == 5 and len(off.validation_score_) == 0
