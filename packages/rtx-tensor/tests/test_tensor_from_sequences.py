"""rtx.tensor / rtx.as_tensor accept every sequence PyTorch accepts (issue 26): deques, ranges,
array.array, memoryviews, bytearrays, __len__/__getitem__ classes, NumPy scalars and arrays,
0-d tensors, and nested mixes of these; the dtype is the promotion of every leaf's type.
Expected dtypes, shapes and error messages are what torch.tensor gives in PyTorch 2.13 for the
same input (run by hand with /work/torch-venv/bin/python, written down here)."""
import array
import collections

import numpy as np
import pytest

import rtx


class Seq:
    """A sequence by __len__ and __getitem__ only (no __iter__)."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i * 1.5


class ArrayLike:
    def __array__(self, dtype=None, copy=None):
        return np.arange(3.0)


D = collections.deque

CASES = [  # (input, torch's dtype, torch's values)
    (D([1, 2, 3]), "int64", [1, 2, 3]),
    (range(4), "int64", [0, 1, 2, 3]),
    (D([[1.0, 2.0], [3.0, 4.0]]), "float32", [[1.0, 2.0], [3.0, 4.0]]),
    ([np.float32(1), np.float32(2)], "float32", [1.0, 2.0]),
    ([np.float64(1), 2.0], "float64", [1.0, 2.0]),
    ([np.int32(1), np.int32(2)], "int32", [1, 2]),
    ([np.ones(2, np.float32), np.zeros(2, np.float32)], "float32", [[1.0, 1.0], [0.0, 0.0]]),
    ([np.ones(2), np.zeros(2)], "float64", [[1.0, 1.0], [0.0, 0.0]]),
    ([rtx.tensor(1.0), rtx.tensor(2.0)], "float32", [1.0, 2.0]),
    ([rtx.tensor(1), rtx.tensor(2)], "int64", [1, 2]),
    ([[1, 2], (3, 4), rtx.tensor([5, 6]), np.array([7, 8])], "int64", [[1, 2], [3, 4], [5, 6], [7, 8]]),
    ([1, 2.5, rtx.tensor(3)], "float32", [1.0, 2.5, 3.0]),
    (Seq(), "float32", [0.0, 1.5, 3.0]),
    (array.array("d", [1, 2]), "float32", [1.0, 2.0]),
    (bytearray(b"ab"), "int64", [97, 98]),
    (memoryview(np.arange(3.0)), "float32", [0.0, 1.0, 2.0]),
    ([], "float32", []),
    ([[], []], "float32", [[], []]),
    ([np.bool_(True), False], "bool", [True, False]),
    ((D([1]), D([2])), "int64", [[1], [2]]),
    ([np.uint16(3)], "uint16", [3]),
    ([np.float16(1), 2], "float16", [1.0, 2.0]),
    ([True, 2], "int64", [1, 2]),
    ([1, 2j], "complex64", [1, 2j]),
    (np.array(5), "int64", 5),
    (rtx.tensor(3.5), "float32", 3.5),
    (np.float64(2.5), "float64", 2.5),
    (ArrayLike(), "float64", [0.0, 1.0, 2.0]),  # torch refuses __array__ objects; NumPy's rule here
]


@pytest.mark.parametrize("data, dtype, values", CASES, ids=lambda v: type(v).__name__)
def test_accepted(data, dtype, values):
    t = rtx.tensor(data)
    assert t.dtype == getattr(rtx, dtype)
    np.testing.assert_array_equal(t.numpy(), np.array(values, dtype=t.dtype.np if dtype != "bfloat16" else None))
    if isinstance(values, list):
        assert tuple(t.shape) == np.array(values).shape
    a = rtx.as_tensor(data)
    assert a.dtype == t.dtype and np.array_equal(a.numpy(), t.numpy())


def test_explicit_dtype_and_device():
    t = rtx.tensor(D([1, 2]), dtype=rtx.float64, device="cpu", requires_grad=True)
    assert t.dtype == rtx.float64 and t.requires_grad and t.tolist() == [1.0, 2.0]
    assert rtx.tensor(range(3), dtype=rtx.bfloat16).float().tolist() == [0.0, 1.0, 2.0]
    assert rtx.tensor([np.float64(1), 2], dtype=rtx.int32).dtype == rtx.int32


def test_copy_not_view():
    src = np.arange(3.0)
    t = rtx.tensor([src])
    src[0] = 9
    assert t.tolist() == [[0.0, 1.0, 2.0]]


@pytest.mark.parametrize("data, exc, match", [
    ("abc", TypeError, "new\\(\\): invalid data type 'str'"),
    (b"ab", TypeError, "new\\(\\): invalid data type 'bytes'"),
    (["a", "b"], ValueError, "too many dimensions 'str'"),
    ([[1, 2], ["a", "b"]], TypeError, "new\\(\\): invalid data type 'str'"),
    ({1: 2}, RuntimeError, "Could not infer dtype of dict"),
    ({1, 2}, RuntimeError, "Could not infer dtype of set"),
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
    ([1, {}], RuntimeError, "Could not infer dtype of dict"),
    ((i for i in range(3)), RuntimeError, "Could not infer dtype of generator"),
    ([[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 \\(got 1\\)"),
    (D([D([1, 2]), D([3])]), ValueError, "expected sequence of length 2 at dim 1 \\(got 1\\)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    ([rtx.ones(2), 1], TypeError, "not a sequence"),
    ([1, [2, 3]], ValueError, "expected a number at dim 1"),
    ([1, rtx.ones(2)], ValueError, "only one element tensors can be converted to Python scalars"),
    (np.array([1, "a"], dtype=object), TypeError, "can't convert np.ndarray of type numpy.object_"),
])
def test_refused_like_pytorch(data, exc, match):
    with pytest.raises(exc, match=match):
        rtx.tensor(data)


def test_python_scalar_with_explicit_dtype_is_not_rounded_through_float32():
    # 0.7 and 1 - 2**-53 are not float32 values: an intermediate float32 would change them.
    for v in (0.7, 0.9999999999999999, 1e-310):
        assert rtx.tensor(v, dtype=rtx.float64).item() == v
        assert rtx.as_tensor(v, dtype=rtx.float64).item() == v
    assert rtx.tensor(2**62 + 1, dtype=rtx.int64).item() == 2**62 + 1
    assert rtx.tensor(0.7, dtype=rtx.float32).item() == float(np.float32(0.7))
