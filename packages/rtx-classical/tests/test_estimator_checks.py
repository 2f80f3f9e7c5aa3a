"""scikit-learn's own estimator checks over every rtx.classical estimator. Expected failures are
declared next to the estimator (rtx.classical.EXPECTED_FAILED_CHECKS) with a reason, and listed in the README."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from rtx.classical import EXPECTED_FAILED_CHECKS, all_estimators


def _expected(est):
    return EXPECTED_FAILED_CHECKS.get(type(est).__name__, {})


# The neural wrappers need a module class whose input width is known in advance; they are tested in
# test_neural.py (Pipeline, GridSearchCV, clone, pickle), not by these checks (rtx.nn has no LazyLinear yet).
@parametrize_with_checks([cls() for cls in all_estimators() if cls.__module__ != "rtx.classical.neural"],
                         expected_failed_checks=_expected)
def test_sklearn_compatible(estimator, check):
    check(estimator)
