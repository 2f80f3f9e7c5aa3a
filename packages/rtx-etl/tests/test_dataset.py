"""Transforms against pandas / pyarrow references; fingerprint cache hits and misses; file errors."""
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rtx.etl import Dataset, concatenate_datasets


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame({"id": np.arange(n), "k": rng.integers(0, 5, n), "x": rng.normal(size=n).round(2),
                         "s": rng.choice(["a", "b", "c"], n)})


def ds_of(df, tmp_path):
    return Dataset.from_pandas(df, cache_dir=tmp_path / "cache")


def test_csv_json_parquet_read_like_pandas(frame, tmp_path):
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.to_json(tmp_path / "a.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "a.parquet", index=False)
    for ds in (Dataset.from_csv(tmp_path / "a.csv", cache_dir=False),
               Dataset.from_json(tmp_path / "a.jsonl", cache_dir=False),
               Dataset.from_parquet(tmp_path / "a.parquet", cache_dir=False)):
        pd.testing.assert_frame_equal(ds.to_pandas(), frame, check_dtype=False)


def test_csv_dirty_later_block_becomes_string(tmp_path):
    rows = "\n".join(str(i) for i in range(200_000))
    (tmp_path / "d.csv").write_text("a\n" + rows + "\nnot-a-number\n")
    ds = Dataset.from_csv(tmp_path / "d.csv", cache_dir=False)
    assert ds.schema.field("a").type == pa.string() and ds.num_rows == 200_001
    assert ds["a"][-1] == "not-a-number"


def test_map_filter_select_rename_cast_like_pandas(frame, tmp_path):
    ds = ds_of(frame, tmp_path)
    m = ds.map(lambda b: {"y": [v * 2 for v in b["x"]], "k": [v + 1 for v in b["k"]]}, batched=True, batch_size=64)
    ref = frame.assign(y=frame.x * 2, k=frame.k + 1)
    pd.testing.assert_frame_equal(m.to_pandas(), ref[["id", "k", "x", "s", "y"]], check_dtype=False)
    m1 = ds.map(lambda r: {"z": r["s"] + "!"})
    assert m1["z"] == list(frame.s + "!")
    f = ds.filter(lambda r: r["k"] > 2 and r["s"] != "a")
    pd.testing.assert_frame_equal(f.to_pandas(), frame[(frame.k > 2) & (frame.s != "a")].reset_index(drop=True))
    fe = ds.filter(pc.field("x") > 0)
    assert fe["id"] == list(frame.id[frame.x > 0])
    r = ds.select_columns(["s", "id"]).rename({"s": "label"}).cast({"id": "float64"})
    ref = frame[["s", "id"]].rename(columns={"s": "label"}).astype({"id": float})
    pd.testing.assert_frame_equal(r.to_pandas(), ref)


def test_map_num_proc_equals_serial_and_can_change_row_count(frame, tmp_path):
    ds = ds_of(frame, tmp_path)
    split = lambda b: {"w": [c for s in b["s"] for c in (s, s.upper())]}  # noqa: E731
    a = ds.map(split, batched=True, batch_size=50, remove_columns=ds.column_names, num_proc=2)
    assert a["w"] == [c for s in frame.s for c in (s, s.upper())]
    rep = a.report()
    assert rep["steps"][-1]["read"] == 2 * len(frame)
    assert rep["read"] == rep["kept"] + rep["quarantined"] + rep["filtered"]


def test_sql_join_concat_dedup_shuffle_like_pandas(frame, tmp_path):
    ds = ds_of(frame, tmp_path)
    g = ds.sql("SELECT s, count(*) AS n, sum(x) AS t FROM data GROUP BY s ORDER BY s").to_pandas()
    ref = frame.groupby("s").agg(n=("x", "size"), t=("x", "sum")).reset_index()
    pd.testing.assert_frame_equal(g, ref, check_dtype=False)
    right = pd.DataFrame({"s": ["a", "b", "z"], "w": [1.0, 2.0, 3.0]})
    j = ds.join(Dataset.from_pandas(right, cache_dir=False), on="s", how="left").to_pandas()
    pd.testing.assert_frame_equal(j, frame.merge(right, on="s", how="left"), check_dtype=False)
    c = concatenate_datasets([ds, ds.select(range(10))])
    assert c.num_rows == len(frame) + 10 and c.report()["read"] == len(frame) + len(frame)
    dd = c.dedup()
    ref = pd.concat([frame, frame[:10]]).drop_duplicates().reset_index(drop=True)
    pd.testing.assert_frame_equal(dd.to_pandas(), ref)
    d2 = ds.dedup(["k", "s"]).to_pandas()
    pd.testing.assert_frame_equal(d2, frame.drop_duplicates(["k", "s"]).reset_index(drop=True))
    sh = ds.shuffle(seed=3)
    assert sorted(sh["id"]) == list(frame.id) and sh["id"] != list(frame.id)
    assert sh["id"] == ds.shuffle(seed=3)["id"]


def test_train_test_split_stratified(frame, tmp_path):
    ds = ds_of(frame, tmp_path)
    sp = ds.train_test_split(test_size=0.2, seed=0, stratify_by_column="s")
    tr, te = sp["train"], sp["test"]
    assert te.num_rows == 60 and tr.num_rows == 240
    assert sorted(tr["id"] + te["id"]) == list(range(300))
    share = frame.s.value_counts() * 0.2
    got = pd.Series(te["s"]).value_counts()
    assert (abs(got - share[got.index]) <= 1).all()


def test_arrow_input_schema_cast_concat_split_and_iterable(frame, tmp_path):
    t = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
    batch = t.to_batches()[0]
    for ds in (Dataset.from_arrow(t, cache_dir=False), Dataset.from_arrow(batch, cache_dir=False)):
        pd.testing.assert_frame_equal(ds.to_pandas(), frame)
    ds = ds_of(frame, tmp_path)
    target = pa.schema([("id", pa.float64()), ("k", pa.int32()), ("x", pa.float32()), ("s", pa.string())])
    c = ds.cast(target)
    assert c.schema == target
    pd.testing.assert_frame_equal(c.to_pandas(), frame.astype({"id": "float64", "k": "int32", "x": "float32"}))
    with pytest.raises(ValueError, match=r"cast: column 's' to int64"):
        ds.cast({"s": "int64"})
    with pytest.raises(ValueError, match=r"cast: no column \['zz'\]"):
        ds.cast({"zz": "int64"})
    both = ds.select(range(5)).concat(ds.select(range(5, 8)), ds.select([0]))
    assert both["id"] == [0, 1, 2, 3, 4, 5, 6, 7, 0] and both.report()["read"] == 3 * len(frame)
    with pytest.raises(ValueError, match="dataset 1 has columns"):
        ds.concat(ds.select_columns(["id"]))
    sp = ds.train_test_split(test_size=30, seed=1)  # a row count; no stratification
    assert sp["test"].num_rows == 30 and sorted(sp["train"]["id"] + sp["test"]["id"]) == list(range(300))
    assert sp["test"]["id"] == ds.train_test_split(test_size=30, seed=1)["test"]["id"]
    ordered = ds.train_test_split(test_size=0.1, shuffle=False)
    assert ordered["test"]["id"] == list(range(30)) and ordered["train"]["id"] == list(range(30, 300))
    rows = list(ds.select_columns(["id", "s"]).to_iterable_dataset())
    assert rows == frame[["id", "s"]].to_dict("records")


def test_near_dedup_against_exact_jaccard(tmp_path):
    rng = np.random.default_rng(1)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 6)) for _ in range(300)]
    base = [" ".join(rng.choice(words, 40)) for _ in range(30)]
    texts = base + [b[:-6] + "lambda" for b in base[:10]]  # near copies of the first 10

    def jac(a, b, k=5):
        A = {a[i:i + k] for i in range(len(a) - k + 1)}
        B = {b[i:i + k] for i in range(len(b) - k + 1)}
        return len(A & B) / len(A | B)

    ds = Dataset.from_dict({"t": texts}, cache_dir=False).near_dedup("t", threshold=0.7)
    kept = set(ds["t"])
    for i in range(10):  # the copies are > 0.85 similar by exact Jaccard: they go, their originals stay
        assert jac(texts[i], texts[30 + i]) > 0.85 and texts[30 + i] not in kept and texts[i] in kept
    for i in range(30):  # the originals are < 0.6 similar to each other: all stay
        assert texts[i] in kept
    assert max(jac(base[i], base[j]) for i in range(30) for j in range(i)) < 0.6


