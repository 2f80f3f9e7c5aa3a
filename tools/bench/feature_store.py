"""rtx.feature_store benchmark: historical retrieval vs a pandas merge_asof implementation; online p50/p99.

    python tools/bench/feature_store.py                         # the issue's size: 10M events, 1M entity rows
    python tools/bench/feature_store.py --events 1000000 --rows 100000   # scaled down (shared 2-core machine)
    python tools/bench/feature_store.py --redis redis://127.0.0.1:6390/0  # add Redis to the online figures

Both offline implementations get the same point-in-time semantics (ttl, created-timestamp ties) and their
outputs are checked equal before any time is printed."""
import argparse
import datetime as dt
import os
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rtx.feature_store import Entity, FeatureStore, FeatureView, Field, FileSource, Float64

T0 = np.datetime64("2024-01-01T00:00:00", "us")
NF = 10


def make(d, n_events, n_rows, n_keys, seed=0):
    r = np.random.default_rng(seed)
    span = 30 * 86400 * 10**6
    ts = T0 + r.integers(0, span, n_events).astype("timedelta64[us]")
    ev = {"driver_id": r.integers(0, n_keys, n_events), "ts": ts,
          "created": ts + r.integers(0, 60 * 10**6, n_events).astype("timedelta64[us]")}
    for i in range(NF):
        ev[f"f{i}"] = r.standard_normal(n_events)
    pq.write_table(pa.table(ev), os.path.join(d, "events.parquet"), row_group_size=1 << 20)
    ent = {"driver_id": r.integers(0, n_keys, n_rows),
           "event_timestamp": T0 + r.integers(0, span, n_rows).astype("timedelta64[us]")}
    return pa.table(ent)


def pandas_pit(d, entity, ttl):
    import pandas as pd
    ev = pd.read_parquet(os.path.join(d, "events.parquet"))
    ev["__row"] = np.arange(len(ev))
    ev = ev.sort_values(["ts", "created", "__row"]).drop_duplicates(["driver_id", "ts"], keep="last")
    e = entity.to_pandas()
    e["__rid"] = np.arange(len(e))
    out = pd.merge_asof(e.sort_values("event_timestamp"), ev.drop(columns=["created", "__row"]),
                        left_on="event_timestamp", right_on="ts", by="driver_id",
                        tolerance=pd.Timedelta(seconds=ttl), direction="backward")
    return out.sort_values("__rid").drop(columns=["__rid", "ts"]).reset_index(drop=True)


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(xs, q):
    return float(np.percentile(np.asarray(xs) * 1e3, q))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--online-requests", type=int, default=500)
    p.add_argument("--redis", default=None, help="redis:// URL of a running server")
    p.add_argument("--skip-pandas", action="store_true")
    a = p.parse_args()
    ttl = 7 * 86400
    with tempfile.TemporaryDirectory() as d:
        entity = make(d, a.events, a.rows, a.keys)
        ent = Entity("driver", ["driver_id"])
        fv = FeatureView("stats", [ent], [Field(f"f{i}", Float64) for i in range(NF)],
                         FileSource(os.path.join(d, "events.parquet"), "ts", "created"), ttl=dt.timedelta(seconds=ttl))
        store = FeatureStore(os.path.join(d, "repo"))
        store.apply([ent, fv])
        refs = [f"stats:f{i}" for i in range(NF)]
        m0 = peak_mb()
        t = time.perf_counter()
        got = store.get_historical_features(entity, refs).to_arrow()
        t_rtx = time.perf_counter() - t
        m_rtx = peak_mb()
        print(f"historical, {a.rows:,} entity rows x {NF} features over {a.events:,} events:")
        print(f"  rtx.feature_store (DuckDB): {t_rtx:7.2f} s   peak RSS {m_rtx:,.0f} MB (before: {m0:,.0f} MB)")
        if not a.skip_pandas:
            t = time.perf_counter()
            ref = pandas_pit(d, entity, ttl)
            t_pd = time.perf_counter() - t
            for i in range(NF):
                np.testing.assert_array_equal(got.column(f"f{i}").to_numpy(zero_copy_only=False),
                                              ref[f"f{i}"].to_numpy())
            print(f"  pandas merge_asof:          {t_pd:7.2f} s   peak RSS {peak_mb():,.0f} MB   "
                  f"(same values; rtx is {t_pd / t_rtx:.1f}x faster)")
        specs = [("sqlite", None)] + ([("redis", a.redis)] if a.redis else [])
        r = np.random.default_rng(1)
        for name, spec in specs:
            s = FeatureStore(os.path.join(d, "repo"), online_store=spec)
            t = time.perf_counter()
            s.materialize(dt.datetime(2023, 12, 1), dt.datetime(2024, 3, 1))
            t_mat = time.perf_counter() - t
            lat = []
            for _ in range(a.online_requests):
                rows = {"driver_id": r.integers(0, a.keys, 100).tolist()}
                t = time.perf_counter()
                s.get_online_features(refs, rows, now=dt.datetime(2024, 1, 31))
                lat.append(time.perf_counter() - t)
            print(f"online {name}: materialize {t_mat:.2f} s; 100 entities x {NF} features in-process: "
                  f"p50 {pct(lat, 50):.2f} ms, p99 {pct(lat, 99):.2f} ms")


if __name__ == "__main__":
    main()
