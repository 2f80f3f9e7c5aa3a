"""rtx.qint8 and friends: exported at the root (as torch.qint8), but no tensor can have them."""
import numpy as np
import pytest

import rtx
from rtx.runtime import dtypes

QUANTIZED = ["qint8", "quint8", "qint32", "quint4x2"]
MESSAGE = r"rtx has no quantized tensors.*rtx\.compress"


@pytest.mark.parametrize("name", QUANTIZED)
def test_exported_at_the_root(name):
    d = getattr(rtx, name)
    assert d is dtypes.from_name(name) and isinstance(d, rtx.dtype) and d.is_quantized


def test_plain_dtypes_are_not_quantized():
    assert not rtx.int8.is_quantized and not rtx.float32.is_quantized


@pytest.mark.parametrize("name", QUANTIZED)
@pytest.mark.parametrize("make", [
    lambda d: rtx.zeros(2, dtype=d),
    lambda d: rtx.empty(2, 3, dtype=d),
    lambda d: rtx.full((2,), 1, dtype=d),
    lambda d: rtx.tensor([1, 2], dtype=d),
    lambda d: rtx.arange(3, dtype=d),
    lambda d: rtx.ones(2).to(d),
    lambda d: rtx.ones(2).to(dtype=d),
    lambda d: rtx.ones(2).type(d),
    lambda d: rtx.ones(2).sum(dtype=d),
], ids=["zeros", "empty", "full", "tensor", "arange", "to", "to_kw", "type", "sum"])
def test_no_tensor_gets_a_quantized_dtype(name, make):
    with pytest.raises(TypeError, match=MESSAGE):
        make(getattr(rtx, name))


def test_by_name_too():
    with pytest.raises(TypeError, match=MESSAGE):
        rtx.zeros(2, dtype="qint8")
    with pytest.raises(TypeError, match=MESSAGE):
        rtx.ones(2).to("quint8")


def test_numpy_int8_is_still_rtx_int8():
    assert rtx.from_numpy(np.zeros(2, np.int8)).dtype is rtx.int8
    assert rtx.tensor([1], dtype=rtx.int8).dtype is rtx.int8


def test_promotion_refuses_quantized():
    with pytest.raises(TypeError, match="quantized"):
        rtx.promote_types(rtx.qint8, rtx.float32)
