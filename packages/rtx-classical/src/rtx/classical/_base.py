"""What every estimator shares: the device (NumPy for 'cpu', CuPy for 'cuda'), input validation with
scikit-learn's own checks and messages, and moving arrays to and from the device.

Fitted attributes with scikit-learn's names (`coef_`, `cluster_centers_`, ...) are always NumPy arrays,
whatever the device: scikit-learn's tools, pickling and comparisons then work unchanged. The heavy
computation runs on the device's array module; outputs come back as NumPy unless the input was a CuPy
array (then they stay on the GPU, as cuML does).
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

import rtx.runtime as rt

FLOATS = [np.float64, np.float32]


def is_cupy(a) -> bool:
    return type(a).__module__.split(".")[0] == "cupy"


def _is_rtx_tensor(a) -> bool:
    return type(a).__module__.startswith("rtx.") and hasattr(a, "__dlpack__") and hasattr(a, "device")


def _unwrap(X):
    """rtx Tensors become their array (NumPy on the CPU, CuPy on a GPU, through DLPack: no copy)."""
    if _is_rtx_tensor(X):
        if str(X.device).startswith("cuda"):
            return rt.devices.cupy().from_dlpack(X.detach())
        return np.asarray(X.detach())
    return X


class DeviceMixin:
    """`device="cpu" | "cuda" | "cuda:N"` as an estimator parameter (like cuML's output_type, but rtx's)."""

    def _device(self):
        d = rt.as_device(getattr(self, "device", "cpu") or "cpu")
        if d.type == "cuda":
            rt.devices.require_cuda(d)
        return d

    def _xp(self):
        return rt.module_for(self._device())

    def _to_dev(self, a, dtype=None):
        """Put a host or device array on this estimator's device."""
        d = self._device()
        out = rt.to_device(a, d)
        return out if dtype is None else out.astype(dtype, copy=False)

    def _validate_Xy(self, X, y, **kw):
        """Supervised fit: y is required (scikit-learn's message when it is None)."""
        if y is None:
            validate_data(self, X, None, reset=True)  # raises "requires y to be passed"
        return self._validate(X, y, reset=True, **kw)

    def _validate(self, X, y=None, *, reset=True, dtype=FLOATS, **kw):
        """scikit-learn's validate_data on host input; the same checks done on the device for CuPy input.
        Returns X on this estimator's device (and y as validated by scikit-learn, on the host)."""
        X = _unwrap(X)
        if y is not None:
            y = _unwrap(y)
            if is_cupy(y):
                y = y.get()
        if is_cupy(X):
            X = _validate_device(self, X, reset=reset, dtype=dtype,
                                 ensure_min_samples=kw.get("ensure_min_samples", 1))
            if y is not None and not (isinstance(y, str) and y == "no_validation"):
                from sklearn.utils.validation import check_array, column_or_1d
                y = (column_or_1d(y, warn=True) if not kw.get("multi_output") else check_array(y, ensure_2d=False))
                if len(y) != X.shape[0]:
                    raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                                     f"[{X.shape[0]}, {len(y)}]")
                return self._to_dev(X), y
            return self._to_dev(X)
        out = validate_data(self, X, y if y is not None else "no_validation", reset=reset, dtype=dtype, **kw)
        if y is not None:
            X, y = out
            return self._to_dev(X), y
        return self._to_dev(out)


def _validate_device(est, X, *, reset, dtype, ensure_min_samples=1):
    """The subset of check_array that applies to a CuPy array: 2-D, finite, enough samples, float dtype,
    and n_features_in_ set (fit) or checked (predict). Messages are scikit-learn's."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D array instead. Reshape your data either using "
                         "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it "
                         "contains a single sample.")
    if X.shape[0] < ensure_min_samples:
        raise ValueError(f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum of "
                         f"{ensure_min_samples} is required.")
    if X.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if dtype is not None and X.dtype not in [np.dtype(d) for d in dtype]:
        X = X.astype(dtype[0])
    if not bool(X.dtype.kind == "f" and X.size and rt.devices.cupy().isfinite(X).all()) and X.size:
        raise ValueError("Input X contains NaN or infinity.")
    if reset:
        est.n_features_in_ = X.shape[1]
        if hasattr(est, "feature_names_in_"):
            del est.feature_names_in_
    else:
        check_is_fitted(est)
        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                             f"{est.n_features_in_} features as input.")
    return X


def to_host(a):
    return a.get() if is_cupy(a) else np.asarray(a)


def as_output(a, X_in):
    """Return results as the caller gave X: CuPy in, CuPy out; anything else gets NumPy."""
    if is_cupy(_unwrap(X_in)):
        return a if is_cupy(a) else rt.devices.cupy().asarray(a)
    return to_host(a)


def check_random_state_int(random_state):
    """An int seed from random_state (None, int or RandomState), to seed a device generator."""
    from sklearn.utils import check_random_state
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def sample_weight_or_ones(sample_weight, X, xp, dtype):
    """scikit-learn's _check_sample_weight (its errors and messages) and then the device."""
    from sklearn.utils.validation import _check_sample_weight
    n = X.shape[0]
    if sample_weight is None:
        return xp.ones(n, dtype=dtype)
    sample_weight = to_host(_unwrap(sample_weight))
    sw = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=dtype)
    return xp.asarray(sw)


def row_norms_sq(X, xp):
    return xp.einsum("ij,ij->i", X, X)


def sq_distances(X, Y, xp, X_sq=None, Y_sq=None):
    """Squared Euclidean distances by one GEMM: |x|^2 - 2 x.y + |y|^2, clipped at 0 (rounding)."""
    if X_sq is None:
        X_sq = row_norms_sq(X, xp)
    if Y_sq is None:
        Y_sq = row_norms_sq(Y, xp)
    D = X @ Y.T
    D *= -2
    D += X_sq[:, None]
    D += Y_sq[None, :]
    xp.maximum(D, 0, out=D)
    return D


def gram(X, xp):
    """X.T @ X. On the CPU the row chunks run side by side on rtx.runtime's pool with single-threaded BLAS,
    and the partial products are summed: OpenBLAS's own two threads spin and lose several times over on
    this shared machine (10k x 256: 103 ms against 22 ms for one thread, under load)."""
    n = X.shape[0]
    workers = rt.threads.cpu_workers() if xp is np else 1
    if workers <= 1 or n < 4096:
        return X.T @ X
    step = -(-n // (2 * workers))
    parts = rt.threads.parallel_map(lambda s: X[s:s + step].T @ X[s:s + step], range(0, n, step))
    out = parts[0]
    for q in parts[1:]:
        out += q
    return out


def small_lapack(xp):
    """A scope for LAPACK on small (features x features) matrices: one BLAS thread on the CPU. A 256 x 256
    eigh took 16 ms with one OpenBLAS thread and 390 ms with two on this loaded 2-core machine."""
    import contextlib
    return rt.threads.single_threaded_blas() if xp is np else contextlib.nullcontext()


def chunk_rows(n_rows, n_cols, itemsize=8, budget_bytes=64 << 20):
    """Row-chunk size so that an (rows x n_cols) block stays under the memory budget."""
    return max(1, min(n_rows, budget_bytes // max(1, n_cols * itemsize)))


def labels_output(classes, idx, X_in):
    """Class labels for predicted indices: on the GPU when X came as CuPy and the labels are numbers."""
    labels = classes[to_host(idx)]
    if labels.dtype.kind in "biuf":
        return as_output(labels, X_in)
    return labels
