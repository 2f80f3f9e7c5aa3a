"""scikit-learn's own estimator checks over every rtx.classical estimator. Expected failures are
declared next to the estimator (rtx.classical.EXPECTED_FAILED_CHECKS) with a reason, and listed in the README."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from rtx.classical import EXPECTED_FAILED_CHECKS, all_estimators


def _expected(est):
    return EXPECTED_FAILED_CHECKS.get(type(est).__name__, {})


@parametrize_with_checks([cls() if not hasattr(cls, "_check_instance") else cls._check_instance()
                          for cls in all_estimators()], expected_failed_checks=_expected)
def test_sklearn_compatible(estimator, check):
    check(estimator)
