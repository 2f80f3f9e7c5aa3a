"""Every scheduler's learning-rate sequence against values written down by hand (or from the
closed form), stepping as a training loop does: optimizer.step() then scheduler.step()."""
from __future__ import annotations

import math
import warnings

import pytest

import rtx
from rtx.optim import SGD, Adam
from rtx.optim import lr_scheduler as S


def _opt(lr=1.0, cls=SGD, **kw):
    return cls([rtx.zeros(2, requires_grad=True)], lr=lr, **kw)


def _lrs(opt, sched, n, metrics=None, key="lr"):
    """The group-0 value of `key` at epochs 0 .. n-1."""
    out = []
    for i in range(n):
        v = opt.param_groups[0][key]
        out.append(v[0] if key == "betas" else v)
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
    return out


def _cos(t, T, lo=0.0, hi=1.0):
    return lo + (hi - lo) * (1 + math.cos(math.pi * t / T)) / 2


CASES = {
    "StepLR": (lambda o: S.StepLR(o, step_size=3, gamma=0.5),
               [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125]),
    # a milestone listed twice decays twice
    "MultiStepLR": (lambda o: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.1),
                    [1, 1, 0.1, 0.1, 0.1, 0.001, 0.001, 0.001]),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, gamma=0.9), [0.9 ** e for e in range(8)]),
    # past T_max the cosine comes back up (PyTorch's recursive form stays on the closed form)
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.1),
                          [1, 0.1 + 0.9 * (1 + math.sqrt(0.5)) / 2, 0.55, 0.1 + 0.9 * (1 - math.sqrt(0.5)) / 2,
                           0.1, 0.1 + 0.9 * (1 - math.sqrt(0.5)) / 2, 0.55, 0.1 + 0.9 * (1 + math.sqrt(0.5)) / 2, 1]),
    # restarts at epochs 2 and 6 (T_i = 2, 4, 8)
    "CosineAnnealingWarmRestarts": (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
                                    [1, 0.5, 1, _cos(1, 4), 0.5, _cos(3, 4), 1, _cos(1, 8)]),
    "CosineAnnealingWarmRestarts-Tmult1": (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.1),
                                           [1, _cos(1, 3, 0.1), _cos(2, 3, 0.1)] * 2),
    "LambdaLR": (lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)), [1 / (e + 1) for e in range(6)]),
    "MultiplicativeLR": (lambda o: S.MultiplicativeLR(o, lambda e: 0.5), [0.5 ** e for e in range(6)]),
    "LinearLR": (lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=3),
                 [0.25, 0.5, 0.75, 1, 1, 1]),
    "LinearLR-down": (lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.5, total_iters=2),
                      [1, 0.75, 0.5, 0.5]),
    "ConstantLR": (lambda o: S.ConstantLR(o, factor=0.5, total_iters=2), [0.5, 0.5, 1, 1, 1]),
    "PolynomialLR": (lambda o: S.PolynomialLR(o, total_iters=4, power=2.0), [1, 0.5625, 0.25, 0.0625, 0, 0]),
    # the constant warm-up ends at epoch 2; the exponential decay starts from its own epoch 0 at 3
    "SequentialLR": (lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=2),
                                                  S.ExponentialLR(o, gamma=0.5)], milestones=[3]),
                     [0.1, 0.1, 1, 1, 0.5, 0.25, 0.125]),
    "SequentialLR-warmup-cosine": (
        lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.5, total_iters=2),
                                     S.CosineAnnealingLR(o, T_max=4)], milestones=[2]),
        [0.5, 0.75, 1, _cos(1, 4), _cos(2, 4), _cos(3, 4), 0]),
    # the two factors multiply
    "ChainedScheduler": (lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=2),
                                                       S.ExponentialLR(o, gamma=0.9)]),
                         [0.5, 0.45, 0.81, 0.729, 0.6561]),
    # max_lr 1: from 0.04 up to 1 by step 2, cosine down to 0.04 / 1e4 at step 9
    "OneCycleLR": (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10),
                   [0.04, 0.52, 1.0] + [4e-6 + (1 - 4e-6) * (1 + math.cos(math.pi * k / 7)) / 2 for k in range(1, 8)]),
    "OneCycleLR-three-phase-linear": (
        lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, three_phase=True, anneal_strategy="linear"),
        [0.04, 0.52, 1.0, 0.52, 0.04] + [0.04 + (4e-6 - 0.04) * k / 5 for k in range(1, 6)]),
    "CyclicLR": (lambda o: S.CyclicLR(o, base_lr=0.2, max_lr=1.0, step_size_up=2, step_size_down=2,
                                      cycle_momentum=False),
                 [0.2, 0.6, 1.0, 0.6, 0.2, 0.6, 1.0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_lr_sequence(name):
    make, expected = CASES[name]
    opt = _opt(momentum=0.9)
    sched = make(opt)
    assert _lrs(opt, sched, len(expected)) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_get_last_lr_is_what_step_set():
    opt = SGD([{"params": [rtx.zeros(1, requires_grad=True)]},
               {"params": [rtx.zeros(1, requires_grad=True)], "lr": 0.5}], lr=1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.1)
    assert sched.get_last_lr() == [1.0, 0.5]
    opt.step()
    sched.step()
    assert sched.get_last_lr() == pytest.approx([0.1, 0.05])
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.5]


def test_onecycle_cycles_momentum_and_adams_beta1():
    opt = _opt(momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="linear")
    # 0.95 down to 0.85 over steps 0..2, back up to 0.95 by step 9
    expected = [0.95, 0.9, 0.85] + [0.85 + 0.1 * k / 7 for k in range(1, 8)]
    assert _lrs(opt, sched, 10, key="momentum") == pytest.approx(expected)
    adam = _opt(cls=Adam)
    sched = S.OneCycleLR(adam, max_lr=0.01, total_steps=10, anneal_strategy="linear")
    assert _lrs(adam, sched, 10, key="betas") == pytest.approx(expected)
    assert adam.param_groups[0]["betas"][1] == 0.999


def test_onecycle_refuses_a_step_past_the_end():
    opt = _opt(momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step()
    sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
        sched.step()
        sched.step()


def test_reduce_lr_on_plateau_min_rel_with_cooldown():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, threshold=0.1)
    # better means < best * 0.9. Epoch by epoch (best, bad epochs):
    # 1.0 (1.0, 0) | 0.95 (bad 1) | 0.95 (bad 2 > 1: lr 0.5, cooldown 1) | 0.95 (cooldown: bad reset)
    # | 0.95 (bad 1) | 0.95 (bad 2: lr 0.25, cooldown) | 0.5 (best) | 0.5 (bad 1)
    metrics = [1.0, 0.95, 0.95, 0.95, 0.95, 0.95, 0.5, 0.5, 0.5]
    assert _lrs(opt, sched, 9, metrics) == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    assert sched.get_last_lr() == [0.125]


def test_reduce_lr_on_plateau_max_abs_and_min_lr():
    opt = SGD([{"params": [rtx.zeros(1, requires_grad=True)]},
               {"params": [rtx.zeros(1, requires_grad=True)], "lr": 0.3}], lr=1.0)
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=0.05, threshold_mode="abs",
                                min_lr=[0.05, 0.1])
    # better means > best + 0.05; patience 0 reduces on every epoch that is not better
    for metric in (1.0, 1.1, 1.12, 1.2, 1.2):
        opt.step()
        sched.step(metric)
    # 1.12 and the second 1.2 were not better: two reductions, the second clipped at min_lr
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.05, 0.1])


