"""Decision trees, mirroring sklearn.tree (split search on histogram bins)."""
from rtx.classical.tree._classes import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
