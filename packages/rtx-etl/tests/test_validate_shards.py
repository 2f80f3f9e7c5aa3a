"""Validation accounting under random bad rows (hypothesis, pandas as the independent judge); shard
writers read back with pyarrow/tarfile/safetensors; exactly-once across 2 ranks x 3 workers and resume."""
import re
import tarfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtx.etl import Column, Dataset, Schema
from rtx.etl.outputs import ShardedIterableDataset
from rtx.etl.validate import check

SCHEMA = Schema({"age": Column("int64", nullable=False, min=0, max=120),
                 "score": Column("float64", min=0.0),
                 "name": Column("string", nullable=False, regex=r"^[a-z]+$"),
                 "tier": Column("string", allowed=["gold", "silver"])})

cell = st.one_of(st.none(), st.text("abcz09 .-+", max_size=4), st.integers(-5, 200).map(str),
                 st.floats(-3, 3, allow_nan=False).map(lambda v: f"{v:.2f}"))


def pandas_ok(df):
    """The same rules, written with pandas: the independent judge of which rows are good."""
    age = pd.to_numeric(df.age.str.strip(), errors="coerce")
    is_int = df.age.str.strip().str.fullmatch(r"[+-]?\d+").fillna(False).astype(bool)
    age_ok = age.notna() & is_int & age.between(0, 120)
    score = pd.to_numeric(df.score.str.strip(), errors="coerce")
    score_ok = df.score.isna() | (score.notna() & (score >= 0))
    name_ok = df.name.notna() & df.name.str.fullmatch(r"[a-z]+").fillna(False).astype(bool)
    tier_ok = df.tier.isna() | df.tier.isin(["gold", "silver"])
    return (age_ok & score_ok & name_ok & tier_ok).to_numpy()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(cell, cell, cell, st.sampled_from([None, "gold", "silver", "bronze"])), min_size=1,
                max_size=40))
def test_quarantine_accounting_random_rows(tmp_path, rows):
    df = pd.DataFrame(rows, columns=["age", "score", "name", "tier"], dtype=object)
    table = pa.table({c: pa.array(df[c].tolist(), pa.string()) for c in df.columns})
    ds = Dataset.from_arrow(table, cache_dir=False).filter(lambda r: r["tier"] != "silver")
    kept_before = ds.num_rows
    q = tmp_path / "bad.parquet"
    out = ds.validate(SCHEMA, quarantine=q)
    sub = df[df.tier != "silver"].reset_index(drop=True) if len(df) else df
    ok = pandas_ok(sub.astype("string"))
    bad = pq.read_table(q)
    assert out.num_rows == ok.sum() and bad.num_rows == (~ok).sum()
    assert sorted(bad["_row"].to_pylist()) == list(np.flatnonzero(~ok))
    assert all(bad["_reason"].to_pylist())
    rep = out.report()
    assert rep["read"] == len(df) == rep["kept"] + rep["quarantined"] + rep["filtered"]
    assert rep["filtered"] == len(df) - kept_before and rep["quarantined"] == bad.num_rows
    for s in rep["steps"]:
        assert s["read"] == s["kept"] + s["quarantined"] + s["filtered"]
    assert out.schema.field("age").type == pa.int64() and out.schema.field("score").type == pa.float64()


def test_int_text_like_python(tmp_path):
    # the judge: Python's re and int(); what fails goes to the quarantine, never dropped or crashed on
    texts = ["5", "+5", "-5", " 5 ", " +7 ", "00012", "-0", "0x1F", "1e3", "1.0", "", "--5", "+-5", "-", "1_000",
             "12a", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
             "123456789012345678", "-123456789012345678", "0" * 25 + "7", None]

    def judge(v):
        if v is None:
            return True, None
        if re.fullmatch(r"\s*[+-]?[0-9]+\s*", v) and -2**63 <= int(v) < 2**63:
            return True, int(v)
        return False, None
    ds = Dataset.from_arrow(pa.table({"i": pa.array(texts, pa.string()), "k": range(len(texts))}), cache_dir=False)
    out = ds.validate(Schema({"i": Column("int64")}), quarantine=tmp_path / "q.parquet").to_arrow().to_pylist()
    bad = pq.read_table(tmp_path / "q.parquet")
    want = [(k, judge(v)) for k, v in enumerate(texts)]
    assert [(r["k"], r["i"]) for r in out] == [(k, v) for k, (ok, v) in want if ok]
    assert bad["k"].to_pylist() == [k for k, (ok, _) in want if not ok]
    assert bad["_reason"].to_pylist() == [f"i: {texts[k]!r} is not int64" for k in bad["k"].to_pylist()]


