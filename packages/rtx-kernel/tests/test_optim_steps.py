"""adam_step and sgd_step against the published algorithms, written out step by step, over
several steps whose gradients depend on the parameter (so any drift compounds).

The hand-written versions follow PyTorch's single-tensor code: maximize negates the gradient
first, then weight decay adds wd * param (the docs' pseudo-code applies maximize at the end,
which differs once weight decay is on; the code is what PyTorch computes)."""
import math

import numpy as np
import pytest

import rtx.kernel as K

STEPS = 12


def grad_at(param, t):
    # A quadratic bowl plus a step-dependent wobble.
    return 0.7 * param - 0.3 + 0.1 * np.sin(t + np.arange(param.size).reshape(param.shape))


def published_adam(theta, steps, lr, betas, eps, weight_decay, amsgrad, maximize, adamw):
    b1, b2 = betas
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    v_max = np.zeros_like(theta)
    for t in range(1, steps + 1):
        g = grad_at(theta, t)
        if maximize:
            g = -g
        if weight_decay:
            if adamw:
                theta = theta - lr * weight_decay * theta
            else:
                g = g + weight_decay * theta
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        if amsgrad:
            v_max = np.maximum(v_max, v)
            v_hat = v_max / (1 - b2 ** t)
        else:
            v_hat = v / (1 - b2 ** t)
        theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
    return theta, m, v, v_max


ADAM_VARIANTS = {
    "plain": {},
    "l2": {"weight_decay": 0.05},
    "adamw": {"weight_decay": 0.05, "adamw": True},
    "amsgrad": {"amsgrad": True},
    "maximize": {"maximize": True},
    "everything": {"weight_decay": 0.02, "adamw": True, "amsgrad": True, "maximize": True},
}


@pytest.mark.parametrize("impl", ["public", "reference"])
@pytest.mark.parametrize("variant", sorted(ADAM_VARIANTS))
def test_adam_step_follows_the_published_algorithm(impl, variant):
    opts = {"weight_decay": 0.0, "amsgrad": False, "maximize": False, "adamw": False, **ADAM_VARIANTS[variant]}
    kernel = K.adam_step if impl == "public" else K.adam_step.reference
    theta0 = np.random.default_rng(3).standard_normal((4, 5))
    want = published_adam(theta0.copy(), STEPS, 0.05, (0.9, 0.99), 1e-8, opts["weight_decay"], opts["amsgrad"],
                          opts["maximize"], opts["adamw"])
    param, m, v, v_max = theta0.copy(), np.zeros_like(theta0), np.zeros_like(theta0), np.zeros_like(theta0)
    for t in range(1, STEPS + 1):
        kernel(param, grad_at(param, t), m, v, step=t, lr=0.05, beta1=0.9, beta2=0.99, eps=1e-8,
               weight_decay=opts["weight_decay"], decoupled_weight_decay=opts["adamw"], amsgrad=opts["amsgrad"],
               max_exp_avg_sq=v_max if opts["amsgrad"] else None, maximize=opts["maximize"])
    for got, expected in zip((param, m, v), want[:3]):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    if opts["amsgrad"]:
        np.testing.assert_allclose(v_max, want[3], rtol=1e-12, atol=1e-14)


def test_adam_step_float32_tracks_float64():
    theta0 = np.random.default_rng(4).standard_normal(50)
    want = published_adam(theta0.copy(), STEPS, 0.01, (0.9, 0.999), 1e-8, 0.01, False, False, True)[0]
    param = theta0.astype(np.float32)
    m, v = np.zeros_like(param), np.zeros_like(param)
    for t in range(1, STEPS + 1):
        K.adam_step(param, grad_at(param, t).astype(np.float32), m, v, step=t, lr=0.01, beta1=0.9, beta2=0.999,
                    eps=1e-8, weight_decay=0.01, decoupled_weight_decay=True)
    assert param.dtype == np.float32
    np.testing.assert_allclose(param, want, rtol=1e-5, atol=1e-6)


def test_adam_step_validates_its_arguments():
    p = np.zeros(3)
    with pytest.raises(ValueError, match="step counts from 1"):
        K.adam_step(p, p, p.copy(), p.copy(), step=0, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)
    with pytest.raises(ValueError, match="max_exp_avg_sq"):
        K.adam_step(p, p, p.copy(), p.copy(), step=1, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, amsgrad=True)


