"""KMeans' Lloyd steps (bounded recomputation, kept float64 sums, labels from the centres-as-rows block)
against scikit-learn's plain Lloyd steps, on every device present."""
import numpy as np
import pytest
from sklearn import cluster as skc

from rtx.classical import cluster


def _fit_both(X, device, **kw):
    return skc.KMeans(**kw).fit(X), cluster.KMeans(device=device, **kw).fit(X)


@pytest.mark.parametrize("k", [12, 30])  # 30 > 24 centres: the argmin path
def test_lloyd_steps_match_sklearn_float64(device, k):
    # unconverged random data: labels keep changing for all 60 steps, so skipped rows are exercised
    X = np.random.default_rng(0).normal(size=(6000, 8))
    a, b = _fit_both(X, device, n_clusters=k, init=X[:k].copy(), n_init=1, max_iter=60, tol=0)
    assert a.n_iter_ == b.n_iter_
    assert (a.labels_ == b.labels_).all()
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=0, atol=1e-10)
    assert abs(b.inertia_ / a.inertia_ - 1) < 1e-10


def test_lloyd_steps_match_sklearn_float32(device):
    # float32 stays float32; scikit-learn sums in float32, rtx in float64, so a near-tie row may differ
    X = np.random.default_rng(1).normal(size=(20000, 16)).astype(np.float32)
    a, b = _fit_both(X, device, n_clusters=16, n_init=1, random_state=0, max_iter=40, tol=0)
    assert b.cluster_centers_.dtype == np.float32
    assert (a.labels_ == b.labels_).mean() > 0.999
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, atol=1e-3)
    assert abs(b.inertia_ / a.inertia_ - 1) < 1e-5


def test_ties_go_to_the_first_centre_and_empty_clusters_relocate(device):
    # duplicated rows and duplicated initial centres: exact distance ties (argmin's first index), an empty
    # cluster after the first step (scikit-learn's relocation), and more clusters than distinct rows
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0], [0.0, 4.0]]), 5, axis=0)
    for init in (X[[0, 0, 5, 10]], X[[0, 5, 5, 5, 10, 15, 15]]):
        a, b = _fit_both(X, device, n_clusters=len(init), init=init, n_init=1)
        assert (a.labels_ == b.labels_).all() and (a.predict(X) == b.predict(X)).all()
        np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, atol=1e-12)
        assert a.n_iter_ == b.n_iter_ and abs(b.inertia_ - a.inertia_) < 1e-9


def test_sample_weight_steps_match_sklearn(device):
    rng = np.random.default_rng(2)
    X, sw = rng.normal(size=(4000, 5)), rng.uniform(0.1, 3, 4000)
    a = skc.KMeans(10, init=X[:10].copy(), n_init=1, max_iter=40, tol=0).fit(X, sample_weight=sw)
    b = cluster.KMeans(10, init=X[:10].copy(), n_init=1, max_iter=40, tol=0, device=device).fit(X, sample_weight=sw)
    assert (a.labels_ == b.labels_).all()
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, atol=1e-10)
