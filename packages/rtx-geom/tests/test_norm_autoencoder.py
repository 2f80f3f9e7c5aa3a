"""Graph BatchNorm against its NumPy formula; GAE/VGAE losses and scores against closed forms and scikit-learn."""
import numpy as np
import pytest

import rtx
from rtx.geom.nn import GAE, VGAE, BatchNorm

rng = np.random.default_rng(0)


def test_batchnorm_train_eval_and_running_stats():
    x = rng.standard_normal((9, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -3.0]
    bn = BatchNorm(3).to(rtx.float64)
    # PyG 2.8's keys (checked against torch_geometric.nn.BatchNorm(3).state_dict())
    assert list(bn.state_dict()) == ["module.weight", "module.bias", "module.running_mean", "module.running_var",
                                     "module.num_batches_tracked"]
    with rtx.no_grad():
        bn.module.weight.copy_(rtx.tensor([1.5, -0.5, 2.0], dtype=rtx.float64))
        bn.module.bias.copy_(rtx.tensor([0.1, 0.2, 0.3], dtype=rtx.float64))
    got = bn(rtx.tensor(x)).detach().numpy()
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5) * [1.5, -0.5, 2.0] + [0.1, 0.2, 0.3]
    np.testing.assert_allclose(got, want, atol=1e-12)
    # running stats: momentum 0.1 towards the batch mean and the unbiased batch variance
    np.testing.assert_allclose(bn.module.running_mean.numpy(), 0.1 * x.mean(0), atol=1e-12)
    np.testing.assert_allclose(bn.module.running_var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), atol=1e-12)
    bn.eval()
    rm, rv = 0.1 * x.mean(0), 0.9 + 0.1 * x.var(0, ddof=1)
    want = (x - rm) / np.sqrt(rv + 1e-5) * [1.5, -0.5, 2.0] + [0.1, 0.2, 0.3]
    np.testing.assert_allclose(bn(rtx.tensor(x)).detach().numpy(), want, atol=1e-12)


def test_gae_recon_loss_and_scores():
    sk = pytest.importorskip("sklearn.metrics")
    z = rng.standard_normal((8, 4))
    pos = np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    neg = np.array([[0, 6, 7, 5], [7, 1, 2, 0]])
    model = GAE(rtx.nn.Identity())

    def sig(e):
        return 1 / (1 + np.exp(-(z[e[0]] * z[e[1]]).sum(1)))
    want = -np.log(sig(pos) + 1e-15).mean() - np.log(1 - sig(neg) + 1e-15).mean()
    got = model.recon_loss(rtx.tensor(z), rtx.tensor(pos), rtx.tensor(neg)).item()
    assert abs(got - want) < 1e-12
    # AUC/AP with ties: rounding the scores makes equal values across classes
    zr = np.round(z, 1)
    auc, ap = model.test(rtx.tensor(zr), rtx.tensor(pos), rtx.tensor(neg))
    y = np.r_[np.ones(5), np.zeros(4)]
    s = np.r_[1 / (1 + np.exp(-(zr[pos[0]] * zr[pos[1]]).sum(1))), 1 / (1 + np.exp(-(zr[neg[0]] * zr[neg[1]]).sum(1)))]
    assert abs(auc - sk.roc_auc_score(y, s)) < 1e-12 and abs(ap - sk.average_precision_score(y, s)) < 1e-12


class _MuLogstd(rtx.nn.Module):
    def forward(self, x):
        return x[:, :2], x[:, 2:]


def test_vgae_reparametrize_and_kl():
    x = rng.standard_normal((3000, 4)) * 0.5
    mu, logstd = x[:, :2], x[:, 2:]
    model = VGAE(_MuLogstd())
    rtx.manual_seed(0)
    z = model.encode(rtx.tensor(x)).numpy()
    noise = (z - mu) / np.exp(logstd)  # training: z = mu + N(0, 1) * std
    assert abs(noise.mean()) < 0.05 and abs(noise.std() - 1) < 0.05
    kl = -0.5 * (1 + 2 * logstd - mu ** 2 - np.exp(logstd) ** 2).sum(1).mean()
    assert abs(model.kl_loss().item() - kl) < 1e-12
    model.eval()
    np.testing.assert_array_equal(model.encode(rtx.tensor(x)).numpy(), mu)
