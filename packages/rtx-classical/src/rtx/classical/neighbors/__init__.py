"""Nearest neighbours (brute force on BLAS), mirroring sklearn.neighbors."""
from rtx.classical.neighbors._base import NearestNeighbors
from rtx.classical.neighbors._supervised import KNeighborsClassifier, KNeighborsRegressor

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor", "NearestNeighbors"]
