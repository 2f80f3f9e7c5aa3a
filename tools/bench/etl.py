"""rtx-etl benchmark: a generated CSV (10 mixed columns, dirty and duplicate rows) -> validated,
deduplicated Parquet shards, by rtx.etl's streaming Pipeline, a plain pyarrow script and a plain pandas
script doing the same work (each in its own process: throughput in MB/s of CSV and peak RSS); then the
shards streamed into rtx.data.DataLoader with 2 workers (rows/s).

    .venv/bin/python tools/bench/etl.py --mb 2048     # the issue's size
    .venv/bin/python tools/bench/etl.py --mb 64 --repeat 3      # what fits a shared 2-core machine
    .venv/bin/python tools/bench/etl.py --mb 64 --threads 1     # Arrow on one CPU thread

Each script runs in its own process with its modules imported before the clock starts; with --repeat
the scripts take turns and each one's best run counts (the machine is shared: load varies).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

RULES = {"id": ("int64", 0, None), "age": ("int64", 0, 120), "score": ("float64", 0.0, None)}


def generate(path, mb, seed=0):
    rng = np.random.default_rng(seed)
    cities = np.array(["paris", "oslo", "rome", "lima", "kyiv", "X!"])
    with open(path, "w") as f:
        f.write("id,age,score,city,flag,ts,q1,q2,q3,note\n")
        while f.tell() < mb * 2**20:
            n = 100_000
            ids = rng.integers(0, 10**9, n)
            ids[rng.random(n) < 0.05] = 7  # duplicates
            age = rng.integers(-2, 125, n).astype(str).astype(object)
            age[rng.random(n) < 0.01] = "n/a"
            cols = [ids.astype(str), age, rng.random(n).round(4).astype(str), rng.choice(cities, n),
                    rng.choice(["true", "false"], n), np.full(n, "2024-05-01 12:00:00"),
                    rng.integers(0, 100, n).astype(str), rng.normal(size=n).round(3).astype(str),
                    rng.integers(0, 9, n).astype(str), rng.choice(["lorem ipsum", "dolor", "sit amet"], n)]
            f.write("\n".join(",".join(r) for r in zip(*cols)) + "\n")


PARTITION_MB = int(os.environ.get("RTX_ETL_BENCH_PARTITION_MB", "16"))


def run_rtx(src, out):
    from rtx.etl import Pipeline
    schema = {k: {"dtype": t, "min": lo, "max": hi} for k, (t, lo, hi) in RULES.items()}
    schema["city"] = {"dtype": "string", "regex": "^[a-z]+$"}
    rep = Pipeline([{"op": "read_csv", "paths": src, "partition_bytes": PARTITION_MB << 20},
                    {"op": "validate", "schema": schema, "quarantine": out + "/bad"},
                    {"op": "dedup", "columns": ["id"]},
                    {"op": "write_parquet", "dir": out + "/shards", "rows_per_shard": 200_000}]).run()
    return rep["kept"]


def run_pyarrow(src, out):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    t = pcsv.read_csv(src, convert_options=pcsv.ConvertOptions(column_types={k: pa.string() for k in RULES}))
    ok = pc.match_substring_regex(t["city"], "^[a-z]+$")
    cols = {}
    for k, (typ, lo, hi) in RULES.items():
        good = pc.match_substring_regex(t[k], r"^[+-]?\d+$" if typ == "int64" else r"^[+-]?\d*\.?\d+$")
        v = pc.if_else(good, t[k], None).cast(typ)
        good = pc.and_(good, pc.greater_equal(v, lo))
        if hi is not None:
            good = pc.and_(good, pc.less_equal(v, hi))
        ok, cols[k] = pc.and_(ok, pc.fill_null(good, False)), v
    for k, v in cols.items():
        t = t.set_column(t.column_names.index(k), k, v)
    pq.write_table(t.filter(pc.invert(ok)), out + "/bad.parquet")
    t = t.filter(ok).append_column("__i", pa.array(np.arange(pc.sum(ok).as_py())))
    first = t.group_by("id").aggregate([("__i", "min")])["__i_min"]
    t = t.take(pc.sort_indices(first)).drop_columns(["__i"])
    os.makedirs(out + "/shards", exist_ok=True)
    for i in range(0, t.num_rows, 200_000):
        pq.write_table(t.slice(i, 200_000), f"{out}/shards/{i // 200_000:05d}.parquet")
    return t.num_rows


def run_pandas(src, out):
    import pandas as pd
    df = pd.read_csv(src, dtype={k: str for k in RULES})
    ok = df.city.str.fullmatch("[a-z]+").fillna(False)
    for k, (typ, lo, hi) in RULES.items():
        v = pd.to_numeric(df[k], errors="coerce")
        good = v.notna() & (v >= lo) & ((v <= hi) if hi is not None else True)
        if typ == "int64":
            good &= df[k].str.fullmatch(r"[+-]?\d+").fillna(False)
        ok &= good
        df[k] = v
    df[~ok].to_parquet(out + "/bad.parquet")
    df = df[ok].astype({k: t for k, (t, _, _) in RULES.items()}).drop_duplicates("id")
    os.makedirs(out + "/shards", exist_ok=True)
    for i in range(0, len(df), 200_000):
        df.iloc[i:i + 200_000].to_parquet(f"{out}/shards/{i // 200_000:05d}.parquet", index=False)
    return len(df)


def loader_rows_per_s(shards):
    import glob

    from rtx.etl import ShardedIterableDataset
    ds = ShardedIterableDataset(sorted(glob.glob(shards + "/*.parquet")), columns=["id", "age", "score"])
    t0, n = time.perf_counter(), 0
    for b in ds.loader(batch_size=1024, num_workers=2):
        n += len(b["id"])
    return n, n / (time.perf_counter() - t0)


def warm_imports(which, threads):
    """Import what a script uses before its clock starts: the figures are throughput of the work, not
    of the interpreter loading modules (several seconds here, where no bytecode is cached). pyarrow
    imports pandas on its first conversion from Python or NumPy objects, so that happens here too."""
    import duckdb  # noqa: F401
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401
    import pyarrow.csv  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    pa.array(np.zeros(1))
    if threads:
        pa.set_cpu_count(threads)
        pa.set_io_thread_count(threads)
    if which == "rtx":
        import rtx.etl  # noqa: F401
    if which == "pandas":
        import pandas  # noqa: F401


def child(which, src, out, threads, mem_gb):
    warm_imports(which, int(threads))
    if float(mem_gb) and which != "rtx":
        # the whole-file scripts hold the file in memory: on a shared machine they fail with MemoryError
        # at this cap rather than push the others out
        cap = int(float(mem_gb) * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    kept = {"rtx": run_rtx, "pyarrow": run_pyarrow, "pandas": run_pandas}[which](src, out)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    print(json.dumps({"kept": int(kept), "s": dt, "cpu_s": cpu, "rss_mib": peak_rss_mib(r1)}))


def peak_rss_mib(usage):
    """This process's peak RSS. Linux's VmHWM belongs to the process's own address space; ru_maxrss
    survives fork + exec, so a child started by a larger parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return usage.ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=2048, help="CSV size (the issue's figure is 2048)")
    p.add_argument("--csv", help="use this CSV (made by an earlier --keep run) instead of generating one")
    p.add_argument("--dir", help="work folder (default: a new temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (CSV and outputs)")
    p.add_argument("--only", default="rtx,pyarrow,pandas")
    p.add_argument("--threads", type=int, default=0, help="Arrow CPU threads (0: pyarrow's default)")
    p.add_argument("--repeat", type=int, default=1, help="runs of each script, interleaved; the best counts")
    p.add_argument("--no-loader", action="store_true")
    p.add_argument("--partition-mb", type=int, default=16, help="rtx.etl's CSV partition size (memory bound)")
    p.add_argument("--mem-gb", type=float, default=0, help="address-space cap for the pyarrow/pandas scripts")
    p.add_argument("--child", nargs=5)
    a = p.parse_args()
    if a.child:
        return child(*a.child)
    os.environ["RTX_ETL_BENCH_PARTITION_MB"] = str(a.partition_mb)  # read by the child processes
    d = a.dir or tempfile.mkdtemp(prefix="etl-bench-")
    os.makedirs(d, exist_ok=True)
    src = a.csv or d + "/raw.csv"
    if not a.csv:
        generate(src, a.mb)
    size = os.path.getsize(src) / 2**20
    print(f"CSV: {size:.0f} MiB, 10 columns; {os.cpu_count()} CPUs; Arrow threads {a.threads or 'default'}; "
          f"load {os.getloadavg()[0]:.1f}")
    res = {}
    for rep in range(a.repeat):
        for w in a.only.split(","):
            out = f"{d}/{w}"
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            r = subprocess.run([sys.executable, __file__, "--child", w, src, out, str(a.threads), str(a.mem_gb)],
                               capture_output=True, text=True)
            if r.returncode:
                print(w, "failed:", r.stderr[-2000:])
                continue
            got = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"  run {rep + 1} {w:8s} {size / got['s']:7.1f} MB/s  {got['s']:6.1f} s  CPU {got['cpu_s']:6.1f} s  "
                  f"peak RSS {got['rss_mib']:6.0f} MiB  kept {got['kept']}  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
            if w not in res or got["s"] < res[w]["s"]:
                res[w] = got
    for w, got in res.items():
        print(f"{w:8s} {size / got['s']:7.1f} MB/s  {got['s']:6.1f} s  CPU {got['cpu_s']:6.1f} s  "
              f"peak RSS {got['rss_mib']:6.0f} MiB  "
              f"kept {got['kept']}")
    if "rtx" in res:
        for w in ("pyarrow", "pandas"):
            if w in res:
                print(f"rtx.etl vs {w}: {res[w]['s'] / res['rtx']['s']:.2f}x throughput (wall), "
                      f"{res[w]['cpu_s'] / res['rtx']['cpu_s']:.2f}x CPU time")
        if not a.no_loader:
            n, rate = loader_rows_per_s(f"{d}/rtx/shards")
            print(f"DataLoader (2 workers, batch 1024) over the shards: {n} rows, {rate:,.0f} rows/s")
    if not a.keep and not a.dir:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