def published_sgd(theta, steps, lr, momentum, dampening, nesterov, weight_decay, maximize):
    b = None
    for t in range(1, steps + 1):
        g = grad_at(theta, t)
        if maximize:
            g = -g
        if weight_decay:
            g = g + weight_decay * theta
        if momentum:
            b = g if t == 1 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        theta = theta - lr * g
    return theta, b


SGD_VARIANTS = {
    "plain": {},
    "weight decay": {"weight_decay": 0.1},
    "momentum": {"momentum": 0.9},
    "dampening": {"momentum": 0.9, "dampening": 0.3},
    "nesterov": {"momentum": 0.8, "nesterov": True, "weight_decay": 0.05},
    "maximize": {"maximize": True, "weight_decay": 0.05},
    "maximize momentum": {"maximize": True, "momentum": 0.5, "dampening": 0.1},
    "maximize nesterov": {"maximize": True, "momentum": 0.5, "nesterov": True},
}


@pytest.mark.parametrize("impl", ["public", "reference"])
@pytest.mark.parametrize("variant", sorted(SGD_VARIANTS))
def test_sgd_step_follows_the_published_algorithm(impl, variant):
    opts = {"momentum": 0.0, "dampening": 0.0, "nesterov": False, "weight_decay": 0.0, "maximize": False,
            **SGD_VARIANTS[variant]}
    kernel = K.sgd_step if impl == "public" else K.sgd_step.reference
    theta0 = np.random.default_rng(5).standard_normal((3, 7))
    want_theta, want_buf = published_sgd(theta0.copy(), STEPS, 0.05, **opts)
    param = theta0.copy()
    buf = np.zeros_like(param) if opts["momentum"] else None
    for t in range(1, STEPS + 1):
        grad = grad_at(param, t)
        kernel(param, grad, buf, lr=0.05, first_step=t == 1, **opts)
    np.testing.assert_allclose(param, want_theta, rtol=1e-12, atol=1e-14)
    if opts["momentum"]:
        np.testing.assert_allclose(buf, want_buf, rtol=1e-12, atol=1e-14)


def test_sgd_step_never_writes_the_gradient():
    rng = np.random.default_rng(6)
    for opts in SGD_VARIANTS.values():
        param, grad = rng.standard_normal(5), rng.standard_normal(5)
        before = grad.copy()
        buf = np.zeros(5) if opts.get("momentum") else None
        K.sgd_step(param, grad, buf, lr=0.1, first_step=False, **opts)
        np.testing.assert_array_equal(grad, before)


def test_sgd_step_validates_its_arguments():
    p = np.zeros(3)
    with pytest.raises(ValueError, match="momentum_buffer"):
        K.sgd_step(p, p, None, lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="Nesterov"):
        K.sgd_step(p, p, p.copy(), lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)


def test_bias_corrections_count_steps_from_one():
    # After one step from zero state, Adam moves every coordinate by about lr (m_hat/sqrt(v_hat) = sign(g)).
    p, g = np.zeros(4), np.array([1.0, -2.0, 3.0, -4.0])
    K.adam_step(p, g, np.zeros(4), np.zeros(4), step=1, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-12)
    np.testing.assert_allclose(p, -0.1 * np.sign(g), rtol=1e-9)
    assert math.isclose(abs(p[0]), 0.1, rel_tol=1e-9)


def test_steps_update_non_contiguous_parameters_in_place():
    # A transposed view cannot be walked in flat blocks: it must still be updated in place.
    rng = np.random.default_rng(8)
    base, grad = rng.standard_normal((30, 40)), rng.standard_normal((40, 30))
    for step in (K.adam_step, K.sgd_step):
        view, dense = base.copy().T, base.T.copy()
        if step is K.adam_step:
            states = [(np.zeros((40, 30)), np.zeros((40, 30))) for _ in range(2)]
            for p, (m, v) in zip((view, dense), states):
                step(p, grad, m, v, step=1, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1)
        else:
            for p in (view, dense):
                step(p, grad, np.zeros((40, 30)), lr=0.1, momentum=0.9, first_step=True)
        assert not view.flags.c_contiguous
        np.testing.assert_array_equal(view, dense)
        assert not np.array_equal(view, base.T)
