"""Clients and the server loop in process: local training against a NumPy SGD, FedProx's proximal
gradient, secure aggregation (with dropouts) giving the plain aggregation's model, DP-SGD runs."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.federated import (
    Client,
    DPConfig,
    FedAdam,
    FedAvg,
    FedProx,
    InProcessTransport,
    flatten,
    get_weights,
    run_federated,
)
from rtx.federated.simulation import load_digits_split, make_digits_clients, make_evaluator, make_mlp


def _softmax_grad(w, b, x, y):
    z = x @ w.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    p /= len(y)
    return p.T @ x, p.sum(0)


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_client_fit_is_local_sgd_with_the_proximal_term(mu):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=7)
    rtx.manual_seed(0)
    model = nn.Linear(4, 3).double()
    g = get_weights(model)
    c = Client(0, x, y, model, lr=0.3, batch_size=7, epochs=3)  # full batch: the order does not matter
    res = c.fit(g, {"round": 1, "proximal_mu": mu})
    w, b = g[0].copy(), g[1].copy()
    for _ in range(3):
        gw, gb = _softmax_grad(w, b, x.astype(np.float64), y)
        w, b = w - 0.3 * (gw + mu * (w - g[0])), b - 0.3 * (gb + mu * (b - g[1]))
    np.testing.assert_allclose(res.delta, flatten([w, b]) - flatten(g), rtol=1e-6, atol=1e-7)
    assert res.num_samples == 7


def test_client_rejects_mismatched_data():
    with pytest.raises(ValueError, match="as many labels as samples"):
        Client(0, np.zeros((3, 2)), np.zeros(2, dtype=int), nn.Linear(2, 2))


def _setup(num_clients=20, alpha=0.5, dp=None, epochs=2):
    xtr, xte, ytr, yte = load_digits_split()
    model = make_mlp(hidden=32)
    clients = make_digits_clients(model, xtr, ytr, num_clients, alpha, dp=dp, epochs=epochs, lr=0.1)
    return model, clients, make_evaluator(model, xte, yte)


def test_secure_aggregation_with_dropouts_gives_the_plain_fedavg_model():
    model, clients, ev = _setup()
    init = get_weights(model)
    kw = dict(rounds=3, fraction=0.5, seed=4, evaluate_fn=ev)
    sec = run_federated(InProcessTransport(clients), FedAvg(), init, secure_aggregation=True, dropout=0.3, **kw)
    dropped = [r.dropped for r in sec.rounds]
    assert any(dropped), "the seed must make some client drop"

    class Dropping(InProcessTransport):  # plain aggregation over the same survivors, for reference
        def call(self, cids, method, *args):
            cids = [c for c in cids if c not in dropped[args[1]["round"] - 1]]
            return super().call(cids, method, *args)

    plain = run_federated(Dropping(clients), FedAvg(), init, **kw)
    assert [r.clients for r in sec.rounds] == [r.clients for r in plain.rounds]
    # the only difference is fixed-point rounding: at most (#clients * max n_k) / 2^25 / sum n_k per round
    np.testing.assert_allclose(flatten(sec.weights), flatten(plain.weights), atol=1e-5)
    assert sec.accuracy == pytest.approx(plain.accuracy, abs=1 / 360)


def test_a_round_with_too_few_survivors_is_aborted_not_leaked():
    model, clients, ev = _setup(num_clients=4)
    h = run_federated(InProcessTransport(clients), FedAvg(), get_weights(model), rounds=4, fraction=0.5,
                      secure_aggregation=True, dropout=0.6, seed=1)
    assert any(r.aborted for r in h.rounds)
    for r in h.rounds:
        assert r.aborted == (len(r.clients) - len(r.dropped) < 2)


@pytest.mark.parametrize("strategy", [FedAvg(), FedProx(mu=0.01), FedAdam(eta=0.05)])
def test_strategies_learn_non_iid_digits(strategy):
    model, clients, ev = _setup(num_clients=10, alpha=0.5)
    _, acc0 = ev(get_weights(model))
    h = run_federated(InProcessTransport(clients), strategy, get_weights(model), rounds=8, fraction=0.5,
                      evaluate_fn=ev)
    assert acc0 < 0.3 and h.accuracy[-1] > 0.8, (acc0, h.accuracy)


def test_dp_sgd_clients_report_epsilon_and_still_learn():
    dp = DPConfig(noise_multiplier=1.0, max_grad_norm=1.0, delta=1e-5)
    model, clients, ev = _setup(num_clients=10, dp=dp, epochs=1)
    h = run_federated(InProcessTransport(clients), FedAvg(), get_weights(model), rounds=6, fraction=1.0,
                      evaluate_fn=ev)
    eps = [r.epsilon for r in h.rounds]
    assert all(e is not None for e in eps) and eps == sorted(eps) and eps[0] < eps[-1]
    # the reported epsilon is the worst client's, from its own accountant
    assert eps[-1] == pytest.approx(max(c.epsilon() for c in clients))
    assert h.accuracy[-1] > 0.5
    # each client ran epochs * ceil(n / batch) Poisson-sampled steps per round at q = batch / n
    c = clients[0]
    (sigma, q, steps), = c.accountant.history
    assert sigma == 1.0 and q == pytest.approx(10 / c.num_samples) and steps == 6 * int(np.ceil(c.num_samples / 10))
