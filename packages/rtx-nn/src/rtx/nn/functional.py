"""rtx.nn.functional, as torch.nn.functional: the math behind every layer. Loss functions come
from rtx-losses when it is installed (F.cross_entropy, F.mse_loss, ...)."""
# ruff: noqa: F401,F403
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


def __getattr__(name):
    # Losses live in rtx-losses (same layer), reached lazily so rtx-nn does not depend on it.
    try:
        import rtx.losses.functional as _losses
    except ModuleNotFoundError:
        raise AttributeError(f"rtx.nn.functional has no attribute '{name}'"
                             + (" (loss functions need: pip install rtx-losses)" if name.endswith("loss") or
                                name in ("cross_entropy", "nll_loss", "kl_div", "ctc_loss") else "")) from None
    if hasattr(_losses, name):
        return getattr(_losses, name)
    raise AttributeError(f"rtx.nn.functional has no attribute '{name}'")
