"""Regressions found in review: names/versions with hidden characters, damaged state files,
unwritable registries, crash litter, and promote racing remove."""
import errno
import multiprocessing as mp
import os
import threading

import pytest

from rtx.hub import ModelNotFoundError, Registry, RegistryError
from rtx.hub.semver import check_version


@pytest.mark.parametrize("name", ["m\n", "m\r", "m\t", "m\x00"])
def test_names_with_control_characters_are_refused(registry, onnx_file, name):
    # "$" in a regex also matches before a trailing "\n": "m\n" used to become a directory name.
    with pytest.raises(RegistryError, match="invalid model name"):
        registry.register(onnx_file, name, "1.0.0")
    assert registry.list() == []


@pytest.mark.parametrize("version", ["1.0.0\n", "1.0.1\u0661", "\u0661.0.0", "1.0.0-rc.\u0661", "1.0.0+b\n"])
def test_versions_with_newlines_or_unicode_digits_are_refused(registry, onnx_file, version):
    with pytest.raises(RegistryError, match="invalid version"):
        check_version(version)
    with pytest.raises(RegistryError, match="invalid version"):
        registry.register(onnx_file, "m", version)
    assert registry.list() == []


def test_get_finds_a_version_that_differs_only_in_build_metadata(registry, onnx_file):
    registry.register(onnx_file, "m", "1.0.0+build.7")
    assert registry.get("m", "1.0.0").version == "1.0.0+build.7"
    assert registry.get("m", "1.0.0+other").version == "1.0.0+build.7"  # same precedence, the only one
    with pytest.raises(ModelNotFoundError, match="no version '1.0.1'"):
        registry.get("m", "1.0.1")


def test_damaged_revision_file_stops_writers_before_any_change(registry, onnx_file):
    registry.register(onnx_file, "m", "1.0.0")
    (registry.root / ".revision").write_text("garbage\n")
    with pytest.raises(RegistryError, match=r"\.revision' holds 'garbage', not an integer"):
        registry.revision()
    with pytest.raises(RegistryError, match="not an integer"):
        registry.register(onnx_file, "m", "2.0.0")
    with pytest.raises(RegistryError, match="not an integer"):
        registry.remove("m", "1.0.0")
    assert [mv.version for mv in registry.list("m")] == ["1.0.0"]  # nothing half-done
    assert list((registry.root / ".tmp").iterdir()) == []
    (registry.root / ".revision").write_text("41\n")
    registry.register(onnx_file, "m", "2.0.0")
    assert registry.revision() == 42


def test_registry_root_below_a_file_is_a_registry_error(tmp_path, onnx_file):
    (tmp_path / "afile").write_text("x")
    reg = Registry(tmp_path / "afile" / "registry")
    assert reg.list() == []  # reading finds nothing
    with pytest.raises(RegistryError, match=r"cannot register m:1.0.0 in the registry .*Not a directory"):
        reg.register(onnx_file, "m", "1.0.0")


def test_read_only_filesystem_is_a_registry_error(registry, onnx_file, monkeypatch):
    registry.register(onnx_file, "m", "1.0.0")

    def read_only(*a, **k):  # what mkdtemp/os.replace raise on a read-only mount (root ignores chmod)
        raise OSError(errno.EROFS, "Read-only file system", str(registry.root / ".tmp"))

    import rtx.hub.registry as registry_module

    monkeypatch.setattr(registry_module.tempfile, "mkdtemp", read_only)
    with pytest.raises(RegistryError, match=r"cannot register m:2.0.0 .*Read-only file system.*must be writable"):
        registry.register(onnx_file, "m", "2.0.0")
    monkeypatch.setattr(registry_module, "write_json", read_only)
    with pytest.raises(RegistryError, match=r"cannot promote m:1.0.0 .*Read-only file system"):
        registry.promote("m", "1.0.0", "production")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_is_a_registry_error(tmp_path, onnx_file):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(RegistryError, match="Permission denied.*must be writable"):
            Registry(ro).register(onnx_file, "m", "1.0.0")
    finally:
        ro.chmod(0o755)


def _crash_mid_copy(root, onnx_path):
    import rtx.hub.registry as registry_module

    def partial_copy(src, dst):
        with open(dst, "wb") as f:
            f.write(b"half an artifact")
        os._exit(0)  # killed mid-register: no finally runs

    registry_module.copy_hashed = partial_copy
    Registry(root).register(onnx_path, "m", "1.0.0")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_writer_killed_mid_register_leaves_litter_that_breaks_nothing(tmp_path, onnx_file):
    root = tmp_path / "registry"
    p = mp.get_context("fork").Process(target=_crash_mid_copy, args=(root, onnx_file))
    p.start()
    p.join(30)
    litter = list((root / ".tmp").iterdir())
    assert len(litter) == 1 and (litter[0] / "model.onnx").read_bytes() == b"half an artifact"
    reg = Registry(root)
    assert reg.list() == [] and reg.revision() == 0
    mv = reg.register(onnx_file, "m", "1.0.0")  # the same name and version as the crashed writer
    assert mv.verify() and [v.uri for v in reg.list()] == ["m:1.0.0"] and reg.revision() == 1


