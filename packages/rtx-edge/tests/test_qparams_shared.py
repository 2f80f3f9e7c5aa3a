"""rtx.edge's scale / zero-point rules equal rtx.kernel.quant.choose_qparams with edge's options (float32
scale, below the smallest normal float32 -> scale 1 and zero point 0, rint(qmin - min / scale)), so that
edge can call the shared function once rtx-edge declares rtx-kernel as a dependency."""
import numpy as np

from rtx.edge.quantize import activation_params, quantize_weight
from rtx.kernel.quant import FLOAT32_TINY, choose_qparams


def _shared_activation(lo, hi, symmetric):
    qmin, qmax = (-127, 127) if symmetric else (-128, 127)
    s, z = choose_qparams(min(float(lo), 0.0), max(float(hi), 0.0), qmin, qmax, symmetric=symmetric,
                          eps=FLOAT32_TINY, tiny_scale="one", zero_point_rounding="shift_then_round",
                          scale_dtype=np.float32)
    return s[()], np.int8(int(z))


def test_activation_params_match_the_shared_rule():
    rng = np.random.default_rng(0)
    ranges = [(0.0, 0.0), (-1e-40, 1e-40), (-5e-39, 2e-39), (-1.0, -0.5), (0.25, 3.0), (-0.5, 254.5), (-1.5, 253.5)]
    ranges += [tuple(np.sort(rng.standard_normal(2) * 10.0 ** rng.integers(-12, 6))) for _ in range(300)]
    for lo, hi in ranges:
        for symmetric in (False, True):
            want = activation_params(lo, hi, symmetric)
            got = _shared_activation(lo, hi, symmetric)
            assert got[0].tobytes() == np.float32(want[0]).tobytes() and got[1] == want[1], (lo, hi, symmetric)


def test_weight_scales_match_the_shared_rule():
    rng = np.random.default_rng(1)
    for exp in (-40, -37, -3, 0, 2):
        w = (rng.standard_normal((6, 4, 3, 3)) * 10.0 ** exp).astype(np.float32)
        w[1] = 0.0
        for axis in (None, 0):
            _, scale = quantize_weight(w, axis)
            amax = np.abs(w).max(axis=None if axis is None else (1, 2, 3), initial=0.0)
            shared = choose_qparams(-amax, amax, -127, 127, symmetric=True, eps=FLOAT32_TINY, tiny_scale="one",
                                    scale_dtype=np.float32)[0]
            np.testing.assert_array_equal(scale, shared)
