"""torch.backends.cpu: the SIMD level NumPy's kernels dispatch to on this CPU."""


def get_cpu_capability():
    """"AVX512", "AVX2" or "DEFAULT", as PyTorch names them, from NumPy's runtime CPU dispatch."""
    from numpy._core._multiarray_umath import __cpu_features__ as f
    if f.get("AVX512F") and f.get("AVX512BW"):
        return "AVX512"
    if f.get("AVX2"):
        return "AVX2"
    return "DEFAULT"
