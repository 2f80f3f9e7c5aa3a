"""rtx nn: Module, Parameter, layers, functional, init, with PyTorch's names, signatures,
defaults and state_dict keys. Loss modules come from rtx-losses (nn.CrossEntropyLoss, ...)."""
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
    # Loss modules live in rtx-losses (same layer), reached lazily: no dependency cycle.
    if name.endswith("Loss") or name in ("utils",):
        if name == "utils":
            import importlib
            return importlib.import_module("rtx.nn.utils")
        try:
            import rtx.losses as _losses
        except ModuleNotFoundError:
            raise AttributeError(f"rtx.nn.{name} needs the losses package: pip install rtx-losses") from None
        if hasattr(_losses, name):
            return getattr(_losses, name)
    raise AttributeError(f"module 'rtx.nn' has no attribute '{name}'")
