import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import rtx.losses


def test_version_matches_pyproject():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    with open(pyproject, "rb") as f:
        assert rtx.losses.__version__ == tomllib.load(f)["project"]["version"]


def test_losses_sit_below_nn():
    # rtx-losses does not depend on rtx-nn (rtx-nn depends on it): importing it loads no rtx.nn.
    code = ("import sys, rtx, rtx.losses, rtx.losses.functional as L\n"
            "x = rtx.randn(4, 3, requires_grad=True)\n"
            "L.cross_entropy(x, rtx.tensor([0, 1, 2, 0])).backward()\n"
            "L.triplet_margin_loss(x, x * 2, x * 3).item(); L.soft_margin_loss(x, x.sign()).item()\n"
            "L.multilabel_soft_margin_loss(x, (x > 0).float()).item()\n"
            "print(sorted(m for m in sys.modules if m.startswith('rtx.nn')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_loss_modules_point_to_rtx_nn():
    with pytest.raises(AttributeError, match=r"use rtx\.nn\.CrossEntropyLoss"):
        _ = rtx.losses.CrossEntropyLoss
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        _ = rtx.losses.nonsense