def test_validate_types_and_reasons(tmp_path):
    t = pa.table({"n": ["1", " 2 ", "x", None, "99999999999999999999"], "f": [1.5, 2.0, 3.0, 4.0, 5.0],
                  "b": ["true", "no", "maybe", "1", "0"],
                  "ts": ["2024-01-02 03:04:05", "bad", None, "2024-02-29", "2024-13-01"]})
    s = Schema({"n": Column("int64"), "f": Column("int64"), "b": Column("bool"), "ts": Column("timestamp")})
    out = Dataset.from_arrow(t, cache_dir=False).validate(s, quarantine=tmp_path / "q.parquet")
    bad = pq.read_table(tmp_path / "q.parquet").to_pylist()
    ts = pd.Timestamp("2024-02-29").to_pydatetime()
    assert out.to_arrow().to_pylist() == [{"n": None, "f": 4, "b": True, "ts": ts}]
    reasons = {r["_row"]: r["_reason"] for r in bad}
    assert reasons[0] == "f: 1.5 is not int64"
    assert reasons[1] == "ts: 'bad' is not timestamp"
    assert reasons[2] == "n: 'x' is not int64; b: 'maybe' is not bool"
    assert reasons[4] == "n: '99999999999999999999' is not int64; ts: '2024-13-01' is not timestamp"
    with pytest.raises(ValueError, match=r"no column \['zz'\]"):
        Dataset.from_arrow(t, cache_dir=False).validate(Schema({"zz": Column("int64")}))
    with pytest.raises(ValueError, match="dtype must be one of"):
        Column("int32")


def test_reason_texts_are_python_repr():
    # reasons quote the value as repr() does, whether a kernel joins them (ints, printable ASCII text)
    # or Python does (quotes, backslashes, tabs, non-ASCII, floats): the judge is repr() itself
    s = ["ok", "it's", "a\\b", "tab\there", "\u00e9t\u00e9", 'say "hi"', "X!", ""]
    n = ["1", "-7", "200", "5", "300", "-1", "0", "2"]
    f = ["0.5", "-1e-05", "2", "-0.25", "1", "3", "-2.5", "1e20"]
    c = ["a", "zz", "b", "q!", "a", "b", "a", "x y"]  # the failing ones all plain: the kernel's path
    schema = Schema({"s": Column("string", regex=r"^[a-z]+$"), "n": Column("int64", min=0, max=100),
                     "f": Column("float64", min=0.0), "c": Column("string", allowed=["a", "b"])})
    _, bad = check(pa.table({"s": s, "n": n, "f": f, "c": c}), schema)

    def reason(sv, nv, fv, cv):
        parts = [] if re.fullmatch("[a-z]+", sv) else [f"s: {sv!r} does not match '^[a-z]+$'"]
        parts += [f"n: {nv!r} < min 0"] * (nv < 0) + [f"n: {nv!r} > max 100"] * (nv > 100)
        parts += [f"f: {fv!r} < min 0.0"] * (fv < 0) + [f"c: {cv!r} not in ['a', 'b']"] * (cv not in ("a", "b"))
        return "; ".join(parts)
    want = [(i, reason(sv, int(nv), float(fv), cv)) for i, (sv, nv, fv, cv) in enumerate(zip(s, n, f, c))]
    assert list(zip(bad["_row"].to_pylist(), bad["_reason"].to_pylist())) == [(i, r) for i, r in want if r]


