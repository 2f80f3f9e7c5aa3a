"""Neighbours, naive Bayes and LDA against scikit-learn on its bundled data sets (every device present)."""
import numpy as np
import pytest
from sklearn import discriminant_analysis as skda
from sklearn import naive_bayes as sknb
from sklearn import neighbors as skn
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

from rtx.classical import discriminant_analysis, naive_bayes, neighbors


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    # a little noise breaks the exact distance ties of integer pixels (tie order is not specified)
    return X + np.random.default_rng(0).normal(scale=1e-3, size=X.shape), y


def test_kneighbors_identical(device, digits):
    X, _ = digits
    a = skn.NearestNeighbors(n_neighbors=7).fit(X[:1000])
    b = neighbors.NearestNeighbors(n_neighbors=7, device=device).fit(X[:1000])
    for q in (X[1000:], None):
        (da, ia), (db, ib) = a.kneighbors(q), b.kneighbors(q)
        assert (ia == ib).all()
        np.testing.assert_allclose(db, da, rtol=1e-9, atol=1e-9)
    ra, rb = a.radius_neighbors(X[1000:1100], 20.0, sort_results=True), \
        b.radius_neighbors(X[1000:1100], 20.0, sort_results=True)
    assert all((x == y).all() for x, y in zip(ra[1], rb[1]))


@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_kneighbors_classifier_regressor(device, digits, weights):
    X, y = digits
    a = skn.KNeighborsClassifier(5, weights=weights).fit(X[:1000], y[:1000])
    b = neighbors.KNeighborsClassifier(5, weights=weights, device=device).fit(X[:1000], y[:1000])
    assert (a.predict(X[1000:]) == b.predict(X[1000:])).all()
    np.testing.assert_allclose(b.predict_proba(X[1000:]), a.predict_proba(X[1000:]), atol=1e-12)
    a = skn.KNeighborsRegressor(5, weights=weights).fit(X[:1000], y[:1000])
    b = neighbors.KNeighborsRegressor(5, weights=weights, device=device).fit(X[:1000], y[:1000])
    np.testing.assert_allclose(b.predict(X[1000:]), a.predict(X[1000:]), rtol=1e-10)


def test_kneighbors_chunking_bounds_memory():
    from rtx.classical.neighbors._base import kneighbors_brute
    rng = np.random.default_rng(0)
    Q, F = rng.normal(size=(300, 8)), rng.normal(size=(500, 8))
    d1, i1 = kneighbors_brute(Q, F, 4, np)
    d2, i2 = kneighbors_brute(Q, F, 4, np, budget=500 * 8 * 7)  # 7 rows per chunk
    assert (i1 == i2).all() and np.allclose(d1, d2)


@pytest.mark.parametrize("load", [load_iris, load_wine, load_breast_cancer, load_digits])
def test_naive_bayes_and_lda(device, load):
    X, y = load(return_X_y=True)
    sw = np.random.default_rng(0).uniform(0.5, 2, len(y))
    a, b = sknb.GaussianNB().fit(X, y, sw), naive_bayes.GaussianNB(device=device).fit(X, y, sw)
    np.testing.assert_allclose(b.theta_, a.theta_, rtol=1e-10)
    np.testing.assert_allclose(b.var_, a.var_, rtol=1e-8)
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), atol=1e-8)
    a = sknb.MultinomialNB(alpha=0.5).fit(X, y, sw)
    b = naive_bayes.MultinomialNB(alpha=0.5, device=device).fit(X, y, sw)
    np.testing.assert_allclose(b.feature_log_prob_, a.feature_log_prob_, rtol=1e-10)
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), atol=1e-8)
    a = skda.LinearDiscriminantAnalysis(store_covariance=True).fit(X, y)
    b = discriminant_analysis.LinearDiscriminantAnalysis(store_covariance=True, device=device).fit(X, y)
    assert np.abs(b.coef_ - a.coef_).max() <= 1e-4 * np.abs(a.coef_).max()
    np.testing.assert_allclose(b.covariance_, a.covariance_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.abs(b.transform(X)), np.abs(a.transform(X)), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), atol=1e-6)
