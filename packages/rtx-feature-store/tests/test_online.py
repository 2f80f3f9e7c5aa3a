"""Materialization and online retrieval; every test runs against SQLite and a real redis-server."""
import datetime as dt
import json
import random
import runpy
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rtx.feature_store import (
    BreakingChangeError,
    Entity,
    FeatureService,
    FeatureStore,
    FeatureView,
    Field,
    FileSource,
    Float64,
    Int64,
    OnDemandFeatureView,
    RequestSource,
    String,
)

T0 = dt.datetime(2024, 1, 1)
WRITER = Path(__file__).with_name("online_writer.py")
H = dt.timedelta(hours=1)


def make_repo(tmp_path, online_spec, events, ttl=None):
    pq.write_table(pa.table(events), tmp_path / "ev.parquet")
    ent = Entity("driver", ["driver_id"])
    fv = FeatureView("stats", [ent], [Field("rate", Float64), Field("trips", Int64)],
                     FileSource(str(tmp_path / "ev.parquet"), "ts", "created"), ttl=ttl)
    store = FeatureStore(tmp_path / "repo", online_store=online_spec)
    store.apply([ent, fv])
    return store


def random_events(n, seed):
    r = random.Random(seed)
    ts = [T0 + dt.timedelta(minutes=r.randrange(0, 600)) for _ in range(n)]
    return {"driver_id": [r.randrange(20) for _ in range(n)], "ts": ts,
            "created": [t + dt.timedelta(minutes=r.randrange(3)) for t in ts],
            "rate": [r.random() for _ in range(n)], "trips": [r.randrange(100) for _ in range(n)]}


def latest_reference(ev, end):
    best = {}
    for i in range(len(ev["ts"])):
        if ev["ts"][i] >= end:
            continue
        k, rank = ev["driver_id"][i], (ev["ts"][i], ev["created"][i], i)
        if k not in best or rank > best[k][0]:
            best[k] = (rank, ev["rate"][i], ev["trips"][i])
    return {k: (v[1], v[2]) for k, v in best.items()}


def online_values(store, ids):
    r = store.get_online_features(["stats:rate", "stats:trips"], [{"driver_id": i} for i in ids], now=T0 + 20 * H)
    d = r.to_dict()
    return {i: (d["rate"][j], d["trips"][j]) for j, i in enumerate(ids) if r.statuses["rate"][j] == "PRESENT"}


def test_materialize_is_idempotent_and_matches_latest(tmp_path, online_spec):
    ev = random_events(300, 0)
    store = make_repo(tmp_path, online_spec, ev)
    end = T0 + 10 * H
    store.materialize(T0 - H, end)
    first = online_values(store, range(25))
    store.materialize(T0 - H, end)  # again: nothing changes
    store.materialize(T0 - H, T0 + 3 * H)  # an older interval afterwards: never moves values back in time
    assert online_values(store, range(25)) == first == latest_reference(ev, end)


@pytest.mark.parametrize("seed", [1, 2])
def test_incremental_never_loses_or_duplicates(tmp_path, online_spec, seed):
    ev = random_events(400, seed)
    store = make_repo(tmp_path, online_spec, ev)
    r = random.Random(seed)
    cuts = sorted(T0 + dt.timedelta(minutes=r.randrange(0, 620)) for _ in range(5))
    store.materialize(T0 - H, cuts[0])
    for c in cuts[1:]:
        store.materialize_incremental(c)
        assert online_values(store, range(25)) == latest_reference(ev, c)
    # one full run from scratch (into a fresh SQLite store) agrees with the incremental history
    (tmp_path / "full").mkdir()
    other = make_repo(tmp_path / "full", f"sqlite:///{tmp_path / 'full.db'}", ev)
    other.materialize(T0 - H, cuts[-1])
    assert online_values(other, range(25)) == online_values(store, range(25))


