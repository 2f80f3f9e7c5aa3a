"""`rtx automeasure bench`: a fixed suite of op, layer and model timings, written as JSON (and a PNG
bar chart with matplotlib) to compare machines or rtx versions. Each row is Timer.blocked_autorange
on a callable, with BLAS's configured threads; the JSON holds the machine fingerprint, the rtx
package versions, and per row the median, IQR and number of runs.

    rtx automeasure bench --out bench.json [--png bench.png] [--min-run-time 0.5] [--only conv,linear]
"""
from __future__ import annotations

import json
import platform
import time
from importlib import metadata

__all__ = ["SUITE", "main", "run_suite"]


def _matmul(n):
    import numpy as np
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    return lambda: a @ a


def _conv():
    import rtx
    import rtx.nn.functional as F
    x = rtx.randn(8, 64, 32, 32, requires_grad=True)
    w = rtx.randn(64, 64, 3, 3, requires_grad=True)

    def run():
        F.conv2d(x, w, padding=1).sum().backward()
    return run


def _linear():
    import rtx
    import rtx.nn.functional as F
    x = rtx.randn(128, 784, requires_grad=True)
    w = rtx.randn(512, 784, requires_grad=True)

    def run():
        F.linear(x, w).sum().backward()
    return run


def _sdpa():
    import rtx
    import rtx.nn.functional as F
    q, k, v = (rtx.randn(2, 8, 256, 64, requires_grad=True) for _ in range(3))

    def run():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    return run


def _workload(name):
    def build():
        from rtx.automeasure.tune import workloads
        found = workloads([name])
        if not found:
            raise ImportError(f"workload {name!r} needs a package that is not installed")
        return next(iter(found.values()))()[2]
    return build


# name: (group, builder)
SUITE = {
    "matmul f32 256": ("op", lambda: _matmul(256)),
    "matmul f32 1024": ("op", lambda: _matmul(1024)),
    "conv2d 3x3 64->64 32x32 b8 fwd+bwd": ("layer", _conv),
    "linear 784->512 b128 fwd+bwd": ("layer", _linear),
    "sdpa causal b2 h8 L256 d64 fwd+bwd": ("layer", _sdpa),
    "digits CNN epoch": ("model", _workload("digits")),
    "ResNet-18 step b8 64x64": ("model", _workload("resnet")),
}


def _versions():
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name == "rtx" or name.startswith("rtx-"):
            out[name] = dist.version
    return dict(sorted(out.items()))


def run_suite(only=None, min_run_time=0.5, progress=print):
    """[{name, group, median_s, iqr_s, runs}] for the rows whose name contains one of `only`
    (all by default); a row whose package is missing is reported with "skipped"."""
    from rtx.automeasure.timer import Timer
    from rtx.runtime import threads
    rows = []
    for name, (group, build) in SUITE.items():
        if only and not any(o in name.lower() for o in only):
            continue
        try:
            fn = build()
        except ImportError as e:
            rows.append({"name": name, "group": group, "skipped": str(e)})
            continue
        fn()   # first-call costs out of the timing
        m = Timer(fn, label="rtx automeasure bench", sub_label=name, description=group,
                  num_threads=threads.get_num_threads()).blocked_autorange(min_run_time=min_run_time)
        rows.append({"name": name, "group": group, "median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times)})
        if progress:
            progress(f"{name:<40} {m.median * 1e3:10.3f} ms  (IQR {m.iqr * 1e3:.3f} ms, {len(m.times)} runs)")
    return rows


def _png(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if "median_s" in r]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1))
    ax.barh([r["name"] for r in rows], [r["median_s"] * 1e3 for r in rows],
            xerr=[r["iqr_s"] * 1e3 / 2 for r in rows], color="tab:blue")
    ax.set_xscale("log")
    ax.set_xlabel("median time (ms, log scale; bars: IQR)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    import argparse

    from rtx.runtime import threads, tuning
    p = argparse.ArgumentParser(prog="rtx automeasure bench", description="time a fixed suite; write JSON (+ PNG)")
    p.add_argument("--out", default="rtx-bench.json", help="JSON file to write")
    p.add_argument("--png", default=None, help="bar chart to write (needs matplotlib)")
    p.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per row")
    p.add_argument("--only", default="", help="comma-separated name parts (e.g. conv,linear)")
    args = p.parse_args(argv)
    only = [o.strip().lower() for o in args.only.split(",") if o.strip()] or None
    t0 = time.perf_counter()
    rows = run_suite(only, args.min_run_time)
    doc = {"format": 1, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": tuning.machine_fingerprint(), "python": platform.python_version(),
           "threads": threads.get_num_threads(), "load_avg": _loadavg(), "versions": _versions(), "results": rows}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out} ({len(rows)} rows, {time.perf_counter() - t0:.0f} s)")
    if args.png:
        _png(rows, args.png)
        print(f"wrote {args.png}")
    return 0


def _loadavg():
    try:
        import os
        return list(os.getloadavg())
    except (OSError, AttributeError):
        return None
