"""torch.backends.opt_einsum: available when the opt_einsum package is installed. rtx.einsum lets
NumPy plan the contraction order (np.einsum(optimize=...)), so `enabled`/`strategy` are stored."""
import importlib.util

enabled = True
strategy = "auto"


def is_available():
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    if not is_available():
        return None
    import opt_einsum
    return opt_einsum
