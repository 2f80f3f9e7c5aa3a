"""NeuralNetClassifier / NeuralNetRegressor: an rtx nn.Module class as a scikit-learn estimator (skorch's
shape). Constructor arguments of the module go as `module__name=value`, of the optimizer as
`optimizer__name=value`; both are parameters (get_params/set_params/clone/GridSearchCV see them).
The module is built at fit time, so the estimator stays cloneable and picklable."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, to_host

_PREFIXES = ("module__", "optimizer__", "criterion__")


class _NeuralNet(DeviceMixin, BaseEstimator):
    def __init__(self, module, *, criterion=None, optimizer=None, lr=0.01, max_epochs=10, batch_size=128,
                 validation_fraction=0.0, early_stopping=False, patience=5, random_state=None, verbose=0,
                 warm_start=False, device="cpu", **kwargs):
        self.module = module
        self.criterion = criterion
        self.optimizer = optimizer
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.patience = patience
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.device = device
        for k, v in kwargs.items():
            if not k.startswith(_PREFIXES):
                raise TypeError(f"{type(self).__name__} got an unexpected keyword argument {k!r} (only "
                                f"{', '.join(p + '*' for p in _PREFIXES)} are passed through)")
            setattr(self, k, v)

    # -- parameters: the prefixed ones are parameters too ----------------------------------------------
    def _prefixed(self):
        return {k: v for k, v in vars(self).items() if k.startswith(_PREFIXES)}

    def get_params(self, deep=True):
        params = super().get_params(deep=False)
        params.update(self._prefixed())
        return params

    def set_params(self, **params):
        plain = {k: v for k, v in params.items() if not k.startswith(_PREFIXES)}
        for k, v in params.items():
            if k.startswith(_PREFIXES):
                setattr(self, k, v)
        return super().set_params(**plain) if plain else self

    def _sub(self, prefix):
        return {k[len(prefix):]: v for k, v in self._prefixed().items() if k.startswith(prefix)}

    # -- training -----------------------------------------------------------------------------------------
    def _initialize(self):
        import rtx
        import rtx.optim as optim
        if self.random_state is not None:
            rtx.manual_seed(int(self.random_state))
        dev = str(self._device())
        self.module_ = self.module(**self._sub("module__")).to(dev)
        opt = self.optimizer if self.optimizer is not None else optim.SGD
        kw = {"lr": self.lr, **self._sub("optimizer__")}
        self.optimizer_ = opt(self.module_.parameters(), **kw)
        self.criterion_ = (self.criterion or self._default_criterion())(**self._sub("criterion__"))
        self.history_ = []

    def _tensor(self, a, dtype):
        import rtx
        return rtx.tensor(np.ascontiguousarray(to_host(a), dtype=dtype), device=str(self._device()))

    def _epochs(self, X, y, n_epochs):
        import rtx
        rng = np.random.default_rng(self.random_state)
        n = X.shape[0]
        idx = rng.permutation(n)
        n_val = int(round(self.validation_fraction * n)) if self.validation_fraction else 0
        val, tr = idx[:n_val], idx[n_val:]
        best, bad = np.inf, 0
        for _ in range(n_epochs):
            self.module_.train()
            order = tr[rng.permutation(len(tr))]
            total = 0.0
            for s in range(0, len(order), self.batch_size):
                b = order[s:s + self.batch_size]
                xb, yb = self._tensor(X[b], np.float32), self._target(y[b])
                self.optimizer_.zero_grad()
                loss = self.criterion_(self.module_(xb), yb)
                loss.backward()
                self.optimizer_.step()
                total += float(loss.item()) * len(b)
            record = {"epoch": len(self.history_) + 1, "train_loss": total / max(len(tr), 1)}
            if n_val:
                self.module_.eval()
                with rtx.no_grad():
                    record["valid_loss"] = float(self.criterion_(self.module_(self._tensor(X[val], np.float32)),
                                                                 self._target(y[val])).item())
            self.history_.append(record)
            if self.verbose:
                print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()))
            if self.early_stopping and n_val:
                if record["valid_loss"] < best - 1e-7:
                    best, bad = record["valid_loss"], 0
                else:
                    bad += 1
                    if bad >= self.patience:
                        break
        self.n_iter_ = len(self.history_)

    def fit(self, X, y):
        X, y = self._validate_Xy(X, y, dtype=[np.float32, np.float64], **self._y_kw())
        y = self._prepare_y(y, fit=True)
        if not (self.warm_start and hasattr(self, "module_")):
            self._initialize()
        self._epochs(to_host(X), y, self.max_epochs)
        return self

    def partial_fit(self, X, y, classes=None):
        first = not hasattr(self, "module_")
        X, y = self._validate(X, y, reset=first, **self._y_kw())
        if first and classes is not None:
            self.classes_ = np.asarray(classes)
        y = self._prepare_y(y, fit=first and classes is None)
        if first:
            self._initialize()
        self._epochs(to_host(X), y, 1)
        return self

    def _forward(self, X):
        import rtx
        check_is_fitted(self, "module_")
        Xd = to_host(self._validate(X, reset=False))
        self.module_.eval()
        outs = []
        with rtx.no_grad():
            for s in range(0, len(Xd), max(self.batch_size, 1024)):
                outs.append(np.asarray(self.module_(self._tensor(Xd[s:s + max(self.batch_size, 1024)],
                                                                 np.float32)).detach().cpu()))
        return np.concatenate(outs)

    def __getstate__(self):
        # the module and optimizer pickle with their state (rtx tensors pickle); nothing device-bound else
        return dict(self.__dict__)


class NeuralNetClassifier(ClassifierMixin, _NeuralNet):
    """The module maps (batch, n_features) float32 to (batch, n_classes) logits; the default loss is
    rtx.nn.CrossEntropyLoss."""

    def _default_criterion(self):
        import rtx.nn as nn
        return nn.CrossEntropyLoss

    def _y_kw(self):
        return {}

    def _prepare_y(self, y, fit):
        check_classification_targets(y)
        if fit:
            self.classes_ = np.unique(y)
        idx = np.searchsorted(self.classes_, y)
        if (idx >= len(self.classes_)).any() or (self.classes_[np.minimum(idx, len(self.classes_) - 1)] != y).any():
            raise ValueError("y contains labels not seen in the first call (pass classes= to partial_fit)")
        return idx

    def _target(self, yb):
        return self._tensor(yb, np.int64)

    def predict_proba(self, X):
        Z = self._forward(X)
        Z = Z - Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        return P / P.sum(axis=1, keepdims=True)

    def predict(self, X):
        Z = self._forward(X)
        return self.classes_[Z.argmax(axis=1)]


class NeuralNetRegressor(RegressorMixin, _NeuralNet):
    """The module maps (batch, n_features) to (batch, n_targets); y of shape (n,) trains against (n, 1)
    and predicts (n,). The default loss is rtx.nn.MSELoss."""

    def _default_criterion(self):
        import rtx.nn as nn
        return nn.MSELoss

    def _y_kw(self):
        return {"y_numeric": True, "multi_output": True}

    def _prepare_y(self, y, fit):
        y = np.asarray(y, dtype=np.float32)
        if fit:
            self._y_1d = y.ndim == 1
        return y.reshape(len(y), -1)

    def _target(self, yb):
        return self._tensor(yb, np.float32)

    def predict(self, X):
        out = self._forward(X)
        return out[:, 0] if self._y_1d and out.shape[1] == 1 else out


__all__ = ["NeuralNetClassifier", "NeuralNetRegressor"]
