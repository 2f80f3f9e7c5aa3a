"""The Arrow cache's files are written through rtx.config.files.write_atomic: a write that fails
part-way leaves the previous files as they were and no temporary file behind."""
import os

import pyarrow as pa
import pytest

from rtx.etl import fingerprint as fpr


class _DiskFull(Exception):
    pass


class _FailingWriter:
    """An Arrow file writer that writes part of the table, then fails (a full disk, a killed job)."""

    def __init__(self, writer):
        self.writer = writer

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.writer.close()
        return False

    def write_table(self, table):
        self.writer.write_table(table.slice(0, 1))
        raise _DiskFull("no space left on device")


def test_save_then_load_round_trips(tmp_path):
    t = pa.table({"a": list(range(100)), "s": [str(i) for i in range(100)]})
    path = fpr.save(tmp_path, "k", t, {"quarantined": 2})
    table, info = fpr.load(tmp_path, "k")
    assert path == tmp_path / "k.arrow" and table.equals(t) and info == {"quarantined": 2}
    assert sorted(os.listdir(tmp_path)) == ["k.arrow", "k.json"]


def test_a_failed_write_keeps_the_old_files_and_leaves_no_temporary(tmp_path, monkeypatch):
    old = pa.table({"a": [1, 2, 3]})
    fpr.save(tmp_path, "k", old, {"quarantined": 0})
    real_new_file = pa.ipc.new_file
    monkeypatch.setattr(pa.ipc, "new_file", lambda sink, schema: _FailingWriter(real_new_file(sink, schema)))
    with pytest.raises(_DiskFull):
        fpr.save(tmp_path, "k", pa.table({"a": list(range(1000))}), {"quarantined": 0})
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["k.arrow", "k.json"]
    table, info = fpr.load(tmp_path, "k")
    assert table.equals(old) and info == {"quarantined": 0}
