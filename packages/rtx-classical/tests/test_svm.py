"""SVC (libsvm's SMO, WSS3) and LinearSVC (liblinear's dual CD) against scikit-learn on its bundled sets:
identical predictions, decision values within the solvers' tolerance, the same support-vector counts."""
import numpy as np
import pytest
from sklearn import datasets, svm
from sklearn.preprocessing import StandardScaler

from rtx.classical.svm import SVC, LinearSVC


def _data(name):
    X, y = getattr(datasets, "load_" + name)(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("name", ["iris", "wine", "breast_cancer"])
@pytest.mark.parametrize("kw", [{"kernel": "rbf"}, {"kernel": "poly", "coef0": 1.0, "gamma": "auto"},
                                {"kernel": "linear", "C": 0.5}, {"kernel": "sigmoid", "gamma": 0.01}],
                         ids=lambda kw: kw["kernel"])
def test_svc_matches_sklearn(name, kw):
    X, y = _data(name)
    ours, ref = SVC(**kw).fit(X, y), svm.SVC(**kw).fit(X, y)
    assert (ours.predict(X) == ref.predict(X)).all()
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=2e-2)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-2)


@pytest.mark.parametrize("name", ["iris", "breast_cancer"])
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_linear_svc_matches_sklearn(name, loss):
    X, y = _data(name)
    ours = LinearSVC(loss=loss, tol=1e-6, max_iter=5000).fit(X, y)
    ref = svm.LinearSVC(loss=loss, tol=1e-6, max_iter=5000).fit(X, y)
    assert (ours.predict(X) == ref.predict(X)).all()
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-2 * np.abs(ref.coef_).max())
