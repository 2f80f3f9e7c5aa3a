"""rtx.autocast switches on the ops' autocast (the state lives in rtx-tensor and rtx.amp.state
re-exports it): a model runs in bfloat16 / float16 inside the block, losses in float32, and a
small MLP trains under autocast + GradScaler."""
from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import rtx
from rtx.amp import GradScaler, autocast, state
from rtx.extend import autocast as autocast_state

nn = pytest.importorskip("rtx.nn")
F = pytest.importorskip("rtx.nn.functional")
L = pytest.importorskip("rtx.losses.functional")


def test_rtx_amp_state_is_the_foundations_state():
    for name in ("get_autocast_dtype", "is_autocast_enabled", "set_autocast_dtype", "maybe_autocast"):
        assert getattr(state, name) is getattr(autocast_state, name)
    with autocast("cpu"):
        assert autocast_state.get_autocast_dtype("cpu") is rtx.bfloat16
    assert autocast_state.active == 0


@pytest.mark.parametrize("dtype, np_dtype, tol", [(None, ml_dtypes.bfloat16, 2 ** -7),
                                                  (rtx.float16, np.float16, 2 ** -10)])
def test_a_model_runs_in_the_autocast_dtype(dtype, np_dtype, tol):
    rtx.manual_seed(0)
    lin = nn.Linear(16, 8, bias=False)
    x = rtx.randn(4, 16)
    with autocast("cpu", dtype=dtype):
        y = lin(x)
        z = x @ lin.weight.mT
    want_dtype = rtx.bfloat16 if dtype is None else dtype
    assert y.dtype is want_dtype and z.dtype is want_dtype
    xr = x.numpy().astype(np_dtype).astype(np.float64)
    wr = lin.weight.detach().numpy().astype(np_dtype).astype(np.float64)
    want = xr @ wr.T
    np.testing.assert_allclose(y.detach().float().numpy(), want, rtol=tol, atol=tol * np.abs(want).max())
    assert lin(x).dtype is rtx.float32                  # outside the block: float32 again


def test_nested_enabled_false_and_other_threads_see_float32():
    lin = nn.Linear(3, 2)
    x = rtx.randn(1, 3)
    seen = []
    with autocast("cpu"):
        assert lin(x).dtype is rtx.bfloat16
        with autocast("cpu", enabled=False):
            assert lin(x).dtype is rtx.float32
        t = threading.Thread(target=lambda: seen.append(lin(x).dtype))
        t.start()
        t.join()
        assert lin(x).dtype is rtx.bfloat16
    assert seen == [rtx.float32]


def test_an_mlp_trains_under_autocast_and_grad_scaler():
    rtx.manual_seed(0)
    g = np.random.default_rng(0)
    X = g.standard_normal((64, 8)).astype(np.float32)
    Y = np.sin(X[:, :1]) + 0.5 * X[:, 1:2] ** 2
    x, y = rtx.tensor(X), rtx.tensor(Y.astype(np.float32))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = rtx.optim.Adam(model.parameters(), lr=0.01)
    scaler = GradScaler("cpu")
    losses = []
    for _ in range(40):
        opt.zero_grad()
        with autocast("cpu"):
            out = model(x)
            loss = L.mse_loss(out, y)
        assert out.dtype is rtx.bfloat16 and loss.dtype is rtx.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    for p in model.parameters():
        assert p.dtype is rtx.float32 and p.grad.dtype is rtx.float32
    assert losses[-1] < 0.3 * losses[0], losses