def test_statuses_ttl_and_types(tmp_path, online_spec):
    ev = {"driver_id": [1, 2], "ts": [T0, T0 + 5 * H], "created": [T0, T0 + 5 * H], "rate": [0.5, None],
          "trips": [3, 4]}
    store = make_repo(tmp_path, online_spec, ev, ttl=dt.timedelta(hours=2))
    store.materialize(T0 - H, T0 + 6 * H)
    r = store.get_online_features(["stats:rate", "stats:trips"], {"driver_id": [1, 2, 3]}, now=T0 + 6 * H)
    assert r.statuses["trips"] == ["OUTSIDE_MAX_AGE", "PRESENT", "NOT_FOUND"]
    assert r.to_dict()["trips"] == [None, 4, None]
    assert r.statuses["rate"] == ["OUTSIDE_MAX_AGE", "NULL_VALUE", "NOT_FOUND"]
    r = store.get_online_features(["stats:trips"], [{"driver_id": 1}], now=T0 + 2 * H)  # exactly ttl old: fresh
    assert r.statuses["trips"] == ["PRESENT"] and r.to_dict()["trips"] == [3]
    with pytest.raises(TypeError, match="expects an integer"):
        store.get_online_features(["stats:trips"], [{"driver_id": "1"}])
    with pytest.raises(KeyError, match="unknown feature view"):
        store.get_online_features(["nope:trips"], [{"driver_id": 1}])


def test_push_and_on_demand(tmp_path, online_spec):
    store = make_repo(tmp_path, online_spec, random_events(10, 3))
    store.write_to_online_store("stats", {"driver_id": [7], "ts": [T0 + 30 * H], "rate": [0.25], "trips": [9]})
    store.write_to_online_store("stats", {"driver_id": [7], "ts": [T0], "rate": [0.75], "trips": [1]})  # older
    odfv = OnDemandFeatureView("scaled", [store.get_feature_view("stats"), RequestSource("req", [Field("k", Float64)])],
                               [Field("rate_k", Float64)],
                               lambda d: {"rate_k": [None if a is None else a * k for a, k in zip(d["rate"], d["k"])]})
    svc = FeatureService("m", [store.get_feature_view("stats")[["trips"]], odfv])
    store.apply([odfv, svc])
    r = store.get_online_features(svc, [{"driver_id": 7, "k": 2.0}, {"driver_id": 99, "k": 1.0}])
    assert r.to_dict() == {"driver_id": [7, 99], "trips": [9, None], "rate_k": [0.5, None]}
    assert r.statuses["rate_k"] == ["PRESENT", "NOT_FOUND"]


def test_registry_versions_and_breaking_changes(tmp_path):
    store = make_repo(tmp_path, None, random_events(5, 4))
    fv = store.get_feature_view("stats")
    svc = FeatureService("m", [fv[["rate"]]])
    assert store.apply([svc])[("feature_service", "m")] == 1
    assert store.apply([FeatureService("m", [fv[["rate"]]])])[("feature_service", "m")] == 1  # unchanged
    assert store.apply([FeatureService("m", [fv[["rate", "trips"]]])])[("feature_service", "m")] == 2
    changed = FeatureView("stats", ["driver"], [Field("rate", String), Field("trips", Int64)], fv.source)
    with pytest.raises(BreakingChangeError, match="'rate' dtype Float64 -> String"):
        store.apply([changed])
    with pytest.raises(ValueError, match="unknown entity"):
        store.apply([FeatureView("x", ["rider"], [Field("rate", Float64)], fv.source)])
    with pytest.raises(ValueError, match="lacks column"):
        store.apply([FeatureView("y", ["driver"], [Field("speed", Float64)], fv.source)])
    assert [v.name for v in store.list_feature_views()] == ["stats"]
    store.apply([changed], allow_breaking=True)
    assert store.get_feature_view("stats").schema[0].dtype == "String"


def _write_rows(spec, repo, seed, n):
    # the same code the writer processes run (online_writer.py is a script, not an importable module)
    runpy.run_path(str(WRITER), run_name="online_writer")["write_rows"](spec, repo, seed, n)


