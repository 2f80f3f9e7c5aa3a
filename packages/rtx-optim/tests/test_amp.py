"""rtx.amp: GradScaler (scaling, unscale_, skipped steps, growth and backoff, state_dict) and
autocast (the thread-local state ops consult)."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import rtx
from rtx.amp import GradScaler, autocast, state
from rtx.optim import SGD


def _setup(lr=1.0, **scaler_kw):
    w = rtx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt = SGD([w], lr=lr)
    scaler = GradScaler("cpu", **scaler_kw)
    return w, opt, scaler


def _iteration(w, opt, scaler, poison=None):
    opt.zero_grad()
    loss = (w * w).sum() * 0.5  # grad = w
    scaler.scale(loss).backward()
    if poison is not None:
        w.grad._data[0] = poison
    scaler.step(opt)
    scaler.update()


def test_scale_multiplies_and_the_step_sees_unscaled_grads():
    w, opt, scaler = _setup(lr=0.5, init_scale=1024.0)
    loss = (w * w).sum() * 0.5
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(loss.item() * 1024)
    scaled.backward()
    np.testing.assert_allclose(w.grad.numpy(), [1024.0, 2048.0, 3072.0])
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 1.0, 1.5])
    assert scaler.get_scale() == 1024.0


def test_unscale_divides_the_grads_once():
    w, opt, scaler = _setup(init_scale=8.0)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)  # does not unscale again
    np.testing.assert_allclose(w.detach().numpy(), [-1.0, -2.0, -3.0])
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update\\(\\)"):
        scaler.step(opt)
    scaler.update()


@pytest.mark.parametrize("poison", [math.inf, -math.inf, math.nan])
def test_a_step_with_inf_or_nan_grads_is_skipped_and_the_scale_backs_off(poison):
    w, opt, scaler = _setup(init_scale=2.0 ** 16)
    _iteration(w, opt, scaler, poison=poison)
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0, 3.0])
    assert scaler.get_scale() == 2.0 ** 15
    assert scaler.state_dict()["_growth_tracker"] == 0
    _iteration(w, opt, scaler)  # a clean step goes through
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0, 0.0])


def test_the_scale_grows_after_growth_interval_clean_steps():
    w, opt, scaler = _setup(lr=0.01, init_scale=4.0, growth_interval=3, growth_factor=2.0, backoff_factor=0.25)
    scales = []
    for i in range(8):
        _iteration(w, opt, scaler, poison=math.inf if i == 4 else None)
        scales.append(scaler.get_scale())
    # grows after clean steps 0-2; step 3 clean; step 4 overflows (x0.25, tracker reset);
    # steps 5-7 clean: grows again after the third
    assert scales == [4.0, 4.0, 8.0, 8.0, 2.0, 2.0, 2.0, 4.0]


def test_state_dict_round_trip():
    w, opt, scaler = _setup(init_scale=16.0, growth_interval=5)
    for _ in range(3):
        _iteration(w, opt, scaler)
    sd = scaler.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                  "_growth_tracker": 3}
    other = GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.get_scale() == 16.0 and other.state_dict() == sd
    w2 = rtx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt2 = SGD([w2], lr=1.0)
    for _ in range(2):
        _iteration(w, opt, scaler)
        _iteration(w2, opt2, other)
    assert other.get_scale() == scaler.get_scale() == 32.0


def test_update_with_an_explicit_scale_and_errors():
    w, opt, scaler = _setup()
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.step(opt)
    scaler.scale(rtx.tensor(1.0))
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)


def test_scale_of_lists_and_fp16_grads():
    _, opt, scaler = _setup(init_scale=2.0)
    a, (b, c) = scaler.scale([rtx.tensor(1.0), (rtx.tensor(2.0), rtx.tensor(3.0))])
    assert [a.item(), b.item(), c.item()] == [2.0, 4.0, 6.0]
    h = rtx.ones(2, dtype=rtx.float16, requires_grad=True)
    hopt = SGD([h], lr=1.0)
    h.grad = rtx.ones(2, dtype=rtx.float16)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(hopt)


def test_disabled_scaler_passes_through():
    w, opt, _ = _setup()
    scaler = GradScaler("cpu", enabled=False)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not GradScaler("cuda").is_enabled() or rtx.cuda.is_available()


# ---- autocast ----------------------------------------------------------------------------------------


def test_autocast_sets_the_dtype_ops_consult_and_restores_it():
    assert state.get_autocast_dtype("cpu") is None
    with autocast("cpu"):
        assert state.get_autocast_dtype("cpu") is rtx.bfloat16
        assert rtx.amp.autocast_dtype() is rtx.bfloat16
        assert state.get_autocast_dtype("cuda") is None
        with autocast("cpu", dtype=rtx.float16):
            assert state.get_autocast_dtype("cpu") is rtx.float16
            with autocast("cpu", enabled=False):
                assert state.get_autocast_dtype("cpu") is None
                assert not rtx.amp.is_autocast_enabled("cpu")
            assert state.get_autocast_dtype("cpu") is rtx.float16
        assert state.get_autocast_dtype("cpu") is rtx.bfloat16
    assert state.get_autocast_dtype("cpu") is None


def test_rtx_autocast_is_rtx_amp_autocast_and_decorates():
    assert rtx.autocast is autocast

    @rtx.autocast("cpu", dtype=rtx.float16)
    def inside():
        return state.get_autocast_dtype("cpu")
    assert inside() is rtx.float16 and state.get_autocast_dtype("cpu") is None


def test_autocast_is_thread_local():
    seen = []
    with autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(state.get_autocast_dtype("cpu")))
        t.start()
        t.join()
    assert seen == [None]


def test_autocast_refuses_unsupported_settings():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        autocast("tpu")
    with pytest.warns(UserWarning, match="not supported"):
        with autocast("cpu", dtype=rtx.float64):
            assert state.get_autocast_dtype("cpu") is None


def test_maybe_autocast_casts_floating_tensors_differentiably():
    x = rtx.ones(2, requires_grad=True)
    i = rtx.tensor([1, 2])
    assert state.maybe_autocast(x, i) == (x, i)
    with autocast("cpu", dtype=rtx.float16):
        xh, ih = state.maybe_autocast(x, i)
    assert xh.dtype == rtx.float16 and ih is i
    xh.sum().backward()
    assert x.grad.dtype == rtx.float32
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
