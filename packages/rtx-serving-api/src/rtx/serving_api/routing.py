"""A/B traffic split between versions of one model, sticky per client.

A client id (the sticky header) is hashed with the model name to a stable point in [0, 1),
which falls into one version's slice of the cumulative weights: the same client keeps its
version while the split is unchanged, and clients spread over versions in proportion to the
weights. Requests without the header get a uniformly random point."""
from __future__ import annotations

import bisect
import hashlib
import random


def sticky_point(client_id: str, model: str) -> float:
    digest = hashlib.sha256(f"{model}\x00{client_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


class Split:
    """Versions with positive weights; pick(point) maps a point in [0, 1) to one of them."""

    def __init__(self, weights: dict[str, float]):
        items = [(v, float(w)) for v, w in weights.items() if w > 0]
        if not items:
            raise ValueError(f"an A/B split needs at least one positive weight, got {weights}")
        total = sum(w for _, w in items)
        self.versions = [v for v, _ in items]
        self.weights = {v: w / total for v, w in items}
        self._bounds, acc = [], 0.0
        for _, w in items:
            acc += w / total
            self._bounds.append(acc)

    def pick(self, point: float) -> str:
        i = bisect.bisect_right(self._bounds, point)
        return self.versions[min(i, len(self.versions) - 1)]  # min: float rounding at the top end

    def choose(self, model: str, client_id: str | None) -> str:
        point = sticky_point(client_id, model) if client_id else random.random()
        return self.pick(point)
