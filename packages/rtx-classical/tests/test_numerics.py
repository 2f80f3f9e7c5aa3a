"""Numbers against scikit-learn on its bundled data sets, on every device present (the CUDA twins are
skipped without a GPU): same objective, same solution."""
import numpy as np
import pytest
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn import linear_model as skl
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine, make_blobs
from sklearn.preprocessing import StandardScaler

from rtx.classical import cluster, decomposition, linear_model


def rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-12)


@pytest.mark.parametrize("name,kw", [
    ("LinearRegression", {}), ("Ridge", dict(alpha=0.5)), ("Ridge", dict(alpha=0.5, solver="svd")),
    ("Ridge", dict(alpha=2.0, solver="cholesky", fit_intercept=False)),
    ("Lasso", dict(alpha=0.1, tol=1e-10, max_iter=100000)),
    ("ElasticNet", dict(alpha=0.01, l1_ratio=0.3, tol=1e-10, max_iter=100000))])
def test_regressors_match_sklearn_on_diabetes(device, name, kw):
    X, y = load_diabetes(return_X_y=True)
    sw = np.random.default_rng(0).uniform(0.5, 2, len(y))
    a = getattr(skl, name)(**kw).fit(X, y, sample_weight=sw)
    b = getattr(linear_model, name)(**kw, device=device).fit(X, y, sample_weight=sw)
    assert rel(b.coef_, a.coef_) < 1e-4
    assert abs(b.intercept_ - a.intercept_) < 1e-4 * abs(a.intercept_) + 1e-8
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-6)


def test_ridge_multi_target_and_wide():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(20, 50)), rng.normal(size=(20, 3))
    for kw in [dict(alpha=1.0), dict(alpha=[0.1, 1.0, 10.0]), dict(alpha=1.0, solver="svd")]:
        a, b = skl.Ridge(**kw).fit(X, Y), linear_model.Ridge(**kw).fit(X, Y)
        assert rel(b.coef_, a.coef_) < 1e-8


def test_elasticnet_warm_start_continues():
    X, y = load_diabetes(return_X_y=True)
    m = linear_model.ElasticNet(alpha=0.01, max_iter=2, warm_start=True)
    with pytest.warns(Warning):
        m.fit(X, y)
    first = m.coef_.copy()
    m.set_params(max_iter=100000, tol=1e-10).fit(X, y)
    ref = skl.ElasticNet(alpha=0.01, max_iter=100000, tol=1e-10).fit(X, y)
    assert rel(m.coef_, ref.coef_) < 1e-4 and rel(first, ref.coef_) > 1e-4


@pytest.mark.parametrize("load", [load_iris, load_breast_cancer, load_wine])
@pytest.mark.parametrize("kw", [dict(C=1.0), dict(C=0.05, class_weight="balanced"), dict(C=np.inf)])
def test_logistic_regression_matches_sklearn(device, load, kw):
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if kw.get("C") == np.inf and load is load_breast_cancer:
        pytest.skip("separable: the unpenalised optimum is at infinity")
    sw = np.random.default_rng(0).uniform(0.5, 2, len(y))
    a = skl.LogisticRegression(tol=1e-10, max_iter=10000, **kw).fit(X, y, sample_weight=sw)
    b = linear_model.LogisticRegression(tol=1e-10, max_iter=10000, device=device, **kw).fit(X, y, sample_weight=sw)
    tol = 1e-4 if kw.get("C") != np.inf else 1e-3  # the unpenalised problem is ill-conditioned
    assert rel(b.coef_, a.coef_) < tol and rel(b.intercept_, a.intercept_) < tol
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), atol=1e-5)
    assert (b.predict(X) == a.predict(X)).mean() > 0.99


@pytest.mark.parametrize("X", [load_iris().data, load_digits().data,
                               make_blobs(3000, 8, centers=10, random_state=0)[0]], ids=["iris", "digits", "blobs"])
@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_kmeans_matches_sklearn(device, X, init):
    sw = np.random.default_rng(0).uniform(0.5, 2, len(X))
    a = skc.KMeans(8, init=init, n_init=2, random_state=0).fit(X, sample_weight=sw)
    b = cluster.KMeans(8, init=init, n_init=2, random_state=0, device=device).fit(X, sample_weight=sw)
    assert abs(b.inertia_ / a.inertia_ - 1) < 0.005
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, atol=1e-6)  # same k-means++ draws
    assert (b.predict(X) == a.predict(X)).all()


