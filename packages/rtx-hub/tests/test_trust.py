"""No code runs because a registry file names it (issue 24): a module checkpoint's "class" is
resolved against an allow-list before anything is imported or called.

Hostile checkpoints are written with rtx.save and registered through the public API, as anyone who
can write to the registry could; each refusal is proved by a side effect that did not happen (a
marker file the named code would have written, a counted os.system, a module not imported)."""
import os
import sys
import textwrap

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.hub import RegistryError, UntrustedClassError, register_class, registered_classes, unregister_class
from rtx.hub.model_version import MODULE_FORMAT

X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)


def hostile(registry, tmp_path, where, args=(), kwargs=None, name="evil", model=None):
    """Register an rtx-module/1 checkpoint naming the class `where`, as an attacker would write it."""
    path = tmp_path / f"{name}.rtx"
    rtx.save({"format": MODULE_FORMAT, "class": where, "args": list(args), "kwargs": kwargs or {},
              "model": model or {}}, path)
    mv = registry.register(path, name, "1.0.0")
    assert mv.checkpoint_format == MODULE_FORMAT  # what routes rtx serve to load() too
    return mv


def forward(model, x=X):
    with rtx.no_grad():
        return model(rtx.tensor(x)).numpy()


@pytest.fixture
def system_calls(monkeypatch):
    """os.system, counting its calls (and not running them)."""
    calls = []
    monkeypatch.setattr(os, "system", lambda *a, **k: calls.append(a) or 0)
    return calls


def write_module(folder, name, source):
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


# ---- hostile checkpoints -------------------------------------------------------------------------


@pytest.mark.parametrize("trust", [False, True])
@pytest.mark.parametrize("where, make_args", [
    ("os:system", lambda m: [f"touch {m}"]),
    ("subprocess:Popen", lambda m: [["touch", str(m)]]),
    ("builtins:eval", lambda m: [f"open({str(m)!r}, 'w').close()"]),
    ("builtins:exec", lambda m: [f"open({str(m)!r}, 'w').close()"]),
    ("rtx.hub.fsutil:write_atomic", lambda m: [str(m), "pwned"]),  # a real rtx function, not a module class
])
def test_hostile_callables_are_refused_and_never_called(registry, tmp_path, system_calls, where, make_args, trust):
    marker = tmp_path / "marker"
    mv = hostile(registry, tmp_path, where, make_args(marker))
    # trust_remote_code=True trusts the import, never the call of something that is not an nn.Module class
    with pytest.raises(UntrustedClassError) as e:
        mv.load(trust_remote_code=trust)
    assert where in str(e.value) and e.value.class_path == where
    if trust:
        assert "not a class" in str(e.value) or "not a subclass of rtx.nn.Module" in str(e.value)
    assert not marker.exists() and system_calls == []


def test_the_refusal_says_how_to_allow_a_class(registry, tmp_path, system_calls):
    mv = hostile(registry, tmp_path, "os:system", ["echo hi"])
    with pytest.raises(UntrustedClassError, match=r"evil:1\.0\.0: the checkpoint names the class 'os:system'") as e:
        mv.load()
    msg = str(e.value)
    assert "rtx.hub.register_class" in msg and "'rtx.hub.classes'" in msg and "trust_remote_code=True" in msg
    assert isinstance(e.value, RegistryError)  # the hub's error base: rtx serve reports it as a failed load
    assert mv.load(raw=True)["class"] == "os:system"  # the raw checkpoint is still readable: nothing runs


