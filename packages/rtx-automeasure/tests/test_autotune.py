"""autotune: a configuration is chosen only when measured faster; choices persist in the cache."""
import time

import pytest

import rtx
from rtx.automeasure import autotune
from rtx.automeasure.autotune import choose
from rtx.runtime import tuning


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RTX_TUNING_CACHE", str(tmp_path / "tuning.json"))
    tuning.clear_memo()
    yield
    tuning.clear_memo()


class Clock:
    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t


def make(costs, clock, calls):
    def kernel(x, *, mode):
        calls.append(mode)
        clock.t += costs[mode] * x
        return mode
    return kernel


def test_faster_config_is_chosen_and_cached():
    clock, calls = Clock(), []
    tuned = autotune(make({"a": 2e-3, "b": 1e-3}, clock, calls), [{"mode": "a"}, {"mode": "b"}], key=["x"],
                     op="test.kernel", timer=clock.now)
    assert tuned(3) == "b"
    assert tuned.results[((3,), None)].speedup == pytest.approx(2.0)
    assert tuning.lookup("test.kernel", (3,), None) == {"mode": "b"}
    # a fresh tuner (another process) reads the cache and times nothing
    calls2 = []
    again = autotune(make({"a": 2e-3, "b": 1e-3}, clock, calls2), [{"mode": "a"}, {"mode": "b"}], key=["x"],
                     op="test.kernel", timer=clock.now)
    assert again(3) == "b" and calls2 == ["b"]


def test_default_kept_unless_measured_faster():
    clock, calls = Clock(), []
    for costs in ({"a": 1e-3, "b": 1e-3}, {"a": 1e-3, "b": 0.99e-3}, {"a": 1e-3, "b": 3e-3}):
        tuned = autotune(make(costs, clock, calls), [{"mode": "a"}, {"mode": "b"}], key=["x"],
                         op=f"test.k{costs['b']}", timer=clock.now)
        assert tuned(1) == "a", costs     # equal, 1% faster (under min_gain), slower


def test_choose_needs_separated_samples():
    assert choose({0: [1.0, 1.0, 1.0, 1.0], 1: [0.5, 0.5, 0.5, 0.5]}) == 1
    # faster median but overlapping quartiles: noise, keep the default
    assert choose({0: [1.0, 0.6, 1.4, 1.0], 1: [0.9, 0.5, 1.3, 0.9]}) == 0


def test_real_timing_prefers_the_shorter_sleep():
    def kernel(n, *, delay):
        time.sleep(delay)
    tuned = autotune(kernel, [{"delay": 0.004}, {"delay": 0.001}], key=["n"], op="test.sleep", rep=60, warmup=1)
    assert tuned.config_for(1) == {"delay": 0.001}


def test_num_threads_config_goes_through_the_threads_policy():
    before = rtx.get_num_threads()
    seen = []

    def kernel(n):
        seen.append(rtx.get_num_threads())
    tuned = autotune(kernel, [{"num_threads": 1}], key=["n"], op="test.threads", rep=1, warmup=0)
    tuned(1)
    assert set(seen) == {1} and rtx.get_num_threads() == before


def test_errors():
    with pytest.raises(ValueError, match="at least one"):
        autotune(lambda: 0, [])
    with pytest.raises(TypeError, match="configs"):
        autotune(lambda: 0)
    tuned = autotune(lambda x, *, m: m, [{"m": 1}], key=["y"], op="test.err")
    with pytest.raises(TypeError, match="'y' was not passed"):
        tuned(1)
