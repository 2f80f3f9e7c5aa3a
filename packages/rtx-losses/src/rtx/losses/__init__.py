"""rtx losses: PyTorch's loss functions, numerically stable for large logits, in
rtx.losses.functional (also reachable as rtx.nn.functional.cross_entropy, ...). The loss modules
(CrossEntropyLoss, ...) are rtx-nn's: rtx.nn.CrossEntropyLoss, thin over these functions."""
__version__ = "0.1.0"

from rtx.losses import functional  # noqa: F401
from rtx.losses._reduction import legacy_get_string  # noqa: F401  (size_average/reduce -> reduction, for modules)


def __getattr__(name):
    # The loss modules moved up to rtx-nn (rtx-losses sits below it): point old spellings there.
    if name.endswith("Loss") and name[:1].isupper():
        raise AttributeError(f"module 'rtx.losses' has no attribute '{name}': the loss modules are rtx.nn's, "
                             f"use rtx.nn.{name} (pip install rtx-nn)")
    raise AttributeError(f"module 'rtx.losses' has no attribute '{name}'")
