"""write_atomic: complete new content or the old one after a crash, no temporary file left behind,
fsync on the file and on its folder, open()'s permissions."""
import os

import pytest

from rtx.config import files
from rtx.config.files import write_atomic


def _listing(folder):
    return sorted(os.listdir(folder))


def test_writes_text_bytes_and_callables(tmp_path):
    p = tmp_path / "a.txt"
    write_atomic(p, "héllo\n")
    assert p.read_text(encoding="utf-8") == "héllo\n"
    write_atomic(str(p), b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    write_atomic(p, lambda f: f.write(b"from a callable"))
    assert p.read_bytes() == b"from a callable"
    write_atomic(p, lambda f: f.write("a,b\r\n"), text=True, newline="")
    assert p.read_bytes() == b"a,b\r\n"
    assert _listing(tmp_path) == ["a.txt"]


@pytest.mark.parametrize("where", ["replace", "callable", "fsync"])
def test_a_crash_keeps_the_old_content_and_leaves_no_temporary_file(tmp_path, monkeypatch, where):
    p = tmp_path / "state.json"
    p.write_text("old")

    def boom(*a, **k):
        raise OSError("simulated crash")

    data = "new"
    if where == "replace":
        monkeypatch.setattr(files.os, "replace", boom)
    elif where == "fsync":
        monkeypatch.setattr(files.os, "fsync", boom)
    else:
        def data(f):
            f.write(b"half of the new")
            boom()
    with pytest.raises(OSError, match="simulated crash"):
        write_atomic(p, data)
    assert p.read_text() == "old"
    assert _listing(tmp_path) == ["state.json"]


def test_a_crash_before_the_first_write_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(files.os, "replace", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "new.txt", "x")
    assert _listing(tmp_path) == []


def test_fsyncs_the_file_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd")
                       else None))
        real_fsync(fd)

    def replace(a, b):
        events.append(("replace", None))
        real_replace(a, b)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    write_atomic(tmp_path / "f", "x")
    kinds = [e[0] for e in events]
    assert kinds == ["fsync", "replace", "fsync"]
    if os.path.exists("/proc/self/fd"):  # Linux: the first fsync is the file's, the last the folder's
        assert [e[1] for e in events] == [False, None, True]


def test_permissions_are_those_of_open(tmp_path):
    p = tmp_path / "cfg.toml"
    write_atomic(p, "a = 1\n")
    q = tmp_path / "plain"
    q.write_text("a = 1\n")
    assert (p.stat().st_mode & 0o777) == (q.stat().st_mode & 0o777)
    os.chmod(p, 0o640)
    write_atomic(p, "a = 2\n")
    assert p.stat().st_mode & 0o777 == 0o640


def test_bad_data_is_refused(tmp_path):
    with pytest.raises(TypeError, match="bytes, a str or a callable"):
        write_atomic(tmp_path / "x", 3)
    assert _listing(tmp_path) == []
