"""The autocast state in the foundation and the rtx-tensor ops that honour it (matmul family on the
lower-precision list, prod on the float32 list, cat/stack promote). rtx.autocast itself lives in
rtx-optim (above this package), so these tests switch the state directly."""
from __future__ import annotations

import contextlib
import threading

import ml_dtypes
import numpy as np
import pytest

import rtx
from rtx._tensor import autocast_state as ac

# float16 has a 10-bit mantissa, bfloat16 7: unit roundoff 2^-11 and 2^-8. A dot product of K
# terms rounded once at the end (float32 accumulation) is off by about one unit of the output.
TOL = {rtx.float16: 2.0 ** -10, rtx.bfloat16: 2.0 ** -7}
NP = {rtx.float16: np.float16, rtx.bfloat16: ml_dtypes.bfloat16}


@contextlib.contextmanager
def autocast(dtype, device_type="cpu"):
    prev = ac.set_autocast_dtype(device_type, dtype)
    try:
        yield
    finally:
        ac.set_autocast_dtype(device_type, prev)


def _rounded(a, dtype):
    """a rounded to dtype and back to float64: what the op sees after autocast's cast."""
    return np.asarray(a, np.float32).astype(NP[dtype]).astype(np.float64)


def _close(got, want, dtype):
    got = got.float().numpy().astype(np.float64)
    scale = np.abs(want).max() + 1e-30
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", [rtx.bfloat16, rtx.float16])
def test_matmul_family_computes_in_the_autocast_dtype(dtype):
    g = np.random.default_rng(0)
    a, b = g.standard_normal((5, 7)).astype(np.float32), g.standard_normal((7, 3)).astype(np.float32)
    c = g.standard_normal((3,)).astype(np.float32)
    A3, B3 = g.standard_normal((2, 5, 7)).astype(np.float32), g.standard_normal((2, 7, 3)).astype(np.float32)
    ta, tb, tc, tA3, tB3 = (rtx.tensor(v) for v in (a, b, c, A3, B3))
    want = _rounded(a, dtype) @ _rounded(b, dtype)
    want3 = _rounded(A3, dtype) @ _rounded(B3, dtype)
    with autocast(dtype):
        outs = {"matmul": rtx.matmul(ta, tb), "@": ta @ tb, "mm": rtx.mm(ta, tb), "bmm": rtx.bmm(tA3, tB3),
                "addmm": rtx.addmm(tc, ta, tb, beta=0.5, alpha=2.0), "baddbmm": rtx.baddbmm(tc, tA3, tB3)}
    for name, out in outs.items():
        assert out.dtype is dtype, name
    for name in ("matmul", "@", "mm"):
        _close(outs[name], want, dtype)
    _close(outs["bmm"], want3, dtype)
    _close(outs["addmm"], 0.5 * _rounded(c, dtype) + 2.0 * want, dtype)
    _close(outs["baddbmm"], _rounded(c, dtype) + want3, dtype)


def test_mixed_dtypes_are_cast_before_the_dtype_check():
    a, b = rtx.randn(4, 3), rtx.randn(3, 2, dtype=rtx.bfloat16)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ b
    with autocast(rtx.bfloat16):
        assert (a @ b).dtype is rtx.bfloat16


def test_float64_integer_and_off_are_left_alone():
    d = rtx.randn(3, 3, dtype=rtx.float64)
    i = rtx.arange(9).reshape(3, 3)
    f = rtx.randn(3, 3)
    with autocast(rtx.bfloat16):
        assert (d @ d).dtype is rtx.float64          # PyTorch never lowers float64
        assert (i @ i).dtype is rtx.int64
    with autocast(rtx.bfloat16, "cuda"):            # autocast for another device type
        assert (f @ f).dtype is rtx.float32
    assert (f @ f).dtype is rtx.float32 and ac.active == 0


def test_gradients_reach_float32_leaves_in_float32():
    g = np.random.default_rng(1)
    a, b = g.standard_normal((4, 6)).astype(np.float32), g.standard_normal((6, 2)).astype(np.float32)
    ta, tb = rtx.tensor(a, requires_grad=True), rtx.tensor(b, requires_grad=True)
    with autocast(rtx.bfloat16):
        y = ta @ tb
    (y.float() * rtx.tensor([[1.0, -2.0]])).sum().backward()
    assert ta.grad.dtype is rtx.float32 and tb.grad.dtype is rtx.float32
    gy = np.tile([[1.0, -2.0]], (4, 1))
    # d/da = gy @ b^T in bfloat16 (the backward of the bfloat16 matmul), then cast back to float32
    np.testing.assert_allclose(ta.grad.numpy(), gy @ _rounded(b, rtx.bfloat16).T, rtol=2 ** -7, atol=2 ** -6)
    np.testing.assert_allclose(tb.grad.numpy(), _rounded(a, rtx.bfloat16).T @ gy, rtol=2 ** -7, atol=2 ** -6)


def test_prod_is_on_the_float32_list_and_sum_is_not_on_cpu():
    x = rtx.tensor([1.5, 2.0, -3.0], dtype=rtx.bfloat16)
    with autocast(rtx.bfloat16):
        p, s = x.prod(), x.sum()
        assert x.prod(dtype=rtx.bfloat16).dtype is rtx.bfloat16   # an explicit dtype wins
    assert p.dtype is rtx.float32 and p.item() == -9.0
    assert s.dtype is rtx.bfloat16                                # as PyTorch's CPU list


def test_cat_and_stack_promote_to_the_widest_input():
    h, f = rtx.ones(2, dtype=rtx.bfloat16), rtx.ones(2)
    with autocast(rtx.bfloat16):
        assert rtx.cat([h, f]).dtype is rtx.float32
        assert rtx.stack([h, rtx.ones(2, dtype=rtx.float16)]).dtype is rtx.float32


def test_the_state_is_thread_local():
    seen = []
    f = rtx.randn(2, 2)
    with autocast(rtx.float16):
        assert (f @ f).dtype is rtx.float16
        t = threading.Thread(target=lambda: seen.append(((f @ f).dtype, ac.get_autocast_dtype("cpu"))))
        t.start()
        t.join()
    assert seen == [(rtx.float32, None)]


def test_set_autocast_dtype_checks_the_device_type_and_counts():
    with pytest.raises(ValueError, match="device_type must be one of"):
        ac.set_autocast_dtype("tpu", rtx.float16)
    assert ac.active == 0
    with autocast(rtx.float16):
        with autocast(rtx.bfloat16):     # nesting on one device type counts once
            assert ac.active == 1 and ac.get_autocast_dtype("cpu") is rtx.bfloat16
        with autocast(None):
            assert not ac.is_autocast_enabled("cpu")
        assert ac.active == 1
    assert ac.active == 0
