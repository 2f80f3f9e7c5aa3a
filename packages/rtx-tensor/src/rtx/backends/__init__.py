"""rtx.backends: torch.backends' flags and availability queries. Values are honest for rtx: it
computes with NumPy's BLAS on the CPU and CuPy on NVIDIA GPUs. Flags a PyTorch script sets at the
top are stored and readable; which ones change what rtx does is said in each module."""
from rtx.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
