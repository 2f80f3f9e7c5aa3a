"""Timer and Measurement against the standard library's timeit and closed forms."""
import math
import statistics
import timeit

import numpy as np
import pytest

import rtx
from rtx.automeasure import Measurement, TaskSpec, Timer, select_unit, trim_sigfig


class Clock:
    """A deterministic workload: each work() call advances a fake clock by a fixed schedule, so
    the exact times every timer must report are known in closed form."""

    def __init__(self, cost=2.0 ** -18, cycle=None):  # ~3.8 us, exact in binary: sums stay exact
        self.t, self.k, self.cost, self.cycle = 0.0, 0, cost, cycle

    def now(self):
        return self.t

    def work(self):
        self.t += self.cost if self.cycle is None else self.cycle[self.k % len(self.cycle)]
        self.k += 1


def test_timeit_equals_stdlib_timeit_on_the_same_workload():
    a, b = Clock(), Clock()
    m = Timer("clock.work()", timer=a.now, globals={"clock": a}).timeit(1000)
    ref = timeit.Timer("clock.work()", timer=b.now, globals={"clock": b}).timeit(1000)
    assert m.raw_times == [pytest.approx(ref, rel=1e-9)] and m.number_per_run == 1000
    assert m.median == m.mean == pytest.approx(2.0 ** -18, rel=1e-12)


def test_blocked_autorange_block_size_and_count_closed_form():
    c = Clock()
    m = Timer("clock.work()", timer=c.now, globals={"clock": c}).blocked_autorange(min_run_time=0.2)
    # zero timer overhead: the first power of ten whose block takes >= 0.2 / 1000 s is 100 runs (381 us)
    assert m.number_per_run == 100
    assert len(m.times) == math.ceil(0.2 / (100 * 2.0 ** -18))
    assert m.median == 2.0 ** -18 and m.iqr == 0


def test_adaptive_autorange_stops_when_confident():
    c = Clock()
    m = Timer("clock.work()", timer=c.now, globals={"clock": c}).adaptive_autorange(min_run_time=0.01)
    assert m.number_per_run == 100 and len(m.times) == math.ceil(0.01 / (100 * 2.0 ** -18))  # converged: min_run_time
    c = Clock(cycle=[1e-6, 9e-6, 1e-6, 3e-6, 25e-6, 2e-6, 7e-6])   # never converges: IQR stays wide
    m = Timer("for _ in range(37): clock.work()", timer=c.now, globals={"clock": c}).adaptive_autorange(
        threshold=1e-9, max_run_time=0.05)
    assert sum(m.raw_times) >= 0.05 and sum(m.raw_times[:-1]) < 0.05


def test_statistics_against_numpy_and_statistics():
    rng = np.random.default_rng(0)
    raw = list(rng.gamma(4.0, 1e-4, size=37))
    m = Measurement(10, raw, TaskSpec("x"))
    per = [t / 10 for t in raw]
    assert m.median == pytest.approx(statistics.median(per), rel=1e-12)
    assert m.mean == pytest.approx(statistics.fmean(per), rel=1e-12)
    q = statistics.quantiles(per, n=4, method="inclusive")
    assert m.iqr == pytest.approx(q[2] - q[0], rel=1e-12)
    # significant figures: the 90% CI of the inner half's mean, against the median
    inner = sorted(per)[37 // 4: math.ceil(3 * 37 / 4)]
    ci = 1.645 * statistics.pstdev(inner) / math.sqrt(len(inner))
    assert m.significant_figures == min(max(math.floor(math.log10(m.median / ci)), 1), 4)
    assert Measurement(1, [1.0] * 8, TaskSpec("x")).significant_figures == 4


def test_real_workload_agrees_with_stdlib_timeit():
    stmt = "sum(range(3000))"
    # many short stdlib blocks: on a loaded machine a long block is always preempted, a short one
    # often is not
    before = min(timeit.repeat(stmt, number=10, repeat=100)) / 10
    m = Timer(stmt).blocked_autorange(min_run_time=0.2)
    after = min(timeit.repeat(stmt, number=10, repeat=100)) / 10
    # Timer's best block vs the stdlib's best block before and after: the same loop, so close. Best
    # blocks, not the median: a median moves with the load of a shared machine (it flaked at load 12).
    best = min(m.times)
    assert 0.5 * min(before, after) <= best <= 2.0 * max(before, after), (best, before, after)
    assert best <= m.median


def test_merge_and_warnings_and_repr():
    spec = TaskSpec("a @ b", label="mm", sub_label="64", description="numpy")
    m1, m2 = Measurement(10, [1e-3, 2e-3], spec), Measurement(5, [1e-3], spec)
    other = Measurement(1, [1.0], TaskSpec("x"))
    merged = Measurement.merge([m1, other, m2])
    assert len(merged) == 2
    assert merged[0].times == pytest.approx([1e-4, 2e-4, 2e-4]) and merged[0].number_per_run == 1
    assert merged[0].has_warnings          # 3 samples: not enough data
    text = repr(Measurement(100, [1e-3] * 4 + [5e-3] * 4, spec))
    assert "mm: 64" in text and "Median: 30.00 us" in text and "8 measurements, 100 runs per measurement" in text
    assert "Interquartile range" in text
    assert m1.label == "mm" and m1.num_threads == 1


def test_units_and_trimming():
    assert select_unit(3e-8)[0] == "ns" and select_unit(3e-5)[0] == "us"
    assert select_unit(0.2)[0] == "ms" and select_unit(12.0)[0] == "s"
    assert trim_sigfig(3.14159, 2) == pytest.approx(3.1) and trim_sigfig(123456, 3) == pytest.approx(123000)


def test_num_threads_goes_through_the_threads_policy():
    before = rtx.get_num_threads()
    seen = []
    Timer("seen.append(rtx.get_num_threads())", globals={"rtx": rtx, "seen": seen}, num_threads=1).timeit(3)
    assert set(seen) == {1} and rtx.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads"):
        Timer("pass", num_threads=0)
