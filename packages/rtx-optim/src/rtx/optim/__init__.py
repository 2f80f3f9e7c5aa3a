"""rtx optim: optimizers, LR schedulers, AMP grad scaling, with PyTorch's names, defaults,
state_dict format and errors (torch.optim). `rtx.amp` (GradScaler, autocast) ships in this
distribution too."""
__version__ = "0.1.0"

from rtx.optim import lr_scheduler
from rtx.optim.adadelta import Adadelta
from rtx.optim.adagrad import Adagrad
from rtx.optim.adam import Adam
from rtx.optim.adamax import Adamax
from rtx.optim.adamw import AdamW
from rtx.optim.lbfgs import LBFGS
from rtx.optim.nadam import NAdam
from rtx.optim.optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from rtx.optim.radam import RAdam
from rtx.optim.rmsprop import RMSprop
from rtx.optim.sgd import SGD

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam", "Optimizer", "RAdam", "RMSprop", "SGD",
           "lr_scheduler", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]
