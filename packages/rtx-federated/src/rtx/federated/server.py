"""The server loop: sample clients, send the global weights, aggregate (plainly or securely),
update with the strategy, evaluate. Works over any transport."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .params import flatten, unflatten
from .secagg import DEFAULT_SCALE_BITS, SecAggServer
from .strategy import Strategy, weighted_mean

__all__ = ["RoundRecord", "History", "run_federated", "sample_clients"]


@dataclass
class RoundRecord:
    round: int
    clients: list[int]
    dropped: list[int] = field(default_factory=list)
    accuracy: float | None = None
    loss: float | None = None
    epsilon: float | None = None
    seconds: float = 0.0
    aborted: bool = False


@dataclass
class History:
    rounds: list[RoundRecord] = field(default_factory=list)
    weights: list[np.ndarray] | None = None

    @property
    def accuracy(self) -> list[float]:
        return [r.accuracy for r in self.rounds]

    def to_dicts(self) -> list[dict]:
        return [asdict(r) for r in self.rounds]


def sample_clients(client_ids, fraction: float, rng: np.random.Generator, min_clients: int = 1) -> list[int]:
    """max(min_clients, round(fraction * N)) distinct ids, uniformly without replacement."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: expected a share of clients in (0, 1], got {fraction}")
    n = len(client_ids)
    m = min(n, max(min_clients, int(round(fraction * n))))
    return sorted(int(c) for c in rng.choice(np.asarray(client_ids), size=m, replace=False))


def run_federated(transport, strategy: Strategy, initial_weights, *, rounds: int, fraction: float = 0.1,
                  min_clients: int = 2, seed: int = 0, secure_aggregation: bool = False, dropout: float = 0.0,
                  min_survivors: int = 2, scale_bits: int = DEFAULT_SCALE_BITS, evaluate_fn=None,
                  callback=None) -> History:
    """Run `rounds` rounds on the server side of `transport`.

    dropout: with secure aggregation, the probability that a sampled client drops after the key
    exchange (before sending its masked update): the survivors' sum is still recovered.
    evaluate_fn(weights) -> (loss, accuracy), called after every round.
    callback(record) after every round (e.g. to print progress).
    """
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout: expected a probability in [0, 1), got {dropout}")
    if dropout and not secure_aggregation:
        raise ValueError("dropout is simulated only with secure_aggregation=True (plain FedAvg just skips a client)")
    rng = np.random.default_rng(seed)
    drop_rng = np.random.default_rng([seed, 1])  # its own stream: dropouts do not change who is sampled
    like = [np.asarray(w) for w in initial_weights]
    global_vec = flatten(like)
    history, epsilons = History(), {}
    for r in range(1, rounds + 1):
        t0 = time.perf_counter()
        selected = sample_clients(transport.client_ids, fraction, rng, min_clients)
        weights = unflatten(global_vec, like)
        config = {"round": r, **strategy.client_config()}
        record = RoundRecord(r, selected)
        if not secure_aggregation:
            results = transport.call(selected, "fit", weights, config)
            mean = weighted_mean([res.delta for res in results.values()],
                                 [res.num_samples for res in results.values()])
        else:
            keys = transport.call(selected, "secagg_public_key", r, min_survivors)
            sec = SecAggServer(r, scale_bits)
            for cid, key in keys.items():
                sec.add_public_key(cid, key)
            record.dropped = [c for c in selected if drop_rng.random() < dropout]
            alive = [c for c in selected if c not in record.dropped]
            mean = None
            if len(alive) >= min_survivors:
                results = transport.call(alive, "fit_masked", weights, config, keys, scale_bits)
                for cid, res in results.items():
                    sec.add_masked(cid, res.masked)
                revealed = transport.call(alive, "secagg_reveal", record.dropped, alive) if record.dropped else {}
                mean, _ = sec.unmask_mean(revealed)
            else:
                record.aborted, results = True, {}
        if mean is not None:
            global_vec = strategy.update(global_vec, mean)
        for cid, res in results.items():
            if "epsilon" in res.metrics:
                epsilons[cid] = res.metrics["epsilon"]
        record.epsilon = max(epsilons.values()) if epsilons else None
        if evaluate_fn is not None:
            loss, acc = evaluate_fn(unflatten(global_vec, like))
            record.loss, record.accuracy = float(loss), float(acc)
            if not math.isfinite(record.loss):
                record.loss = None
        record.seconds = time.perf_counter() - t0
        history.rounds.append(record)
        if callback is not None:
            callback(record)
    history.weights = unflatten(global_vec, like)
    return history
