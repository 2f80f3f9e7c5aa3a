"""rtx.utils.data: the same objects as rtx.data, under torch.utils.data's name."""
from rtx.data import *  # noqa: F401,F403
from rtx.data import __all__  # noqa: F401
