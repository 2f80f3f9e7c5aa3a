"""Trees and forests against scikit-learn on its bundled data sets: where the 256 bins hold every distinct value
the histogram search is the exact search, so a tree is scikit-learn's tree; forests score within 1 point of
scikit-learn's (cross-validated, same hyper-parameters)."""
import numpy as np
import pytest
from sklearn import ensemble as ske
from sklearn import tree as skt
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.model_selection import cross_val_score

from rtx.classical import ensemble, tree


def _tol(load):
    # 1 point, but never less than one sample of a test fold (wine: 36 samples a fold, 2.8 points each)
    return max(0.01, 1.01 / (len(load(return_X_y=True)[1]) / 5))


@pytest.mark.parametrize("load", [load_iris, load_wine, load_breast_cancer, load_digits])
@pytest.mark.parametrize("kw", [dict(), dict(max_depth=4), dict(criterion="entropy", min_samples_leaf=3)])
def test_tree_accuracy_within_one_point(load, kw):
    # equal-gain splits are broken at random by scikit-learn (its feature permutation), in order by us: trees
    # differ on ties, so the comparison is the cross-validated accuracy
    X, y = load(return_X_y=True)
    a = cross_val_score(skt.DecisionTreeClassifier(random_state=0, **kw), X, y, cv=5).mean()
    b = cross_val_score(tree.DecisionTreeClassifier(random_state=0, **kw), X, y, cv=5).mean()
    assert b >= a - _tol(load), (a, b)


def test_regression_tree_r2_near_sklearns_on_diabetes():
    X, y = load_diabetes(return_X_y=True)
    for kw in (dict(max_depth=3), dict(min_samples_leaf=10)):
        a = cross_val_score(skt.DecisionTreeRegressor(random_state=0, **kw), X, y, cv=5).mean()
        b = cross_val_score(tree.DecisionTreeRegressor(random_state=0, **kw), X, y, cv=5).mean()
        assert b >= a - 0.03, (a, b)      # R^2


@pytest.mark.parametrize("load", [load_breast_cancer, load_wine, load_digits])
def test_forest_accuracy_within_one_point(load):
    X, y = load(return_X_y=True)
    kw = dict(n_estimators=30, random_state=0)
    a = cross_val_score(ske.RandomForestClassifier(**kw), X, y, cv=5).mean()
    b = cross_val_score(ensemble.RandomForestClassifier(**kw), X, y, cv=5).mean()
    assert b >= a - _tol(load), (a, b)


def test_forest_regressor_and_importances():
    X, y = load_diabetes(return_X_y=True)
    kw = dict(n_estimators=30, random_state=0, min_samples_leaf=5)
    a = cross_val_score(ske.RandomForestRegressor(**kw), X, y, cv=5).mean()
    b = cross_val_score(ensemble.RandomForestRegressor(**kw), X, y, cv=5).mean()
    assert b >= a - 0.02, (a, b)
    f = ensemble.RandomForestRegressor(**kw, n_jobs=2).fit(X, y)
    ref = ske.RandomForestRegressor(**kw).fit(X, y)
    assert abs(f.feature_importances_.sum() - 1) < 1e-12
    assert set(np.argsort(f.feature_importances_)[-2:]) == set(np.argsort(ref.feature_importances_)[-2:])


def _tie_free_data():
    # continuous features, 250 rows (the bins hold every distinct value, so the search is exact)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(250, 6))
    signal = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=250)
    return X, (signal > 0).astype(int), signal


@pytest.mark.parametrize("kind,k,kw", [("clf", 5, {}), ("clf", 12, {"criterion": "entropy", "max_depth": 4}),
                                       ("clf", 20, {"min_samples_leaf": 3}), ("reg", 25, {"min_samples_leaf": 3}),
                                       ("reg", 34, {"min_samples_leaf": 3})])
def test_max_leaf_nodes_best_first_is_sklearns_tree(kind, k, kw):
    # best-first growth: the same nodes in the same order (ids by creation), the same split features, node
    # sizes, values and impurities, so the same leaf for every training row. Thresholds may sit elsewhere in
    # the same gap between two training values (a bin edge, not the node's midpoint). Larger k on the
    # data reaches small nodes (2-16 rows) with equal-gain splits, which scikit-learn breaks at random.
    X, y, signal = _tie_free_data()
    ours_cls, ref_cls, t = ((tree.DecisionTreeClassifier, skt.DecisionTreeClassifier, y) if kind == "clf" else
                            (tree.DecisionTreeRegressor, skt.DecisionTreeRegressor, signal))
    a = ours_cls(max_leaf_nodes=k, **kw).fit(X, t)
    b = ref_cls(max_leaf_nodes=k, random_state=0, **kw).fit(X, t)
    assert a.get_n_leaves() == b.get_n_leaves() <= k
    assert a.get_depth() == b.get_depth()
    for f in ("feature", "children_left", "children_right", "n_node_samples"):
        np.testing.assert_array_equal(getattr(a.tree_, f), getattr(b.tree_, f), err_msg=f)
    np.testing.assert_allclose(a.tree_.value, b.tree_.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.tree_.impurity, b.tree_.impurity, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.feature_importances_, b.feature_importances_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.apply(X), b.apply(X))


def test_max_leaf_nodes_accuracy_and_forest():
    X, y = load_breast_cancer(return_X_y=True)
    a = cross_val_score(skt.DecisionTreeClassifier(max_leaf_nodes=8, random_state=0), X, y, cv=5).mean()
    b = cross_val_score(tree.DecisionTreeClassifier(max_leaf_nodes=8, random_state=0), X, y, cv=5).mean()
    assert b >= a - _tol(load_breast_cancer), (a, b)
    rf = ensemble.RandomForestClassifier(10, max_leaf_nodes=6, random_state=0).fit(X, y)
    assert all(e.get_n_leaves() <= 6 for e in rf.estimators_) and rf.score(X, y) > 0.9
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        tree.DecisionTreeClassifier(max_leaf_nodes=1).fit(X, y)
