"""rtx.kernel.int_gemm: exact integer products on a float GEMM, against NumPy's int64 matmul."""
import numpy as np
import pytest

import rtx.kernel as K
from rtx.kernel.int_gemm import FLOAT32_EXACT, exact_matmul, gemm_dtype, int_matmul


def _ref(a, b, za=0, zb=0):
    za, zb = np.asarray(za, np.int64), np.asarray(zb, np.int64)
    a = a.astype(np.int64) - (za[:, None] if za.ndim else za)
    return a @ (b.astype(np.int64) - zb)


def test_exported():
    assert K.int_matmul is int_matmul and K.exact_matmul is exact_matmul and K.gemm_dtype is gemm_dtype


def test_gemm_dtype_bounds():
    assert gemm_dtype(1024, 128, 127) == np.float32           # 16,646,144 < 2**24
    assert gemm_dtype(1040, 128, 127) == np.float64           # 16,908,288 >= 2**24
    assert gemm_dtype(16, 255, 255) == np.float32
    assert gemm_dtype(0, 255, 255) == np.float32
    k = FLOAT32_EXACT // (128 * 128)                           # exactly 2**24: no longer exact in float32
    assert gemm_dtype(k - 1, 128, 128) == np.float32 and gemm_dtype(k, 128, 128) == np.float64
    with pytest.raises(ValueError, match="2\\*\\*53"):
        gemm_dtype(2 ** 40, 255, 255)
    with pytest.raises(ValueError, match=">= 0"):
        gemm_dtype(-1, 1, 1)


def _worst_case(rng, k, lo_a, hi_a, lo_b, hi_b, dta, dtb, m=5, n=6):
    """Random operands whose first row and column are all extreme values, so that the partial sums
    really reach K * max|a| * max|b| (a float32 GEMM past 2**24 would round them)."""
    a = rng.integers(lo_a, hi_a + 1, size=(m, k)).astype(dta)
    b = rng.integers(lo_b, hi_b + 1, size=(k, n)).astype(dtb)
    a[0] = lo_a if abs(lo_a) >= abs(hi_a) else hi_a
    b[:, 0] = lo_b if abs(lo_b) >= abs(hi_b) else hi_b
    return a, b


@pytest.mark.parametrize("k", [1, 7, 1000, 1100, 5000])
@pytest.mark.parametrize("kinds", [("int8", "int8"), ("uint8", "int8"), ("int8", "uint8"), ("uint8", "uint8")])
def test_int_matmul_exact_both_sides_of_2_24(k, kinds):
    rng = np.random.default_rng(k)
    ranges = {"int8": (-128, 127), "uint8": (0, 255)}
    a, b = _worst_case(rng, k, *ranges[kinds[0]], *ranges[kinds[1]], kinds[0], kinds[1])
    got = int_matmul(a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _ref(a, b))


def test_float32_alone_would_not_be_exact_past_the_bound():
    """The check the float64 switch exists for: past 2**24 a float32 GEMM rounds, int_matmul does not."""
    k = 4096
    a = np.full((1, k), 127, np.int8)
    b = np.full((k, 1), 127, np.int8)
    a[0, 0], b[0, 0] = 1, 2                                  # an odd total, 66,048,257 > 2**24
    expect = _ref(a, b)
    assert expect[0, 0] % 2 == 1 and expect[0, 0] > FLOAT32_EXACT
    f32 = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.int64)
    assert f32[0, 0] != expect[0, 0]
    np.testing.assert_array_equal(int_matmul(a, b), expect)


def test_zero_points_scalar_per_row_per_column():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, size=(4, 300)).astype(np.uint8)
    b = rng.integers(-128, 128, size=(300, 5)).astype(np.int8)
    np.testing.assert_array_equal(int_matmul(a, b, 128, -3), _ref(a, b, 128, -3))
    np.testing.assert_array_equal(int_matmul(a, b, np.uint8(7), np.int8(0)), _ref(a, b, 7, 0))
    za = rng.integers(0, 256, size=4).astype(np.uint8)          # MatMulInteger: one per row of A
    zb = rng.integers(-128, 128, size=5).astype(np.int8)         # and one per column of B
    np.testing.assert_array_equal(int_matmul(a, b, za, zb), _ref(a, b, za, zb))