def test_concurrent_promote_and_remove_threads(registry, onnx_file):
    n = 12
    for i in range(n):
        registry.register(onnx_file, "c", f"0.{i}.0")
    unexpected, done = [], []

    def run(fn, *args):
        try:
            fn(*args)
            done.append(fn.__name__)
        except ModelNotFoundError:
            pass  # removed first: the one acceptable failure (its promote changes nothing)
        except BaseException as e:  # noqa: BLE001 - report anything else
            unexpected.append(repr(e))

    threads = [threading.Thread(target=run, args=(registry.promote, "c", f"0.{i}.0", "production")) for i in range(n)]
    threads += [threading.Thread(target=run, args=(registry.remove, "c", f"0.{i}.0")) for i in range(0, n, 2)]
    threads += [threading.Thread(target=run, args=(registry.get, "c")) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert unexpected == []
    left = registry.list("c")
    assert [mv.version for mv in left] == [f"0.{i}.0" for i in range(1, n, 2)]
    assert all(mv.stage == "production" for mv in left)  # every surviving promote landed
    # every change bumps the revision exactly once, none is lost: n registers, the promotes that found
    # their version (a promote racing ahead of its remove, or behind it), n // 2 removes
    assert done.count("remove") == n // 2 and n // 2 <= done.count("promote") <= n
    assert registry.revision() == n + done.count("promote") + n // 2
    assert list((registry.root / ".tmp").iterdir()) == []


def test_cli_unwritable_or_damaged_registry_exits_1_without_traceback(capsys, tmp_path, onnx_file):
    from rtx.hub.cli import hub_command

    (tmp_path / "afile").write_text("x")
    code = hub_command(["register", "m", str(onnx_file), "--version", "1.0.0",
                        "--registry", str(tmp_path / "afile" / "reg")])
    out, err = capsys.readouterr()
    assert code == 1 and "rtx hub register: error: cannot register m:1.0.0" in err and "Traceback" not in err
    reg = tmp_path / "reg"
    assert hub_command(["register", "m", str(onnx_file), "--version", "1.0.0", "--registry", str(reg)]) == 0
    (reg / ".revision").write_text("oops")
    capsys.readouterr()
    code = hub_command(["rm", "m", "1.0.0", "--registry", str(reg)])
    out, err = capsys.readouterr()
    assert code == 1 and "holds 'oops', not an integer" in err and "Traceback" not in err
    code = hub_command(["register", "m\n", str(onnx_file), "--version", "2.0.0", "--registry", str(reg)])
    assert code == 1 and "invalid model name" in capsys.readouterr().err


def test_an_unreadable_model_file_is_named_as_the_source_not_the_registry(registry, onnx_file, monkeypatch):
    import rtx.hub.registry as registry_module

    def unreadable(src, dst):  # what open(src) raises for a file without read permission
        raise PermissionError(errno.EACCES, "Permission denied", str(src))

    monkeypatch.setattr(registry_module, "copy_hashed", unreadable)
    with pytest.raises(RegistryError, match=r"cannot register m:1.0.0: reading '.*model.onnx' failed: Permission"):
        registry.register(onnx_file, "m", "1.0.0")
    assert registry.list() == [] and list((registry.root / ".tmp").iterdir()) == []


@pytest.mark.parametrize("field, value, message", [
    ("artifact", "../../../etc/passwd", "not a file name inside the version's directory"),
    ("artifact", "/etc/passwd", "not a file name inside"),
    ("name", "other", r"describes other:1.0.0 but lies in m/1.0.0"),
    ("version", "9.9.9", r"describes m:9.9.9 but lies in m/1.0.0"),
])
def test_an_edited_model_json_cannot_point_outside_its_version(registry, onnx_file, field, value, message):
    import json

    mv = registry.register(onnx_file, "m", "1.0.0")
    info = json.loads((mv.path / "model.json").read_text())
    info[field] = value
    (mv.path / "model.json").write_text(json.dumps(info))
    with pytest.raises(RegistryError, match=message):
        registry.get("m", "1.0.0")
    with pytest.warns(RuntimeWarning, match=message):
        assert registry.list() == []
