"""DLPack: zero-copy exchange with NumPy (and any DLPack producer/consumer) both ways."""
import numpy as np
import pytest

import rtx

DTYPES = [rtx.float16, rtx.float32, rtx.float64, rtx.int8, rtx.int16, rtx.int32, rtx.int64, rtx.uint8, rtx.bool,
          rtx.complex64, rtx.complex128]


def test_numpy_from_rtx_shares_memory():
    t = rtx.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.numpy())
    a[0, 0] = 42.0  # writable: NumPy asks for DLPack 1.0, which carries the flag
    assert t[0, 0].item() == 42.0


def test_rtx_from_numpy_shares_memory():
    a = np.arange(4.0)
    t = rtx.from_dlpack(a)
    assert t.dtype == rtx.float64 and t.shape == (4,)
    a[1] = 7.0
    assert t[1].item() == 7.0
    t.add_(1)
    assert a[1] == 8.0


def test_round_trip_keeps_strides_and_memory():
    t = rtx.arange(12.0).reshape(3, 4).mT  # a non-contiguous view
    a = np.from_dlpack(t)
    assert a.shape == (4, 3) and a.strides == (t.element_size(), 4 * t.element_size())
    back = rtx.from_dlpack(a)
    assert np.shares_memory(back.numpy(), t.numpy())
    assert back.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes(dtype):
    t = rtx.ones(3, dtype=dtype)
    a = np.from_dlpack(t)
    assert a.dtype == dtype.np
    assert rtx.from_dlpack(a).dtype == dtype


def test_zero_dim_and_device():
    t = rtx.tensor(3.5)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    assert rtx.from_dlpack(np.from_dlpack(t)).item() == 3.5


def test_tensor_that_requires_grad_is_refused():
    t = rtx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient, use tensor.detach()"):
        np.from_dlpack(t)
    assert np.from_dlpack(t.detach()).tolist() == [1.0, 1.0]


def test_bfloat16_is_not_a_dlpack_dtype_for_numpy():
    # NumPy's DLPack support has no bfloat16 (ml_dtypes is an extension dtype): a clear BufferError
    with pytest.raises(BufferError):
        np.from_dlpack(rtx.ones(2, dtype=rtx.bfloat16))
