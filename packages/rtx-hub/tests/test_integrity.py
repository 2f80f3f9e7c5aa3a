"""A tampered, truncated or missing artifact is refused by verify() and load()."""
import hashlib
import os

import pytest

import rtx
from rtx.hub import IntegrityError, ModelNotFoundError, RegistryError


def _flip_one_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture(params=["onnx", "rtx"])
def version(request, registry, onnx_file, tmp_path):
    if request.param == "onnx":
        return registry.register(onnx_file, "m", "1.0.0")
    rtx.save({"w": rtx.randn(16, 16)}, tmp_path / "c.rtx")
    return registry.register(tmp_path / "c.rtx", "m", "1.0.0")


def test_intact_artifact_verifies(version):
    assert version.verify() == version.artifact
    assert hashlib.sha256(version.artifact.read_bytes()).hexdigest() == version.sha256


def test_one_flipped_byte_is_refused(version):
    _flip_one_byte(version.artifact, version.size // 2)
    found = hashlib.sha256(version.artifact.read_bytes()).hexdigest()
    for call in (version.verify, version.load):
        with pytest.raises(IntegrityError) as e:
            call()
        msg = str(e.value)
        assert str(version.artifact) in msg and version.sha256 in msg and found in msg
        assert "same size, different bytes (modified)" in msg and "Refusing to load it" in msg
        assert (e.value.path, e.value.expected, e.value.found) == (version.artifact, version.sha256, found)
    assert isinstance(e.value, RegistryError)


def test_truncated_artifact_is_refused(version):
    with open(version.artifact, "r+b") as f:
        f.truncate(version.size - 7)
    with pytest.raises(IntegrityError, match=rf"{version.sha256}, found [0-9a-f]{{64}}; it is {version.size - 7:,} "
                                             rf"bytes, {version.size:,} were registered \(truncated or extended\)"):
        version.load()


def test_missing_artifact_is_refused(version):
    os.unlink(version.artifact)
    with pytest.raises(IntegrityError, match=r"m:1.0.0: artifact '.*model\.(onnx|rtx)' is missing \(expected sha256 "
                                             rf"{version.sha256}\)"):
        version.verify()


def test_a_removed_version_is_not_found_rather_than_damaged(registry, version):
    registry.remove("m", "1.0.0")
    with pytest.raises(ModelNotFoundError, match=r"m:1.0.0 was removed from the registry"):
        version.load()


def test_registry_verify_reports_the_bad_version(registry, onnx_file):
    registry.register(onnx_file, "a", "1.0.0")
    bad = registry.register(onnx_file, "b", "1.0.0")
    assert len(registry.verify()) == 2
    _flip_one_byte(bad.artifact, 0)
    registry.verify("a")
    with pytest.raises(IntegrityError, match="b:1.0.0"):
        registry.verify()
