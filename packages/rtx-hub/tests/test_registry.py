"""Registry: register / list / get / promote / remove / revision, and every error's message."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto

import rtx
import rtx.nn as nn
from rtx.hub import ModelNotFoundError, Registry, RegistryError, register_class


def test_register_onnx_file_reads_signature_and_writes_layout(registry, onnx_file):
    mv = registry.register(onnx_file, "linear", "1.0.0", metadata={"accuracy": 0.93, "data": "digits"},
                           card="Multiplies by W.")
    d = registry.root / "linear" / "1.0.0"
    assert sorted(p.name for p in d.iterdir()) == ["README.md", "model.json", "model.onnx"]
    assert mv.artifact == d / "model.onnx" and mv.artifact.read_bytes() == onnx_file.read_bytes()
    assert (mv.format, mv.stage, mv.size) == ("onnx", "staging", onnx_file.stat().st_size)
    import hashlib

    assert mv.sha256 == hashlib.sha256(onnx_file.read_bytes()).hexdigest()
    # the initializer W is listed as a graph input in the file, but is not a model input
    assert mv.signature == {"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}],
                            "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 3]}]}
    info = json.loads((d / "model.json").read_text())
    assert {"name", "version", "stage", "format", "artifact", "sha256", "size", "signature", "metadata",
            "created"} <= set(info)
    assert "# linear 1.0.0" in mv.card and "Multiplies by W." in mv.card and "| x | FP32 | [-1, 4] |" in mv.card
    assert "**accuracy**: 0.93" in mv.card and mv.sha256 in mv.card
    # load() gives a path onnxruntime runs
    sess = ort.InferenceSession(mv.load())
    assert [i.name for i in sess.get_inputs()] == ["x"]


@pytest.mark.parametrize("elem,ort_type,kserve", [
    (TensorProto.FLOAT, "tensor(float)", "FP32"), (TensorProto.DOUBLE, "tensor(double)", "FP64"),
    (TensorProto.INT64, "tensor(int64)", "INT64"), (TensorProto.INT32, "tensor(int32)", "INT32"),
    (TensorProto.INT8, "tensor(int8)", "INT8"), (TensorProto.UINT8, "tensor(uint8)", "UINT8"),
    (TensorProto.BOOL, "tensor(bool)", "BOOL"), (TensorProto.STRING, "tensor(string)", "BYTES"),
    (TensorProto.FLOAT16, "tensor(float16)", "FP16"),
])
def test_onnx_element_types_map_to_kserve_datatypes(make_onnx, tmp_path, registry, elem, ort_type, kserve):
    p = tmp_path / "m.onnx"
    make_onnx(p, in_type=elem, shape=("n", 2, 5), out_shape=("n", 2, 5))
    sess = ort.InferenceSession(str(p))  # onnxruntime's view of the same graph, as the reference
    assert sess.get_inputs()[0].type == ort_type and sess.get_inputs()[0].shape == ["n", 2, 5]
    mv = registry.register(p, "t", "1.0.0")
    assert mv.signature["inputs"] == [{"name": "x", "datatype": kserve, "shape": [-1, 2, 5]}]
    assert mv.signature["outputs"] == [{"name": "y", "datatype": kserve, "shape": [-1, 2, 5]}]


def test_register_onnx_model_proto(make_onnx, registry):
    mv = registry.register(make_onnx(shape=(2, 4), out_shape=(2, 3)), "proto", "0.1.0")
    assert mv.format == "onnx" and mv.signature["inputs"][0]["shape"] == [2, 4]
    assert onnx.load(mv.load()).graph.node[0].op_type == "MatMul"


def test_register_rtx_checkpoint_and_load_it(registry, tmp_path):
    ckpt = {"format": "rtx-nlg-gpt/1", "model": {"w": rtx.randn(3, 2)}, "config": {"n_layer": 2}}
    rtx.save(ckpt, tmp_path / "gpt.rtx")
    sig = {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, -1]}], "outputs": []}
    mv = registry.register(tmp_path / "gpt.rtx", "gpt", "0.1.0", signature=sig)
    assert (mv.format, mv.checkpoint_format, mv.artifact.name) == ("rtx", "rtx-nlg-gpt/1", "model.rtx")
    assert mv.signature == sig
    back = mv.load()
    assert back["config"] == {"n_layer": 2}
    np.testing.assert_array_equal(back["model"]["w"].numpy(), ckpt["model"]["w"].numpy())


@register_class  # a test's class: load() rebuilds only allowed classes (see test_trust.py)
class TwoLayer(nn.Module):
    def __init__(self, d_in, hidden, d_out=2):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)

    def forward(self, features):
        return self.fc2(rtx.relu(self.fc1(features)))


def test_register_module_rebuilds_it_and_computes_signature(registry):
    model = TwoLayer(4, 8, d_out=3)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    mv = registry.register(model, "mlp", "1.0.0", example_inputs=x, module_args=(4, 8), module_kwargs={"d_out": 3})
    assert mv.signature == {"inputs": [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}],
                            "outputs": [{"name": "output", "datatype": "FP32", "shape": [-1, 3]}]}
    loaded = mv.load()
    assert type(loaded) is TwoLayer and not loaded.training
    with rtx.no_grad():
        np.testing.assert_allclose(loaded(rtx.tensor(x)).numpy(), model(rtx.tensor(x)).numpy(), rtol=1e-6)
    raw = mv.load(raw=True)
    assert raw["format"] == "rtx-module/1" and raw["class"].endswith(":TwoLayer") and raw["args"] == [4, 8]


def test_module_without_its_constructor_arguments_says_how_to_load(registry):
    mv = registry.register(TwoLayer(4, 8), "mlp", "1.0.0")
    with pytest.raises(RegistryError, match=r"mlp:1.0.0: cannot build .*TwoLayer from the saved arguments args=\[\] "
                                            r"kwargs=\{\}.*module_args=/module_kwargs=, or load\(raw=True\)"):
        mv.load()
    state = mv.load(raw=True)["model"]
    fresh = TwoLayer(4, 8)
    fresh.load_state_dict(state)


def test_list_is_sorted_by_name_then_semver(registry, onnx_file):
    for name, v in [("b", "1.10.0"), ("b", "1.2.0"), ("a", "2.0.0"), ("b", "1.2.0-rc.1"), ("b", "0.9.9"),
                    ("a", "10.0.0")]:
        registry.register(onnx_file, name, v)
    assert [(m.name, m.version) for m in registry.list()] == [
        ("a", "2.0.0"), ("a", "10.0.0"), ("b", "0.9.9"), ("b", "1.2.0-rc.1"), ("b", "1.2.0"), ("b", "1.10.0")]
    assert [m.version for m in registry.list("a")] == ["2.0.0", "10.0.0"]
    assert registry.list("zzz") == [] and registry.names() == ["a", "b"]


def test_get_prefers_production_then_highest(registry, onnx_file):
    for v in ("1.0.0", "1.1.0", "2.0.0-beta"):
        registry.register(onnx_file, "m", v)
    assert registry.get("m").version == "2.0.0-beta"  # no production version: the highest (semver order)
    registry.promote("m", "1.0.0", "production")
    assert registry.get("m").version == "1.0.0"
    assert registry.get("m", stage="staging").version == "2.0.0-beta"
    assert registry.get("m", "2.0.0-beta").stage == "staging"
    registry.promote("m", "1.1.0", "production")
    assert registry.get("m").version == "1.1.0"
    assert {m.version for m in registry.list("m") if m.stage == "production"} == {"1.0.0", "1.1.0"}
    mv = registry.promote("m", "2.0.0-beta", "production", archive_existing=True)
    assert mv.stage == "production"
    assert [(m.version, m.stage) for m in registry.list("m")] == [
        ("1.0.0", "archived"), ("1.1.0", "archived"), ("2.0.0-beta", "production")]


def test_not_found_errors_list_what_exists(registry, onnx_file):
    with pytest.raises(ModelNotFoundError, match=r"no model 'm' in the registry '.*'; models: \(none\)"):
        registry.get("m")
    registry.register(onnx_file, "m", "1.0.0")
    registry.register(onnx_file, "n", "0.1.0")
    with pytest.raises(ModelNotFoundError, match=r"no model 'x' .*; models: m, n$"):
        registry.get("x")
    with pytest.raises(ModelNotFoundError, match=r"model 'm' has no version '2.0.0'; versions: 1.0.0 \(staging\)"):
        registry.get("m", "2.0.0")
    with pytest.raises(ModelNotFoundError, match=r"model 'm' has no version in stage 'production'; versions: "
                                                 r"1.0.0 \(staging\)"):
        registry.get("m", stage="production")
    with pytest.raises(ModelNotFoundError, match=r"m:1.0.0 is in stage 'staging', not 'archived'"):
        registry.get("m", "1.0.0", stage="archived")
    with pytest.raises(ModelNotFoundError):
        registry.promote("m", "9.9.9", "production")
    with pytest.raises(ModelNotFoundError):
        registry.remove("n", "9.9.9")
    assert isinstance(ModelNotFoundError("x"), LookupError)


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".hidden", "", "-x", "a b", "x" * 129, None, "é"])
def test_bad_names_are_refused(registry, onnx_file, name):
    with pytest.raises(RegistryError, match=r"invalid model name .*letters, digits.*no '/', no '..'"):
        registry.register(onnx_file, name, "1.0.0")
    assert not (registry.root.parent / "x").exists()


@pytest.mark.parametrize("version,hint", [
    ("1.0", "all three parts are required: '1.0.0'"), ("2", "all three parts are required: '2.0.0'"),
    ("v1.2.3", "drop the leading 'v': '1.2.3'"), ("01.2.3", ""), ("1.2.3-", ""), ("1.2.3+", ""),
    ("latest", ""), ("1.2.3.4", ""), ("../1.0.0", ""),
])
def test_bad_versions_are_refused(registry, onnx_file, version, hint):
    with pytest.raises(RegistryError, match="expected a semantic version MAJOR.MINOR.PATCH") as e:
        registry.register(onnx_file, "m", version)
    assert hint in str(e.value)
    with pytest.raises(RegistryError, match=r"version must be a semantic version string like '1.2.0', got 1 \(int\)"):
        registry.register(onnx_file, "m", 1)


def test_duplicate_versions_are_refused(registry, onnx_file):
    registry.register(onnx_file, "m", "1.0.0+build.1")
    with pytest.raises(RegistryError, match=r"m:1.0.0\+build.1 is already registered \(stage staging\); versions "
                                            "are immutable"):
        registry.register(onnx_file, "m", "1.0.0+build.1")
    with pytest.raises(RegistryError, match=r"has the same precedence as '1.0.0\+build.1'"):
        registry.register(onnx_file, "m", "1.0.0")
    registry.register(onnx_file, "m", "1.0.0-rc.1")  # a pre-release is another version


def test_bad_inputs_are_refused_with_clear_messages(registry, onnx_file, tmp_path):
    with pytest.raises(RegistryError, match="invalid stage 'prod': expected one of staging, production, archived"):
        registry.register(onnx_file, "m", "1.0.0", stage="prod")
    with pytest.raises(RegistryError, match=r"metadata\['f'\] = .* cannot be stored as JSON"):
        registry.register(onnx_file, "m", "1.0.0", metadata={"f": object()})
    with pytest.raises(RegistryError, match=r"metadata must be a dict with string keys"):
        registry.register(onnx_file, "m", "1.0.0", metadata={1: 2})
    with pytest.raises(RegistryError, match=r"signature\['inputs'\]\[0\]\['datatype'\] must be one of BOOL, .*got "
                                            r"'float32'"):
        registry.register(onnx_file, "m", "1.0.0", signature={"inputs": [{"name": "x", "datatype": "float32",
                                                                           "shape": [1]}]})
    with pytest.raises(RegistryError, match=r"\['shape'\] must be a list of ints \(-1 for any size\), got \[-2\]"):
        registry.register(onnx_file, "m", "1.0.0", signature={"outputs": [{"name": "y", "datatype": "FP32",
                                                                            "shape": [-2]}]})
    with pytest.raises(RegistryError, match="does not exist"):
        registry.register(tmp_path / "missing.onnx", "m", "1.0.0")
    (tmp_path / "junk.bin").write_bytes(b"\x00junk" * 10)
    with pytest.raises(RegistryError, match="is neither an ONNX model nor an rtx checkpoint"):
        registry.register(tmp_path / "junk.bin", "m", "1.0.0")
    (tmp_path / "bad.onnx").write_bytes(b"not a protobuf \xff\xff")
    with pytest.raises(RegistryError, match="is not a valid ONNX model"):
        registry.register(tmp_path / "bad.onnx", "m", "1.0.0")
    with pytest.raises(RegistryError, match=r"cannot register a builtins.dict: expected a path"):
        registry.register({"w": 1}, "m", "1.0.0")
    assert registry.list() == [] and registry.revision() == 0
    assert not any((registry.root / ".tmp").iterdir())  # failed registrations leave nothing behind


def test_onnx_with_external_data_is_refused(make_onnx, registry, tmp_path):
    model = make_onnx()
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    with pytest.raises(RegistryError, match="keeps 1 tensor.* in external data files .*W.*save_as_external_data"):
        registry.register(tmp_path / "ext.onnx", "m", "1.0.0")


def test_remove_and_revision(registry, onnx_file):
    assert registry.revision() == 0
    registry.register(onnx_file, "m", "1.0.0")
    registry.register(onnx_file, "m", "1.1.0")
    registry.promote("m", "1.1.0", "production")
    assert registry.revision() == 3
    removed = registry.remove("m", "1.0.0")
    assert removed.version == "1.0.0" and not removed.path.exists()
    assert [m.version for m in registry.list()] == ["1.1.0"] and registry.revision() == 4
    registry.remove("m", "1.1.0")
    assert registry.names() == [] and not (registry.root / "m").exists()
    registry.register(onnx_file, "m", "1.0.0")  # a removed version can be registered again
    assert registry.revision() == 6


def test_default_root_follows_rtx_home(monkeypatch, tmp_path):
    monkeypatch.setenv("RTX_HOME", str(tmp_path / "home"))
    assert Registry().root == tmp_path / "home" / "registry"
    monkeypatch.delenv("RTX_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert Registry().root == tmp_path / "user" / ".rtx" / "registry"
    (tmp_path / "file").write_text("x")
    with pytest.raises(RegistryError, match="exists and is not a directory"):
        Registry(tmp_path / "file")


def test_reading_a_registry_that_does_not_exist(tmp_path):
    reg = Registry(tmp_path / "none")
    assert reg.list() == [] and reg.revision() == 0 and not reg.root.exists()


def test_a_damaged_model_json_is_skipped_by_list_and_named_by_get(registry, onnx_file):
    registry.register(onnx_file, "m", "1.0.0")
    registry.register(onnx_file, "m", "1.1.0")
    (registry.root / "m" / "1.0.0" / "model.json").write_text("{not json")
    with pytest.warns(RuntimeWarning, match=r"skipping .*1.0.0.*model.json' is unreadable"):
        assert [m.version for m in registry.list()] == ["1.1.0"]
    with pytest.raises(RegistryError, match=r"model.json' is unreadable \(JSONDecodeError"):
        registry.get("m", "1.0.0")
