"""autotune: run a function under each of a few configurations, keep the fastest, and remember it
per key in rtx's tuning cache (Triton's `autotune`, TVM's tuning logs).

    @autotune(configs=[{"chunk": 1 << 20}, {"chunk": 1 << 24}], key=["x"], op="mylib.conv")
    def conv(x, w, *, chunk): ...

The first call for a new key (the shapes/values of the named arguments) times every
configuration on that call's arguments and stores the winner in rtx.runtime.tuning (and in
memory); later calls, in this process or another on the same machine, use it directly.

A configuration other than the default (the first, unless `default=` says) is chosen only
when it was *measured* faster: its median must beat the default's by `min_gain` (3%) and
the two sample sets must not overlap in their inner quartiles. Configurations run in
interleaved rounds, so a load change on a shared machine hits them all alike. A
configuration may be a callable's keyword arguments, plus "num_threads", which runs it under
rtx.runtime.threads.limit_threads (the one threads policy; the count comes back afterwards).
"""
from __future__ import annotations

import functools
import inspect
import time

import numpy as np

from rtx.runtime import threads as _threads
from rtx.runtime import tuning as _tuning

__all__ = ["Autotuner", "TuneResult", "autotune", "do_bench"]


def do_bench(fn, warmup: float = 25.0, rep: float = 100.0, timer=time.perf_counter, sync=None):
    """Per-call times (seconds) of fn(): `warmup` ms of calls first, then calls for about `rep`
    ms (at least 5), as triton.testing.do_bench."""
    t0 = timer()
    fn()
    if sync:
        sync()
    one = max(timer() - t0, 1e-9)
    for _ in range(max(int(warmup / 1e3 / one), 0)):
        fn()
    times = []
    for _ in range(max(int(rep / 1e3 / one), 5)):
        t0 = timer()
        fn()
        if sync:
            sync()
        times.append(timer() - t0)
    return times


class TuneResult:
    """What one tuning run measured: `config` (the chosen one), `default`, `times`
    ({index: per-call seconds}), `medians`, and `speedup` (default median / chosen median)."""

    def __init__(self, configs, default_index, times, chosen_index):
        self.configs = configs
        self.default_index, self.chosen_index = default_index, chosen_index
        self.times = times
        self.medians = {i: float(np.median(t)) for i, t in times.items()}

    @property
    def config(self):
        return self.configs[self.chosen_index]

    @property
    def default(self):
        return self.configs[self.default_index]

    @property
    def speedup(self) -> float:
        return self.medians[self.default_index] / self.medians[self.chosen_index]

    def __repr__(self):
        return (f"TuneResult(config={self.config}, default={self.default}, "
                f"speedup={self.speedup:.3f})")


def choose(times, default_index=0, min_gain=0.03) -> int:
    """The index of the configuration to use: the fastest by median, if it beats the default's
    median by min_gain and its 75th percentile is under the default's 25th; else the default."""
    med = {i: float(np.median(t)) for i, t in times.items()}
    best = min(med, key=med.get)
    if best == default_index:
        return best
    d, b = np.asarray(times[default_index]), np.asarray(times[best])
    faster = med[best] < med[default_index] * (1 - min_gain)
    separated = np.percentile(b, 75) < np.percentile(d, 25)
    return best if faster and separated else default_index


def _config_call(fn, config):
    config = dict(config)
    threads = config.pop("num_threads", None)

    def call(*args, **kwargs):
        with _threads.limit_threads(threads):
            return fn(*args, **kwargs, **config)
    return call