def test_concurrent_writers_and_readers(tmp_path, online_spec):
    store = make_repo(tmp_path, online_spec, random_events(5, 5))
    repo = str(tmp_path / "repo")
    procs = [subprocess.Popen([sys.executable, str(WRITER), online_spec, repo, str(s), "60"], stderr=subprocess.PIPE)
             for s in (1, 2)]
    errors = []

    def thread_writer():
        try:
            _write_rows(online_spec, repo, 3, 60)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                r = store.get_online_features(["stats:rate", "stats:trips"], [{"driver_id": i} for i in range(10)])
                d = r.to_dict()
                for rate, trips in zip(d["rate"], d["trips"]):
                    if rate is not None and trips is not None and trips != 2 * round(rate * 1000):
                        errors.append(AssertionError(f"torn row: rate {rate}, trips {trips}"))
                stop.wait(0.005)  # leave the 2 shared cores to the writers
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=thread_writer), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    outcomes = [(p.communicate(timeout=120)[1].decode()[-2000:], p.returncode)[::-1] for p in procs]
    threads[0].join(120)
    stop.set()
    for t in threads[1:]:
        t.join(30)
    assert [code for code, _ in outcomes] == [0, 0], [err for _, err in outcomes]
    assert not errors, errors[:3]


def test_timestamps_round_trip_and_feast_json_format(tmp_path, online_spec):
    # Event timestamps come back as the same doubles (SQLite prints them with 17 digits, Redis stores repr), and
    # the server's ISO strings equal datetime's own formatting (microseconds only when not zero).
    from rtx.feature_store.store import iso_timestamps
    r = random.Random(5)
    stamps = [T0 + dt.timedelta(seconds=s, microseconds=r.randrange(10**6) if i % 3 else 0)
              for i, s in enumerate(r.sample(range(10**6), 40))]
    ev = {"driver_id": list(range(40)), "ts": stamps, "created": stamps, "rate": [r.random() for _ in range(40)],
          "trips": [r.randrange(9) for _ in range(40)]}
    store = make_repo(tmp_path, online_spec, ev)
    store.materialize(T0 - H, T0 + dt.timedelta(days=30))
    ids = [3, 1000, 0, 39, 3]  # a missing key and a repeated one, as columns (the server's form)
    got = store.get_online_features(["stats:rate", "stats:trips"], {"driver_id": ids})
    epoch = dt.datetime(1970, 1, 1)
    want = [None if i >= 40 else (stamps[i] - epoch).total_seconds() for i in ids]
    assert got.to_dict(include_event_timestamps=True)["rate__ts"] == want
    assert got.to_dict()["rate"] == [None if i >= 40 else ev["rate"][i] for i in ids]
    assert got.statuses["trips"] == ["PRESENT", "NOT_FOUND", "PRESENT", "PRESENT", "PRESENT"]
    iso = got.to_feast_json()["results"][1]["event_timestamps"]
    assert json.loads(got.to_feast_json_bytes()) == got.to_feast_json()  # the server's text
    assert iso == ["1970-01-01T00:00:00Z" if i >= 40 else stamps[i].isoformat() + "Z" for i in ids]
    assert iso_timestamps([0.5, -1.0, None, 1e9]) == ["1970-01-01T00:00:00.500000Z", "1969-12-31T23:59:59Z",
                                                      "1970-01-01T00:00:00Z", "2001-09-09T01:46:40Z"]


