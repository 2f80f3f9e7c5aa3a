"""scikit-learn compatible estimators computed by rtx on NumPy (device="cpu") or CuPy (device="cuda").

    from rtx.classical.cluster import KMeans   # instead of sklearn.cluster.KMeans

Submodules mirror scikit-learn's: linear_model, cluster, decomposition, neighbors, naive_bayes,
discriminant_analysis, tree, ensemble, svm, neural (an rtx nn.Module as an estimator)."""
__version__ = "0.1.0"

import importlib

SUBMODULES = ["linear_model", "cluster", "decomposition", "neighbors", "naive_bayes", "discriminant_analysis", "tree",
              "svm",
              "ensemble",
              "neural"]

_SW_RANDOM = ("sample_weight is not equivalent to removing/repeating samples: the random initialisation draws "
              "differ (scikit-learn declares the same for its KMeans and MiniBatchKMeans)")

_SW_SGD = ("a sample of weight 2 is one step of double size, not two steps (scikit-learn declares the same for its "
           "SGDClassifier and SGDRegressor)")

_SW_BOOT = ("the bootstrap draws differ between weighted and repeated data (scikit-learn declares the same for its "
            "forests)")

# scikit-learn checks an estimator is known to fail, with the reason (passed to parametrize_with_checks'
# expected_failed_checks and listed in the README).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "Ridge": {"check_non_transformer_estimators_n_iter":
              "the cholesky and svd solvers are direct: there is no iteration count (scikit-learn's Ridge leaves "
              "n_iter_ None for them too)"},
    "SGDClassifier": {"check_sample_weight_equivalence_on_dense_data": _SW_SGD},
    "SGDRegressor": {"check_sample_weight_equivalence_on_dense_data": _SW_SGD},
    "RandomForestClassifier": {"check_sample_weight_equivalence_on_dense_data": _SW_BOOT},
    "RandomForestRegressor": {"check_sample_weight_equivalence_on_dense_data": _SW_BOOT},
    "KMeans": {"check_sample_weight_equivalence_on_dense_data": _SW_RANDOM},
    "LinearSVC": {"check_sample_weight_equivalence_on_dense_data":
                  "dual coordinate descent stops at tol and visits samples in a random order: the weighted and the "
                  "repeated problems end at different points near the same optimum (scikit-learn declares the "
                  "same for its LinearSVC)"},
    "SVC": {"check_sample_weight_equivalence_on_dense_data":
            "SMO stops at tol: the weighted and the repeated problems end at different points within tol of the "
            "same optimum (scikit-learn declares the same for its SVC)"},
    "MiniBatchKMeans": {"check_sample_weight_equivalence_on_dense_data": _SW_RANDOM},
}


def all_estimators():
    """Every estimator class of rtx.classical (for the scikit-learn checks and the docs)."""
    out = []
    for name in SUBMODULES:
        mod = importlib.import_module(f"rtx.classical.{name}")
        out += [getattr(mod, n) for n in mod.__all__]
    return out


def __getattr__(name):
    if name in SUBMODULES or name in ("neural",):
        return importlib.import_module(f"rtx.classical.{name}")
    raise AttributeError(f"module 'rtx.classical' has no attribute {name!r}")
