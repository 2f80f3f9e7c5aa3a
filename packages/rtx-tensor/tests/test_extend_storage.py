"""rtx.extend.set_raw / increment_version: replacing a tensor's storage, and recording a write
made on its raw array, the way the core's in-place ops do (the version counter moves by one)."""
import numpy as np
import pytest

import rtx
from rtx.extend import increment_version, raw, set_raw

_VERSION_ERROR = "modified by an inplace operation"


def test_set_raw_keeps_the_object_and_takes_the_array():
    t = rtx.ones(2, 3, requires_grad=True)
    t.grad = rtx.full((2, 3), 7.0)
    grad, v = t.grad, t._version
    a = np.arange(4, dtype=np.float64)
    assert set_raw(t, a) is None
    assert raw(t) is a  # no copy
    assert t.shape == (4,) and t.dtype == rtx.float64
    assert t._version == v + 1  # one bump, as one in-place op
    assert t.grad is grad and t.requires_grad and t.is_leaf  # autograd fields are left alone
    a[0] = 5.0
    assert t[0].item() == 5.0


def test_set_raw_makes_a_saved_graph_refuse_stale_values():
    w = rtx.tensor([1.0, 2.0], requires_grad=True)
    x = rtx.tensor([3.0, 4.0], requires_grad=True)
    loss = (w * x).sum()  # saves w for x's gradient
    with rtx.no_grad():
        set_raw(w, np.array([10.0, 20.0], dtype=np.float32))
    with pytest.raises(RuntimeError, match=_VERSION_ERROR):
        loss.backward()


def test_tensors_that_shared_the_old_storage_keep_it():
    t = rtx.arange(4.0)
    view, det = t[1:], t.detach()
    set_raw(t, np.zeros(4, dtype=np.float32))
    assert view.tolist() == [1.0, 2.0, 3.0] and det.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.tolist() == [0.0] * 4


def test_increment_version_after_a_raw_write():
    w = rtx.tensor([1.0, 2.0], requires_grad=True)
    x = rtx.tensor([3.0, 4.0], requires_grad=True)
    loss = (w * x).sum()
    d = w.detach()  # shares the counter, as PyTorch's detach does
    v = w._version
    raw(w)[0] = 9.0  # a write the core cannot see ...
    assert w._version == v
    increment_version(w)  # ... recorded as the core's in-place ops record theirs
    assert w._version == d._version == v + 1
    with pytest.raises(RuntimeError, match=_VERSION_ERROR):
        loss.backward()


def test_increment_version_matches_an_in_place_op():
    a, b = rtx.zeros(3), rtx.zeros(3)
    a.add_(1.0)
    raw(b)[...] += 1.0
    increment_version(b)
    assert a._version == b._version == 1 and a.tolist() == b.tolist()


@pytest.mark.parametrize("bad, name", [(rtx.ones(2), "Tensor"), ([1.0, 2.0], "list"), (np.float32(1.0), "float32")])
def test_set_raw_refuses_what_is_not_an_array(bad, name):
    t = rtx.ones(2)
    with pytest.raises(TypeError, match=f"set_raw expects a NumPy or CuPy array .* got {name}"):
        set_raw(t, bad)
    assert t._version == 0 and t.tolist() == [1.0, 1.0]


def test_set_raw_refuses_a_non_tensor_target():
    with pytest.raises(TypeError, match="set_raw expects a Tensor as its first argument, got ndarray"):
        set_raw(np.ones(2), np.zeros(2))