def test_shard_writers_read_back(tmp_path):
    t = pa.table({"id": np.arange(25), "x": np.linspace(0, 1, 25), "txt": [f"t{i}" for i in range(25)],
                  "img": [bytes([i]) for i in range(25)]})
    ds = Dataset.from_arrow(t, cache_dir=False)
    paths = ds.to_parquet(tmp_path / "pq", rows_per_shard=10)
    assert [pq.read_metadata(p).num_rows for p in paths] == [10, 10, 5]
    assert pa.concat_tables([pq.read_table(p) for p in paths]).equals(t)
    tars = ds.to_tar_shards(tmp_path / "tar", rows_per_shard=10)
    with tarfile.open(tars[2]) as tar:
        names = tar.getnames()
        assert names[:4] == ["000000020.id", "000000020.x", "000000020.txt", "000000020.img"]
        assert tar.extractfile("000000021.img").read() == bytes([21])
        assert tar.extractfile("000000021.txt").read() == b"t21"
    from safetensors.numpy import load_file
    out = load_file(ds.to_safetensors(tmp_path / "a.safetensors", columns=["id", "x"]))
    np.testing.assert_array_equal(out["id"], np.arange(25))
    with pytest.raises(TypeError, match="column 'txt'"):
        ds.to_safetensors(tmp_path / "b.safetensors")


def make_shards(tmp_path, sizes):
    paths, start = [], 0
    for i, n in enumerate(sizes):
        p = tmp_path / f"s{i}.parquet"
        pq.write_table(pa.table({"id": np.arange(start, start + n)}), p, row_group_size=7)
        paths.append(str(p))
        start += n
    return paths, start


def ids_of(batches):
    return [int(v) for b in batches for v in np.asarray(b["id"].numpy()).ravel()]


@pytest.mark.parametrize("shuffle", [0, 16])
def test_exactly_once_two_ranks_three_workers_uneven(tmp_path, shuffle):
    paths, total = make_shards(tmp_path, [50, 3, 21, 0, 8])  # uneven, one empty, fewer units than some splits
    seen = []
    for rank in range(2):
        ds = ShardedIterableDataset(paths, rank=rank, world_size=2, shuffle_buffer=shuffle, seed=1)
        seen += ids_of(ds.loader(batch_size=4, num_workers=3))
    assert sorted(seen) == list(range(total))
    if shuffle:
        assert seen != sorted(seen)


def test_env_rank_and_direct_iteration(tmp_path, monkeypatch):
    paths, total = make_shards(tmp_path, [10, 10, 10])
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    ds = ShardedIterableDataset(paths)
    assert ds.rank == 1 and ds.world_size == 2
    other = ShardedIterableDataset(paths, rank=0)
    got = [r["id"] for r in ds] + [r["id"] for r in other]
    assert sorted(got) == list(range(total))


@pytest.mark.parametrize("workers", [0, 3])
def test_resume_mid_epoch(tmp_path, workers):
    paths, total = make_shards(tmp_path, [40, 17, 9])
    per_rank = []
    for rank in range(2):
        ds = ShardedIterableDataset(paths, rank=rank, world_size=2, shuffle_buffer=8, seed=5)
        full = ids_of(ShardedIterableDataset(paths, rank=rank, world_size=2, shuffle_buffer=8, seed=5)
                      .loader(batch_size=3, num_workers=workers))
        loader = ds.loader(batch_size=3, num_workers=workers)
        first = []
        for i, b in enumerate(loader):
            first += ids_of([b])
            if i == 4:
                break
        state = loader.state_dict()
        ds2 = ShardedIterableDataset(paths, rank=rank, world_size=2, shuffle_buffer=8, seed=5)
        ds2.load_state_dict(state)
        rest = ids_of(ds2.loader(batch_size=3, num_workers=workers))
        assert sorted(first + rest) == sorted(full) and len(first) == 15
        per_rank += first + rest
    assert sorted(per_rank) == list(range(total))
    bad = ShardedIterableDataset(paths, rank=0, world_size=2, shuffle_buffer=8, seed=5)
    bad.load_state_dict(state | {"rank": 0, "num_workers": workers, "consumed": {"0": 1}})
    with pytest.raises(ValueError, match="different number of workers"):
        next(iter(bad.loader(batch_size=3, num_workers=workers + 1)))
