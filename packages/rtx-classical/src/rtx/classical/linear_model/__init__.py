"""Linear models, mirroring sklearn.linear_model."""
from rtx.classical.linear_model._base import LinearRegression
from rtx.classical.linear_model._coordinate_descent import ElasticNet, Lasso
from rtx.classical.linear_model._logistic import LogisticRegression
from rtx.classical.linear_model._ridge import Ridge
from rtx.classical.linear_model._stochastic_gradient import SGDClassifier, SGDRegressor

__all__ = ["ElasticNet", "Lasso", "LinearRegression", "LogisticRegression", "Ridge", "SGDClassifier", "SGDRegressor"]
