"""The tuning cache reader/writer: keys, the file location, atomic writes, corrupt files."""
import json
import os

import numpy as np
import pytest

from rtx.runtime import tuning


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "tuning.json"
    monkeypatch.setenv("RTX_TUNING_CACHE", str(path))
    tuning.clear_memo()
    yield path
    tuning.clear_memo()


def test_cache_path_env_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("RTX_TUNING_CACHE", str(tmp_path / "t.json"))
    assert tuning.cache_path() == tmp_path / "t.json"
    monkeypatch.delenv("RTX_TUNING_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and not os.uname().sysname == "Darwin":
        assert tuning.cache_path() == tmp_path / "xdg" / "rtx" / "tuning.json"


def test_shape_bucket_rounds_up_to_powers_of_two():
    assert tuning.shape_bucket((8, 64, 30, 32)) == "8x64x32x32"
    assert tuning.shape_bucket((1, 3, 33)) == "1x4x64"
    assert tuning.shape_bucket((0, 5)) == "1x8"
    assert tuning.shape_bucket(()) == "scalar"
    with pytest.raises(ValueError, match="non-negative"):
        tuning.shape_bucket((-1,))


def test_keys_name_op_bucket_dtype_device_and_machine():
    fp = tuning.machine_fingerprint()
    assert fp["cores"] == os.cpu_count() and fp["cpu"] and fp["blas"]
    key = tuning.make_key("conv2d", (8, 64, 30, 30), np.float32, "cpu")
    assert key == f"conv2d|8x64x32x32|float32|cpu|{fp['id']}"
    assert tuning.make_key("conv2d", (8, 64, 31, 29), "float32") == key      # same bucket
    assert tuning.make_key("conv2d", (8, 64, 31, 29), "float64") != key      # dtype matters
    assert tuning.make_key("linear", (8, 64, 31, 29), "float32") != key
    with pytest.raises(ValueError, match="op name"):
        tuning.make_key("a|b", (1,))


def test_store_then_lookup_roundtrip(cache):
    assert tuning.lookup("conv2d", (8, 64, 32, 32), "float32") is None   # no file: defaults
    tuning.store("conv2d", (8, 64, 32, 32), "float32", "cpu", {"chunk_bytes": 1 << 20}, best_s=0.01)
    assert json.loads(cache.read_text())["format"] == 1
    assert tuning.lookup("conv2d", (8, 64, 30, 31), "float32") == {"chunk_bytes": 1 << 20}
    assert tuning.lookup("conv2d", (8, 64, 32, 32), "float64") is None
    tuning.store("linear", (4, 4), "float32", "cpu", {"threads": 1})
    (e,) = [v for v in tuning.entries().values() if v["op"] == "conv2d"]
    assert e["best_s"] == 0.01 and e["machine"]["cores"] == os.cpu_count()
    assert len(tuning.entries()) == 2


def test_other_machine_entries_are_not_consulted(cache):
    key = tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 5})
    doc = json.loads(cache.read_text())
    other = key.rsplit("|", 1)[0] + "|0123456789ab"
    doc["entries"][other] = doc["entries"].pop(key)
    cache.write_text(json.dumps(doc))
    assert tuning.lookup("conv2d", (8,), "float32") is None


def test_corrupt_cache_is_ignored_with_a_warning(cache):
    cache.parent.mkdir(parents=True)
    cache.write_text('{"format": 1, "entries": {"conv2d|')   # a torn write from some other tool
    with pytest.warns(RuntimeWarning, match="ignored"):
        assert tuning.lookup("conv2d", (8,), "float32") is None
    cache.write_text("[1, 2]")
    with pytest.warns(RuntimeWarning, match="entries"):
        assert tuning.entries() == {}
    # storing over a corrupt file replaces it with a good one
    tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 7})
    assert tuning.lookup("conv2d", (8,), "float32") == {"chunk_bytes": 7}


def test_write_is_atomic(cache, monkeypatch):
    tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 1})
    before = cache.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(tuning.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 2})
    assert cache.read_bytes() == before                       # old file intact
    assert [p.name for p in cache.parent.iterdir()] == ["tuning.json"]   # no temporary left behind
    monkeypatch.undo()
    monkeypatch.setenv("RTX_TUNING_CACHE", str(cache))
    assert tuning.lookup("conv2d", (8,), "float32") == {"chunk_bytes": 1}


def test_lookup_sees_a_rewritten_file(cache):
    tuning.store("sdpa", (2, 64), "float32", "cpu", {"block": 64})
    assert tuning.lookup("sdpa", (2, 64), "float32") == {"block": 64}
    tuning.store("sdpa", (2, 64), "float32", "cpu", {"block": 128})
    assert tuning.lookup("sdpa", (2, 64), "float32") == {"block": 128}


def test_forced_overrides_the_file_in_this_thread_only(cache):
    import threading
    tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 1})
    with tuning.forced("conv2d", {"chunk_bytes": 2}):
        assert tuning.lookup("conv2d", (1, 2, 3), "float64") == {"chunk_bytes": 2}   # any shape
        assert tuning.lookup("linear", (8,), "float32") is None
        other = []
        t = threading.Thread(target=lambda: other.append(tuning.lookup("conv2d", (8,), "float32")))
        t.start()
        t.join()
        assert other == [{"chunk_bytes": 1}]                   # another thread still reads the file
        with tuning.forced("conv2d", None):
            assert tuning.lookup("conv2d", (8,), "float32") is None   # the kernel's default
    with tuning.forced(None, None):
        assert tuning.lookup("conv2d", (8,), "float32") is None        # every op on its default
    assert tuning.lookup("conv2d", (8,), "float32") == {"chunk_bytes": 1}
    with pytest.raises(ValueError, match="op name"):
        with tuning.forced(None, {"a": 1}):
            pass


def test_record_collects_the_keys_asked_for(cache):
    with tuning.record() as asked:
        tuning.lookup("conv2d", (8, 3), np.float32, "cpu")
        with tuning.forced("sdpa", {"block": 1}):
            tuning.lookup("sdpa", (2, 64), "float64")
    assert asked == [("conv2d", (8, 3), "float32", "cpu"), ("sdpa", (2, 64), "float64", "cpu")]
    tuning.lookup("conv2d", (8,), "float32")
    assert len(asked) == 2                                      # nothing after the block


def test_discard_removes_only_the_keys_given(cache):
    a = tuning.store("conv2d", (8,), "float32", "cpu", {"chunk_bytes": 1})
    tuning.store("linear", (8,), "float32", "cpu", {"threads": 1})
    assert tuning.discard([a, "no|such|key"]) == 1
    assert tuning.lookup("conv2d", (8,), "float32") is None
    assert tuning.lookup("linear", (8,), "float32") == {"threads": 1}
    assert tuning.discard([a]) == 0
