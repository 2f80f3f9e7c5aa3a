"""Devices, dtypes, promotion table and RNG streams."""
import time

import numpy as np
import pytest

from rtx.runtime import Generator, as_device, cuda, device, dtypes, get_default_device, manual_seed
from rtx.runtime.random import default_generator


def test_device_parsing_and_equality():
    assert device("cpu") == device("cpu") == "cpu"
    d = device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1) and str(d) == "cuda:1"
    assert repr(device("cuda", 0)) == "device(type='cuda', index=0)"
    assert device(device("cuda:2")).index == 2
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        device("cuda:x")


def test_default_device_context_manager():
    assert get_default_device() == "cpu"
    with device("cpu"):
        assert get_default_device() == "cpu"
    if not cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            with device("cuda"):
                pass
    assert get_default_device() == "cpu"


def test_cuda_queries_are_fast_and_safe_without_gpu():
    t0 = time.perf_counter()
    available = cuda.is_available()
    assert time.perf_counter() - t0 < 1.0
    if not available:
        assert cuda.device_count() == 0
        cuda.synchronize()  # no-op, no error
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            as_device("cuda").type == "cuda" and cuda.current_device()


# PyTorch's torch.promote_types, written down from its documented table.
PROMOTE = [
    ("uint8", "int8", "int16"), ("int8", "int16", "int16"), ("int32", "int64", "int64"),
    ("uint8", "bool", "uint8"), ("bool", "float16", "float16"), ("int64", "float16", "float16"),
    ("int64", "bfloat16", "bfloat16"), ("float16", "bfloat16", "float32"), ("float16", "float32", "float32"),
    ("bfloat16", "float64", "float64"), ("float32", "complex64", "complex64"),
    ("float64", "complex64", "complex128"), ("int32", "complex64", "complex64"), ("bool", "bool", "bool"),
]


@pytest.mark.parametrize("a,b,expected", PROMOTE)
def test_promote_types_table(a, b, expected):
    da, db = dtypes.from_name(a), dtypes.from_name(b)
    assert dtypes.promote_types(da, db) is dtypes.from_name(expected)
    assert dtypes.promote_types(db, da) is dtypes.from_name(expected)


def test_result_type_categories():
    f32, f64, i64, i32 = dtypes.float32, dtypes.float64, dtypes.int64, dtypes.int32
    assert dtypes.result_type_of([i64], [], [1.5]) is f32          # int tensor + float scalar
    assert dtypes.result_type_of([f32], [f64], []) is f32          # sized beats zero-dim, same category
    assert dtypes.result_type_of([i32], [f64], []) is f64          # zero-dim of higher category wins
    assert dtypes.result_type_of([i32], [], [7]) is i32            # int scalar does not widen
    assert dtypes.result_type_of([dtypes.bool_], [], [7]) is i64
    assert dtypes.result_type_of([f32], [], [1j]) is dtypes.complex64


def test_dtype_names_and_conversion():
    assert repr(dtypes.float32) == "rtx.float32"
    assert dtypes.as_dtype("float") is dtypes.float32 and dtypes.as_dtype(float) is dtypes.float64
    assert dtypes.from_numpy(np.dtype("int16")) is dtypes.int16
    assert dtypes.bfloat16.itemsize == 2 and dtypes.bfloat16.is_floating_point
    with pytest.raises(TypeError, match="no dtype for NumPy dtype"):
        dtypes.from_numpy(np.dtype("U3"))


def test_same_seed_same_numbers_and_state_round_trip():
    manual_seed(123)
    a = default_generator.np.standard_normal(5)
    manual_seed(123)
    b = default_generator.np.standard_normal(5)
    np.testing.assert_array_equal(a, b)
    state = default_generator.get_state()
    c = default_generator.np.standard_normal(3)
    default_generator.set_state(state)
    np.testing.assert_array_equal(default_generator.np.standard_normal(3), c)
    g = Generator().manual_seed(7)
    assert g.initial_seed() == 7
