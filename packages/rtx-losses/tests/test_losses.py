"""Every loss against a NumPy reference written here from its definition, gradients by finite
differences in float64, and stability for large logits."""
import itertools

import numpy as np
import pytest

import rtx
import rtx.losses.functional as F
from rtx.testing import assert_close

rng = np.random.default_rng(0)


def t(a, grad=False):
    return rtx.tensor(np.asarray(a), requires_grad=grad)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def red(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_indices_weight_ignore_index(reduction):
    x = rng.standard_normal((6, 4))
    y = np.array([0, 3, 1, -100, 2, 3])
    w = np.array([1.0, 2.0, 0.5, 1.5])
    lp = np_log_softmax(x, 1)
    valid = y != -100
    ys = np.where(valid, y, 0)
    per = -lp[np.arange(6), ys] * w[ys] * valid
    expected = per.sum() / (w[ys] * valid).sum() if reduction == "mean" else red(per, reduction)
    got = F.cross_entropy(t(x), t(y), weight=t(w), ignore_index=-100, reduction=reduction)
    assert_close(got, expected)


def test_cross_entropy_spatial_and_unbatched():
    x = rng.standard_normal((2, 3, 4, 5))
    y = rng.integers(0, 3, (2, 4, 5))
    lp = np_log_softmax(x, 1)
    expected = -np.take_along_axis(lp, y[:, None], 1).mean()
    assert_close(F.cross_entropy(t(x), t(y)), expected)
    x1 = rng.standard_normal(5)
    assert_close(F.cross_entropy(t(x1), t(np.array(2))), -np_log_softmax(x1, 0)[2])


def test_cross_entropy_probabilities_and_label_smoothing():
    x = rng.standard_normal((5, 4))
    p = rng.random((5, 4))
    p /= p.sum(1, keepdims=True)
    lp = np_log_softmax(x, 1)
    assert_close(F.cross_entropy(t(x), t(p)), -(lp * p).sum(1).mean())
    y = np.array([0, 1, 2, 3, 0])
    eps = 0.1
    q = np.full((5, 4), eps / 4)
    q[np.arange(5), y] += 1 - eps
    assert_close(F.cross_entropy(t(x), t(y), label_smoothing=eps), -(lp * q).sum(1).mean())


def test_cross_entropy_is_stable_for_huge_logits():
    x = t(np.array([[1e4, 0.0, -1e4], [0.0, 5e3, 0.0]], dtype=np.float32), grad=True)
    loss = F.cross_entropy(x, t(np.array([0, 0])))
    assert np.isfinite(loss.item()) and abs(loss.item() - 2500.0) < 1e-2
    loss.backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_cross_entropy_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(t(rng.standard_normal((2, 3))), t(np.array([0, 3])))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(t(rng.standard_normal((2, 3))), t(np.array([0, 1, 2])))


def test_nll_and_bce_families():
    lp = np_log_softmax(rng.standard_normal((4, 3)), 1)
    y = np.array([2, 0, 1, 1])
    assert_close(F.nll_loss(t(lp), t(y)), -lp[np.arange(4), y].mean())
    p = rng.random((3, 2)) * 0.98 + 0.01
    z = (rng.random((3, 2)) > 0.5).astype(float)
    bce = -(z * np.log(p) + (1 - z) * np.log(1 - p))
    assert_close(F.binary_cross_entropy(t(p), t(z)), bce.mean())
    x = rng.standard_normal((3, 2)) * 30
    pw = np.array([2.0, 0.5])
    sig = 1 / (1 + np.exp(-x))
    ref = -(pw * z * np.log(sig) + (1 - z) * np.log(1 - sig))
    assert_close(F.binary_cross_entropy_with_logits(t(x), t(z), pos_weight=t(pw), reduction="none"), ref,
                 rtol=1e-6, atol=1e-6)
    huge = F.binary_cross_entropy_with_logits(t(np.array([1e4, -1e4])), t(np.array([0.0, 1.0])), reduction="none")
    assert_close(huge, np.array([1e4, 1e4]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(t(np.array([1.5])), t(np.array([1.0])))


def test_regression_losses():
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)) * 2
    d = a - b
    assert_close(F.mse_loss(t(a), t(b)), (d ** 2).mean())
    assert_close(F.l1_loss(t(a), t(b), reduction="sum"), np.abs(d).sum())
    ad = np.abs(d)
    assert_close(F.smooth_l1_loss(t(a), t(b), beta=0.5), np.where(ad < 0.5, 0.5 * ad ** 2 / 0.5, ad - 0.25).mean())
    assert_close(F.huber_loss(t(a), t(b), delta=0.7), np.where(ad < 0.7, 0.5 * ad ** 2, 0.7 * (ad - 0.35)).mean())
    lam = rng.random((5,)) + 0.1
    k = rng.integers(0, 5, (5,)).astype(float)
    assert_close(F.poisson_nll_loss(t(np.log(lam)), t(k)), (lam - k * np.log(lam)).mean())
    var = rng.random((4, 3)) + 0.1
    assert_close(F.gaussian_nll_loss(t(a), t(b), t(var)), (0.5 * (np.log(var) + d ** 2 / var)).mean())


def test_kl_div_and_embedding_losses():
    p = rng.random((3, 4))
    p /= p.sum(1, keepdims=True)
    q = rng.random((3, 4))
    q /= q.sum(1, keepdims=True)
    assert_close(F.kl_div(t(np.log(q)), t(p), reduction="batchmean"), (p * (np.log(p) - np.log(q))).sum() / 3)
    x1, x2 = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    y = np.array([1, -1, 1, -1])
    cos = (x1 * x2).sum(1) / np.linalg.norm(x1, axis=1) / np.linalg.norm(x2, axis=1)
    assert_close(F.cosine_embedding_loss(t(x1), t(x2), t(y), margin=0.1),
                 np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0)).mean())
    s1, s2 = rng.standard_normal(6), rng.standard_normal(6)
    yy = np.sign(rng.standard_normal(6))
    assert_close(F.margin_ranking_loss(t(s1), t(s2), t(yy), margin=0.2), np.maximum(0, -yy * (s1 - s2) + 0.2).mean())
    a, pos, neg = (rng.standard_normal((4, 3)) for _ in range(3))
    dap = np.linalg.norm(a - pos + 1e-6, axis=1)
    dan = np.linalg.norm(a - neg + 1e-6, axis=1)
    assert_close(F.triplet_margin_loss(t(a), t(pos), t(neg)), np.maximum(dap - dan + 1, 0).mean())


