"""Minimal cost-complexity pruning against scikit-learn: the pruning path and the pruned trees, on data where
the unpruned trees are scikit-learn's (the bins hold every distinct value; no equal-gain splits)."""
import numpy as np
import pytest
from sklearn import tree as skt
from sklearn.datasets import load_diabetes, load_wine

from rtx.classical import ensemble, tree
from rtx.classical.tree._prune import prune


def _tie_free(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(250, 6))
    signal = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=250)
    return X, ((signal > 0).astype(int) if kind == "clf" else signal)


def _canon(t, i=0):
    """Preorder (feature, node size) of a tree: equal for the same tree under any node numbering."""
    if t.children_left[i] == -1:
        return [(-1, int(t.n_node_samples[i]))]
    return [(int(t.feature[i]), int(t.n_node_samples[i]))] + _canon(t, t.children_left[i]) + \
        _canon(t, t.children_right[i])


CASES = {
    "wine": (lambda: load_wine(return_X_y=True), "clf", {}),
    "tie-free clf depth 4": (lambda: _tie_free("clf"), "clf", dict(max_depth=4)),
    "tie-free clf entropy": (lambda: _tie_free("clf"), "clf", dict(max_depth=4, criterion="entropy")),
    "tie-free reg": (lambda: _tie_free("reg"), "reg", dict(min_samples_leaf=5)),
    "diabetes": (lambda: load_diabetes(return_X_y=True), "reg", dict(min_samples_leaf=5)),
}


def _classes(kind):
    return ((skt.DecisionTreeClassifier, tree.DecisionTreeClassifier) if kind == "clf" else
            (skt.DecisionTreeRegressor, tree.DecisionTreeRegressor))


@pytest.mark.parametrize("case", list(CASES))
def test_pruning_path_is_sklearns(case):
    load, kind, kw = CASES[case]
    X, y = load()
    ref_cls, ours_cls = _classes(kind)
    a = ref_cls(random_state=0, **kw).cost_complexity_pruning_path(X, y)
    b = ours_cls(**kw).cost_complexity_pruning_path(X, y)
    assert len(a.ccp_alphas) == len(b.ccp_alphas) > 3
    np.testing.assert_allclose(b.ccp_alphas, a.ccp_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(b.impurities, a.impurities, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("case", ["tie-free clf depth 4", "tie-free reg", "diabetes"])
def test_pruned_trees_are_sklearns(case):
    load, kind, kw = CASES[case]
    X, y = load()
    ref_cls, ours_cls = _classes(kind)
    alphas = ref_cls(random_state=0, **kw).cost_complexity_pruning_path(X, y).ccp_alphas
    for alpha in ((alphas[1:] + alphas[:-1]) / 2)[::3]:      # between two steps of the path: no rounding edge
        a = ref_cls(random_state=0, ccp_alpha=alpha, **kw).fit(X, y)
        b = ours_cls(ccp_alpha=alpha, **kw).fit(X, y)
        assert _canon(b.tree_) == _canon(a.tree_), alpha
        assert b.get_depth() == a.get_depth() and b.get_n_leaves() == a.get_n_leaves()
        np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-12)
        np.testing.assert_allclose(b.feature_importances_, a.feature_importances_, rtol=1e-9, atol=1e-12)


def test_pruning_at_path_alphas_and_weights():
    # ccp_alpha equal to a path value takes that step (scikit-learn's "ccp_alpha < alpha" stop), so the
    # pruned tree's leaf impurity is the path's; sample and class weights enter the path as in scikit-learn
    X, y = _tie_free("clf")
    sw = np.random.default_rng(1).uniform(0.5, 2, len(y))
    kw = dict(max_depth=4, class_weight={0: 1.0, 1: 2.0})
    a = skt.DecisionTreeClassifier(random_state=0, **kw).cost_complexity_pruning_path(X, y, sample_weight=sw)
    path = tree.DecisionTreeClassifier(**kw).cost_complexity_pruning_path(X, y, sample_weight=sw)
    np.testing.assert_allclose(path.ccp_alphas, a.ccp_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(path.impurities, a.impurities, rtol=1e-9, atol=1e-15)
    for alpha in path.ccp_alphas:
        t = tree.DecisionTreeClassifier(ccp_alpha=alpha, **kw).fit(X, y, sample_weight=sw).tree_
        leaf = t.children_left == -1
        total = (t.weighted_n_node_samples[leaf] * t.impurity[leaf]).sum() / t.weighted_n_node_samples[0]
        assert np.isclose(total, path.impurities[path.ccp_alphas <= alpha][-1], rtol=1e-9, atol=1e-12)
    assert tree.DecisionTreeClassifier(ccp_alpha=path.ccp_alphas[-1], **kw).fit(X, y, sample_weight=sw) \
        .get_n_leaves() == 1


def test_forest_passes_ccp_alpha_to_its_trees():
    X, y = load_wine(return_X_y=True)
    full = ensemble.RandomForestClassifier(8, random_state=0).fit(X, y)
    pruned = ensemble.RandomForestClassifier(8, random_state=0, ccp_alpha=0.02).fit(X, y)
    for e0, e1 in zip(full.estimators_, pruned.estimators_):
        ref = prune(e0.tree_, 0.02)              # the same bootstrap tree, pruned afterwards
        assert _canon(e1.tree_) == _canon(ref) and e1.get_n_leaves() < e0.get_n_leaves()
        np.testing.assert_allclose(e1.tree_.value, ref.value)
    reg = ensemble.RandomForestRegressor(4, random_state=0, ccp_alpha=50.0).fit(*load_diabetes(return_X_y=True))
    assert all(e.get_n_leaves() < 40 for e in reg.estimators_)


def test_ccp_alpha_errors():
    X, y = load_wine(return_X_y=True)
    for bad in (-0.1, "0.1", None):
        with pytest.raises(ValueError, match="The 'ccp_alpha' parameter of DecisionTreeClassifier must be a float"):
            tree.DecisionTreeClassifier(ccp_alpha=bad).fit(X, y)
        with pytest.raises(ValueError, match="ccp_alpha"):
            ensemble.RandomForestClassifier(2, ccp_alpha=bad).fit(X, y)
