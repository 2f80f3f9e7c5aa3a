"""What the model families share: the `weights=` argument, channel rounding, and building a
model without running its initialisers (to read parameter shapes of a 138M-parameter VGG in
milliseconds)."""
from __future__ import annotations

import contextlib

from rtx.nn import init as _init


def _make_divisible(v, divisor, min_value=None):
    """Round a channel count to the nearest multiple of divisor, never more than 10% down
    (the rule of TensorFlow's MobileNet code, which torchvision keeps)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _check_weights(name, weights, progress=True):
    """rtx ships no pretrained weights and downloads nothing: weights must be None. A torchvision
    checkpoint loads with model.load_state_dict(rtx.load(path))."""
    if weights is None or weights is False:
        return
    raise ValueError(
        f"{name}(weights={weights!r}): rtx downloads no pretrained weights. Build the model with "
        f"weights=None and load a torchvision checkpoint you have on disk: "
        f"model.load_state_dict(rtx.load('{name}.pth'))")


@contextlib.contextmanager
def _no_init():
    """Build models without drawing initial values: parameters keep the uninitialised memory that
    rtx.empty gave them (which the OS does not even commit until it is touched). For reading
    shapes, counting parameters, or loading a state_dict right after; never for training."""
    saved = _init._fill
    _init._fill = lambda tensor, sample, generator=None: tensor
    try:
        yield
    finally:
        _init._fill = saved


def count_parameters(model):
    """Number of scalar parameters (what torchvision's model cards call 'num_params')."""
    return sum(p.numel() for p in model.parameters())
