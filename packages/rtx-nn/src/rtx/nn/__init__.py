"""rtx nn: Module, Parameter, layers, functional, init, with PyTorch's names, signatures,
defaults and state_dict keys. The loss modules (nn.CrossEntropyLoss, ...) are thin over the loss
functions of rtx-losses, the package below rtx-nn."""
# ruff: noqa: F401,F403
__version__ = "0.1.0"

from rtx.nn import attention, functional, init
from rtx.nn.modules.activation import *
from rtx.nn.modules.attention import *
from rtx.nn.modules.batchnorm import *
from rtx.nn.modules.container import *
from rtx.nn.modules.conv import *
from rtx.nn.modules.distance import *
from rtx.nn.modules.dropout import *
from rtx.nn.modules.flatten import *
from rtx.nn.modules.linear import *
from rtx.nn.modules.loss import *
from rtx.nn.modules.module import Module
from rtx.nn.modules.normalization import *
from rtx.nn.modules.padding import *
from rtx.nn.modules.pooling import *
from rtx.nn.modules.rnn import *
from rtx.nn.modules.sparse import *
from rtx.nn.modules.transformer import *
from rtx.nn.modules.upsampling import *
from rtx.nn.parameter import Buffer, Parameter


def __getattr__(name):
    if name in ("parallel", "DataParallel"):  # torch.nn.parallel / torch.nn.DataParallel, loaded on first use
        import importlib
        parallel = importlib.import_module("rtx.nn.parallel")
        return parallel if name == "parallel" else parallel.DataParallel
    if name == "utils":
        import importlib
        return importlib.import_module("rtx.nn.utils")
    raise AttributeError(f"module 'rtx.nn' has no attribute '{name}'")
