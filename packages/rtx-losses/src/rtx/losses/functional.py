"""The loss functions, reachable as rtx.nn.functional.<name> too."""
# ruff: noqa: F401,F403
from rtx.losses.classification import *
from rtx.losses.ctc import *
from rtx.losses.divergence import *
from rtx.losses.embedding import *
from rtx.losses.regression import *
