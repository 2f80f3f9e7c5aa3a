"""Historical retrieval against Feast's own answers on the same inputs (fixtures/feast_historical.json, written
by Feast 0.67's DuckDB and file (Dask) offline stores with fixtures/make_feast_fixture.py): duplicate timestamps
decided by the created timestamp, exact ttl boundaries, unsorted rows, events after the entity row, drivers with
no events, repeated entity rows."""
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rtx.feature_store import Entity, FeatureStore, FeatureView, Field, FileSource, Float64, Int64

FIXTURE = Path(__file__).parent / "fixtures" / "feast_historical.json"


def test_historical_features_equal_feasts(tmp_path):
    fx = json.loads(FIXTURE.read_text())
    t0 = dt.datetime.fromisoformat(fx["t0"])
    ev = fx["events"]

    def when(minutes):
        return [t0 + dt.timedelta(minutes=m) for m in minutes]

    pq.write_table(pa.table({"driver_id": [e["driver_id"] for e in ev], "ts": when([e["ts"] for e in ev]),
                             "created": when([e["created"] for e in ev]), "conv_rate": [e["conv_rate"] for e in ev],
                             "trips": [e["trips"] for e in ev]}), tmp_path / "events.parquet")
    driver = Entity("driver", ["driver_id"])
    view = FeatureView("driver_stats", [driver], [Field("conv_rate", Float64), Field("trips", Int64)],
                       FileSource(str(tmp_path / "events.parquet"), "ts", "created"),
                       ttl=dt.timedelta(minutes=fx["ttl_minutes"]))
    store = FeatureStore(tmp_path / "repo")
    store.apply([driver, view])
    rows = fx["entity_rows"]
    got = store.get_historical_features(
        {"driver_id": [r["driver_id"] for r in rows], "event_timestamp": when([r["event_timestamp"] for r in rows])},
        ["driver_stats:conv_rate", "driver_stats:trips"]).to_arrow()
    conv, trips = got.column("conv_rate").to_pylist(), got.column("trips").to_pylist()

    # Feast's DuckDB offline store: every entity row, every value equal.
    duck = fx["feast_result"]["duckdb"]
    assert duck["row"] == list(range(len(rows)))
    assert (conv, trips) == (duck["conv_rate"], duck["trips"])
    assert sum(v is not None for v in trips) > 10  # the fixture is not all misses

    # Feast's file (Dask) offline store differs in two documented-elsewhere ways, checked here so that any other
    # difference fails: it drops an entity row that repeats another's (keys, timestamp) (rtx keeps every row of a
    # training set, the repeat gets its twin's values), and among source rows with equal (keys, timestamp) it
    # does not reliably pick the latest created timestamp (its second, unstable sort by timestamp loses the
    # created order), so rows whose answer is such a tie are not compared.
    dask = fx["feast_result"]["dask"]
    ts_of = {(e["driver_id"], e["ts"]) for e in ev}
    ties = {k for k in ts_of if sum((e["driver_id"], e["ts"]) == k for e in ev) > 1}
    compared = 0
    for j, i in enumerate(dask["row"]):
        r = rows[i]
        seen = [e["ts"] for e in ev if e["driver_id"] == r["driver_id"] and e["ts"] <= r["event_timestamp"]]
        if seen and (r["driver_id"], max(seen)) in ties:
            continue
        assert (conv[i], trips[i]) == (dask["conv_rate"][j], dask["trips"][j]), (i, r)
        compared += 1
    assert compared > 40
    kept = {(rows[i]["driver_id"], rows[i]["event_timestamp"]): i for i in dask["row"]}
    for i in sorted(set(range(len(rows))) - set(dask["row"])):
        key = (rows[i]["driver_id"], rows[i]["event_timestamp"])
        assert sum((r["driver_id"], r["event_timestamp"]) == key for r in rows) > 1  # only repeats are dropped
        if key in kept:  # (in this fixture Feast's Dask store lost both copies of one repeated row, (2, 1))
            assert (conv[i], trips[i]) == (conv[kept[key]], trips[kept[key]])
