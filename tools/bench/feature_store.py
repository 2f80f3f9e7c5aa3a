"""rtx.feature_store benchmark: historical retrieval vs a pandas merge_asof implementation; online p50/p99
in-process and through the feature server under wrk (50 connections on loopback).

    python tools/bench/feature_store.py                         # the issue's size: 10M events, 1M entity rows
    python tools/bench/feature_store.py --events 1000000 --rows 100000   # scaled down (shared 2-core machine)
    python tools/bench/feature_store.py --redis redis://127.0.0.1:6390/0  # add Redis to the online figures
    python tools/bench/feature_store.py --skip-historical --server-seconds 10  # online and server figures only

Both offline implementations get the same point-in-time semantics (ttl, created-timestamp ties) and their
outputs are checked equal before any time is printed. Online figures are wall time per call (what a caller
waits, including time the OS gave other processes) and the calling thread's CPU time per call (the call's own
cost, nearly independent of other load); the server's answer is checked against the in-process one before wrk
runs. The 1-minute load average is printed with each figure."""
import argparse
import datetime as dt
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rtx.feature_store import Entity, FeatureStore, FeatureView, Field, FileSource, Float64

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "load"))
from _wrk import post_script, tree_cpu_seconds  # noqa: E402  (tools/load: the shared wrk helpers)
from _wrk import run as run_wrk  # noqa: E402

# Events span the 30 days before today (midnight UTC), so online values are fresh (within the 7-day ttl) when the
# feature server, which reads the real clock, answers.
T0 = np.datetime64(dt.datetime.now(dt.timezone.utc).date(), "us") - np.timedelta64(30, "D")
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


def load():
    return os.getloadavg()[0]


def server_figures(repo, spec, body, expected, a, d, workers=1):
    """Start `rtx feature-store serve`, check one answer, then wrk: one connection (latency without queueing),
    saturated (50 connections, no pause) and paced (each connection pauses a random 0..2 x --pace-ms between
    requests, so the offered rate is at most connections / pace: below capacity, the latency is not queueing)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        print("  feature server: wrk not installed (apt-get install wrk): skipped")
        return
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    cmd = [sys.executable, "-m", "rtx.runtime.cli", "feature-store", "serve", "--repo", repo, "--port", str(port),
           "--workers", str(workers)]
    server = subprocess.Popen(cmd + (["--online-store", spec] if spec else []))
    url = f"http://127.0.0.1:{port}/get-online-features"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("rtx feature-store serve did not start") from None
                time.sleep(0.2)
        body_path = os.path.join(d, "body.json")
        with open(body_path, "w") as f:
            json.dump(body, f)
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        got = json.loads(urllib.request.urlopen(req, timeout=30).read())
        assert got == json.loads(json.dumps(expected)), "the server's answer differs from the in-process one"
        runs = [("1 connection", 1, ""), ("saturated", a.connections, ""),
                (f"paced, mean pause {a.pace_ms} ms (offered <= {a.connections * 1000 / a.pace_ms:.0f} req/s)",
                 a.connections,
                 # a pause drawn uniformly from [0, 2 x pace] (mean: pace): fixed pauses keep the 50 connections
                 # in step, arriving as bursts of 50 that queue behind each other
                 f"function delay() return math.random(0, {2 * a.pace_ms}) end")]
        for label, conns, delay in runs:
            lua = post_script(os.path.join(d, "post.lua"), body_path, extra=delay)
            la, c0 = load(), tree_cpu_seconds(server.pid)
            r = run_wrk(url, lua, conns, a.server_seconds)
            cpu = (tree_cpu_seconds(server.pid) - c0) / max(r["requests"], 1) * 1e3
            # wrk's own words: a timeout is wrk giving up after 2 s, not an error answer
            errors = "errors: " + ", ".join(r["error_kinds"]) if r["error_kinds"] else "0 errors"
            print(f"  server {workers} worker(s), {label}, {conns} connections, {a.server_seconds} s: "
                  f"{r['rps']:.0f} req/s, "
                  f"p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms, {errors}, server CPU "
                  f"{cpu:.2f} ms/request (load {la:.1f})")
    finally:
        server.send_signal(2)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


def historical(store, entity, refs, d, a, ttl):
    la = load()
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
    print(f"  (load {la:.1f} at the start)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--online-requests", type=int, default=500)
    p.add_argument("--redis", default=None, help="redis:// URL of a running server")
    p.add_argument("--skip-pandas", action="store_true")
    p.add_argument("--skip-historical", action="store_true")
    p.add_argument("--skip-online", action="store_true")
    p.add_argument("--server-seconds", type=int, default=10, help="wrk duration per run (0: no server figures)")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--pace-ms", type=int, default=500, help="mean pause per connection in the paced wrk run")
    p.add_argument("--workers", default="1,2", help="server worker counts to measure, comma-separated")
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
        if not a.skip_historical:
            historical(store, entity, refs, d, a, ttl)
        specs = [] if a.skip_online else [("sqlite", None)] + ([("redis", a.redis)] if a.redis else [])
        r = np.random.default_rng(1)
        for name, spec in specs:
            s = FeatureStore(os.path.join(d, "repo"), online_store=spec)
            t = time.perf_counter()
            start = T0.astype(dt.datetime)
            s.materialize(start - dt.timedelta(days=1), start + dt.timedelta(days=31))
            t_mat = time.perf_counter() - t
            lat, cpu, la = [], [], load()
            for _ in range(a.online_requests):
                rows = {"driver_id": r.integers(0, a.keys, 100).tolist()}
                t, c = time.perf_counter(), time.thread_time()
                s.get_online_features(refs, rows)
                lat.append(time.perf_counter() - t)
                cpu.append(time.thread_time() - c)
            print(f"online {name}: materialize {t_mat:.2f} s; 100 entities x {NF} features in-process: "
                  f"wall p50 {pct(lat, 50):.2f} ms, p99 {pct(lat, 99):.2f} ms; CPU p50 {pct(cpu, 50):.2f} ms, "
                  f"p99 {pct(cpu, 99):.2f} ms (load {la:.1f})")
            if a.server_seconds:
                body = {"features": refs, "entities": {"driver_id": r.integers(0, a.keys, 100).tolist()}}
                # the server reads the clock itself: compare against an in-process answer at the same moment
                expected = s.get_online_features(refs, body["entities"]).to_feast_json()
                for w in [int(x) for x in a.workers.split(",")]:
                    server_figures(os.path.join(d, "repo"), spec, body, expected, a, d, w)


if __name__ == "__main__":
    main()