def test_reduce_lr_on_plateau_ignores_changes_below_eps():
    opt = _opt(lr=1e-8)
    sched = S.ReduceLROnPlateau(opt, patience=0, eps=1e-8)
    for metric in (1.0, 1.0, 1.0):
        opt.step()
        sched.step(metric)
    assert opt.param_groups[0]["lr"] == 1e-8


@pytest.mark.parametrize("make", [
    lambda o: S.StepLR(o, 2, 0.5),
    lambda o: S.CosineAnnealingLR(o, 5),
    lambda o: S.OneCycleLR(o, 1.0, total_steps=12),
    lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)], [3]),
    lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 2), S.ExponentialLR(o, 0.9)]),
    lambda o: S.CosineAnnealingWarmRestarts(o, 2, 2),
    lambda o: S.LambdaLR(o, lambda e: 0.9 ** e),
], ids=["step", "cosine", "onecycle", "sequential", "chained", "warm-restarts", "lambda"])
def test_state_dict_round_trip(make):
    opt = _opt(momentum=0.9)
    sched = make(opt)
    straight = _lrs(opt, sched, 10)

    opt1 = _opt(momentum=0.9)
    sched1 = make(opt1)
    head = _lrs(opt1, sched1, 4)
    saved_opt, saved_sched = opt1.state_dict(), sched1.state_dict()
    assert "optimizer" not in saved_sched
    opt2 = _opt(momentum=0.9)
    sched2 = make(opt2)
    sched2.load_state_dict(saved_sched)
    opt2.load_state_dict(saved_opt)  # after the scheduler, as PyTorch's docs say
    assert head + _lrs(opt2, sched2, 6) == pytest.approx(straight)


def test_reduce_lr_on_plateau_state_dict():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, patience=1)
    for m in (1.0, 2.0):
        sched.step(m)
    sd = sched.state_dict()
    other = S.ReduceLROnPlateau(_opt(), patience=5)
    other.load_state_dict(sd)
    assert other.patience == 1 and other.num_bad_epochs == 1 and other.best == 1.0


def test_closed_form_when_given_an_epoch():
    opt = _opt()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(5)
    assert opt.param_groups[0]["lr"] == 0.25


def test_warns_when_stepped_before_the_optimizer():
    opt = _opt()
    sched = S.StepLR(opt, 1)
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        sched.step()


def test_no_warning_in_the_right_order():
    opt = _opt()
    sched = S.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_errors():
    opt = _opt()
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        S.StepLR(3, 1)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, 1, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        S.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(opt, 0)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(_opt(momentum=0.9), 1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(rtx.optim.Adagrad([rtx.zeros(1, requires_grad=True)]), 1.0, total_steps=5)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([S.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="number of milestones"):
        S.SequentialLR(opt, [S.StepLR(opt, 1), S.StepLR(opt, 1)], milestones=[])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        S.ReduceLROnPlateau(opt, mode="avg")
