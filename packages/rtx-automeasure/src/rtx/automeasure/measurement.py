"""Measurement: the samples of one timed statement and their statistics (torch.utils.benchmark's
Measurement: median, mean, IQR, significant_figures, merge)."""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict

import numpy as np

__all__ = ["Measurement", "TaskSpec", "select_unit", "trim_sigfig"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9   # 25 ns: below this a timer cannot tell runs apart
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup, and the labels Compare groups by."""
    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + "\n".join(
            "  " + line for line in self.stmt.splitlines())

    def summarize(self) -> str:
        lines = [self.title]
        if self.setup and self.setup != "pass":
            lines.append("setup:" + ("\n" + "\n".join("  " + ln for ln in self.setup.splitlines())
                                    if "\n" in self.setup else f" {self.setup}"))
        if self.description:
            lines.append(self.description)
        return "\n".join(lines)


def select_unit(t: float):
    """('ns'|'us'|'ms'|'s', scale) for a time in seconds, as torch's common.select_unit."""
    exp = math.floor(math.log10(t) / 3) if t > 0 else -3
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(exp, "ns" if exp < -3 else "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """x rounded to n significant figures (3.14159, 2 -> 3.1)."""
    if x == 0:
        return 0.0
    magnitude = math.ceil(math.log10(abs(x)))
    scale = 10.0 ** (magnitude - n)
    return float(round(x / scale) * scale)


class Measurement:
    """The times of `number_per_run` runs each (`raw_times`, seconds per block); `times` are per
    run. Statistics are over the per-run times."""

    def __init__(self, number_per_run: int, raw_times, task_spec: TaskSpec, metadata=None):
        if not raw_times:
            raise ValueError("Measurement needs at least one time, got none")
        self.number_per_run = int(number_per_run)
        self.raw_times = [float(t) for t in raw_times]
        self.task_spec = task_spec
        self.metadata = metadata
        self.times = [t / self.number_per_run for t in self.raw_times]
        s = np.sort(np.asarray(self.times, dtype=np.float64))
        self._sorted = s
        self._median = float(np.median(s))
        self._mean = float(np.mean(s))
        self._p25, self._p75 = (float(v) for v in np.percentile(s, [25, 75]))

    def __getattr__(self, name):  # label, sub_label, description, env, num_threads, stmt, ...
        if name != "task_spec" and "task_spec" in self.__dict__ and name in TaskSpec.__dataclass_fields__:
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def median(self) -> float:
        return self._median

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def iqr(self) -> float:
        return self._p75 - self._p25

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the samples support (1-4): a 90% confidence interval
        from the interquartile samples' spread (z = 1.645), as torch's estimate."""
        n = len(self._sorted)
        inner = self._sorted[n // 4: math.ceil(3 * n / 4)]
        ci = max(1.645 * float(np.std(inner)) / math.sqrt(len(inner)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self._median / ci)) if self._median > 0 else 1
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold if self.median > 0 else True

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def _warnings(self):
        out = []
        if len(self.times) < 4:
            out.append("  WARNING: Not enough data. Statistics may be unreliable.")
        rel = self.iqr / self.median if self.median > 0 else 0.0
        if rel > _IQR_WARN_THRESHOLD:
            gross = " (more than 25%)" if rel > _IQR_GROSS_WARN_THRESHOLD else ""
            out.append(f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median measurement.{gross}\n"
                       "           This could indicate system fluctuation.")
        return out

    @staticmethod
    def merge(measurements):
        """One Measurement per distinct task (same stmt, setup, labels, threads), holding the
        per-run times of all of them (number_per_run becomes 1), as torch's merge."""
        groups = defaultdict(list)
        for m in measurements:
            groups[m.task_spec].append(m)
        return [Measurement(1, [t for m in ms for t in m.times], spec, ms[0].metadata)
                for spec, ms in groups.items()]

    def __repr__(self):
        unit, scale = select_unit(self.median)
        fig = lambda v: f"{v / scale:.2f}"  # noqa: E731
        lines = [f"<rtx.automeasure.Measurement object at {hex(id(self))}>", self.task_spec.summarize()]
        if len(self.times) > 1:
            lines += [f"  Median: {fig(self.median)} {unit}",
                      f"  IQR:    {fig(self.iqr)} {unit} ({fig(self._p25)} to {fig(self._p75)})"]
        else:
            lines.append(f"  {fig(self.median)} {unit}")
        threads = self.task_spec.num_threads
        lines.append(f"  {len(self.times)} measurement{'s' if len(self.times) > 1 else ''}, "
                     f"{self.number_per_run} runs per measurement, {threads} thread{'s' if threads > 1 else ''}")
        lines += self._warnings()
        return "\n".join(lines)
