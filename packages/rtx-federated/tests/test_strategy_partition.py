"""Strategies against hand-written NumPy formulas; the Dirichlet partition's invariants."""
import numpy as np
import pytest

from rtx.federated import FedAdam, FedAvg, FedProx, dirichlet_partition, get_strategy, iid_partition, weighted_mean
from rtx.federated.server import sample_clients


def test_fedavg_is_the_sample_weighted_mean_of_client_models():
    rng = np.random.default_rng(0)
    g = rng.normal(size=7)
    locals_ = [rng.normal(size=7) for _ in range(3)]
    n = [5, 1, 14]
    new = FedAvg().update(g, weighted_mean([w - g for w in locals_], n))
    expected = sum(k * w for k, w in zip(n, locals_)) / sum(n)
    np.testing.assert_allclose(new, expected, rtol=1e-12, atol=1e-12)


def test_fedadam_matches_reddi_et_al_algorithm_2():
    rng = np.random.default_rng(1)
    s = FedAdam(eta=0.1, beta1=0.9, beta2=0.99, tau=1e-3)
    x = rng.normal(size=4)
    m = v = np.zeros(4)
    ref = x.copy()
    for _ in range(3):
        d = rng.normal(size=4)
        x = s.update(x, d)
        m = 0.9 * m + 0.1 * d
        v = 0.99 * v + 0.01 * d * d
        ref = ref + 0.1 * m / (np.sqrt(v) + 1e-3)
    np.testing.assert_allclose(x, ref, rtol=1e-12)


def test_fedprox_sends_mu_to_clients_and_averages_like_fedavg():
    s = FedProx(mu=0.3)
    assert s.client_config() == {"proximal_mu": 0.3}
    np.testing.assert_array_equal(s.update(np.ones(2), np.array([1.0, -1.0])), [2.0, 0.0])
    with pytest.raises(ValueError, match="mu must be >= 0"):
        FedProx(mu=-1)
    with pytest.raises(ValueError, match="unknown strategy 'fedsgd'"):
        get_strategy("fedsgd")


def test_weighted_mean_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one delta per client"):
        weighted_mean([np.zeros(2)], [1, 2])


def _class_spread(parts, y):
    return np.mean([len(np.unique(y[p])) for p in parts])


def test_dirichlet_partition_covers_every_sample_once_and_is_non_iid():
    y = np.repeat(np.arange(10), 150)
    parts = dirichlet_partition(y, 100, alpha=0.1, seed=3, min_size=2)
    allidx = np.concatenate(parts)
    assert len(parts) == 100 and min(map(len, parts)) >= 2
    np.testing.assert_array_equal(np.sort(allidx), np.arange(len(y)))
    iid = iid_partition(len(y), 100, seed=3)
    # small alpha: few classes per client; IID: nearly all of them
    assert _class_spread(parts, y) < 4 < 7 < _class_spread(iid, y)  # 15 samples of 10 classes: 7.9 expected
    # alpha controls heterogeneity monotonically (on average)
    assert _class_spread(parts, y) < _class_spread(dirichlet_partition(y, 100, 100.0, seed=3), y)
    # deterministic by seed
    again = dirichlet_partition(y, 100, alpha=0.1, seed=3, min_size=2)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


def test_dirichlet_partition_bad_input():
    with pytest.raises(ValueError, match="positive Dirichlet concentration"):
        dirichlet_partition(np.zeros(10, dtype=int), 2, alpha=0)
    with pytest.raises(ValueError, match="need at least 40 samples"):
        dirichlet_partition(np.zeros(10, dtype=int), 20, alpha=1)
    with pytest.raises(ValueError, match="1-D array of integer class labels"):
        dirichlet_partition(np.zeros(10), 2, alpha=1)


def test_client_sampling():
    rng = np.random.default_rng(0)
    picks = [sample_clients(list(range(100)), 0.1, rng) for _ in range(300)]
    assert all(len(p) == 10 and len(set(p)) == 10 for p in picks)
    counts = np.bincount(np.concatenate(picks), minlength=100)
    assert counts.min() > 10 and counts.max() < 60  # about 30 each: uniform
    assert sample_clients(list(range(10)), 0.01, rng, min_clients=2).__len__() == 2
    with pytest.raises(ValueError, match="share of clients in"):
        sample_clients([1, 2], 0.0, rng)
