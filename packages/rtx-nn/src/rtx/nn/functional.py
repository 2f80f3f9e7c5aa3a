"""rtx.nn.functional, as torch.nn.functional: the math behind every layer, and the loss functions
(F.cross_entropy, F.mse_loss, ...) from rtx-losses, the package below rtx-nn that holds them."""
# ruff: noqa: F401,F403
from rtx.losses.functional import *
from rtx.nn._functional.activation import *
from rtx.nn._functional.attention import *
from rtx.nn._functional.conv import *
from rtx.nn._functional.dropout import *
from rtx.nn._functional.embedding import *
from rtx.nn._functional.linear import *
from rtx.nn._functional.misc import *
from rtx.nn._functional.normalization import *
from rtx.nn._functional.pooling import *
from rtx.nn._functional.rnn import *
from rtx.nn._functional.vector import *
