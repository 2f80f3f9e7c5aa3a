"""Quantization arithmetic against closed forms and NumPy."""
import numpy as np
import pytest

import rtx
import rtx.compress as C
from rtx.compress.functional import calculate_qparams, int_matmul


def test_affine_qparams_closed_form():
    scale, zp = calculate_qparams(-1.0, 3.0, 0, 255)
    assert scale == pytest.approx(4.0 / 255)
    assert zp == round(1.0 / (4.0 / 255))          # 0 - round(-1 / s)
    # the range always holds 0: a positive-only range starts at 0
    scale, zp = calculate_qparams(2.0, 5.0, 0, 255)
    assert scale == pytest.approx(5.0 / 255) and zp == 0


def test_symmetric_qparams_closed_form():
    scale, zp = calculate_qparams(np.array([-2.0, -0.5]), np.array([1.0, 4.0]), -128, 127, "per_channel_symmetric")
    np.testing.assert_allclose(scale, np.array([2.0, 4.0]) / 127.5, rtol=1e-6)
    assert zp.tolist() == [0, 0]


def test_qparams_bad_range():
    with pytest.raises(ValueError, match="min_val"):
        calculate_qparams(1.0, 0.0, 0, 255)
    with pytest.raises(ValueError, match="qscheme"):
        calculate_qparams(0.0, 1.0, 0, 255, "per_row")


def test_quantize_dequantize_per_tensor():
    x = np.array([-1.0, -0.26, 0.0, 0.3, 0.74, 9.0], np.float32)
    q = C.quantize_per_tensor(rtx.from_numpy(x), 0.5, 10, rtx.quint8)
    expected = np.clip(np.rint(x / 0.5) + 10, 0, 255).astype(np.uint8)
    assert q.dtype == rtx.uint8 and q.numpy().tolist() == expected.tolist()
    np.testing.assert_allclose(C.dequantize(q, 0.5, 10).numpy(), (expected.astype(np.float32) - 10) * 0.5)
    q8 = C.quantize_per_tensor(rtx.from_numpy(x * 100), 0.5, 0, rtx.qint8)
    assert q8.dtype == rtx.int8 and q8.numpy().min() == -128 and q8.numpy().max() == 127


def test_quantize_per_channel():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    s = np.array([0.1, 0.02, 0.5], np.float32)
    z = np.array([0, 3, -2])
    q = C.quantize_per_channel(rtx.from_numpy(x), rtx.from_numpy(s), rtx.from_numpy(z), 0, rtx.qint8).numpy()
    assert q.tolist() == np.clip(np.rint(x / s[:, None]) + z[:, None], -128, 127).astype(np.int8).tolist()
    deq = C.dequantize(rtx.from_numpy(q), rtx.from_numpy(s), rtx.from_numpy(z), axis=0).numpy()
    np.testing.assert_allclose(deq, (q - z[:, None]) * s[:, None], rtol=1e-6)
    with pytest.raises(ValueError, match="expected 5 scales"):
        C.quantize_per_channel(rtx.from_numpy(x), rtx.from_numpy(s), rtx.from_numpy(z), 1, rtx.qint8)
    with pytest.raises(TypeError, match="quantized dtype"):
        C.quantize_per_tensor(rtx.from_numpy(x), 0.1, 0, rtx.float32)


def test_int_matmul_is_rtx_kernels():
    """One exact integer GEMM for the workspace: rtx-kernel's tests check it against NumPy's int64 matmul."""
    import rtx.kernel
    assert int_matmul is rtx.kernel.int_matmul


def test_fake_quantize_per_tensor_forward_and_straight_through_grad():
    x_np = np.array([-3.0, -0.2, 0.04, 0.51, 1.0, 2.6], np.float32)
    x = rtx.tensor(x_np, requires_grad=True)
    scale, zp, qmin, qmax = 0.1, 5, 0, 30
    y = C.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)
    q = np.rint(x_np / scale) + zp
    np.testing.assert_allclose(y.detach().numpy(), (np.clip(q, qmin, qmax) - zp) * scale, rtol=1e-6)
    g = np.arange(1, 7, dtype=np.float32)
    y.backward(rtx.from_numpy(g))
    # straight through inside [qmin, qmax], zero where clipped
    np.testing.assert_array_equal(x.grad.numpy(), g * ((q >= qmin) & (q <= qmax)))


def test_fake_quantize_per_channel_grad():
    rng = np.random.default_rng(1)
    x_np = (rng.normal(size=(2, 4)) * 3).astype(np.float32)
    s, z = np.array([0.05, 0.2], np.float32), np.array([0, 1])
    x = rtx.tensor(x_np, requires_grad=True)
    y = C.fake_quantize_per_channel_affine(x, rtx.from_numpy(s), rtx.from_numpy(z), 0, -8, 7)
    q = np.rint(x_np / s[:, None]) + z[:, None]
    np.testing.assert_allclose(y.detach().numpy(), (np.clip(q, -8, 7) - z[:, None]) * s[:, None], rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ((q >= -8) & (q <= 7)).astype(np.float32))