def _ctc_brute_force(logp, target, blank=0):
    """Sum over every alignment path that collapses to the target."""
    T, C = logp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
        if collapsed == list(target):
            total += np.exp(sum(logp[i, k] for i, k in enumerate(path)))
    return -np.log(total)


def test_ctc_loss_matches_brute_force_and_finite_differences():
    T, C = 5, 3
    logits = rng.standard_normal((T, 2, C))
    lp = np_log_softmax(logits, 2)
    targets = np.array([[1, 2], [1, 1]])
    expected = [_ctc_brute_force(lp[:, 0], [1, 2]), _ctc_brute_force(lp[:4, 1], [1, 1])]
    got = F.ctc_loss(t(lp), t(targets), [5, 4], [2, 2], reduction="none")
    assert_close(got, np.array(expected))
    assert_close(F.ctc_loss(t(lp), t(targets), [5, 4], [2, 2]), np.mean(np.array(expected) / 2))
    x = t(lp, grad=True)
    assert rtx.autograd.gradcheck(lambda a: F.ctc_loss(a, t(targets), [5, 4], [2, 2]), (x,))
    concat = F.ctc_loss(t(lp), t(np.array([1, 2, 1, 1])), [5, 4], [2, 2], reduction="none")
    assert_close(concat, np.array(expected))
    impossible = F.ctc_loss(t(lp[:2]), t(np.array([[1, 1]])[:, :2].repeat(2, 0)), [2, 2], [2, 2],
                            reduction="none", zero_infinity=True)
    assert_close(impossible, np.zeros(2))


LOSS_FNS = [
    ("cross_entropy", lambda x, y: F.cross_entropy(x, y["cls"], label_smoothing=0.1)),
    ("nll", lambda x, y: F.nll_loss(rtx.log_softmax(x, 1), y["cls"])),
    ("bce_logits", lambda x, y: F.binary_cross_entropy_with_logits(x, y["bin"], pos_weight=y["pw"])),
    ("mse", lambda x, y: F.mse_loss(x, y["real"])),
    ("smooth_l1", lambda x, y: F.smooth_l1_loss(x, y["real"], beta=0.3)),
    ("huber", lambda x, y: F.huber_loss(x, y["real"], delta=0.4)),
    ("kl", lambda x, y: F.kl_div(rtx.log_softmax(x, 1), y["prob"], reduction="batchmean")),
    ("focal", lambda x, y: F.focal_loss(x, y["cls"], gamma=2.0)),
    ("sigmoid_focal", lambda x, y: F.sigmoid_focal_loss(x, y["bin"], reduction="mean")),
    ("multi_margin", lambda x, y: F.multi_margin_loss(x, y["cls"])),
]


@pytest.mark.parametrize("name,fn", LOSS_FNS, ids=[n for n, _ in LOSS_FNS])
def test_loss_gradients_by_finite_differences(name, fn):
    x = t(rng.standard_normal((4, 3)), grad=True)
    prob = rng.random((4, 3))
    y = {"cls": t(np.array([0, 2, 1, 2])), "bin": t((rng.random((4, 3)) > 0.5).astype(float)),
         "pw": t(np.array([1.0, 2.0, 0.5])), "real": t(rng.standard_normal((4, 3))),
         "prob": t(prob / prob.sum(1, keepdims=True))}
    assert rtx.autograd.gradcheck(lambda a: fn(a, y), (x,))
