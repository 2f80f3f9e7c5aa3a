"""rtx.utils.checkpoint, as torch.utils.checkpoint (rtx/utils is a namespace shared with rtx-data)."""
from rtx.autograd.checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
