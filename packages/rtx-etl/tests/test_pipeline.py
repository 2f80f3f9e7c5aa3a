"""Pipeline: streaming local run against a pandas script doing the same work; Dask LocalCluster (2
workers) output identical to the local run; malformed partition errors name file and line."""
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rtx.etl import Pipeline


def dirty_csv(path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"id": rng.integers(0, n // 2, n).astype(str), "age": rng.integers(-5, 130, n).astype(str),
                       "city": rng.choice(["paris", "oslo", "rome", "X"], n),
                       "v": rng.normal(size=n).round(3).astype(str)})
    df.loc[rng.choice(n, 50, replace=False), "age"] = "n/a"
    df.to_csv(path, index=False)
    return df


def steps(src, out, partition_bytes=8 << 10):
    return [{"op": "read_csv", "paths": str(src), "partition_bytes": partition_bytes},
            {"op": "validate", "schema": {"id": {"dtype": "int64", "nullable": False},
                                          "age": {"dtype": "int64", "min": 0, "max": 120},
                                          "city": {"dtype": "string", "regex": "^[a-z]+$"}, "v": {"dtype": "float64"}},
             "quarantine": str(out / "bad")},
            {"op": "sql", "query": "SELECT id, age, city, v * 2 AS v2 FROM data WHERE v > -1"},
            {"op": "dedup", "columns": ["id"]},
            {"op": "write_parquet", "dir": str(out / "shards"), "rows_per_shard": 100}]


def read_dir(d):
    return {os.path.basename(p): pq.read_table(p) for p in sorted(d.glob("*.parquet"))}


def test_local_run_equals_pandas(tmp_path):
    df = dirty_csv(tmp_path / "raw.csv")
    rep = Pipeline(steps(tmp_path / "raw.csv", tmp_path)).run(engine="local")
    assert rep["partitions"] > 5
    age = pd.to_numeric(df.age, errors="coerce")
    ok = age.notna() & age.between(0, 120) & df.city.str.fullmatch("[a-z]+")
    good = df[ok].astype({"id": int, "age": int, "v": float})
    good = good[good.v > -1].assign(v2=lambda d: d.v * 2).drop(columns="v")
    ref = good.drop_duplicates("id").reset_index(drop=True)
    got = pd.concat([t.to_pandas() for t in read_dir(tmp_path / "shards").values()], ignore_index=True)
    pd.testing.assert_frame_equal(got, ref, check_dtype=False)
    assert rep["read"] == len(df) == rep["kept"] + rep["quarantined"] + rep["filtered"]
    assert rep["quarantined"] == (~ok).sum() == sum(t.num_rows for t in read_dir(tmp_path / "bad").values())
    assert rep["kept"] == len(ref)
    for s in rep["steps"]:
        assert s["read"] == s["kept"] + s["quarantined"] + s["filtered"]


def test_dask_local_cluster_equals_local(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    dirty_csv(tmp_path / "raw.csv", n=1500, seed=1)
    local = Pipeline(steps(tmp_path / "raw.csv", tmp_path / "l")).run(engine="local")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        dk = Pipeline(steps(tmp_path / "raw.csv", tmp_path / "d")).run(engine="dask", client=client)
    a, b = read_dir(tmp_path / "l" / "shards"), read_dir(tmp_path / "d" / "shards")
    assert list(a) == list(b) and all(a[k].equals(b[k]) for k in a)
    strip = lambda r: {k: v for k, v in r.items() if k != "outputs"}  # noqa: E731
    assert strip(local) == strip(dk)


def test_truncated_partition_names_line(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(2000)) + "7")
    with pytest.raises(ValueError, match=r"t\.csv: line 2002: expected 2 columns, got 1"):
        Pipeline([{"op": "read_csv", "paths": str(p), "partition_bytes": 1000}]).run()


def quoted_csv(path, n=400, seed=0):
    """Text fields with newlines, commas and escaped quotes inside quotes, so byte-range cuts often fall
    inside a quoted field."""
    rng = np.random.default_rng(seed)
    words = ["a", "b,c", 'say ""hi""', "line\nbreak", "two\n\nlines", "\r\nwin", "x"]
    with open(path, "w", newline="") as f:
        f.write('id,"note\nheader",v\n')
        for i in range(n):
            note = "".join(rng.choice(words, rng.integers(1, 5)))
            f.write(f'{i},"{note}",{rng.integers(0, 9)}\n')


