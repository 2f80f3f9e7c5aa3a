"""rtx kernels: fused CuPy kernels with NumPy references."""
__version__ = "0.1.0"

from rtx.kernel._adam import adam_step
from rtx.kernel._bias_act import bias_act, bias_act_backward
from rtx.kernel._gelu import gelu, gelu_backward
from rtx.kernel._norm import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from rtx.kernel._registry import KERNELS, Kernel, Sample
from rtx.kernel._sgd import sgd_step
from rtx.kernel.int_gemm import exact_matmul, gemm_dtype, int_matmul

__all__ = ["KERNELS", "Kernel", "Sample", "adam_step", "bias_act", "bias_act_backward", "digamma", "erf", "erfc",
           "erfinv", "exact_matmul", "exp_rows_", "gelu", "gelu_backward", "gemm_dtype", "int_matmul", "layer_norm",
           "layer_norm_backward", "lgamma", "log_softmax", "log_softmax_backward", "rms_norm", "rms_norm_backward",
           "sgd_step", "softmax", "softmax_backward"]
from rtx.kernel._softmax import exp_rows_, log_softmax, log_softmax_backward, softmax, softmax_backward
from rtx.kernel._special import digamma, erf, erfc, erfinv, lgamma
