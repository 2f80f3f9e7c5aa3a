"""rtx.kernel.quant.choose_qparams: closed forms, and each user's options against that user's formula
as it was written before it moved here (frozen below, line for line), on random and edge ranges."""
import numpy as np
import pytest

from rtx.kernel.quant import FLOAT32_EPS, FLOAT32_TINY, choose_qparams

_TINY32 = np.finfo(np.float32).tiny


# ---- the callers' formulas before the move (the oracle for "the numbers did not change") ------------

def old_compress(min_val, max_val, quant_min, quant_max, symmetric=False, symmetric_zero=0, eps=FLOAT32_EPS):
    """rtx.compress.functional.calculate_qparams (PyTorch's observers)."""
    min_neg = np.minimum(np.asarray(min_val, np.float64), 0.0)
    max_pos = np.maximum(np.asarray(max_val, np.float64), 0.0)
    if symmetric:
        amax = np.maximum(-min_neg, max_pos)
        scale = np.maximum(amax / ((quant_max - quant_min) / 2), eps)
        zero_point = np.full(scale.shape, symmetric_zero, dtype=np.int64)
    else:
        scale = np.maximum((max_pos - min_neg) / float(quant_max - quant_min), eps)
        zero_point = np.clip(quant_min - np.round(min_neg / scale).astype(np.int64), quant_min, quant_max)
    return scale.astype(np.float32), zero_point.astype(np.int64)


def old_edge_activation(lo, hi, symmetric=False):
    """rtx.edge.quantize.activation_params."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = np.float32(max(-lo, hi) / 127.0 if symmetric else (hi - lo) / 255.0)
    if not scale >= _TINY32:
        return np.float32(1.0), np.int8(0)
    if symmetric:
        return scale, np.int8(0)
    return scale, np.int8(int(np.clip(np.rint(-128 - lo / float(scale)), -128, 127)))


def old_edge_weight_scale(w, axis=None):
    """rtx.edge.quantize.quantize_weight's scale."""
    w = np.asarray(w, np.float32)
    if axis is None:
        amax = np.abs(w).max(initial=0.0)
    else:
        amax = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis), initial=0.0)
    scale = (amax / np.float32(127.0)).astype(np.float32)
    return np.where(scale >= _TINY32, scale, np.float32(1.0)).astype(np.float32)


def old_onnx_dynamic(x):
    """rtx.onnx's DynamicQuantizeLinear: (scale, zero point)."""
    x = np.asarray(x).astype(np.float32)
    lo, hi = min(float(x.min(initial=0.0)), 0.0), max(float(x.max(initial=0.0)), 0.0)
    scale = np.float32((hi - lo) / 255.0)
    with np.errstate(over="ignore", divide="ignore"):
        zp = np.uint8(np.clip(np.rint(0 - lo / scale), 0, 255)) if scale != 0 else np.uint8(0)
    return scale, zp


# ---- the callers' options ------------------------------------------------------------------------

def edge_activation(lo, hi, symmetric=False):
    qmin, qmax = (-127, 127) if symmetric else (-128, 127)
    s, z = choose_qparams(min(float(lo), 0.0), max(float(hi), 0.0), qmin, qmax, symmetric=symmetric, eps=FLOAT32_TINY,
                          tiny_scale="one", zero_point_rounding="shift_then_round", scale_dtype=np.float32)
    return s[()], np.int8(int(z))


def edge_weight_scale(w, axis=None):
    w = np.asarray(w, np.float32)
    if axis is None:
        amax = np.abs(w).max(initial=0.0)
    else:
        amax = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis), initial=0.0)
    return choose_qparams(-amax, amax, -127, 127, symmetric=True, eps=FLOAT32_TINY, tiny_scale="one",
                          scale_dtype=np.float32)[0]


def onnx_dynamic(x):
    x = np.asarray(x).astype(np.float32)
    s, z = choose_qparams(float(x.min(initial=0.0)), float(x.max(initial=0.0)), 0, 255, tiny_scale="keep",
                          zero_point_rounding="shift_then_round", scale_dtype=np.float32, zero_point_dtype=np.float32)
    return s[()], np.uint8(z)


def _ranges(rng):
    """(lo, hi) pairs: random spans of many magnitudes, zero, one-sided, tiny, denormal, ties."""
    out = [(0.0, 0.0), (-1.0, -0.5), (0.25, 3.0), (-3.0, 0.0), (0.0, 1e-30), (-1e-40, 1e-40), (-1e-38, 0.0),
           (-5e-39, 2e-39), (-1.0, 1.0), (-128.0, 127.0), (-0.5, 254.5), (-2.5, 252.5), (-1.5, 253.5),
           (-1e-7, 1e-7), (-6e-8, 2e-8), (-3e38, 3e38), (-1.0, 1e-45)]
    for _ in range(400):
        lo, hi = np.sort(rng.standard_normal(2) * 10.0 ** rng.integers(-12, 6))
        out.append((float(np.float32(lo)), float(np.float32(hi))))
    return out