@pytest.mark.parametrize("partition_bytes", [1, 37, 500])
def test_quoted_newlines_across_partitions(tmp_path, partition_bytes):
    from rtx.etl.pipeline import _csv_partitions
    quoted_csv(tmp_path / "q.csv")
    ref = pd.read_csv(tmp_path / "q.csv")  # one reader over the whole file: the judge
    assert ref.iloc[:, 1].str.contains("\n").mean() > 0.3
    parts = _csv_partitions(str(tmp_path / "q.csv"), partition_bytes)
    raw = (tmp_path / "q.csv").read_bytes()
    # a cut at a newline inside quotes would have split records: count those the byte targets hit
    inside = sum(raw[:p["start"]].count(b'"') % 2 == 1 for p in parts)
    assert inside == 0 and len(parts) > 5
    naive = [raw.index(b"\n", p["start"] + partition_bytes) + 1 for p in parts[:-1]
             if raw.find(b"\n", p["start"] + partition_bytes) >= 0]
    assert any(raw[:c].count(b'"') % 2 for c in naive)  # a plain newline cut would have split a field
    rep = Pipeline([{"op": "read_csv", "paths": str(tmp_path / "q.csv"), "partition_bytes": partition_bytes},
                    {"op": "validate", "schema": {"id": {"dtype": "int64"}, "v": {"dtype": "int64"}}},
                    {"op": "write_parquet", "dir": str(tmp_path / "s"), "rows_per_shard": 1000}]).run()
    got = pd.concat([t.to_pandas() for t in read_dir(tmp_path / "s").values()], ignore_index=True)
    pd.testing.assert_frame_equal(got, ref, check_dtype=False)
    assert rep["read"] == rep["kept"] == len(ref) and rep["partitions"] == len(parts)



RSS_CHILD = """
import sys
import pyarrow as pa
from rtx.etl import Pipeline
pa.set_cpu_count(1)  # one Arrow thread: per-thread allocator arenas made the peak vary by ~15 MiB
pa.set_io_thread_count(1)
src, out, partition = sys.argv[1], sys.argv[2], int(sys.argv[3])
rep = Pipeline([{"op": "read_csv", "paths": src, "partition_bytes": partition},
                {"op": "validate", "schema": {"a": {"dtype": "int64"}, "b": {"dtype": "float64"}}},
                {"op": "write_parquet", "dir": out, "rows_per_shard": 50_000}]).run()
# VmHWM, not ru_maxrss: getrusage keeps the parent's peak across fork + exec, the mm's high-water mark does not
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(rep["kept"], int(hwm.split()[1]))  # KiB
"""


def test_streaming_memory_does_not_grow_with_the_file(tmp_path):
    """Peak RSS of a run with 1 MiB partitions over a 7 MB and a 28 MB CSV stays put; the 28 MB file
    as one partition (the whole file as one Arrow table) takes far more (measured: +3 vs +121 MiB)."""
    import subprocess
    import sys
    rng = np.random.default_rng(0)
    block = "".join(f"{a},{b:.6f},{c}\n" for a, b, c in
                    zip(rng.integers(0, 10**9, 40_000), rng.random(40_000), rng.choice(["xx", "yyyy"], 40_000)))
    peak = {}
    for blocks, partition in ((8, 1 << 20), (32, 1 << 20), (32, 1 << 30)):
        src = tmp_path / f"r{blocks}.csv"
        if not src.exists():
            src.write_text("a,b,c\n" + block * blocks)
        res = subprocess.run([sys.executable, "-c", RSS_CHILD, str(src), str(tmp_path / f"o{blocks}-{partition}"),
                              str(partition)], capture_output=True, text=True, check=True)
        kept, kib = map(int, res.stdout.split())
        assert kept == 40_000 * blocks
        peak[blocks, partition] = kib / 1024
    assert (tmp_path / "r32.csv").stat().st_size - (tmp_path / "r8.csv").stat().st_size > 20 << 20
    streamed_growth = peak[32, 1 << 20] - peak[8, 1 << 20]
    whole_file_cost = peak[32, 1 << 30] - peak[32, 1 << 20]
    assert streamed_growth < 12 and whole_file_cost > 50, peak  # MiB
