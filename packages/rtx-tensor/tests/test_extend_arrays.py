"""rtx.extend.raw / wrap: the public way for packages to reach a Tensor's array and to wrap one."""
import numpy as np
import pytest

import rtx
from rtx.extend import Primitive, raw, wrap


def test_raw_is_the_tensors_own_array():
    t = rtx.arange(6.0).reshape(2, 3)
    a = raw(t)
    assert isinstance(a, np.ndarray) and a.shape == (2, 3)
    a[0, 0] = 42.0  # zero-copy: the tensor sees the write
    assert t[0, 0].item() == 42.0


def test_wrap_holds_the_array_without_copy():
    a = np.arange(4, dtype=np.float32)
    t = wrap(a)
    assert raw(t) is a and t.dtype == rtx.float32 and not t.requires_grad and t.grad_fn is None
    assert raw(wrap(np.float64(2.5))).shape == ()  # a NumPy scalar becomes a 0-d array, as Tensor keeps arrays


def test_raw_rejects_what_is_not_a_tensor():
    with pytest.raises(AttributeError):
        raw(np.ones(2))


class _Cube(Primitive):
    op = "test_extend_arrays.cube"

    @staticmethod
    def forward(ctx, x):  # x is a Tensor; forward computes on its array and returns an array
        ctx.save_for_backward(x)
        return raw(x) ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


def test_a_primitive_built_on_raw_and_wrap_differentiates():
    x = rtx.tensor([0.5, -1.0, 2.0], dtype=rtx.float64, requires_grad=True)
    y = _Cube.apply(x)
    assert np.array_equal(raw(y), raw(x.detach()) ** 3)
    y.sum().backward()
    np.testing.assert_allclose(raw(x.grad), 3 * np.array([0.5, -1.0, 2.0]) ** 2)
