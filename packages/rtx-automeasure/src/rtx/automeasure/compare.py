"""Compare: measurements side by side in torch.utils.benchmark's grouped table.

One table per label; its rows are (threads, env, sub_label), its columns the descriptions, each
in order of first appearance; every cell is the median in one unit chosen for the table.
trim_significant_figures() prints only the digits each measurement supports; colorize() marks
the best cell of each column (or row) green, those within 10% of it blue, 2x worse red-dim and
5x worse red; highlight_warnings() appends (! NN%) where the IQR is over 10% of the median.
"""
from __future__ import annotations

import math

from rtx.automeasure.measurement import Measurement, select_unit, trim_sigfig

__all__ = ["Compare"]

BEST, GOOD, BAD, VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
BOLD, TERMINATE = "\033[1m", "\033[0m"
_UNIT_NAMES = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}


def _row_key(m):
    """(threads, env, row name): the sub-label, else the statement when the task has no label."""
    t = m.task_spec
    return t.num_threads, t.env, t.sub_label if t.sub_label is not None or t.label is not None else t.stmt


class Compare:
    def __init__(self, results):
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise TypeError(f"Compare expects Measurement objects, got {type(r).__name__}")
        self._results = results
        self._trim = False
        self._colorize = None          # None, "columnwise" or "rowwise"
        self._highlight_warnings = False

    def extend_results(self, results):
        for r in results:
            if not isinstance(r, Measurement):
                raise TypeError(f"Compare expects Measurement objects, got {type(r).__name__}")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise: bool = False):
        self._colorize = "rowwise" if rowwise else "columnwise"

    def highlight_warnings(self):
        self._highlight_warnings = True

    def print(self):
        print(str(self))

    def __str__(self):
        return "\n".join(self._render())

    # ---- rendering ----------------------------------------------------------------------------------

    def _render(self):
        groups = {}
        for m in Measurement.merge(self._results):
            groups.setdefault(m.task_spec.label, []).append(m)
        out = []
        for label, ms in groups.items():
            out += self._table(label, ms) + [""]
        return out

    def _table(self, label, ms):
        rows, cols = [], []
        for m in ms:
            rkey = _row_key(m)
            for seq, key in ((rows, rkey), (cols, m.task_spec.description)):
                if key not in seq:
                    seq.append(key)
        rows.sort(key=lambda k: k[0])   # grouped by thread count, first-appearance order within
        cells = {(rows.index(_row_key(m)), cols.index(m.task_spec.description)): m for m in ms}
        unit, scale = select_unit(min(m.median for m in ms))

        # text of each cell, decimals set per column so the points line up
        def digits(m):
            if not self._trim:
                return 1
            v = m.median / scale
            return max(0, m.significant_figures - (math.floor(math.log10(abs(v))) + 1 if v else 1))
        col_digits = [max((digits(m) for (r, c), m in cells.items() if c == j), default=1) for j in range(len(cols))]
        text = {}
        for (i, j), m in cells.items():
            v = m.median / scale
            if self._trim:
                v = trim_sigfig(v, m.significant_figures)
            s = f"{v:.{col_digits[j]}f}"
            if self._highlight_warnings and m.has_warnings:
                s += f" (! {m.iqr / m.median * 100:.0f}%)"
            text[i, j] = s

        row_names = ["" if k[2] is None else str(k[2]) for k in rows]
        envs = any(k[1] for k in rows)
        row_names = [(f"({k[1]}) " if envs and k[1] else "") + n for k, n in zip(rows, row_names)]
        name_w = max([len(n) for n in row_names] + [0]) + 8
        col_w = [max([len(text.get((i, j), "")) for i in range(len(rows))] + [len(str(c or "")), 4]) + 2
                 for j, c in enumerate(cols)]
        header = " " * name_w + "|" + "|".join(f"{str(c or ''):^{w + 2}}" for c, w in zip(cols, col_w))
        width = len(header)
        title = f" {label} " if label else ""
        dashes = max(width - 2 - len(title), 4)
        out = ["[" + "-" * (dashes // 2) + title + "-" * (dashes - dashes // 2) + "]", header]
        threads_seen = None
        for i, k in enumerate(rows):
            if k[0] != threads_seen:
                threads_seen = k[0]
                lead = f"{k[0]} threads: "
                out.append(lead + "-" * max(width - len(lead), 4))
            cells_txt = []
            for j, w in enumerate(col_w):
                s = f"{text.get((i, j), ''):>{w}}"
                m = cells.get((i, j))
                if m is not None and self._colorize:
                    s = self._colour(s, m, cells, i, j)
                cells_txt.append("  " + s)
            out.append(f"{'      ' + row_names[i]:<{name_w}}|" + "|".join(cells_txt))
        out.append("")
        out.append(f"Times are in {_UNIT_NAMES[unit]} ({unit}).")
        return out

    def _colour(self, s, m, cells, i, j):
        peers = [c for (a, b), c in cells.items() if (a == i if self._colorize == "rowwise" else b == j)]
        best = min(p.median for p in peers)
        if len(peers) < 2:
            return s
        if m.median == best:
            return BOLD + BEST + s + TERMINATE
        if m.median <= best * 1.1:
            return BOLD + GOOD + s + TERMINATE
        if m.median >= best * 5:
            return VERY_BAD + s + TERMINATE
        if m.median >= best * 2:
            return BAD + s + TERMINATE
        return s
