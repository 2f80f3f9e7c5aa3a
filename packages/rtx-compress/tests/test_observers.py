"""Observers against NumPy: ranges, moving averages, histograms, qparams."""
import numpy as np
import pytest

import rtx
import rtx.compress as C


def _batches(seed=0, n=3, shape=(4, 6)):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=shape) * (i + 1)).astype(np.float32) for i in range(n)]


def test_minmax_observer():
    obs = C.MinMaxObserver()
    xs = _batches()
    for x in xs:
        assert obs(rtx.from_numpy(x)) is not None
    lo, hi = min(x.min() for x in xs), max(x.max() for x in xs)
    assert float(obs.min_val) == pytest.approx(lo) and float(obs.max_val) == pytest.approx(hi)
    scale, zp = obs.calculate_qparams()
    assert float(scale[0]) == pytest.approx((hi - lo) / 255, rel=1e-6)
    assert int(zp[0]) == int(np.clip(-np.rint(lo / ((hi - lo) / 255)), 0, 255))


def test_minmax_reduce_range_and_symmetric():
    obs = C.MinMaxObserver(dtype=rtx.qint8, qscheme=C.per_tensor_symmetric, reduce_range=True)
    assert (obs.quant_min, obs.quant_max) == (-64, 63)
    obs(rtx.tensor([-3.0, 1.0]))
    scale, zp = obs.calculate_qparams()
    assert float(scale[0]) == pytest.approx(3.0 / 63.5) and int(zp[0]) == 0
    with pytest.raises(ValueError, match="qscheme"):
        C.MinMaxObserver(qscheme="per_row")
    with pytest.raises(ValueError, match="PerChannelMinMaxObserver"):
        C.MinMaxObserver(qscheme=C.per_channel_affine)


def test_moving_average_observer():
    c = 0.25
    obs = C.MovingAverageMinMaxObserver(averaging_constant=c)
    lo = hi = None
    for x in _batches(n=4):
        obs(rtx.from_numpy(x))
        lo = x.min() if lo is None else lo + c * (x.min() - lo)
        hi = x.max() if hi is None else hi + c * (x.max() - hi)
    assert float(obs.min_val) == pytest.approx(lo, rel=1e-5) and float(obs.max_val) == pytest.approx(hi, rel=1e-5)


def test_per_channel_observer():
    obs = C.PerChannelMinMaxObserver(ch_axis=1, dtype=rtx.qint8, qscheme=C.per_channel_symmetric)
    xs = _batches(shape=(5, 3, 2))
    for x in xs:
        obs(rtx.from_numpy(x))
    allx = np.concatenate(xs)
    np.testing.assert_allclose(obs.min_val.numpy(), allx.min(axis=(0, 2)))
    np.testing.assert_allclose(obs.max_val.numpy(), allx.max(axis=(0, 2)))
    scale, zp = obs.calculate_qparams()
    amax = np.maximum(-allx.min(axis=(0, 2)), allx.max(axis=(0, 2)))
    np.testing.assert_allclose(scale.numpy(), amax / 127.5, rtol=1e-6)
    assert zp.numpy().tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="channels"):
        obs(rtx.zeros(5, 4, 2))


def test_moving_average_per_channel_observer():
    c = 0.5
    obs = C.MovingAveragePerChannelMinMaxObserver(averaging_constant=c, ch_axis=0)
    xs = _batches(shape=(3, 7))
    lo, hi = xs[0].min(axis=1), xs[0].max(axis=1)
    for x in xs[1:]:
        lo, hi = lo + c * (x.min(axis=1) - lo), hi + c * (x.max(axis=1) - hi)
    for x in xs:
        obs(rtx.from_numpy(x))
    np.testing.assert_allclose(obs.min_val.numpy(), lo, rtol=1e-5)
    np.testing.assert_allclose(obs.max_val.numpy(), hi, rtol=1e-5)


def test_histogram_matches_numpy_for_one_batch():
    x = _batches(n=1, shape=(1000,))[0]
    obs = C.HistogramObserver(bins=64)
    obs(rtx.from_numpy(x))
    expected, _ = np.histogram(x, bins=64, range=(x.min(), x.max()))
    np.testing.assert_array_equal(obs.histogram.numpy(), expected)
    assert obs.histogram.numpy().sum() == 1000


def test_histogram_keeps_every_count_when_range_grows():
    obs = C.HistogramObserver(bins=128)
    xs = _batches(n=3, shape=(500,))
    for x in xs:
        obs(rtx.from_numpy(x))
    assert obs.histogram.numpy().sum() == pytest.approx(1500)
    allx = np.concatenate(xs)
    assert float(obs.min_val) == pytest.approx(allx.min()) and float(obs.max_val) == pytest.approx(allx.max())


def test_histogram_clips_outliers_and_lowers_error():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=200000), [8.0, -7.5, 7.0]]).astype(np.float32)
    hist, mm = C.HistogramObserver(reduce_range=True), C.MinMaxObserver(reduce_range=True)
    hist(rtx.from_numpy(x))
    mm(rtx.from_numpy(x))

    def mse(obs):
        s, z = (float(t[0]) for t in obs.calculate_qparams())
        q = np.clip(np.rint(x / s) + z, obs.quant_min, obs.quant_max)
        return np.mean(((q - z) * s - x) ** 2), s

    err_h, s_h = mse(hist)
    err_m, s_m = mse(mm)
    assert s_h < s_m * 0.6        # the three outliers no longer set the scale
    assert err_h < err_m / 2      # and the total squared error is much smaller
    assert hist.quantization_error(*hist._search()) <= hist.quantization_error(x.min(), x.max())


def test_percentile_observer_matches_numpy():
    x = _batches(n=1, shape=(50000,))[0]
    obs = C.PercentileObserver(percentile=99.0, bins=4096)
    obs(rtx.from_numpy(x))
    lo, hi = obs._search()
    width = float(x.max() - x.min()) / 4096
    assert lo == pytest.approx(np.percentile(x, 1.0), abs=2 * width)
    assert hi == pytest.approx(np.percentile(x, 99.0), abs=2 * width)
    scale, _ = obs.calculate_qparams()
    assert float(scale[0]) == pytest.approx((hi - lo) / 255, rel=1e-5)


def test_with_args_and_state_dict_roundtrip():
    factory = C.PerChannelMinMaxObserver.with_args(dtype=rtx.qint8, qscheme=C.per_channel_symmetric)
    a, b = factory(), factory()
    assert a is not b and a.dtype is rtx.qint8
    a(rtx.randn(4, 3))
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(b.min_val.numpy(), a.min_val.numpy())


def test_observer_argument_errors():
    with pytest.raises(ValueError, match="dtype"):
        C.MinMaxObserver(dtype=rtx.qint32)
    with pytest.raises(ValueError, match="include 0"):
        C.MinMaxObserver(quant_min=1, quant_max=255)
    with pytest.raises(ValueError, match="observer instance"):
        C.QConfig(activation=C.MinMaxObserver(), weight=C.default_weight_observer)
    with pytest.raises(ValueError, match="backend"):
        C.get_default_qconfig("tpu")