def test_module_is_not_imported_without_trust(registry, tmp_path, monkeypatch):
    """A module on sys.path that writes a marker when imported: refused without importing it;
    trust_remote_code=True is the explicit opt-in that does import and build it."""
    marker = tmp_path / "imported"
    write_module(tmp_path, "hub_marker_net", f"""
        import rtx.nn as nn
        open({str(marker)!r}, "w").close()

        class Net(nn.Module):
            def __init__(self, d_in, d_out):
                super().__init__()
                self.fc = nn.Linear(d_in, d_out)

            def forward(self, x):
                return self.fc(x)
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hub_marker_net", raising=False)
    weights = nn.Linear(4, 2)
    mv = hostile(registry, tmp_path, "hub_marker_net:Net", [4, 2], model={f"fc.{k}": v for k, v in
                                                                         weights.state_dict().items()})
    with pytest.raises(UntrustedClassError, match="hub_marker_net:Net"):
        mv.load()
    assert not marker.exists() and "hub_marker_net" not in sys.modules

    loaded = mv.load(trust_remote_code=True)
    assert marker.exists() and type(loaded).__module__ == "hub_marker_net" and not loaded.training
    np.testing.assert_allclose(forward(loaded), forward(weights), rtol=1e-6)


def test_a_class_that_is_not_a_module_is_never_instantiated(registry, tmp_path, monkeypatch):
    marker = tmp_path / "built"
    write_module(tmp_path, "hub_plain_class", """
        class Plain:
            def __init__(self, path):
                open(path, "w").close()
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    mv = hostile(registry, tmp_path, "hub_plain_class:Plain", [str(marker)])
    with pytest.raises(UntrustedClassError, match="not a subclass of rtx.nn.Module"):
        mv.load(trust_remote_code=True)
    import hub_plain_class
    with pytest.raises(TypeError, match="register_class expects an rtx.nn.Module subclass, got the class Plain"):
        register_class(hub_plain_class.Plain)
    with pytest.raises(TypeError, match="got a builtin_function_or_method"):
        register_class(os.system)
    assert not marker.exists()


def plant(tmp_path, monkeypatch, relpath, marker):
    """A file under tmp_path/rtx/ that writes `marker` when imported, reachable as rtx.<...>: tmp_path
    on sys.path and its rtx/ in rtx.__path__, as pkgutil.extend_path adds any rtx/ folder on sys.path."""
    f = tmp_path / "rtx" / relpath
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"open({str(marker)!r}, 'w').close()\nimport rtx.nn as nn\nclass X(nn.Module):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(rtx, "__path__", list(rtx.__path__) + [str(tmp_path / "rtx")])


@pytest.mark.parametrize("relpath, module", [
    ("evil.py", "rtx.evil"),                     # not an rtx package at all
    ("cfd/__init__.py", "rtx.cfd"),              # a known rtx package name that is not installed here
    ("utils/evil.py", "rtx.utils.evil"),         # inside rtx.utils, a namespace folder several packages share
])
def test_planted_rtx_modules_are_not_imported(registry, tmp_path, monkeypatch, relpath, module):
    import importlib.util
    marker = tmp_path / "planted"
    plant(tmp_path, monkeypatch, relpath, marker)
    if module == "rtx.cfd":
        try:
            import importlib.metadata
            importlib.metadata.distribution("rtx-cfd")
            pytest.skip("rtx-cfd is installed here")
        except importlib.metadata.PackageNotFoundError:
            pass
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin.startswith(str(tmp_path))  # importing it would run the plant
    mv = hostile(registry, tmp_path, f"{module}:X")
    with pytest.raises(UntrustedClassError, match=rf"'{module}:X' \(it is not a module of an installed rtx package\)"):
        mv.load()
    assert not marker.exists() and module not in sys.modules


@pytest.mark.parametrize("where", ["rtx.nn:Module.__subclasses__", "os.system", "os:", ":system", "os:system()",
                                   "a b:C"])
def test_malformed_class_paths_are_refused(registry, tmp_path, where, system_calls):
    mv = hostile(registry, tmp_path, where, ["echo hi"])
    with pytest.raises(UntrustedClassError, match="is not a \"module:qualname\" path of a class"):
        mv.load(trust_remote_code=True)
    assert system_calls == []


def test_class_field_of_the_wrong_type(registry, tmp_path):
    with pytest.raises(RegistryError, match=r"\"class\" field is a int, expected a \"module:qualname\" string"):
        hostile(registry, tmp_path, 42).load()


def test_an_rtx_attribute_that_is_a_foreign_class_is_refused(registry, tmp_path, monkeypatch):
    """An rtx module's attribute naming a class defined elsewhere does not launder it."""
    class Foreign(nn.Module):
        pass
    import rtx.hub.trust
    monkeypatch.setattr(rtx.hub.trust, "Alias", Foreign, raising=False)
    with pytest.raises(UntrustedClassError, match="defined outside rtx's installed packages"):
        hostile(registry, tmp_path, "rtx.hub.trust:Alias").load()


def test_trust_remote_code_with_a_missing_module(registry, tmp_path):
    mv = hostile(registry, tmp_path, "no_such_module_xyz:Net")
    with pytest.raises(RegistryError, match=r"cannot import the module class 'no_such_module_xyz:Net' "
                                            r"\(ModuleNotFoundError"):
        mv.load(trust_remote_code=True)


# ---- constructor arguments: JSON values only ----------------------------------------------------


class Holder(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.spec = spec


def test_arguments_that_look_like_class_references_stay_data(registry, tmp_path, system_calls):
    register_class(Holder)
    try:
        spec = {"class": "os:system", "args": ["echo hi"], "nested": [{"class": "subprocess:Popen"}]}
        loaded = hostile(registry, tmp_path, f"{Holder.__module__}:Holder", [spec]).load()
    finally:
        unregister_class(Holder)
    assert type(loaded) is Holder and loaded.spec == spec and system_calls == []


def test_arguments_that_are_not_json_are_refused(registry, tmp_path):
    mv = hostile(registry, tmp_path, "rtx.nn.modules.linear:Linear", [rtx.ones(2), 3])
    with pytest.raises(RegistryError, match=r"evil:1\.0\.0: constructor argument args\[0\] is a .*Tensor: a module "
                                            r"is rebuilt only from JSON values"):
        mv.load()
    mv2 = hostile(registry, tmp_path, "rtx.nn.modules.linear:Linear", [4], {"bias": {"w": rtx.ones(1)}}, name="e2")
    with pytest.raises(RegistryError, match=r"kwargs\['bias'\]\['w'\] is a"):
        mv2.load()
    with pytest.raises(RegistryError, match=r"register: constructor argument args\[0\] is a .*Linear"):
        registry.register(nn.Sequential(nn.Linear(2, 2)), "seq", "1.0.0", module_args=[nn.Linear(2, 2)])


# ---- what does load -----------------------------------------------------------------------------


def test_rtx_own_classes_load(registry):
    lin = nn.Linear(4, 3)
    back = registry.register(lin, "linear", "1.0.0", module_args=(4, 3)).load()
    assert type(back) is nn.Linear
    np.testing.assert_allclose(forward(back), forward(lin), rtol=1e-6)

    conv = nn.Conv2d(1, 2, kernel_size=3, padding=1, bias=False)
    back = registry.register(conv, "conv", "1.0.0", module_args=(1, 2),
                             module_kwargs={"kernel_size": 3, "padding": 1, "bias": False}).load()
    img = X.reshape(1, 1, 3, 4)
    assert type(back) is nn.Conv2d and back.bias is None
    np.testing.assert_allclose(forward(back, img), forward(conv, img), rtol=1e-6)


def test_an_installed_rtx_package_outside_known_packages_loads(registry):
    """rtx-demo is an installed rtx distribution though not in rtx.KNOWN_PACKAGES."""
    demo = pytest.importorskip("rtx.demo.model")
    model = demo.DigitsCNN().eval()
    img = np.random.default_rng(1).random((2, 1, 8, 8), dtype=np.float32)
    back = registry.register(model, "digits", "1.0.0").load()
    assert type(back) is demo.DigitsCNN
    np.testing.assert_allclose(forward(back, img), forward(model, img), rtol=1e-5, atol=1e-6)


class MLP(nn.Module):
    """A user's model holding an nn.Sequential of Linear layers."""

    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))

    def forward(self, x):
        return self.net(x)