def test_values_cut_from_stored_text_equal_the_written_rows(tmp_path, online_spec):
    # A view of numbers and booleans answers with its values' stored text cut into columns (no decoding); rows of
    # another layout (written before the view changed, or in the older {feature: value} form), strings, NaN and
    # Infinity send the lookup down the decoding path. Both must give exactly the written values and statuses.
    from rtx.feature_store import Bool
    from rtx.feature_store.online import entity_key
    r = random.Random(11)
    pq.write_table(pa.table({"driver_id": [0], "ts": [T0], "created": [T0], "a": [0.5], "b": [1], "c": [True]}),
                   tmp_path / "ev.parquet")
    ent = Entity("driver", ["driver_id"])
    fv = FeatureView("v", [ent], [Field("a", Float64), Field("b", Int64), Field("c", Bool)],
                     FileSource(str(tmp_path / "ev.parquet"), "ts", "created"), ttl=dt.timedelta(hours=1))
    store = FeatureStore(tmp_path / "repo", online_store=online_spec)
    store.apply([ent, fv])
    now = T0 + 10 * H
    written = {}  # id -> (values dict, fresh?, timestamp)
    tick = iter(range(10**6))

    def sec(t):
        return (t - dt.datetime(1970, 1, 1)).total_seconds()

    def value(f):
        return None if r.random() < 0.15 else {"a": r.choice([r.uniform(-1e6, 1e6), -0.0, 1e-300, 2.5e17]),
                                               "b": r.choice([r.randrange(-10**15, 10**15), 0]),
                                               "c": r.random() < 0.5}[f]

    def write(ids, make, newest=False):
        rows = []
        for i in ids:
            fresh = r.random() < 0.8
            v = make()
            ts = sec(now - r.uniform(0.1, 0.9 if fresh else 3) * H)
            if newest:  # replaces what is stored: fresh and newer than every earlier write
                ts = sec(now) - 60 + next(tick)
            if i not in written or ts >= written[i][2]:  # the store keeps the newer row
                written[i] = (v, ts >= sec(now - H), ts)
            rows.append((entity_key([i]), v, ts, ts))
        store.online.write("v", rows)

    write(range(40), lambda: {f: value(f) for f in "abc"})
    ids = [r.choice([*range(40), 100, 101]) for _ in range(60)]  # repeats and missing keys

    def expect(ids, feats):
        vals = {f: [] for f in feats}
        sts = {f: [] for f in feats}
        for i in ids:
            v, fresh, _ = written.get(i, (None, False, 0))
            for f in feats:
                x = v.get(f) if v is not None and fresh else None
                vals[f].append(x)
                sts[f].append("NOT_FOUND" if v is None else "OUTSIDE_MAX_AGE" if not fresh else
                              "NULL_VALUE" if x is None else "PRESENT")
        return vals, sts

    def check(ids, feats, cut):
        got = store.get_online_features([f"v:{f}" for f in feats], {"driver_id": ids}, now=now)
        assert bool(got.value_json) == cut  # which path answered
        server_text = json.loads(got.to_feast_json_bytes())
        vals, sts = expect(ids, feats)
        d = got.to_dict()
        for f in feats:
            assert [(type(x), x) for x in d[f]] == [(type(x), x) for x in vals[f]], f
            assert got.statuses[f] == sts[f], f
        assert server_text == got.to_feast_json()
        assert [res["values"] for res in server_text["results"][1:]] == [vals[f] for f in feats]

    check(ids, ["a", "b", "c"], cut=True)
    check(ids, ["c", "a"], cut=True)
    write([5, 6], lambda: {"c": value("c"), "a": value("a")}, newest=True)  # another layout (e.g. pushed partial rows)
    check(ids + [5, 6], ["a", "b", "c"], cut=False)
    write([5, 6], lambda: {f: value(f) for f in "abc"}, newest=True)
    check(ids + [5, 6], ["a", "b", "c"], cut=True)
    write([7], lambda: {"a": float("inf"), "b": 1, "c": False}, newest=True)  # not JSON: decoded; the server refuses it
    check([7, 8], ["b", "c"], cut=False)
    with pytest.raises(ValueError, match="JSON compliant"):
        store.get_online_features(["v:a"], {"driver_id": [7]}, now=now).to_feast_json_bytes()
    write([7], lambda: {f: value(f) for f in "abc"}, newest=True)
    check(ids + [7], ["b"], cut=True)
    # a row in the {feature: value} form of earlier versions, stored as they wrote it
    old = {"a": 1.25, "b": 3, "c": True}
    ts = sec(now)
    if online_spec.startswith("redis"):
        store.online.client.hset(store.online._key("v", "[9]"), mapping={"v": json.dumps(old), "ts": repr(ts),
                                                                         "c": repr(ts)})
    else:
        with store.online._conn() as c:
            c.execute("UPDATE online SET vals = ?, ts = ? WHERE fv = 'v' AND ek = '[9]'", (json.dumps(old), ts))
    written[9] = (old, True, ts)
    check(ids + [9], ["a", "b", "c"], cut=False)


def test_row_prefix_matches_encoded_rows_with_non_ascii_names():
    # feature names may hold any alphanumerics ("tarifa_é"): the prefix a lookup cuts by must be escaped as the
    # stored row is, or every such row takes the slow decode path
    from rtx.feature_store.online import encode_row, row_prefix
    for names in (["a", "b"], ["tarifa_é", "n"], ["日本", "x2"]):
        row = encode_row(dict(zip(names, [1.5, 2])))
        assert row.startswith(row_prefix(names)) and row.endswith("]}"), (row, row_prefix(names))
