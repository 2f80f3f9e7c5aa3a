"""softmax / log_softmax stability on large inputs and masked (-inf) entries."""
import numpy as np
import pytest

import rtx.kernel as K


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("impl", ["reference", "cpu"])
def test_large_inputs_neither_overflow_nor_lose_their_differences(dtype, impl):
    softmax, log_softmax = getattr(K.softmax, impl), getattr(K.log_softmax, impl)
    small = np.array([[0.0, 1.0, 2.0], [-3.0, 0.5, 0.25]], dtype=dtype)
    for shift in (1e3, -1e3, 8e4):
        big = small + dtype(shift)
        np.testing.assert_allclose(softmax(big), softmax(small), rtol=1e-5 if dtype == np.float32 else 1e-12)
        np.testing.assert_allclose(log_softmax(big), log_softmax(small),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)
    x = (np.random.default_rng(0).standard_normal((16, 64)) * 1e4).astype(dtype)
    y = softmax(x)
    assert np.isfinite(y).all() and np.isfinite(log_softmax(x)).all()
    np.testing.assert_allclose(y.sum(-1), 1, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
def test_masked_entries(impl):
    x = np.array([[0.0, -np.inf, 0.0], [5.0, -np.inf, -np.inf]])
    np.testing.assert_array_equal(getattr(K.softmax, impl)(x), [[0.5, 0.0, 0.5], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(getattr(K.log_softmax, impl)(x),
                               [[-np.log(2), -np.inf, -np.log(2)], [0, -np.inf, -np.inf]])


def test_other_axes_and_dtypes_are_preserved():
    x = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32)
    for axis in (0, 1, 2, -1, -2):
        y = K.softmax(x, axis)
        assert y.dtype == np.float32 and y.shape == x.shape
        np.testing.assert_allclose(y.sum(axis), 1, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [4.0, 29.0, 31.0, 200.0])
def test_cpu_rows_shifted_by_the_block_max_or_by_each_row_max(dtype, spread):
    """The CPU path shifts a block by its one max when its values lie within
    SHARED_SHIFT_SPREAD, by each row's max otherwise: both agree with float64 softmax to
    float32 rounding, also for rows whose max sits far below the block's."""
    from rtx.kernel._softmax import SHARED_SHIFT_SPREAD
    assert 4.0 < SHARED_SHIFT_SPREAD < 31.0
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 2, (3000, 64))     # over one row block
    x[1::2] -= spread - 2                 # every other row's max ~spread below the block max
    x = x.astype(dtype)
    ref = K.softmax.reference(x.astype(np.float64))
    y = K.softmax.cpu(x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, ref, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=0)
    np.testing.assert_allclose(K.softmax.cpu(x.reshape(3, 1000, 64)), ref.reshape(3, 1000, 64),
                               rtol=2e-6 if dtype == np.float32 else 1e-13, atol=0)


def test_cpu_rows_with_nan_or_inf_stay_as_the_reference():
    x = np.random.default_rng(4).standard_normal((40, 16)).astype(np.float32)
    x[3, 2], x[7, 5], x[9] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(K.softmax.cpu(x), K.softmax.reference(x), rtol=1e-6)
    x16 = x[:2].astype(np.float16)  # no BLAS for float16: the row-wise passes
    np.testing.assert_allclose(K.softmax.cpu(x16), K.softmax.reference(x16), rtol=2e-3)


def test_empty_axis_gives_empty_results():
    for x in (np.zeros((3, 0), np.float32), np.zeros((0, 4)), np.zeros((2, 0, 5))):
        for axis in (-1, 0):
            assert K.softmax(x, axis).shape == x.shape and K.log_softmax(x, axis).shape == x.shape
            assert K.softmax_backward(x, x, axis).shape == x.shape