def _describe(value):
    """(shape, dtype) of an argument for the cache key: arrays and tensors by shape and dtype,
    numbers by value, anything else by its type name."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        dt = getattr(value, "dtype", None)
        return tuple(int(s) for s in shape), (str(dt).removeprefix("rtx.") if dt is not None else None)
    if isinstance(value, (bool, int)):
        return (int(value),), None
    if isinstance(value, float):
        return (), None
    return (), None


class Autotuner:
    """The callable that autotune() returns; see the module notes."""

    def __init__(self, fn, configs, key=(), *, op=None, default=None, warmup=25.0, rep=100.0, rounds=5,
                 min_gain=0.03, cache=True, device="cpu", timer=time.perf_counter):
        configs = [dict(c) for c in configs]
        if not configs:
            raise ValueError("autotune expects at least one configuration, got none")
        if default is None:
            self.default_index = 0
        else:
            default = dict(default)
            if default not in configs:
                configs.insert(0, default)
            self.default_index = configs.index(default)
        self.fn, self.configs = fn, configs
        self.key = [key] if isinstance(key, str) else key
        self.op = op or f"{fn.__module__}.{fn.__qualname__}"
        self.warmup, self.rep, self.rounds, self.min_gain = warmup, rep, rounds, min_gain
        self.cache, self.device, self.timer = cache, device, timer
        self.memo = {}               # key -> chosen config (this process)
        self.results = {}            # key -> TuneResult (what was measured here)
        self._sig = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    def _cache_key(self, args, kwargs):
        if callable(self.key):
            shape, dtype = self.key(*args, **kwargs)
            return tuple(shape), dtype
        bound = self._sig.bind_partial(*args, **kwargs).arguments
        shape, dtype = [], None
        for name in self.key:
            if name not in bound:
                raise TypeError(f"autotune: key argument {name!r} was not passed to {self.fn.__qualname__}")
            s, d = _describe(bound[name])
            shape += s
            dtype = dtype or d
        return tuple(shape), dtype

    def tune(self, *args, **kwargs) -> TuneResult:
        """Time every configuration on these arguments (interleaved rounds) and choose."""
        calls = [_config_call(self.fn, c) for c in self.configs]
        per_round = self.rep / self.rounds
        times = {i: [] for i in range(len(calls))}
        runs = [functools.partial(call, *args, **kwargs) for call in calls]
        for run in runs:   # warm-up each once, as a first round would be unfair
            do_bench(run, warmup=self.warmup, rep=0, timer=self.timer)
        for _ in range(self.rounds):
            for i, run in enumerate(runs):
                times[i] += do_bench(run, warmup=0, rep=per_round, timer=self.timer)
        return TuneResult(self.configs, self.default_index, times, choose(times, self.default_index, self.min_gain))

    def config_for(self, *args, **kwargs):
        """The configuration these arguments run with: from memory, else the tuning cache, else
        tuned now (and stored)."""
        shape, dtype = self._cache_key(args, kwargs)
        k = (shape, dtype)
        if k in self.memo:
            return self.memo[k]
        config = _tuning.lookup(self.op, shape, dtype, self.device) if self.cache else None
        if config is None or config not in self.configs:
            result = self.tune(*args, **kwargs)
            self.results[k] = result
            config = result.config
            if self.cache:
                _tuning.store(self.op, shape, dtype, self.device, config,
                              default=result.default, speedup=result.speedup,
                              median_s={str(i): m for i, m in result.medians.items()})
        self.memo[k] = config
        return config

    def __call__(self, *args, **kwargs):
        return _config_call(self.fn, self.config_for(*args, **kwargs))(*args, **kwargs)


def autotune(fn=None, configs=None, key=(), **options):
    """autotune(fn, configs, key=..., warmup=25, rep=100, ...) wraps fn; without fn it is a
    decorator: @autotune(configs=[...], key=[...]). warmup/rep are milliseconds, as Triton's.
    Options: op (the cache's op name), default (the configuration to beat; the first one),
    rounds (5), min_gain (0.03), cache (True: read and write rtx's tuning cache), device, timer."""
    if configs is None:
        raise TypeError("autotune() needs configs: a list of keyword-argument dicts")
    if fn is None:
        return lambda f: Autotuner(f, configs, key, **options)
    return Autotuner(fn, configs, key, **options)