def test_batched_and_broadcast_shapes():
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, size=(2, 3, 4, 50)).astype(np.int8)
    b = rng.integers(-128, 128, size=(50, 6)).astype(np.int8)
    np.testing.assert_array_equal(int_matmul(a, b), np.matmul(a.astype(np.int64), b.astype(np.int64)))
    b3 = rng.integers(0, 256, size=(3, 50, 6)).astype(np.uint8)      # broadcasts against a's (2, 3)
    np.testing.assert_array_equal(int_matmul(a, b3, b_zero_point=100),
                                  np.matmul(a.astype(np.int64), b3.astype(np.int64) - 100))
    v = rng.integers(-128, 128, size=50).astype(np.int8)             # 1-D operands, as matmul
    np.testing.assert_array_equal(int_matmul(a, v), np.matmul(a.astype(np.int64), v.astype(np.int64)))
    assert int_matmul(v, v).shape == () and int(int_matmul(v, v)) == int(v.astype(np.int64) @ v)
    assert int_matmul(np.zeros((0, 3), np.int8), np.zeros((3, 2), np.int8)).shape == (0, 2)


def test_exact_matmul_on_centred_floats_and_out():
    rng = np.random.default_rng(5)
    a = (rng.integers(0, 256, size=(8, 2000)) - 128).astype(np.float32)  # centred uint8, carried as float
    b = rng.integers(-127, 128, size=(2000, 3)).astype(np.float32)
    big = exact_matmul(a, b, 2000 * 128 * 127)                              # 32.5M >= 2**24: float64
    assert big.dtype == np.float64
    np.testing.assert_array_equal(big, a.astype(np.int64) @ b.astype(np.int64))
    small = exact_matmul(a[:, :1000], b[:1000], 1000 * 128 * 127)           # 16.3M < 2**24: float32
    assert small.dtype == np.float32
    np.testing.assert_array_equal(small, a[:, :1000].astype(np.int64) @ b[:1000].astype(np.int64))
    out = np.empty((8, 3), np.float32)
    res = exact_matmul(a[:, :10], b[:10], 10 * 128 * 127, out=out)
    assert res is out
    np.testing.assert_array_equal(out, a[:, :10].astype(np.int64) @ b[:10].astype(np.int64))
    with pytest.raises(TypeError, match="out has dtype float32"):
        exact_matmul(a, b, 2000 * 128 * 127, out=out)


def test_errors():
    with pytest.raises(TypeError, match="integer arrays, got float64 and int8"):
        int_matmul(np.ones((2, 2)), np.ones((2, 2), np.int8))
    with pytest.raises(ValueError, match="do not multiply"):
        int_matmul(np.ones((2, 3), np.int8), np.ones((2, 2), np.int8))
    with pytest.raises(OverflowError, match="int32 accumulator"):
        int_matmul(np.full((1, 40000), 255, np.int32), np.full((40000, 1), 255, np.int32))
    with pytest.raises(OverflowError, match="int32"):
        exact_matmul(np.ones((1, 1)), np.ones((1, 1)), 2 ** 31)
    assert exact_matmul(np.ones((1, 1)), np.ones((1, 1)), 2 ** 31, int32=False).dtype == np.float64
    with pytest.raises(ValueError, match="one value per rows"):
        int_matmul(np.ones((2, 3), np.int8), np.ones((3, 4), np.int8), a_zero_point=np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="columns"):
        int_matmul(np.ones((2, 3), np.int8), np.ones((3, 4), np.int8), b_zero_point=np.array([1, 2]))
    with pytest.raises(TypeError, match="zero_point must be integer"):
        int_matmul(np.ones((2, 3), np.int8), np.ones((3, 4), np.int8), a_zero_point=0.5)
    with pytest.raises(ValueError, match="at least one dimension"):
        int_matmul(np.int8(3), np.ones(3, np.int8))


def test_cupy_matches_numpy():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(6)
    for k in (300, 3000):                                            # float32 and float64 paths
        a, b = _worst_case(rng, k, 0, 255, -128, 127, "uint8", "int8")
        za = rng.integers(0, 256, size=a.shape[0]).astype(np.uint8)
        got = int_matmul(cp.asarray(a), cp.asarray(b), cp.asarray(za), 5)
        assert isinstance(got, cp.ndarray) and got.dtype == np.int32
        np.testing.assert_array_equal(cp.asnumpy(got), _ref(a, b, za, 5))


def test_int_ranges_are_the_types_limits():
    import ml_dtypes

    from rtx.kernel.int_gemm import INT_RANGES
    for name, (lo, hi) in INT_RANGES.items():
        info = ml_dtypes.iinfo(name) if name in ("uint4", "int4", "uint2", "int2") else np.iinfo(name)
        assert (lo, hi) == (int(info.min), int(info.max)), name
