"""Historical retrieval against a brute-force Python reference on randomized event tables."""
import datetime as dt

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtx.feature_store import Entity, FeatureStore, FeatureView, Field, FileSource, Float64, Int64

T0 = dt.datetime(2024, 1, 1)


def reference(events, entity_rows, ttl):
    """Per entity row: among events with the same key and ts <= event ts (and ts >= event ts - ttl), the one with
    the largest (ts, created, position in file); its value, else None."""
    out = []
    for key, ets in entity_rows:
        best = None
        for pos, (k, ts, created, val) in enumerate(events):
            if k != key or ts > ets or (ttl is not None and ts < ets - ttl):
                continue
            rank = (ts, created, pos)
            if best is None or rank > best[0]:
                best = (rank, val)
        out.append(None if best is None else best[1])
    return out


# Timestamps on a coarse grid (minutes 0..30) so that duplicates, ties and exact TTL boundaries are common.
event = st.tuples(st.integers(0, 3), st.integers(0, 30), st.integers(0, 3), st.integers(-1000, 1000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(event, min_size=0, max_size=40),
       rows=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 35)), min_size=1, max_size=25),
       ttl_min=st.one_of(st.none(), st.integers(1, 15)),
       csv=st.booleans())
def test_matches_brute_force(tmp_path_factory, events, rows, ttl_min, csv):
    d = tmp_path_factory.mktemp("pit")
    minute = dt.timedelta(minutes=1)
    table = pa.table({
        "k": pa.array([e[0] for e in events], pa.int64()),
        "ts": pa.array([T0 + e[1] * minute for e in events], pa.timestamp("us")),
        "created": pa.array([T0 + e[2] * minute for e in events], pa.timestamp("us")),
        "v": pa.array([float(e[3]) for e in events], pa.float64()),
    })
    path = d / ("ev.csv" if csv else "ev.parquet")
    if csv:
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
    ent = Entity("k", ["k"])
    fv = FeatureView("fv", [ent], [Field("v", Float64)], FileSource(str(path), "ts", "created"),
                     ttl=None if ttl_min is None else dt.timedelta(minutes=ttl_min))
    store = FeatureStore(d / "repo")
    store.apply([ent, fv])
    entity_df = {"k": [r[0] for r in rows], "event_timestamp": [T0 + r[1] * minute for r in rows]}
    got = store.get_historical_features(entity_df, ["fv:v"]).to_arrow()
    want = reference([(e[0], e[1], e[2], float(e[3])) for e in events], rows, ttl_min)
    assert got.column("v").to_pylist() == want
    assert got.column("k").to_pylist() == entity_df["k"]  # entity rows keep their order, duplicates included


def test_never_returns_a_future_value(tmp_path):
    # A late-arriving row (written later, created after the event) with a timestamp after the event is never used.
    pq.write_table(pa.table({"k": [1, 1], "ts": [T0, T0 + dt.timedelta(hours=1)], "v": [1.0, 2.0]}),
                   tmp_path / "e.parquet")
    ent = Entity("k", ["k"])
    store = FeatureStore(tmp_path / "repo")
    store.apply([ent, FeatureView("fv", [ent], [Field("v", Float64)], FileSource(str(tmp_path / "e.parquet"), "ts"))])
    got = store.get_historical_features({"k": [1, 1, 1], "event_timestamp": [
        T0 - dt.timedelta(seconds=1), T0 + dt.timedelta(minutes=59, seconds=59), T0 + dt.timedelta(hours=1)]}, ["fv:v"])
    assert got.to_arrow().column("v").to_pylist() == [None, 1.0, 2.0]


def test_several_views_and_timezones(tmp_path):
    pq.write_table(pa.table({"a": [1, 2], "ts": pa.array([T0, T0], pa.timestamp("us", tz="UTC")), "x": [10, 20]}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"b": ["p", "q"], "ts": [T0, T0 + dt.timedelta(hours=2)], "y": [0.5, 1.5]}),
                   tmp_path / "b.parquet")
    ea, eb = Entity("a", ["a"]), Entity("b", ["b"], value_type="String")
    store = FeatureStore(tmp_path / "repo")
    store.apply([ea, eb, FeatureView("va", [ea], [Field("x", Int64)], FileSource(str(tmp_path / "a.parquet"), "ts")),
                 FeatureView("vb", [eb], [Field("y", Float64)], FileSource(str(tmp_path / "b.parquet"), "ts"))])
    tz2 = dt.timezone(dt.timedelta(hours=2))  # 03:00+02:00 is 01:00 UTC
    df = {"a": [2, 1], "b": ["q", "p"], "event_timestamp": [dt.datetime(2024, 1, 1, 3, tzinfo=tz2)] * 2}
    got = store.get_historical_features(df, ["vb:y", "va:x"], full_feature_names=True).to_arrow()
    assert got.column("va__x").to_pylist() == [20, 10]
    assert got.column("vb__y").to_pylist() == [None, 0.5]  # q's row is at 02:00 UTC, after 01:00 UTC
    with pytest.raises(ValueError, match="lacks join key"):
        store.get_historical_features({"a": [1], "event_timestamp": [T0]}, ["vb:y"])
    with pytest.raises(KeyError, match="no feature 'nope'"):
        store.get_historical_features(df, ["va:nope"])


def test_key_pruning_split_files_and_shared_sources(tmp_path):
    # A source over 2 Parquet files (a glob) with many keys, of which the entity rows ask few (the semi join prunes
    # the rest), ties within and across files (the later file's row wins when created ties too), and two views
    # over the same source with different ttls (one join, two masks): all against the brute-force reference.
    import random
    rnd = random.Random(0)
    events = [(rnd.randrange(300), rnd.randrange(40), rnd.randrange(3), float(i)) for i in range(3000)]
    minute = dt.timedelta(minutes=1)
    (tmp_path / "src").mkdir()
    for part, chunk in enumerate([events[:1700], events[1700:]]):
        pq.write_table(pa.table({"k": [e[0] for e in chunk], "ts": [T0 + e[1] * minute for e in chunk],
                                 "created": [T0 + e[2] * minute for e in chunk], "v": [e[3] for e in chunk]}),
                       tmp_path / "src" / f"part-{part}.parquet", row_group_size=500)
    ent = Entity("k", ["k"])
    src = FileSource(str(tmp_path / "src" / "*.parquet"), "ts", "created")
    store = FeatureStore(tmp_path / "repo")
    store.apply([ent, FeatureView("short", [ent], [Field("v", Float64)], src, ttl=dt.timedelta(minutes=3)),
                 FeatureView("long", [ent], [Field("v", Float64)], src, ttl=None)])
    rows = [(rnd.choice([3, 5, 7, 299]), rnd.randrange(45)) for _ in range(200)]
    got = store.get_historical_features({"k": [r[0] for r in rows], "event_timestamp": [T0 + r[1] * minute
                                                                                        for r in rows]},
                                        ["short:v", "long:v"], full_feature_names=True).to_arrow()
    assert got.column("short__v").to_pylist() == reference(events, rows, 3)
    assert got.column("long__v").to_pylist() == reference(events, rows, None)
