"""GaussianNB and MultinomialNB: per-class statistics by one-hot GEMMs on the device; scikit-learn's
smoothing (var_smoothing, alpha) and log-likelihoods."""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, check_non_negative

from rtx.classical._base import DeviceMixin, sample_weight_or_ones, to_host


class _BaseNB(ClassifierMixin, DeviceMixin, BaseEstimator):
    def _onehot(self, X, y, sample_weight):
        check_classification_targets(y)
        xp = self._xp()
        self.classes_, yi = np.unique(y, return_inverse=True)
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        Y = xp.zeros((X.shape[0], len(self.classes_)), dtype=X.dtype)
        Y[xp.arange(X.shape[0]), xp.asarray(yi)] = 1
        return Y * sw[:, None], xp

    def predict_joint_log_proba(self, X):
        check_is_fitted(self)
        return self._joint_log_likelihood(to_host(self._validate(X, reset=False)))

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[self.predict_joint_log_proba(X).argmax(axis=1)]

    def predict_log_proba(self, X):
        jll = self.predict_joint_log_proba(X)
        return jll - logsumexp(jll, axis=1)[:, None]

    def predict_proba(self, X):
        return np.exp(self.predict_log_proba(X))


class GaussianNB(_BaseNB):
    def __init__(self, *, priors=None, var_smoothing=1e-9, device="cpu"):
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.device = device

    def fit(self, X, y, sample_weight=None):
        X, y = self._validate_Xy(X, y)
        Y, xp = self._onehot(X, y, sample_weight)
        Xf = X.astype(xp.float64)
        Y = Y.astype(xp.float64)
        counts = Y.sum(0)
        mean = (Y.T @ Xf) / counts[:, None]
        var = (Y.T @ (Xf ** 2)) / counts[:, None] - mean ** 2
        # second pass for an accurate variance (the one-pass formula cancels)
        var = xp.stack([(Y[:, c:c + 1] * (Xf - mean[c]) ** 2).sum(0) / counts[c] for c in range(Y.shape[1])])
        self.epsilon_ = float(self.var_smoothing * xp.var(Xf, axis=0).max())
        self.theta_ = to_host(mean)
        self.var_ = to_host(var) + self.epsilon_
        self.class_count_ = to_host(counts)
        if self.priors is not None:
            priors = np.asarray(self.priors, dtype=float)
            if len(priors) != len(self.classes_):
                raise ValueError("Number of priors must match number of classes.")
            if not np.isclose(priors.sum(), 1.0):
                raise ValueError("The sum of the priors should be 1.")
            if (priors < 0).any():
                raise ValueError("Priors must be non-negative.")
            self.class_prior_ = priors
        else:
            self.class_prior_ = self.class_count_ / self.class_count_.sum()
        return self

    def _joint_log_likelihood(self, X):
        n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * self.var_), axis=1)
        d = X[:, None, :] - self.theta_[None]
        n_ij = n_ij - 0.5 * np.sum(d ** 2 / self.var_[None], axis=2)
        with np.errstate(divide="ignore"):
            return n_ij + np.log(self.class_prior_)


class MultinomialNB(_BaseNB):
    def __init__(self, *, alpha=1.0, force_alpha=True, fit_prior=True, class_prior=None, device="cpu"):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.device = device

    def fit(self, X, y, sample_weight=None):
        X, y = self._validate_Xy(X, y)
        check_non_negative(to_host(X), "MultinomialNB (input X)")
        Y, xp = self._onehot(X, y, sample_weight)
        self.feature_count_ = to_host(Y.T @ X).astype(np.float64)
        self.class_count_ = to_host(Y.sum(0)).astype(np.float64)
        alpha = np.asarray(self.alpha, dtype=float)
        if (alpha < 0).any():
            raise ValueError("All values in alpha must be greater than 0.")
        if not self.force_alpha:
            alpha = np.maximum(alpha, 1e-10)
        smoothed = self.feature_count_ + alpha
        self.feature_log_prob_ = np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))
        k = len(self.classes_)
        if self.class_prior is not None:
            if len(self.class_prior) != k:
                raise ValueError("Number of priors must match number of classes.")
            self.class_log_prior_ = np.log(np.asarray(self.class_prior, dtype=float))
        elif self.fit_prior:
            with np.errstate(divide="ignore"):
                self.class_log_prior_ = np.log(self.class_count_) - np.log(self.class_count_.sum())
        else:
            self.class_log_prior_ = np.full(k, -np.log(k))
        return self

    def _joint_log_likelihood(self, X):
        check_non_negative(X, "MultinomialNB (input X)")
        return X @ self.feature_log_prob_.T + self.class_log_prior_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.classifier_tags.poor_score = True  # as scikit-learn's: counts model, not made for blobs
        return tags


__all__ = ["GaussianNB", "MultinomialNB"]
