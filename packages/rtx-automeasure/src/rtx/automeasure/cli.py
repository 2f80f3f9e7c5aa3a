"""`rtx automeasure tune` (tune.py), `report` (the tuning cache as a table), `bench` (bench.py)."""
from __future__ import annotations

import sys


def report(argv):
    import argparse

    from rtx.runtime import tuning
    p = argparse.ArgumentParser(prog="rtx automeasure report", description="show the tuning cache")
    p.parse_args(argv)
    here = tuning.machine_fingerprint()["id"]
    entries = tuning.entries()
    print(f"tuning cache {tuning.cache_path()}: {len(entries)} entries (this machine: {here})")
    rows = [(k.rsplit("|", 1)[1] == here, e.get("op", "?"), e.get("bucket", "?"), e.get("dtype", "?"),
             e.get("device", "?"), e.get("config"), e.get("speedup")) for k, e in sorted(entries.items())]
    print(f"{'here':<5} {'op':<16} {'shape bucket':<18} {'dtype':<9} {'device':<10} {'speedup':>8}  config")
    for mine, op, bucket, dtype, device, config, speedup in rows:
        sp = f"{speedup:.3f}" if isinstance(speedup, (int, float)) else "-"
        print(f"{'yes' if mine else 'no':<5} {op:<16} {bucket:<18} {dtype:<9} {device:<10} {sp:>8}  {config}")
    return 0


def automeasure_command(argv):
    """tune rtx's kernels for this machine, show the tuning cache, run the benchmark suite"""
    if argv and argv[0] == "report":
        return report(argv[1:])
    if argv and argv[0] == "tune":
        from rtx.automeasure.tune import main
        return main(argv[1:])
    if argv and argv[0] == "bench":
        from rtx.automeasure.bench import main
        return main(argv[1:])
    asked = argv[:1] in (["-h"], ["--help"])
    print("usage: rtx automeasure {tune,report,bench} [-h]", file=sys.stdout if asked else sys.stderr)
    return 0 if asked else 2
