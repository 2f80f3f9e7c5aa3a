"""Key/value training logs written to stdout and CSV (stable_baselines3.common.logger, trimmed)."""
from __future__ import annotations

import csv
import os
import sys


class Logger:
    """`record(key, value)` during an iteration, `dump(step)` writes one row to every output."""

    def __init__(self, folder: str | None = None, format_strings=("stdout",)):
        self.dir = folder
        self.name_to_value: dict = {}
        self.outputs = []
        for fmt in format_strings:
            if fmt == "stdout":
                self.outputs.append(_Stdout())
            elif fmt == "csv":
                if folder is None:
                    raise ValueError("a CSV log needs a folder: configure(folder, ['csv'])")
                os.makedirs(folder, exist_ok=True)
                self.outputs.append(_CSV(os.path.join(folder, "progress.csv")))
            else:
                raise ValueError(f"unknown log format {fmt!r}; expected 'stdout' or 'csv'")

    def record(self, key: str, value, exclude=None) -> None:
        self.name_to_value[key] = value

    def record_mean(self, key: str, value) -> None:
        self.name_to_value[key] = value

    def dump(self, step: int = 0) -> None:
        if self.name_to_value:
            for out in self.outputs:
                out.write(self.name_to_value, step)
        self.name_to_value = {}

    def get_dir(self):
        return self.dir

    def close(self) -> None:
        for out in self.outputs:
            out.close()


def configure(folder: str | None = None, format_strings=None) -> Logger:
    return Logger(folder, format_strings if format_strings is not None else ["stdout"])


class _Stdout:
    def write(self, kvs: dict, step: int) -> None:
        rows = [(k, f"{v:<8.3g}" if isinstance(v, float) else str(v)) for k, v in sorted(kvs.items())]
        width = max(len(k) for k, _ in rows) + max(len(v) for _, v in rows) + 7
        lines = ["-" * width] + [f"| {k:<{width - 7 - len(v)}} | {v} |" for k, v in rows] + ["-" * width]
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()

    def close(self):
        pass


class _CSV:
    """Columns grow as new keys appear: the file is rewritten with the wider header (SB3 does the same)."""

    def __init__(self, path: str):
        self.path, self.keys, self.rows = path, [], []
        open(path, "w").close()

    def write(self, kvs: dict, step: int) -> None:
        new = [k for k in kvs if k not in self.keys]
        self.rows.append(dict(kvs))
        if new:
            self.keys.extend(new)
            with open(self.path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=self.keys)
                w.writeheader()
                w.writerows(self.rows)
        else:
            with open(self.path, "a", newline="") as f:
                csv.DictWriter(f, fieldnames=self.keys).writerow(kvs)

    def close(self):
        pass