def test_compress_options_reproduce_pytorch_observer_formula():
    rng = np.random.default_rng(0)
    for qmin, qmax in [(0, 255), (-128, 127), (0, 127), (-64, 63), (-127, 127), (3, 250), (-3, 8)]:
        for symmetric, zero in [(False, 0), (True, 0), (True, (qmin + qmax) // 2)]:
            for eps in (FLOAT32_EPS, 1e-3):
                for lo, hi in _ranges(rng)[:150]:
                    want = old_compress(lo, hi, qmin, qmax, symmetric, zero, eps)
                    got = choose_qparams(lo, hi, qmin, qmax, symmetric=symmetric, symmetric_zero=zero, eps=eps)
                    assert got[0].tobytes() == want[0].tobytes() and got[0].dtype == np.float32, (lo, hi, qmin)
                    assert got[1].tobytes() == want[1].tobytes() and got[1].dtype == np.int64, (lo, hi, qmin)
    # per-channel arrays
    lo, hi = -np.abs(rng.standard_normal(16)), np.abs(rng.standard_normal(16))
    lo[3] = hi[3] = 0.0
    for sym in (False, True):
        want, got = old_compress(lo, hi, -128, 127, sym), choose_qparams(lo, hi, -128, 127, symmetric=sym)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_edge_options_reproduce_edge_formulas():
    rng = np.random.default_rng(1)
    for lo, hi in _ranges(rng):
        for symmetric in (False, True):
            want, got = old_edge_activation(lo, hi, symmetric), edge_activation(lo, hi, symmetric)
            assert type(got[0]) is np.float32 and got[0].tobytes() == want[0].tobytes(), (lo, hi, symmetric)
            assert type(got[1]) is np.int8 and got[1] == want[1], (lo, hi, symmetric)
    for scale10 in (-40, -38, -30, -3, 0, 3):
        w = (rng.standard_normal((8, 3, 3, 3)) * 10.0 ** scale10).astype(np.float32)
        w[2] = 0.0
        w[5] = np.float32(1e-44)
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(edge_weight_scale(w, axis), old_edge_weight_scale(w, axis))


def test_onnx_options_reproduce_dynamic_quantize_linear():
    rng = np.random.default_rng(2)
    cases = [np.zeros(5), -np.abs(rng.standard_normal(7)), np.abs(rng.standard_normal(7)), np.full(3, 1e-42),
             np.array([-1e-44, 3e-45]), np.array([0.0, 2.0, -0.5, 7.0]), np.array([], np.float32),
             np.array([-1.0, 254.0]), np.array([-0.5, 127.0]), np.array([-2.5, 252.5])]
    cases += [rng.standard_normal(20) * 10.0 ** rng.integers(-40, 8) + rng.standard_normal() for _ in range(300)]
    for x in cases:
        want, got = old_onnx_dynamic(x), onnx_dynamic(x)
        assert type(got[0]) is np.float32 and got[0].tobytes() == want[0].tobytes(), x
        assert type(got[1]) is np.uint8 and got[1] == want[1], x


def test_closed_forms():
    # affine uint8 on [-1, 3]: scale 4/255, zero point round(255/4) = 64
    s, z = choose_qparams(-1.0, 3.0, 0, 255)
    assert s == np.float32(4 / 255) and z == 64
    # the range is widened to hold 0: [2, 5] quantizes as [0, 5]
    assert choose_qparams(2.0, 5.0, 0, 255)[1] == 0
    assert choose_qparams(-5.0, -2.0, 0, 255)[1] == 255
    # symmetric int8 over [-127, 127]: scale max|x| / 127, zero point 0
    s, z = choose_qparams(-0.5, 2.54, -127, 127, symmetric=True)
    assert s == np.float32(2.54 / 127) and z == 0
    # tiny scales, three ways
    assert choose_qparams(0.0, 0.0, 0, 255)[0] == np.float32(FLOAT32_EPS)
    s, z = choose_qparams(-1e-40, 1e-40, -128, 127, eps=FLOAT32_TINY, tiny_scale="one", scale_dtype=np.float32)
    assert (s, z) == (1.0, 0)
    s, z = choose_qparams(0.0, 0.0, 0, 255, tiny_scale="keep", scale_dtype=np.float32)
    assert (s, z) == (0.0, 0)
    # zero points saturate
    assert choose_qparams(-1.0, 0.0, 0, 255, tiny_scale="keep")[1] == 255


def test_zero_point_rounding_differs_only_at_ties_with_odd_qmin():
    # min/scale = -2.5 exactly: qmin - round(-2.5) = 3 + 2 = 5; rint(3 + 2.5) = rint(5.5) = 6
    lo, hi = -2.5, 252.5 - 5.0         # span 250 over 250 levels: scale 1
    assert choose_qparams(lo, hi, 3, 253, zero_point_rounding="round_then_shift")[1] == 5
    assert choose_qparams(lo, hi, 3, 253, zero_point_rounding="shift_then_round")[1] == 6
    assert choose_qparams(lo, hi + 1, 2, 253, zero_point_rounding="round_then_shift")[1] == \
        choose_qparams(lo, hi + 1, 2, 253, zero_point_rounding="shift_then_round")[1]


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="tiny_scale must be one of"):
        choose_qparams(0, 1, 0, 255, tiny_scale="clip")
    with pytest.raises(ValueError, match="zero_point_rounding must be one of"):
        choose_qparams(0, 1, 0, 255, zero_point_rounding="floor")
    with pytest.raises(ValueError, match="qmin must be below qmax"):
        choose_qparams(0, 1, 5, 5)
