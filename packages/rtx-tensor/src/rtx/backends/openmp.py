"""torch.backends.openmp: rtx's own CPU code parallelises with Python threads around NumPy's BLAS,
not with OpenMP, so this is False (the BLAS library may still use OpenMP internally)."""


def is_available():
    return False