CALLS = []  # a global, not a closure cell: the fingerprint covers closed-over values


def double(b):
    CALLS.append(1)
    return {"x": [v * 2 for v in b["x"]]}


def test_cache_hit_miss_and_cleanup(frame, tmp_path):
    calls = CALLS
    calls.clear()

    ds = ds_of(frame, tmp_path)
    a = ds.map(double, batched=True, batch_size=1000)
    assert not a.cache_hit and len(calls) == 1
    b = ds_of(frame, tmp_path).map(double, batched=True, batch_size=1000)   # same input, fn, args: a hit
    assert b.cache_hit and len(calls) == 1 and b.fingerprint == a.fingerprint and b["x"] == a["x"]
    c = ds.map(double, batched=True, batch_size=100)                        # other args: a miss
    assert not c.cache_hit and len(calls) == 4
    d = ds_of(frame.assign(x=frame.x + 1), tmp_path).map(double, batched=True, batch_size=1000)  # other input
    assert not d.cache_hit

    def double2(b):
        return {"x": [v * 3 for v in b["x"]]}

    assert not ds.map(double2, batched=True, batch_size=1000).cache_hit     # other source: a miss
    # files: the key includes size and mtime
    frame.to_csv(tmp_path / "f.csv", index=False)
    v1 = Dataset.from_csv(tmp_path / "f.csv", cache_dir=tmp_path / "cache").filter(lambda r: r["k"] > 1)
    v2 = Dataset.from_csv(tmp_path / "f.csv", cache_dir=tmp_path / "cache").filter(lambda r: r["k"] > 1)
    assert not v1.cache_hit and v2.cache_hit
    frame.head(10).to_csv(tmp_path / "f.csv", index=False)
    v3 = Dataset.from_csv(tmp_path / "f.csv", cache_dir=tmp_path / "cache").filter(lambda r: r["k"] > 1)
    assert not v3.cache_hit and v3.num_rows == (frame.head(10).k > 1).sum()
    path = v2.cache_files[-1]
    assert __import__("os").path.exists(path)
    assert v2.cleanup_cache_files() == 1 and not __import__("os").path.exists(path)