def test_minibatch_kmeans_inertia_close_to_sklearn(device):
    X = make_blobs(5000, 8, centers=10, random_state=0)[0]
    a = skc.MiniBatchKMeans(10, random_state=0, n_init=3).fit(X)
    b = cluster.MiniBatchKMeans(10, random_state=0, n_init=3, device=device).fit(X)
    assert b.inertia_ / a.inertia_ < 1.05
    b2 = cluster.MiniBatchKMeans(10, random_state=0, device=device)
    for chunk in np.array_split(X, 20):
        b2.partial_fit(chunk)
    assert b2.score(X) > 1.1 * -a.inertia_


@pytest.mark.parametrize("eps", [0.3, 0.5, 1.0])
def test_dbscan_identical_labels(device, eps):
    X = make_blobs(500, 2, centers=4, random_state=0)[0]
    sw = np.random.default_rng(0).integers(1, 3, len(X))
    for w in [None, sw]:
        a = skc.DBSCAN(eps=eps).fit(X, sample_weight=w)
        b = cluster.DBSCAN(eps=eps, device=device).fit(X, sample_weight=w)
        assert (a.labels_ == b.labels_).all()
        assert (a.core_sample_indices_ == b.core_sample_indices_).all()


@pytest.mark.parametrize("kw", [dict(n_components=10), dict(n_components=10, svd_solver="full"),
                                dict(n_components=0.9, svd_solver="full"), dict(n_components="mle", svd_solver="full"),
                                dict(n_components=5, svd_solver="randomized", random_state=0),
                                dict(n_components=10, whiten=True)])
def test_pca_matches_sklearn(device, kw):
    X = load_digits().data
    a, b = skd.PCA(**kw).fit(X), decomposition.PCA(**kw, device=device).fit(X)
    assert a.n_components_ == b.n_components_
    np.testing.assert_allclose(np.abs(b.components_), np.abs(a.components_), atol=1e-6)
    np.testing.assert_allclose(b.explained_variance_ratio_, a.explained_variance_ratio_, rtol=1e-6)
    np.testing.assert_allclose(b.noise_variance_, a.noise_variance_, rtol=1e-6)
    np.testing.assert_allclose(np.abs(b.transform(X)), np.abs(a.transform(X)), atol=1e-6)
    np.testing.assert_allclose(b.inverse_transform(b.transform(X)), a.inverse_transform(a.transform(X)), atol=1e-6)


def test_pca_mle_on_wine_and_score():
    X = load_wine().data
    a, b = skd.PCA("mle", svd_solver="full").fit(X), decomposition.PCA("mle", svd_solver="full").fit(X)
    assert a.n_components_ == b.n_components_
    np.testing.assert_allclose(b.score(X), a.score(X), rtol=1e-8)


@pytest.mark.parametrize("algorithm", ["randomized", "arpack"])
def test_truncated_svd_matches_sklearn(device, algorithm):
    X = load_digits().data
    a = skd.TruncatedSVD(5, algorithm=algorithm, random_state=0).fit(X)
    b = decomposition.TruncatedSVD(5, algorithm=algorithm, random_state=0, device=device).fit(X)
    np.testing.assert_allclose(np.abs(b.components_), np.abs(a.components_), atol=1e-6)
    np.testing.assert_allclose(b.singular_values_, a.singular_values_, rtol=1e-6)
    np.testing.assert_allclose(b.explained_variance_ratio_, a.explained_variance_ratio_, rtol=1e-6)


def test_incremental_pca_matches_sklearn(device):
    X = load_digits().data
    a = skd.IncrementalPCA(10, batch_size=200).fit(X)
    b = decomposition.IncrementalPCA(10, batch_size=200, device=device).fit(X)
    np.testing.assert_allclose(np.abs(b.components_), np.abs(a.components_), atol=1e-6)
    np.testing.assert_allclose(b.singular_values_, a.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(b.transform(X), a.transform(X), atol=1e-6)
