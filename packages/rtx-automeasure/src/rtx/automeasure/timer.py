"""Timer: torch.utils.benchmark.Timer for rtx.

A statement is timed with the standard library's timeit (the same compiled loop, so the
overhead per run is timeit's), in blocks of `number` runs; a block's time divided by `number`
is one sample of a Measurement. blocked_autorange picks `number` so that one block is long
against the timer's own overhead and then times blocks until `min_run_time` has passed;
adaptive_autorange keeps going until the samples' IQR is under `threshold` of their median.
While it measures, BLAS runs `num_threads` threads (through rtx.runtime.threads, the one place
that sets them; the previous count comes back afterwards). On a GPU each block is timed with
CUDA events around it, as torch.cuda.Event(enable_timing=True) would.
"""
from __future__ import annotations

import time
import timeit as _timeit

from rtx.automeasure.measurement import Measurement, TaskSpec
from rtx.runtime import threads as _threads

__all__ = ["Timer"]

_MAX_NUMBER = 2 ** 31 - 1


class Timer:
    """Timer(stmt, setup, timer, globals, label, sub_label, description, env, num_threads, device).

    `stmt` and `setup` are Python source strings (or callables, as with timeit); `globals`
    holds the names they use. `device="cuda"` times with CUDA events (needs CuPy and a GPU)."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=time.perf_counter, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1, device=None):
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"Timer: num_threads expects a positive integer, got {num_threads!r}")
        if global_setup:
            setup = f"{global_setup}\n{setup}" if isinstance(setup, str) else setup
        self._globals = dict(globals or {})
        self._timer = timer
        self._timeit = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt if isinstance(stmt, str) else getattr(stmt, "__name__", repr(stmt)),
                                   setup=setup if isinstance(setup, str) else getattr(setup, "__name__", repr(setup)),
                                   global_setup=global_setup, label=label, sub_label=sub_label,
                                   description=description, env=env, num_threads=num_threads)
        self._device = str(device) if device is not None else "cpu"
        self._events = None
        if self._device.startswith("cuda"):
            import cupy  # a GPU timer needs CuPy; imported only then
            self._events = (cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.get_elapsed_time)

    # ---- one block --------------------------------------------------------------------------------

    def _time_block(self, number: int) -> float:
        if self._events is None:
            return self._timeit.timeit(number)
        start, end, elapsed = self._events
        start.record()
        self._timeit.timeit(number)
        end.record()
        end.synchronize()
        return elapsed(start, end) / 1e3  # ms -> s

    def _measurement(self, number, times):
        return Measurement(number_per_run=number, raw_times=list(times), task_spec=self._task_spec)

    # ---- public API ---------------------------------------------------------------------------------

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of `number` runs, after a warm-up block of number // 100 (at least 2) runs
        that pays first-call costs (imports, caches, allocations), as torch's Timer.timeit."""
        with _threads.limit_threads(self._task_spec.num_threads):
            self._time_block(max(number // 100, 2))
            return self._measurement(number, [self._time_block(number)])

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("Timer.repeat is not provided (as in torch.utils.benchmark): "
                                  "use blocked_autorange or timeit")

    def autorange(self, callback=None):
        raise NotImplementedError("Timer.autorange is not provided (as in torch.utils.benchmark): "
                                  "use blocked_autorange")

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The smallest power of ten of runs whose block takes >= min_run_time / 1000 and at least
        10^4 times the timer's own overhead (or any block over min_run_time)."""
        overhead = sorted(self._time_block(0) for _ in range(5))[2]
        number = 1
        while True:
            took = self._time_block(number)
            relative_overhead = overhead / took if took > 0 else float("inf")
            if relative_overhead <= 1e-4 and took >= min_run_time / 1000:
                return number
            if took > min_run_time or number * 10 > _MAX_NUMBER:
                return number
            number *= 10

    def _loop(self, number, stop, min_run_time, max_run_time, callback):
        total, times = 0.0, []
        while True:
            took = self._time_block(number)
            times.append(took)
            total += took
            if callback:
                callback(number, took)
            if stop(times) and total >= min_run_time:
                return times
            if max_run_time is not None and total >= max_run_time:
                return times

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed size (estimated first) until min_run_time seconds were spent in
        them; callback(number, seconds) after each block."""
        with _threads.limit_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(min_run_time)
            times = self._loop(number, lambda t: True, min_run_time, None, callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks of about 50 ms / 1000 until the samples' IQR/median is under `threshold` (with
        at least 4 samples and min_run_time spent), or max_run_time seconds have passed."""
        def converged(times):
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold)
        with _threads.limit_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(min_run_time=0.05)
            times = self._loop(number, converged, min_run_time, max_run_time, callback)
        return self._measurement(number, times)
