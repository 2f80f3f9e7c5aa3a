"""The loss modules (rtx/nn/modules/loss.py): plain attributes of rtx.nn, thin over rtx-losses'
functions, with PyTorch's constructor arguments, buffers and legacy size_average/reduce."""
import inspect
import warnings

import numpy as np
import pytest

import rtx
import rtx.losses.functional as LF
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.nn.modules import loss as loss_modules
from rtx.testing import assert_close


def test_losses_are_plain_attributes_of_nn():
    assert "CrossEntropyLoss" in vars(nn) and nn.CrossEntropyLoss is loss_modules.CrossEntropyLoss
    for name in loss_modules.__all__:
        assert getattr(nn, name) is getattr(loss_modules, name)
        assert issubclass(getattr(nn, name), nn.Module)
    assert F.cross_entropy is LF.cross_entropy and F.ctc_loss is LF.ctc_loss
    with pytest.raises(AttributeError, match="no attribute 'NoSuchLoss'"):
        _ = nn.NoSuchLoss


def test_modules_match_the_functions():
    x, y = rtx.randn(2, 3), rtx.tensor([0, 2])
    loss = nn.CrossEntropyLoss(weight=rtx.ones(3), label_smoothing=0.05)
    assert list(loss.state_dict()) == ["weight"]
    assert_close(loss(x, y), F.cross_entropy(x, y, weight=rtx.ones(3), label_smoothing=0.05))
    assert nn.MSELoss(reduction="sum")(x, x * 0).item() == pytest.approx(float((x * x).sum().item()), rel=1e-6)
    bce = nn.BCEWithLogitsLoss(pos_weight=rtx.tensor([1.0, 2.0, 3.0]))
    assert list(bce.state_dict()) == ["pos_weight"]
    z = (rtx.rand(2, 3) > 0.5).float()
    assert_close(bce(x, z), F.binary_cross_entropy_with_logits(x, z, pos_weight=rtx.tensor([1.0, 2.0, 3.0])))
    a, p, n = rtx.randn(4, 5), rtx.randn(4, 5), rtx.randn(4, 5)
    assert_close(nn.TripletMarginLoss(margin=0.5, swap=True)(a, p, n),
                 F.triplet_margin_loss(a, p, n, margin=0.5, swap=True))
    # the reference written out: mean over rows of max(d(a, p) - d(a, n) + 1, 0), d the L2 distance + eps
    d = lambda u, v: np.linalg.norm(u.numpy() - v.numpy() + 1e-6, axis=1)  # noqa: E731
    expected = np.maximum(d(a, p) - d(a, n) + 1.0, 0).mean()
    assert nn.TripletMarginLoss()(a, p, n).item() == pytest.approx(expected, rel=1e-5)


def test_every_module_takes_pytorchs_reduction_argument():
    for name in loss_modules.__all__:
        assert "reduction" in inspect.signature(getattr(nn, name)).parameters, name


def test_legacy_arguments_and_bad_reduction():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        legacy = nn.MSELoss(size_average=False)
    assert legacy.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nn.NLLLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        nn.L1Loss(reduction="avg")
