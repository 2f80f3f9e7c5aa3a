"""Distillation loss against its closed form; low-rank factorization against np.linalg.svd."""
import numpy as np
import pytest

import rtx
import rtx.compress as C
import rtx.nn as nn


def _np(t):
    return t.detach().numpy()


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def test_distillation_loss_closed_form():
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(6, 5)), rng.normal(size=(6, 5)) * 2
    y = rng.integers(0, 5, size=6)
    T, alpha = 3.0, 0.7
    ls, lt = _log_softmax(s / T), _log_softmax(t / T)
    kl = (np.exp(lt) * (lt - ls)).sum() / 6            # batchmean
    ce = -_log_softmax(s)[np.arange(6), y].mean()
    expected = alpha * T * T * kl + (1 - alpha) * ce
    got = C.distillation_loss(rtx.from_numpy(s), rtx.from_numpy(t), rtx.from_numpy(y), temperature=T, alpha=alpha)
    assert got.item() == pytest.approx(expected, rel=1e-10)


def test_distillation_gradient_closed_form():
    """d/ds of T^2 * KL(p_t || softmax(s/T)) (batchmean over N) is T * (softmax(s/T) - p_t) / N."""
    rng = np.random.default_rng(1)
    s_np, t_np = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    T = 2.5
    s = rtx.tensor(s_np, requires_grad=True)
    t = rtx.tensor(t_np, requires_grad=True)
    C.distillation_loss(s, t, temperature=T, alpha=1.0).backward()
    expected = T * (np.exp(_log_softmax(s_np / T)) - np.exp(_log_softmax(t_np / T))) / 4
    np.testing.assert_allclose(s.grad.numpy(), expected, rtol=1e-10)
    assert t.grad is None                                   # the teacher is not trained


def test_distillation_errors():
    a = rtx.randn(2, 3)
    with pytest.raises(ValueError, match="same shape"):
        C.distillation_loss(a, rtx.randn(2, 4), rtx.tensor([0, 1]))
    with pytest.raises(ValueError, match="temperature"):
        C.distillation_loss(a, a, rtx.tensor([0, 1]), temperature=0)
    with pytest.raises(ValueError, match="needs target"):
        C.distillation_loss(a, a, None, alpha=0.5)


def test_distill_helper_moves_student_towards_teacher():
    rtx.manual_seed(0)
    teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    student = nn.Linear(6, 3)
    x = rtx.randn(128, 6)
    with rtx.no_grad():
        y = teacher(x).argmax(1)
    loader = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 128, 32)]
    history = C.distill(student, teacher, loader, rtx.optim.Adam(student.parameters(), lr=0.05), epochs=8)
    assert history[-1] < 0.6 * history[0]


def test_low_rank_linear_matches_truncated_svd():
    rtx.manual_seed(1)
    lin = nn.Linear(12, 9)
    w = _np(lin.weight).astype(np.float64)
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    low = C.low_rank_linear(lin, rank=4)
    assert low.first.weight.shape == (4, 12) and low.second.weight.shape == (9, 4)
    approx = _np(low.second.weight).astype(np.float64) @ _np(low.first.weight)
    np.testing.assert_allclose(approx, (u[:, :4] * s[:4]) @ vt[:4], atol=1e-5)
    # Eckart-Young: the Frobenius error is the norm of the dropped singular values
    assert np.linalg.norm(w - approx) == pytest.approx(np.sqrt((s[4:] ** 2).sum()), rel=1e-4)
    x = rtx.randn(3, 12)
    np.testing.assert_allclose(_np(low(x)), _np(x) @ approx.T + _np(lin.bias), atol=1e-5)
    full = C.low_rank_linear(lin, rank=9)
    np.testing.assert_allclose(_np(full(x)), _np(lin(x)), atol=1e-5)


def test_rank_for_energy_and_factorize_linears():
    rtx.manual_seed(2)
    lin = nn.Linear(16, 16)
    s = np.linalg.svd(_np(lin.weight).astype(np.float64), compute_uv=False)
    cum = np.cumsum(s ** 2) / (s ** 2).sum()
    r = C.lowrank.rank_for_energy(lin.weight, 0.9)
    assert cum[r - 1] >= 0.9 - 1e-12 and (r == 1 or cum[r - 2] < 0.9)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    replaced = C.factorize_linears(model, rank=8)
    assert replaced == ["0"] and isinstance(model[0], C.LowRankLinear) and model[0].rank == 8
    with pytest.raises(ValueError, match="rank must be"):
        C.low_rank_linear(lin, rank=17)
    with pytest.raises(ValueError, match="exactly one"):
        C.low_rank_linear(lin)