RAN = []


def gen(n):
    RAN.append(n)
    for i in range(n):
        yield {"i": i, "sq": i * i}


def test_generator_fingerprint(tmp_path):
    ran = RAN
    ran.clear()

    a = Dataset.from_generator(gen, {"n": 5}, cache_dir=tmp_path)
    b = Dataset.from_generator(gen, {"n": 5}, cache_dir=tmp_path)
    assert a["sq"] == [0, 1, 4, 9, 16] and b.cache_hit and ran == [5]


def test_folder_images_and_text(tmp_path):
    for cls, n in (("cat", 2), ("dog", 3)):
        (tmp_path / "img" / cls).mkdir(parents=True)
        for i in range(n):
            (tmp_path / "img" / cls / f"{i}.png").write_bytes(bytes([i, len(cls)]))
    ds = Dataset.from_folder(tmp_path / "img", cache_dir=False)
    assert ds["label"] == [0, 0, 1, 1, 1] and ds["image"][2] == bytes([0, 3])
    (tmp_path / "txt").mkdir()
    (tmp_path / "txt" / "a.txt").write_text("hello")
    assert Dataset.from_folder(tmp_path / "txt", cache_dir=False)["text"] == ["hello"]


def test_malformed_files_name_file_and_line(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,c\n1,2,3\n4,5,6\n7,8")  # truncated last line
    with pytest.raises(ValueError, match=r"t\.csv: line 4: expected 3 columns, got 2"):
        Dataset.from_csv(p, cache_dir=False)
    ds = Dataset.from_csv(p, cache_dir=False, bad_lines=tmp_path / "bad.parquet")
    assert ds.num_rows == 2 and ds.report()["quarantined"] == 1 and ds.report()["read"] == 3
    assert pq.read_table(tmp_path / "bad.parquet").to_pylist()[0]["_line"] == 4
    j = tmp_path / "t.jsonl"
    j.write_text(json.dumps({"a": 1}) + "\n" + json.dumps({"a": 2}) + "\n{\"a\": 3,,}\n")
    with pytest.raises(ValueError, match=r"t\.jsonl: line 3: invalid JSON"):
        Dataset.from_json(j, cache_dir=False)
    pq.write_table(pa.table({"a": [1], "b": ["x"]}), tmp_path / "p1.parquet")
    pq.write_table(pa.table({"a": ["1"], "b": ["x"]}), tmp_path / "p2.parquet")
    with pytest.raises(ValueError, match=r"p2\.parquet: column 'a' has type string, but .*p1\.parquet has int64"):
        Dataset.from_parquet([tmp_path / "p1.parquet", tmp_path / "p2.parquet"], cache_dir=False)
    with pytest.raises(ValueError, match=r"p1\.parquet: column 'b' has type string, expected int64"):
        Dataset.from_parquet(tmp_path / "p1.parquet", schema=pa.schema([("b", pa.int64())]), cache_dir=False)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match=r"junk\.parquet: not a readable Parquet file"):
        Dataset.from_parquet(tmp_path / "junk.parquet", cache_dir=False)
