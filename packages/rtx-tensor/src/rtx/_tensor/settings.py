"""The global switches a PyTorch script sets at its top: determinism and float32 matmul precision
(thread counts come from rtx.runtime.threads)."""

_det = {"on": False, "warn_only": False}
_precision = ["highest"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Stored and readable. rtx's CPU ops are deterministic (no atomics; BLAS sums in a fixed order
    for a fixed thread count); on CUDA, CuPy's scatter-add style ops use atomics and may not be."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _det.update(on=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _det["on"]


def is_deterministic_algorithms_warn_only_enabled():
    return _det["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    modes = {"default": 0, "warn": 1, "error": 2}
    level = modes[debug_mode] if isinstance(debug_mode, str) and debug_mode in modes else debug_mode
    if level not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                           f"but got {debug_mode}")
    use_deterministic_algorithms(level != 0, warn_only=level == 1)


def get_deterministic_debug_mode():
    return 0 if not _det["on"] else (1 if _det["warn_only"] else 2)


def set_float32_matmul_precision(precision):
    """"highest" (true float32) or "high"/"medium" (TF32 on GPUs): sets
    rtx.backends.cuda.matmul.allow_tf32 as PyTorch does; the CPU always computes in float32."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid value of precision, expected one of highest, high, medium, got {precision!r}")
    from rtx.backends import cuda
    cuda.matmul.allow_tf32 = precision != "highest"
    _precision[0] = precision


def get_float32_matmul_precision():
    from rtx.backends import cuda
    if cuda.matmul.allow_tf32 and _precision[0] == "highest":
        return "high"  # allow_tf32 was set directly
    return _precision[0] if cuda.matmul.allow_tf32 else "highest"


