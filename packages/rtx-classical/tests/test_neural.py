"""An rtx nn.Module as a scikit-learn estimator: Pipeline, GridSearchCV over module__/optimizer__
parameters, cross_val_score, clone, pickle, partial_fit and early stopping."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import rtx.nn as nn
import rtx.optim as optim
from rtx.classical.neural import NeuralNetClassifier, NeuralNetRegressor


class MLP(nn.Module):
    def __init__(self, n_in=4, hidden=16, n_out=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, x):
        return self.net(x)


def net(**kw):
    return NeuralNetClassifier(MLP, optimizer=optim.Adam, lr=0.01, max_epochs=40, batch_size=16, random_state=0,
                               **kw)


def test_grid_search_over_module_and_optimizer_params():
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), net(module__hidden=8))
    grid = {"neuralnetclassifier__module__hidden": [2, 32], "neuralnetclassifier__optimizer__lr": [1e-4, 0.03]}
    gs = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert gs.best_params_["neuralnetclassifier__optimizer__lr"] == 0.03
    assert gs.best_score_ > 0.9
    assert gs.best_estimator_[-1].module_.net[0].out_features == gs.best_params_["neuralnetclassifier__module__hidden"]
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.85


def test_clone_pickle_and_unfitted():
    X, y = load_iris(return_X_y=True)
    est = net(module__hidden=12)
    with pytest.raises(NotFittedError):
        est.predict(X)
    c = clone(est)
    assert c.get_params()["module__hidden"] == 12 and not hasattr(c, "module_")
    est.fit(X, y)
    p = pickle.loads(pickle.dumps(est))
    assert (p.predict(X) == est.predict(X)).all()
    np.testing.assert_allclose(est.predict_proba(X).sum(1), 1, rtol=1e-5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        NeuralNetClassifier(MLP, hidden=3)


def test_partial_fit_learns_and_labels_are_kept():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    labels = np.array(["a", "b", "c"])[y]
    est = net()
    for _ in range(30):
        est.partial_fit(X, labels, classes=["a", "b", "c"])
    assert est.score(X, labels) > 0.9 and est.n_iter_ == 30


def test_regressor_early_stopping():
    X, y = load_diabetes(return_X_y=True)
    X, y = StandardScaler().fit_transform(X), (y - y.mean()) / y.std()
    r = NeuralNetRegressor(MLP, module__n_in=10, module__n_out=1, module__hidden=32, optimizer=optim.Adam, lr=0.01,
                           max_epochs=300, batch_size=32, random_state=0, validation_fraction=0.2,
                           early_stopping=True, patience=10).fit(X, y)
    assert r.n_iter_ < 300 and "valid_loss" in r.history_[-1]
    assert r.predict(X).shape == (len(y),) and r.score(X, y) > 0.4
