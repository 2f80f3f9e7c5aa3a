"""TrainingLogger: a training loop's scalars to a CSV file, TensorBoard event files and a progress bar.

    with TrainingLogger("runs/exp1", total=1000) as logger:
        for step in range(1000):
            ...
            logger.log(step, loss=loss.item(), lr=sched.get_last_lr()[0])
        logger.log(1000, {"val/loss": val_loss})          # names that are not identifiers: a dict

CSV (`<logdir>/metrics.csv`): one row per log() call, columns `step,wall_time,<scalars in the
order first seen>`. A scalar that appears later grows the header: the file is rewritten with the
new column (existing rows get an empty cell) into a temporary file that then replaces it
atomically, so a crash never leaves a half-written file; this happens once per new name, not per
step. An existing metrics.csv in `logdir` is appended to (a resumed run), keeping its columns.
Every row is flushed at once: a killed run keeps all it logged.
"""
from __future__ import annotations

import csv
import math
import numbers
import os
import sys
import threading
import time

from rtx.config.files import write_atomic
from rtx.monitoring.tfevents import EventFileWriter

__all__ = ["TrainingLogger"]

_FIXED = ("step", "wall_time")


class TrainingLogger:
    """Writes each `log(step, **scalars)` to `<logdir>/metrics.csv` (csv=True), to a TensorBoard event
    file in `logdir` (tensorboard=True; `tensorboard --logdir <logdir>` shows it) and to a progress
    display on stderr (progress=True: a tqdm bar when tqdm is installed, else a plain line at most
    once a second; None: only when stderr is a terminal, as tqdm's disable=None).

    total: the number of steps expected, for the bar's length and rate (None: unknown). The bar stands
    at `step` (counted from 0, as `for step in range(total)`): it follows the steps, not the number of
    log() calls, so logging every 10th step moves it by 10."""

    def __init__(self, logdir, *, csv: bool = True, tensorboard: bool = True, progress: bool | None = True,
                 total: int | None = None):
        if not isinstance(logdir, (str, os.PathLike)):
            raise TypeError(f"TrainingLogger: logdir must be a str or os.PathLike, got {type(logdir).__name__}")
        if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
            raise ValueError(f"TrainingLogger: total must be None or an int >= 0, got {total!r}")
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        self._lock = threading.Lock()
        self._closed = False
        self.last_step: int | None = None
        self.csv_path = os.path.join(self.logdir, "metrics.csv") if csv else None
        self._columns: list[str] = list(_FIXED)
        self._csv_file = None
        if self.csv_path is not None:
            self._open_csv()
        self._events = EventFileWriter(self.logdir) if tensorboard else None
        self.event_path = self._events.path if self._events is not None else None
        self._progress = _make_progress(progress, total)

    # ---- logging ---------------------------------------------------------------------------------

    def log(self, step: int, scalars: dict | None = None, /, **named) -> None:
        """Record scalars (numbers, NumPy scalars, one-element arrays or tensors) at `step` (an int >= 0).
        Pass names that are not Python identifiers ("val/loss") in a dict."""
        step = _step(step)
        values = _scalars({**(scalars or {}), **named})
        wall = time.time()
        with self._lock:
            if self._closed:
                raise ValueError("TrainingLogger.log: the logger is closed")
            if self._csv_file is not None:
                self._write_row(step, wall, values)
            if self._events is not None:
                self._events.add_scalars(step, values, wall)
                self._events.flush()
            if self._progress is not None:
                self._progress.update(step, values)
            self.last_step = step

    def flush(self) -> None:
        with self._lock:
            if self._csv_file is not None:
                self._csv_file.flush()
            if self._events is not None:
                self._events.flush()

    def close(self) -> None:
        """Flush and close the files and the progress display (again: nothing)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._csv_file is not None:
                self._csv_file.close()
            if self._events is not None:
                self._events.close()
            if self._progress is not None:
                self._progress.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- CSV -------------------------------------------------------------------------------------

    def _open_csv(self):
        if os.path.exists(self.csv_path) and os.path.getsize(self.csv_path) > 0:
            with open(self.csv_path, newline="") as f:
                header = next(csv.reader(f), [])
            if tuple(header[:2]) != _FIXED:
                raise ValueError(f"TrainingLogger: {self.csv_path} exists but is not a metrics file of TrainingLogger "
                                 f"(its header starts {header[:2]}, expected {list(_FIXED)}); choose another logdir")
            self._columns = header
            self._csv_file = open(self.csv_path, "a", newline="")
        else:
            self._csv_file = open(self.csv_path, "w", newline="")
            csv.writer(self._csv_file).writerow(self._columns)
            self._csv_file.flush()

    def _write_row(self, step, wall, values):
        new = [name for name in values if name not in self._columns]
        if new:
            self._grow_header(new)
        cells = {"step": str(step), "wall_time": repr(wall), **{k: repr(v) for k, v in values.items()}}
        csv.writer(self._csv_file).writerow([cells.get(c, "") for c in self._columns])
        self._csv_file.flush()

    def _grow_header(self, new):
        """Rewrite the file with the new columns, atomically (rtx.config.files.write_atomic)."""
        self._csv_file.close()
        columns = self._columns + new

        def rewrite(dst):
            with open(self.csv_path, newline="") as src:
                rows = csv.reader(src)
                next(rows, None)  # the old header
                out = csv.writer(dst)
                out.writerow(columns)
                for row in rows:
                    out.writerow(row + [""] * (len(columns) - len(row)))

        try:
            write_atomic(self.csv_path, rewrite, text=True, encoding=None, newline="")
        except BaseException:
            self._csv_file = open(self.csv_path, "a", newline="")  # go on with the old columns' file
            raise
        self._columns = columns
        self._csv_file = open(self.csv_path, "a", newline="")


# ---- progress ------------------------------------------------------------------------------------

def _make_progress(progress, total):
    if progress is False:
        return None
    if progress is not True and progress is not None:
        raise ValueError(f"TrainingLogger: progress must be True, False or None, got {progress!r}")
    try:
        from tqdm import tqdm
    except ImportError:
        if progress is None and not sys.stderr.isatty():
            return None
        return _PlainProgress(total)
    return _TqdmProgress(tqdm, total, disable=None if progress is None else False)


class _TqdmProgress:
    def __init__(self, tqdm, total, disable):
        self.bar = tqdm(total=total, unit="step", disable=disable, dynamic_ncols=True)
        self.step = 0

    def update(self, step, values):
        self.bar.set_postfix({k: f"{v:.4g}" for k, v in values.items()}, refresh=False)
        self.bar.update(max(0, step - self.step))
        self.step = max(self.step, step)

    def close(self):
        self.bar.close()


class _PlainProgress:
    """Without tqdm: `step 120/1000  loss 0.4321  lr 0.001` on stderr, at most once a second."""

    interval = 1.0

    def __init__(self, total):
        self.total, self.last_print, self.pending = total, -math.inf, None

    def update(self, step, values):
        self.pending = (step, values)
        now = time.monotonic()
        if now - self.last_print >= self.interval:
            self._print()
            self.last_print = now

    def _print(self):
        step, values = self.pending
        of = f"/{self.total}" if self.total is not None else ""
        print(f"step {step}{of}  " + "  ".join(f"{k} {v:.4g}" for k, v in values.items()), file=sys.stderr, flush=True)
        self.pending = None

    def close(self):
        if self.pending is not None:  # the last values are always shown
            self._print()


# ---- checks --------------------------------------------------------------------------------------

def _step(step) -> int:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"TrainingLogger.log: step must be an int, got {type(step).__name__} ({step!r})")
    if step < 0:
        raise ValueError(f"TrainingLogger.log: step must be >= 0, got {step}")
    return int(step)


def _scalars(values: dict) -> dict[str, float]:
    if not values:
        raise ValueError("TrainingLogger.log: no scalars given; call log(step, loss=..., ...)")
    out = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name or name in _FIXED:
            raise ValueError(f"TrainingLogger.log: a scalar name must be a non-empty str other than "
                             f"{' and '.join(_FIXED)}, got {name!r}")
        try:
            name.encode("utf-8")  # a lone surrogate ("\ud800") cannot be a TensorBoard tag or a CSV cell
        except UnicodeEncodeError:
            raise ValueError(f"TrainingLogger.log: scalar name {name!r} is not valid Unicode text") from None
        out[name] = _number(name, value)
    return out


def _number(name, value) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an int beyond 1.8e308
            raise ValueError(f"TrainingLogger.log: {name!r} is too large for a float (beyond 1.8e308)") from None
    size = getattr(value, "size", None)
    if callable(size):  # a Tensor: size() is its shape
        size = getattr(value, "numel", lambda: None)()
    if size == 1 and hasattr(value, "item"):  # a one-element array or tensor
        item = value.item()
        if isinstance(item, numbers.Real) and not isinstance(item, bool):
            return float(item)
    shape = getattr(value, "shape", None)
    what = f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else type(value).__name__
    raise TypeError(f"TrainingLogger.log: {name!r} must be a real number (or a one-element array or tensor), "
                    f"got {what}")
