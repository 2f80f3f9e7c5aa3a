"""rtx autograd: the Function base for custom ops, the backward engine, grad modes,
higher-order derivatives (rtx.autograd.functional), checkpointing, gradcheck and anomaly
detection. Never imports the tensor: it works on whatever tensors the ops hand it."""
__version__ = "0.1.0"

from rtx.autograd import functional
from rtx.autograd.engine import backward, grad
from rtx.autograd.function import Function, once_differentiable
from rtx.autograd.grad_mode import (
                                    enable_grad,
                                    inference_mode,
                                    is_grad_enabled,
                                    is_inference_mode_enabled,
                                    no_grad,
                                    set_grad_enabled,
)
from rtx.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from rtx.autograd.graph import Node, detect_anomaly, is_anomaly_enabled, set_detect_anomaly

__all__ = ["Function", "GradcheckError", "Node", "backward", "detect_anomaly", "enable_grad", "functional",
           "grad", "gradcheck", "gradgradcheck", "inference_mode", "is_anomaly_enabled", "is_grad_enabled",
           "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
           "set_grad_enabled"]
