"""Peak host memory of a block of code, from tracemalloc: NumPy reports its array allocations
to tracemalloc (its own domain), so arrays count along with Python objects.

    with rtx.memory.host_peak() as m:
        run()
    print(m.peak, m.current)   # bytes, relative to the start of the block

Counts every thread of the process. Tracing slows Python's own allocations while it is on
(about 2x for object-heavy code; NumPy's array allocations barely notice); it is started for the
block and stopped after it unless something else had started it. Blocks nest.
"""
from __future__ import annotations

import tracemalloc
from contextlib import contextmanager


class HostPeak:
    """Bytes traced since the block began: `peak` (the most at any moment) and `current`.
    Live inside the block, frozen when it ends."""

    def __init__(self):
        self._base = 0
        self._max = 0           # the highest traced total seen (absolute)
        self._final = None      # (peak, current) once the block has ended

    def _fold(self) -> None:
        self._max = max(self._max, tracemalloc.get_traced_memory()[1])

    @property
    def peak(self) -> int:
        if self._final is not None:
            return self._final[0]
        return max(self._max, tracemalloc.get_traced_memory()[1]) - self._base

    @property
    def current(self) -> int:
        if self._final is not None:
            return self._final[1]
        return tracemalloc.get_traced_memory()[0] - self._base

    def __repr__(self):
        return f"HostPeak(peak={self.peak}, current={self.current})"


_active: list[HostPeak] = []


@contextmanager
def host_peak():
    """Measure the peak and current host memory allocated inside the with-block."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    for outer in _active:   # resetting the peak below must not lose the enclosing blocks' peaks
        outer._fold()
    measure = HostPeak()
    measure._base = measure._max = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    _active.append(measure)
    try:
        yield measure
    finally:
        measure._final = (measure.peak, measure.current)
        _active.remove(measure)
        for outer in _active:
            outer._fold()
        if started:
            tracemalloc.stop()
