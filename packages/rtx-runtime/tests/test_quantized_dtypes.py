"""The quantized dtypes (qint8, quint8, qint32, quint4x2): names of integer ranges, as torch.qint8,
findable by name, kept out of the NumPy mapping, and refusing to be a tensor's dtype."""
import pickle

import numpy as np
import pytest

from rtx.runtime import dtypes

QUANTIZED = [dtypes.qint8, dtypes.quint8, dtypes.qint32, dtypes.quint4x2]


@pytest.mark.parametrize("d", QUANTIZED)
def test_quantized_dtype_attributes(d):
    assert d.is_quantized
    assert not d.is_floating_point and not d.is_complex
    assert repr(d) == f"rtx.{d.name}"
    assert dtypes.from_name(d.name) is d and dtypes.as_dtype(d.name) is d
    assert pickle.loads(pickle.dumps(d)) is d          # pickles by name, comes back the same object
    assert d not in dtypes.ALL


def test_signedness_and_size_as_torch():
    # torch.qint8.is_signed, torch.quint8.is_signed, ...; element sizes of the storage
    assert dtypes.qint8.is_signed and dtypes.qint32.is_signed
    assert not dtypes.quint8.is_signed and not dtypes.quint4x2.is_signed
    assert [d.itemsize for d in QUANTIZED] == [1, 1, 4, 1]


def test_other_dtypes_are_not_quantized():
    assert not any(d.is_quantized for d in dtypes.ALL)


def test_numpy_integers_still_map_to_plain_integer_dtypes():
    assert dtypes.from_numpy(np.dtype(np.int8)) is dtypes.int8
    assert dtypes.from_numpy(np.dtype(np.uint8)) is dtypes.uint8
    assert dtypes.from_numpy(np.dtype(np.int32)) is dtypes.int32


@pytest.mark.parametrize("d", QUANTIZED)
def test_no_numpy_dtype_and_the_error_points_to_rtx_compress(d):
    with pytest.raises(TypeError, match=rf"no tensor can have dtype rtx\.{d.name}.*rtx\.compress"):
        _ = d.np


def test_quantized_dtypes_do_not_promote_or_cast():
    with pytest.raises(TypeError, match="quantized dtypes do not promote"):
        dtypes.promote_types(dtypes.qint8, dtypes.float32)
    with pytest.raises(TypeError, match="quantized dtypes do not promote"):
        dtypes.promote_types(dtypes.int8, dtypes.quint8)
    with pytest.raises(TypeError, match="quantized"):
        dtypes.can_cast(dtypes.qint8, dtypes.int8)


def test_default_dtype_cannot_be_quantized():
    with pytest.raises(TypeError, match="floating point"):
        dtypes.set_default_dtype(dtypes.qint8)
