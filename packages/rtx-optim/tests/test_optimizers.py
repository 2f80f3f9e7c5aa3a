"""Each optimizer against a plain NumPy float64 transcription of its published algorithm (the
pseudo-code in PyTorch's documentation), for several hyper-parameter combinations, over 5 steps
on tensors of a few shapes (0-d included); then param groups, state_dict round trips, the
functional API, errors, zero_grad, hooks and version counters."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rtx
import rtx.optim as optim
from rtx.optim import adam as adam_module
from rtx.optim import sgd as sgd_module


# ---- the references: one function per optimizer, step(p, g, state, **hparams) -> new p ----------
def _g(p, g, weight_decay=0.0, maximize=False):
    g = -g if maximize else g
    return g + weight_decay * p


def sgd(p, g, st, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    g = _g(p, g, weight_decay, maximize)
    if momentum:
        st["b"] = g.copy() if "b" not in st else momentum * st["b"] + (1 - dampening) * g
        g = g + momentum * st["b"] if nesterov else st["b"]
    return p - lr * g


def adam(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
         decoupled_weight_decay=False):
    b1, b2 = betas
    t = st["t"] = st.get("t", 0) + 1
    m, v = st.get("m", np.zeros_like(p)), st.get("v", np.zeros_like(p))
    g = -g if maximize else g
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    m = st["m"] = b1 * m + (1 - b1) * g
    v = st["v"] = b2 * v + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** t)
    if amsgrad:
        st["vmax"] = np.maximum(st.get("vmax", np.zeros_like(p)), v)
        v_hat = st["vmax"] / (1 - b2 ** t)
    else:
        v_hat = v / (1 - b2 ** t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps)


def adamw(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, maximize=False):
    return adam(p, g, st, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay=True)


def adagrad(p, g, st, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
            maximize=False):
    t = st["t"] = st.get("t", 0) + 1
    g = _g(p, g, weight_decay, maximize)
    clr = lr / (1 + (t - 1) * lr_decay)
    s = st["sum"] = st.get("sum", np.full_like(p, initial_accumulator_value)) + g * g
    return p - clr * g / (np.sqrt(s) + eps)


def rmsprop(p, g, st, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
            maximize=False):
    g = _g(p, g, weight_decay, maximize)
    v = st["v"] = alpha * st.get("v", np.zeros_like(p)) + (1 - alpha) * g * g
    v_tilde = v
    if centered:
        ga = st["ga"] = alpha * st.get("ga", np.zeros_like(p)) + (1 - alpha) * g
        v_tilde = v - ga * ga
    if momentum > 0:
        b = st["b"] = momentum * st.get("b", np.zeros_like(p)) + g / (np.sqrt(v_tilde) + eps)
        return p - lr * b
    return p - lr * g / (np.sqrt(v_tilde) + eps)


def adadelta(p, g, st, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    g = _g(p, g, weight_decay, maximize)
    v = st["v"] = rho * st.get("v", np.zeros_like(p)) + (1 - rho) * g * g
    u = st.get("u", np.zeros_like(p))
    delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
    st["u"] = rho * u + (1 - rho) * delta * delta
    return p - lr * delta


def adamax(p, g, st, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    t = st["t"] = st.get("t", 0) + 1
    g = _g(p, g, weight_decay, maximize)
    m = st["m"] = b1 * st.get("m", np.zeros_like(p)) + (1 - b1) * g
    u = st["u"] = np.maximum(b2 * st.get("u", np.zeros_like(p)), np.abs(g) + eps)
    return p - lr * m / ((1 - b1 ** t) * u)


def nadam(p, g, st, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
          decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    t = st["t"] = st.get("t", 0) + 1
    g = -g if maximize else g
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    # PyTorch keeps the running product of the mu_t as a float32 scalar (multiplied in float32):
    # so does this reference.
    prod = st["prod"] = float(np.float32(st.get("prod", 1.0)) * np.float32(mu))
    m = st["m"] = b1 * st.get("m", np.zeros_like(p)) + (1 - b1) * g
    v = st["v"] = b2 * st.get("v", np.zeros_like(p)) + (1 - b2) * g * g
    m_hat = mu_next * m / (1 - prod * mu_next) + (1 - mu) * g / (1 - prod)
    v_hat = v / (1 - b2 ** t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps)


def radam(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
          maximize=False):
    b1, b2 = betas
    t = st["t"] = st.get("t", 0) + 1
    g = -g if maximize else g
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    m = st["m"] = b1 * st.get("m", np.zeros_like(p)) + (1 - b1) * g
    v = st["v"] = b2 * st.get("v", np.zeros_like(p)) + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho_t > 5:
        adaptive = math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return p - lr * m_hat * rect * adaptive
    return p - lr * m_hat


# ---- the table: (optimizer class, reference, hyper-parameter combinations) -------------------------

CASES = {
    "SGD": (optim.SGD, sgd, [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.1),
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05),
        dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.1),
    ]),
    "Adam": (optim.Adam, adam, [
        dict(),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, amsgrad=True, betas=(0.8, 0.9)),
        dict(lr=0.01, maximize=True, weight_decay=0.1, amsgrad=True),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    ]),
    "AdamW": (optim.AdamW, adamw, [
        dict(),
        dict(lr=0.01, weight_decay=0.2, amsgrad=True),
        dict(lr=0.01, maximize=True, eps=1e-3),
    ]),
    "Adagrad": (optim.Adagrad, adagrad, [
        dict(),
        dict(lr=0.1, lr_decay=0.1, weight_decay=0.1),
        dict(lr=0.1, initial_accumulator_value=0.5, maximize=True),
    ]),
    "RMSprop": (optim.RMSprop, rmsprop, [
        dict(),
        dict(lr=0.01, centered=True),
        dict(lr=0.01, momentum=0.9, weight_decay=0.1),
        dict(lr=0.01, centered=True, momentum=0.5, alpha=0.9, maximize=True),
    ]),
    "Adadelta": (optim.Adadelta, adadelta, [
        dict(),
        dict(lr=0.5, rho=0.8, weight_decay=0.1),
        dict(maximize=True, eps=1e-4),
    ]),
    "Adamax": (optim.Adamax, adamax, [
        dict(),
        dict(lr=0.01, weight_decay=0.1, betas=(0.8, 0.99)),
        dict(lr=0.01, maximize=True),
    ]),
    "NAdam": (optim.NAdam, nadam, [
        dict(),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01),
        dict(lr=0.01, maximize=True),
    ]),
    "RAdam": (optim.RAdam, radam, [
        dict(),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
        # beta2 = 0.5: rho_t passes 5 from step 6 on, so both branches of the update run
        dict(lr=0.01, betas=(0.9, 0.5), maximize=True),
    ]),
}

SHAPES = [(3, 4), (5,), ()]
STEPS = 5
PARAMS = [(name, i) for name, (_, _, combos) in CASES.items() for i in range(len(combos))]


def _data(seed=0, steps=STEPS):
    rng = np.random.default_rng(seed)
    p0 = [np.asarray(rng.standard_normal(s)) for s in SHAPES]
    grads = [[np.asarray(rng.standard_normal(s)) for s in SHAPES] for _ in range(steps)]
    return p0, grads


def _params(p0, dtype=rtx.float64):
    return [rtx.tensor(p, dtype=dtype, requires_grad=True) for p in p0]


def _run(opt, params, grads):
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = rtx.tensor(g, dtype=p.dtype)
        opt.step()


def _reference(ref, p0, grads, kwargs):
    ps = [p.copy() for p in p0]
    states = [{} for _ in ps]
    for gs in grads:
        ps = [ref(p, g, st, **kwargs) for p, g, st in zip(ps, gs, states)]
    return ps


@pytest.mark.parametrize("name,i", PARAMS, ids=[f"{n}-{i}" for n, i in PARAMS])
def test_matches_the_published_algorithm(name, i):
    cls, ref, combos = CASES[name]
    kwargs = combos[i]
    steps = 7 if name == "RAdam" else STEPS
    p0, grads = _data(i, steps)
    params = _params(p0)
    _run(cls(params, **kwargs), params, grads)
    expected = _reference(ref, p0, grads, kwargs)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", list(CASES))
def test_float32_parameters_stay_float32_and_track_float64(name):
    cls, ref, combos = CASES[name]
    kwargs = combos[-1]
    p0, grads = _data(1)
    params = _params(p0, rtx.float32)
    opt = cls(params, **kwargs)
    _run(opt, params, grads)
    expected = _reference(ref, p0, grads, kwargs)
    for p, e in zip(params, expected):
        assert p.dtype == rtx.float32
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-4, atol=1e-5)
    for state in opt.state.values():
        for key, value in state.items():
            if isinstance(value, rtx.Tensor) and value.ndim:
                assert value.dtype == rtx.float32, key


def test_param_groups_take_their_own_options():
    p0, grads = _data(2)
    a, b = _params(p0[:2])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.5]
    _run(opt, [a, b], [gs[:2] for gs in grads])
    ea = _reference(sgd, p0[:1], [gs[:1] for gs in grads], dict(lr=0.1, momentum=0.9))[0]
    eb = _reference(sgd, p0[1:2], [gs[1:2] for gs in grads], dict(lr=0.01, momentum=0.5))[0]
    np.testing.assert_allclose(a.detach().numpy(), ea, rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), eb, rtol=1e-12)


def test_add_param_group_fills_defaults_and_rejects_duplicates():
    a, b, c = _params(_data()[0])
    opt = optim.Adam([a], lr=0.01)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [c, a]})
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)


def test_parameters_without_grad_are_skipped():
    a, b, _ = _params(_data()[0])
    before = b.detach().numpy().copy()
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = rtx.ones_like(a)
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), before)
    assert b not in opt.state and len(opt.state) == 1


# ---- state_dict --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_continues_identically(name):
    cls, _, combos = CASES[name]
    kwargs = combos[-1]
    p0, grads = _data(3, steps=6)
    groups = lambda ps: [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.003}]  # noqa: E731

    straight = _params(p0)
    opt = cls(groups(straight), **kwargs)
    _run(opt, straight, grads)

    first = _params(p0)
    opt1 = cls(groups(first), **kwargs)
    _run(opt1, first, grads[:3])
    saved = opt1.state_dict()
    resumed = [rtx.tensor(p.detach().numpy().copy(), requires_grad=True) for p in first]
    opt2 = cls(groups(resumed), **kwargs)
    opt2.load_state_dict(saved)
    _run(opt2, resumed, grads[3:])
    _run(opt1, first, grads[3:])  # the saver goes on too: the loaded state must not alias it
    for s, r, f in zip(straight, resumed, first):
        np.testing.assert_array_equal(r.detach().numpy(), s.detach().numpy())
        np.testing.assert_array_equal(f.detach().numpy(), s.detach().numpy())


def test_state_dict_format_is_pytorchs():
    a, b, c = _params(_data()[0])
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.1}], lr=0.01, amsgrad=True)
    for p in (a, c):
        p.grad = rtx.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 2]
    assert list(sd["state"][0]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    step = sd["state"][0]["step"]
    assert isinstance(step, rtx.Tensor) and step.dtype == rtx.float32 and step.ndim == 0 and step.item() == 1.0
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1] == {
        "lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": True, "maximize": False,
        "foreach": None, "capturable": False, "differentiable": False, "fused": None,
        "decoupled_weight_decay": False, "params": [2]}


def test_load_state_dict_validates_groups():
    a, b, c = _params(_data()[0])
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a, b, c], lr=0.1).load_state_dict(sd)


def test_load_state_dict_casts_state_to_the_parameter_dtype_but_not_step():
    p64 = _params(_data()[0][:1])
    opt = optim.Adam(p64, lr=0.1)
    p64[0].grad = rtx.ones_like(p64[0])
    opt.step()
    p32 = [rtx.zeros(3, 4, dtype=rtx.float32, requires_grad=True)]
    opt32 = optim.Adam(p32, lr=0.1)
    opt32.load_state_dict(opt.state_dict())
    st = opt32.state[p32[0]]
    assert st["exp_avg"].dtype == rtx.float32 and st["exp_avg_sq"].dtype == rtx.float32
    assert st["step"].dtype == rtx.float32 and st["step"].item() == 1.0
    assert opt32.param_groups[0]["params"][0] is p32[0]


def test_load_state_dict_accepts_a_numeric_step():
    # Old checkpoints stored the step as a number; it comes back as a tensor on the next step.
    (a,) = _params(_data()[0][:1])
    opt = optim.Adam([a], lr=0.1)
    a.grad = rtx.ones_like(a)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = 1
    opt.load_state_dict(sd)
    opt.step()
    assert opt.state[a]["step"].item() == 2.0


# ---- functional API ----------------------------------------------------------------------------------


def test_functional_sgd_creates_the_momentum_buffer():
    (a,) = _params(_data()[0][:1])
    g = rtx.ones_like(a)
    bufs = [None]
    start = a.detach().numpy().copy()
    sgd_module.sgd([a], [g], bufs, weight_decay=0, momentum=0.9, lr=0.1, dampening=0, nesterov=False,
                   maximize=False)
    np.testing.assert_allclose(a.detach().numpy(), start - 0.1)
    np.testing.assert_array_equal(bufs[0].numpy(), np.ones((3, 4)))


def test_functional_adam_advances_the_step():
    (a,) = _params(_data()[0][:1])
    m, v, step = rtx.zeros_like(a), rtx.zeros_like(a), rtx.tensor(0.0)
    adam_module.adam([a], [rtx.ones_like(a)], [m], [v], [], [step], amsgrad=False, beta1=0.9, beta2=0.999,
                     lr=0.1, weight_decay=0, eps=1e-8, maximize=False)
    assert step.item() == 1.0
    np.testing.assert_allclose(m.numpy(), 0.1)


# ---- errors ------------------------------------------------------------------------------------------


def test_params_must_be_an_iterable_of_tensors():
    a = rtx.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of "
                                        "Tensors or dicts, but got rtx.Tensor"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([a, 3], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2], lr=0.1)


@pytest.mark.parametrize("make,message", [
    (lambda p: optim.SGD(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.AdamW(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: optim.Adam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: optim.LBFGS(p, lr=-1.0), "Invalid learning rate: -1.0"),
])
def test_invalid_hyper_parameters_are_refused_with_pytorchs_message(make, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(".", r"\.") + "$"):
        make([rtx.zeros(2, requires_grad=True)])


def test_defaults_match_pytorch():
    p = [rtx.zeros(2, requires_grad=True)]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    assert optim.AdamW(p).defaults["decoupled_weight_decay"] is True
    assert optim.Adagrad(p).defaults["eps"] == 1e-10
    assert optim.RMSprop(p).defaults["alpha"] == 0.99
    assert optim.Adadelta(p).defaults["lr"] == 1.0
    assert optim.Adamax(p).defaults["lr"] == 2e-3
    assert optim.NAdam(p).defaults["momentum_decay"] == 4e-3
    assert optim.LBFGS(p).defaults["max_eval"] == 25


# ---- zero_grad, hooks, autograd interplay --------------------------------------------------------------


def test_zero_grad_sets_to_none_or_zeros():
    a = rtx.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    (a * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(3))
    opt.zero_grad()
    assert a.grad is None


def test_step_hooks_run_around_the_step_once():
    a = rtx.ones(3, requires_grad=True)
    calls = []
    opt = optim.Adam([a], lr=0.1)
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    h3 = optim.register_optimizer_step_post_hook(lambda o, args, kwargs: calls.append("global post"))
    try:
        a.grad = rtx.ones(3)
        opt.step()
        assert calls == ["pre", "post", "global post"]
        h1.remove()
        opt.step()
        assert calls[3:] == ["post", "global post"]
    finally:
        h3.remove()


def test_step_returns_the_closure_loss_and_runs_it_with_grad():
    a = rtx.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    with rtx.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 3.0
    np.testing.assert_allclose(a.detach().numpy(), np.zeros(3))


def test_a_step_bumps_the_version_so_saved_graphs_notice():
    w = rtx.ones(3, requires_grad=True)
    x = rtx.ones(3, requires_grad=True)
    y = (w * x).sum()
    y.backward(retain_graph=True)
    version = w._version
    optim.SGD([w], lr=0.1).step()
    assert w._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_differentiable_is_refused():
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.Adam([rtx.zeros(2, requires_grad=True)], differentiable=True)


def test_lr_as_a_tensor():
    a = rtx.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=rtx.tensor(0.5))
    a.grad = rtx.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 0.5])


def test_trains_an_nn_linear_regression():
    nn = pytest.importorskip("rtx.nn")
    rtx.manual_seed(0)
    model = nn.Linear(4, 1)
    x = rtx.randn(64, 4)
    y = x @ rtx.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.0)
    sched = optim.lr_scheduler.StepLR(opt, 100, 0.5)
    for _ in range(300):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
    assert loss.item() < 1e-4
    np.testing.assert_allclose(model.weight.detach().numpy(), [[1.0, -2.0, 0.5, 3.0]], atol=1e-2)


def test_repr_lists_each_group():
    opt = optim.SGD([rtx.zeros(2, requires_grad=True)], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text


def test_warnings_do_not_leak():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = rtx.zeros(2, requires_grad=True)
        optim.SGD([a], lr=0.1).step()
    assert math.isfinite(0.0)


def test_state_dict_survives_rtx_save_and_load(tmp_path):
    (a,) = _params(_data()[0][:1])
    opt = optim.RMSprop([a], lr=0.1, momentum=0.9, centered=True)
    a.grad = rtx.ones_like(a)
    opt.step()
    rtx.save(opt.state_dict(), tmp_path / "opt.pt")
    fresh = optim.RMSprop([a], lr=0.1, momentum=0.9, centered=True)
    fresh.load_state_dict(rtx.load(tmp_path / "opt.pt"))
    for key in ("square_avg", "momentum_buffer", "grad_avg"):
        np.testing.assert_array_equal(fresh.state[a][key].numpy(), opt.state[a][key].numpy())
    assert fresh.state[a]["step"].item() == 1.0


@pytest.mark.parametrize("kernel_name,update", [("sgd_step", sgd_module._sgd_update),
                                                ("adam_step", adam_module._adam_update)])
def test_update_functions_keep_rtx_kernels_contract(kernel_name, update):
    # _sgd_update / _adam_update can be swapped for rtx.kernel's fused kernels: same arguments,
    # same results, on the kernel's own samples.
    from rtx.kernel import KERNELS
    kernel = KERNELS[kernel_name]
    for sample in kernel.samples(np.random.default_rng(0), np.float64, "test"):
        ours = kernel.run(update, sample)
        theirs = kernel.run(kernel.reference, sample)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=sample.label)
