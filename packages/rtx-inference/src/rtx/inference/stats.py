"""Per-call latency statistics: a bounded window of recent latencies, percentiles on demand."""
from __future__ import annotations

import collections
import threading

import numpy as np


class LatencyStats:
    """Records the last `window` latencies (seconds) and the total count. Thread-safe."""

    def __init__(self, window=10_000):
        self._recent = collections.deque(maxlen=window)
        self._count = 0
        self._lock = threading.Lock()

    def record(self, seconds):
        with self._lock:
            self._recent.append(seconds)
            self._count += 1

    def reset(self):
        with self._lock:
            self._recent.clear()
            self._count = 0

    def summary(self):
        """dict(count, mean_ms, p50_ms, p90_ms, p99_ms, max_ms) over the recent window (count is the
        total number of calls; the ms figures are 0.0 before the first call)."""
        with self._lock:
            ms = np.array(self._recent, dtype=np.float64) * 1e3
            count = self._count
        if ms.size == 0:
            return {"count": count, "mean_ms": 0.0, "p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
        p50, p90, p99 = np.percentile(ms, [50, 90, 99])
        return {"count": count, "mean_ms": float(ms.mean()), "p50_ms": float(p50), "p90_ms": float(p90),
                "p99_ms": float(p99), "max_ms": float(ms.max())}