def test_user_class_registered_or_trusted(registry):
    model = MLP(4, 8, 3)
    mv = registry.register(model, "mlp", "1.0.0", module_args=(4, 8, 3))
    with pytest.raises(UntrustedClassError, match=r"'[\w.-]+:MLP'.*rtx\.hub\.register_class"):
        mv.load()
    back = mv.load(trust_remote_code=True)  # its module is already imported: nothing new runs
    np.testing.assert_allclose(forward(back), forward(model), rtol=1e-6)
    assert register_class(MLP) is MLP  # also a decorator
    try:
        assert f"{MLP.__module__}:MLP" in registered_classes()
        back = mv.load()
        assert type(back) is MLP and not back.training
        np.testing.assert_allclose(forward(back), forward(model), rtol=1e-6)
    finally:
        unregister_class(MLP)
    with pytest.raises(UntrustedClassError):
        mv.load()


def write_distribution(folder, name, entry_points=None, record=None):
    """A .dist-info as pip writes it: what importlib.metadata reads for an installed package."""
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)
    if record is not None:
        (info / "RECORD").write_text("".join(f"{p},,\n" for p in record))


def test_entry_point_class_loads(registry, tmp_path, monkeypatch):
    write_module(tmp_path, "hub_plugin_models", """
        import rtx.nn as nn

        class TinyNet(nn.Module):
            def __init__(self, d_in, d_out):
                super().__init__()
                self.fc = nn.Linear(d_in, d_out)

            def forward(self, x):
                return self.fc(x)
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    import hub_plugin_models
    model = hub_plugin_models.TinyNet(4, 2)
    mv = registry.register(model, "tiny", "1.0.0", module_args=(4, 2))
    with pytest.raises(UntrustedClassError, match="hub_plugin_models:TinyNet"):
        mv.load()
    write_distribution(tmp_path, "hub-plugin", "[rtx.hub.classes]\ntiny = hub_plugin_models:TinyNet\n")
    back = mv.load()
    assert type(back) is hub_plugin_models.TinyNet
    np.testing.assert_allclose(forward(back), forward(model), rtol=1e-6)


def test_wheel_installed_rtx_package_is_trusted_by_its_record(registry, tmp_path, monkeypatch):
    """A wheel install (no .pth): the files its RECORD lists are rtx code; a file planted beside them is not."""
    pkg = tmp_path / "rtx" / "hubwheel"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    source = "import rtx.nn as nn\nclass Net(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n" \
             "        self.fc = nn.Linear(n, n)\n    def forward(self, x):\n        return self.fc(x)\n"
    (pkg / "model.py").write_text(source)
    marker = tmp_path / "planted"
    (pkg / "planted.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + source)
    write_distribution(tmp_path, "rtx-hubwheel", record=["rtx/hubwheel/__init__.py", "rtx/hubwheel/model.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(rtx, "__path__", list(rtx.__path__) + [str(tmp_path / "rtx")])
    for m in ("rtx.hubwheel", "rtx.hubwheel.model", "rtx.hubwheel.planted"):
        monkeypatch.delitem(sys.modules, m, raising=False)
    weights = nn.Linear(4, 4)
    state = {f"fc.{k}": v for k, v in weights.state_dict().items()}
    back = hostile(registry, tmp_path, "rtx.hubwheel.model:Net", [4], model=state, name="good").load()
    np.testing.assert_allclose(forward(back), forward(weights), rtol=1e-6)
    with pytest.raises(UntrustedClassError, match="not a module of an installed rtx package"):
        hostile(registry, tmp_path, "rtx.hubwheel.planted:Net", [4], model=state).load()
    assert not marker.exists() and "rtx.hubwheel.planted" not in sys.modules
