"""The workspace holds together: generated files match the layer table, the layer contract
holds and catches a violation, every member has the standard shape, the scaffold works."""
import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import workspace as ws  # noqa: E402

MEMBERS = ws.members()
CODE_MEMBERS = sorted(n for n, m in MEMBERS.items() if not m["meta"])
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kw)


def test_generated_files_match_the_layer_table():
    r = run([sys.executable, ROOT / "tools" / "sync-workspace", "--check"], cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def lint_imports(tree: Path):
    # The merged copy stands in for the editable installs, which grimp cannot see past
    # rtx-tensor's folder (see workspace.merge_sources); the contract comes from the root pyproject.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    return run([LINT_IMPORTS, "--no-cache"], cwd=ROOT, env=env)


def test_layer_contract_holds(tmp_path):
    r = lint_imports(ws.merge_sources(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" in r.stdout and "0 broken" in r.stdout, r.stdout


def test_layer_contract_catches_an_upward_import(tmp_path):
    tree = ws.merge_sources(tmp_path)
    higher = "rtx.nn" if (tree / "rtx" / "nn").is_dir() else "rtx.autograd"
    (tree / "rtx" / "runtime" / "_upward.py").write_text(f"import {higher}\n")
    r = lint_imports(tree)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"rtx.runtime._upward -> {higher}" in r.stdout, r.stdout


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_member_has_the_standard_shape(name):
    m, path = MEMBERS[name], MEMBERS[name]["path"]
    assert path.name == name, f"packages/{path.name} holds distribution {name}: name the folder after it"
    readme = path / "README.md"
    assert readme.is_file(), f"{name} has no README.md"
    assert ws.readme_example(readme), f"{name}'s README has no ```python example block"
    tests = list((path / "tests").glob("test_*.py"))
    assert tests, f"{name} has no tests/test_*.py"
    if m["meta"]:
        assert not (path / "src").exists(), f"meta-package {name} must ship no code"
    else:
        init = path / "src" / Path(*ws.import_name(name).split(".")) / "__init__.py"
        assert init.is_file(), f"{name} must have {init.relative_to(path)}"
        assert ws.read_pyproject(path / "pyproject.toml")["tool"]["hatch"]["build"]["targets"]["wheel"][
            "packages"] == ["src/rtx"]
        # Only rtx-tensor owns the root package (docs/architecture.md: a second rtx/__init__.py breaks the rest).
        assert (path / "src" / "rtx" / "__init__.py").exists() == (name == "rtx-tensor")


def source_version(init: Path) -> str | None:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


@pytest.mark.parametrize("name", CODE_MEMBERS)
def test_version_attribute_matches_pyproject(name):
    init = MEMBERS[name]["path"] / "src" / Path(*ws.import_name(name).split(".")) / "__init__.py"
    version = source_version(init)
    if version is None:
        pytest.skip(f"{ws.import_name(name)} defines no __version__")
    assert version == MEMBERS[name]["version"]


def test_readme_table_lists_every_member():
    text = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `(rtx[\w-]*)` \|", text, re.M))
    missing, extra = sorted(set(MEMBERS) - listed), sorted(listed - set(MEMBERS))
    assert not missing, f"README.md's package table lacks {missing}"
    assert not extra, f"README.md's package table lists {extra}, which are not members"


def test_readme_quickstart_holds_the_ci_test_command():
    # .ci/run runs the second line of this block: keep it the test command.
    section = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1]
    block = re.search(r"```[^\n]*\n(.*?)```", section, re.S).group(1).splitlines()
    assert len(block) == 2, block
    assert block[1] == "./uvw run --locked --all-packages pytest"


def _python_with_pip():
    # The interpreter this venv was made from (uv's venvs carry no pip), as a newcomer's python3.
    for candidate in (Path(sys.base_prefix) / "bin" / "python3", Path("/usr/bin/python3")):
        if candidate.exists() and subprocess.run([candidate, "-m", "pip", "--version"],
                                                 capture_output=True).returncode == 0:
            return candidate
    pytest.skip("no python3 with pip to play the newcomer's interpreter")


def test_quickstart_runs_without_uv_on_path(tmp_path):
    # A fresh machine: Python 3 with pip, git, no uv. The Quickstart's first line must work as
    # written, through ./uvw, on a clean clone of the committed tree.
    clone = tmp_path / "rtx"
    subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(_python_with_pip())
    for tool in ("git", "sh", "env", "dirname"):
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            (bin_dir / tool).symlink_to(found)
    # The machine's own settings (certificates, index mirrors) stay; only uv and this venv go.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH")}
    env.update(PATH=str(bin_dir), UVW_HOME=str(tmp_path / "uvw"))
    assert subprocess.run(["sh", "-c", "command -v uv"], env=env, capture_output=True).returncode != 0
    section = (clone / "README.md").read_text().split("## Quickstart", 1)[1]
    first = re.search(r"```[^\n]*\n(.*?)```", section, re.S).group(1).splitlines()[0]
    assert first.startswith("./uvw ")
    r = subprocess.run(["sh", "-c", first + " --epochs 1"], cwd=clone, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "test accuracy" in (r.stdout + r.stderr).lower()


def test_new_package_scaffolds_into_contract_and_meta_package(tmp_path):
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for m in MEMBERS.values():
        (tmp_path / "packages" / m["path"].name).mkdir(parents=True)
        shutil.copy(m["path"] / "pyproject.toml", tmp_path / "packages" / m["path"].name / "pyproject.toml")

    r = run([sys.executable, tmp_path / "tools" / "new-package", "demo-x", "models",
             "--deps", "rtx-runtime", "--no-lock"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    pkg = tmp_path / "packages" / "rtx-demo-x"
    assert (pkg / "src" / "rtx" / "demo_x" / "__init__.py").is_file()
    assert ws.readme_example(pkg / "README.md")
    assert list((pkg / "tests").glob("test_*.py"))
    project = ws.read_pyproject(pkg / "pyproject.toml")
    assert project["tool"]["rtx"]["layer"] == "models"
    runtime_range = ws.compatible_range(MEMBERS["rtx-runtime"]["version"])
    assert project["project"]["dependencies"] == ["rtx-runtime" + runtime_range]

    contract = ws.read_pyproject(tmp_path / "pyproject.toml")["tool"]["importlinter"]["contracts"][0]["layers"]
    assert "rtx.demo_x" in contract[0].split(" : "), contract  # models: the highest layer present comes first
    meta = ws.read_pyproject(tmp_path / "packages" / "rtx" / "pyproject.toml")["project"]["dependencies"]
    assert any(d.startswith("rtx-demo-x>=") for d in meta), meta
    check = run([sys.executable, tmp_path / "tools" / "sync-workspace", "--check"], cwd=tmp_path)
    assert check.returncode == 0, check.stdout

    again = run([sys.executable, tmp_path / "tools" / "new-package", "demo-x", "models", "--no-lock"], cwd=tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr


def test_no_rtx_name_resolves_on_the_public_index():
    # An unrelated `rtx` lives on PyPI: every rtx* name in the lock must be a workspace member.
    with open(ROOT / "uv.lock", "rb") as f:
        lock = tomllib.load(f)
    strays = [(p["name"], p["source"]) for p in lock["package"]
              if (p["name"] == "rtx" or p["name"].startswith("rtx-")) and "virtual" not in p["source"]
              if p["name"] not in MEMBERS or "editable" not in p["source"]]
    assert not strays, f"rtx* packages not taken from the workspace: {strays}"


# Packages above rtx-tensor use its published extension API (rtx.extend) and public names,
# never the private rtx._tensor modules, whose layout may change.
# rtx-graph's tracer was the last exception; it records through rtx.extend.recording now.
_PRIVATE_TENSOR_IMPORT_ALLOWED = set()


def _source_nodes(root, patterns, skip):
    """(relative path, AST node) over every node of the Python files matching `patterns` under root,
    files for which skip(relative path) is true left out: what the source checks below walk."""
    paths = {p for pattern in patterns for p in Path(root).glob(pattern)}
    for path in sorted(paths):
        rel = path.relative_to(root).as_posix()
        if not skip(rel):
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                yield rel, node


def _private_tensor_imports(root):
    found = []
    def skip(rel):
        return rel.startswith("packages/rtx-tensor/") or rel in _PRIVATE_TENSOR_IMPORT_ALLOWED

    for rel, node in _source_nodes(root, ("packages/*/**/*.py", "tools/**/*.py", "examples/**/*.py"), skip):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "rtx"]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        if any(n == "rtx._tensor" or n.startswith("rtx._tensor.") for n in names):
            found.append(f"{rel}:{node.lineno}")
    return found


def test_no_package_imports_rtx_tensor_internals():
    found = _private_tensor_imports(ROOT)
    assert not found, "import rtx.extend (or public rtx names) instead of rtx._tensor.* in:\n" + "\n".join(found)


def test_private_import_check_catches_one(tmp_path):
    pkg = tmp_path / "packages" / "rtx-demo" / "src" / "rtx" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "bad.py").write_text("def f():\n    from rtx._tensor.function import Primitive\n")
    assert _private_tensor_imports(tmp_path) == ["packages/rtx-demo/src/rtx/demo/bad.py:2"]


# The autograd engine's private names (its grad-mode state, its internals) are reached through
# rtx.extend (grad_mode) or the public rtx.autograd API, never imported by packages above the foundation.
def _private_autograd_imports(root):
    found = []
    def skip(rel):
        return rel.split("/")[1] in _PRIVATE_TENSOR_ATTRS_ALLOWED

    for rel, node in _source_nodes(root, ("packages/*/src/**/*.py",), skip):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rtx.autograd"):
            private_module = any(part.startswith("_") for part in node.module.split("."))
            if private_module or any(alias.name.startswith("_") for alias in node.names):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_no_package_imports_autograd_private_names():
    found = _private_autograd_imports(ROOT)
    assert not found, "use rtx.extend.grad_mode or public rtx.autograd names instead, in:\n" + "\n".join(found)


def test_private_autograd_import_check_catches_one(tmp_path):
    pkg = tmp_path / "packages" / "rtx-demo" / "src" / "rtx" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "bad.py").write_text("from rtx.autograd.grad_mode import _state\n")
    assert _private_autograd_imports(tmp_path) == ["packages/rtx-demo/src/rtx/demo/bad.py:1"]


# A Tensor's array, its version counter and the Tensor-from-array constructor are reached through
# rtx.extend (raw / set_raw / increment_version / wrap; `t._version` reads the version, as in PyTorch),
# never through the private slots `t._data` / `t._vc` or `Tensor._make`, neither to read nor to write
# (`t._data = a`, `t._data += 1`, `t._vc[0] += 1`, setattr(t, "_data", a)): packages copy what the base
# shows them. Only the foundation that defines Tensor and its autograd uses them directly.
_PRIVATE_TENSOR_ATTRS_ALLOWED = {"rtx-tensor", "rtx-autograd"}
_PRIVATE_SLOTS = {"_data", "_vc"}


def _private_tensor_attrs(root):
    found = []
    def skip(rel):
        return rel.startswith("packages/") and rel.split("/")[1] in _PRIVATE_TENSOR_ATTRS_ALLOWED

    # the tools and examples are read and copied too
    for rel, node in _source_nodes(root, ("packages/*/src/**/*.py", "tools/**/*.py", "examples/**/*.py"), skip):
        if isinstance(node, ast.Attribute):  # any context: load, store (incl. augmented) or del
            on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            on_tensor = (isinstance(node.value, ast.Name) and node.value.id == "Tensor") or (
                isinstance(node.value, ast.Attribute) and node.value.attr == "Tensor")
            if (node.attr in _PRIVATE_SLOTS and not on_self) or (node.attr == "_make" and on_tensor):
                found.append(f"{rel}:{node.lineno}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and node.args[1].value in _PRIVATE_SLOTS:
            found.append(f"{rel}:{node.lineno}")
    return sorted(found, key=lambda hit: (hit.rsplit(":", 1)[0], int(hit.rsplit(":", 1)[1])))


def test_no_package_reads_tensor_private_attributes():
    found = _private_tensor_attrs(ROOT)
    assert not found, "use rtx.extend.raw(t) / set_raw(t, a) / increment_version(t) / wrap(a) (and t._version) " \
        "instead of t._data / t._vc / Tensor._make in:\n" + "\n".join(found)


def test_private_attribute_check_catches_one(tmp_path):
    pkg = tmp_path / "packages" / "rtx-demo" / "src" / "rtx" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "bad.py").write_text("def f(t, a):\n    return t._data, self_data(a)\n\n\ndef g(a):\n"
                                "    return rtx.Tensor._make(a)\n")
    assert _private_tensor_attrs(tmp_path) == ["packages/rtx-demo/src/rtx/demo/bad.py:2",
                                               "packages/rtx-demo/src/rtx/demo/bad.py:6"]


def test_private_attribute_check_catches_writes(tmp_path):
    pkg = tmp_path / "packages" / "rtx-demo" / "src" / "rtx" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "bad.py").write_text(
        "def f(p, new, a):\n"
        "    p._data = new\n"                      # 2: storage replaced behind the core's back
        "    p._data += 1\n"                       # 3: augmented write
        "    p._vc[0] += 1\n"                      # 4: version bumped by hand
        "    q = p.grad\n"
        "    q._vc = p._vc\n"                      # 6: counter shared by hand (two hits, one line)
        "    setattr(p, '_data', a)\n"             # 7: the same write through setattr
        "    self._data = a\n"                     # a class's own field: not a tensor's
        "    return p._version, set_raw(p, a), increment_version(p)\n")  # the public ways
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text("def step(p):\n    p._data -= 0.1 * p.grad._data\n")
    assert _private_tensor_attrs(tmp_path) == ["examples/train.py:2", "examples/train.py:2"] + [
        f"packages/rtx-demo/src/rtx/demo/bad.py:{n}" for n in (2, 3, 4, 6, 6, 7)]


# rtx-core is what a PyTorch user installs to train models: its closure is the foundation and
# core layers' own needs (NumPy, safetensors, ml_dtypes, threadpoolctl), within NumPy's own size
# + 15 MB. ci/release-matrix measures the same in fresh venvs from the built wheels.
def test_rtx_core_install_stays_lean():
    closure = ws.installed_closure("rtx-core")
    heavy = {"scikit-learn", "scipy", "networkx", "matplotlib", "onnx", "onnxruntime", "pillow"} & closure
    assert not heavy, f"rtx-core pulls {sorted(heavy)}"
    size = sum(ws.installed_bytes(d) for d in closure)
    budget = ws.installed_bytes("numpy") + 15 * 2**20
    assert size <= budget, f"rtx-core installs {size / 2**20:.1f} MB, budget {budget / 2**20:.1f} MB"


def test_install_hints_name_only_packages_that_exist():
    import rtx

    ms = ws.members()
    subpackages = {ws.import_name(n).removeprefix("rtx.") for n, info in ms.items()
                   if not info["meta"] and n != "rtx-tensor"}
    known = set(rtx.KNOWN_PACKAGES)
    for name in known:
        assert rtx._dist(name) in ms, f"rtx.{name}'s hint names {rtx._dist(name)}, which is not a workspace member"
    assert subpackages <= known, f"no install hint for {sorted(subpackages - known)}"


def test_rtx_help_knows_every_command():
    from rtx.runtime import cli

    declared = {}
    for name, info in ws.members().items():
        data = ws.read_pyproject(info["path"] / "pyproject.toml")
        for cmd in data["project"].get("entry-points", {}).get("rtx.commands", {}):
            declared[cmd] = name
    assert declared, "no rtx.commands entry points found"
    for cmd, dist in declared.items():
        if dist != "rtx-runtime":
            assert cli.KNOWN.get(cmd, (None,))[0] == dist, f"`rtx {cmd}` (from {dist}) is missing in cli.KNOWN"
    for cmd, (dist, _) in cli.KNOWN.items():
        assert declared.get(cmd) == dist, f"cli.KNOWN lists `rtx {cmd}` from {dist}, which declares no such command"
    text = cli.help_text()
    for cmd in declared:
        assert cmd in text


def test_contract_covers_modules_outside_the_package_folders():
    text = ws.contract_text()
    for module in ("rtx.amp", "rtx.utils.data", "rtx.utils.checkpoint", "rtx.testing", "rtx.extend"):
        assert module in text, f"{module} is outside the layer contract"


# ---- the distribution dependency graph: a DAG that matches the imports ----------------------------
# The layer contract lists a layer's packages as siblings, so it cannot see an order inside a layer
# (rtx-losses below rtx-nn) nor a cycle between two distributions; these checks can.

# Members whose engineers are still at work; their undeclared imports are listed in the reports.
# Remove an entry once its pyproject declares the dependency.
PENDING_UNDECLARED = {"rtx-science": {"rtx-autograd"}}


def _cycle(graph):
    """A dependency cycle [a, b, ..., a] in {name: [deps]}, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for d in graph.get(n, ()):
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[n] = "done"
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def _declared(info):
    """The rtx distributions a member may import: its dependencies and those of its optional extras."""
    project = ws.read_pyproject(info["path"] / "pyproject.toml")["project"]
    reqs = list(project.get("dependencies", []))
    reqs += [r for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0] for r in reqs}


def _undeclared_imports(ms):
    """{member: {distribution it imports without declaring it: first 'file:line'}}. Every import
    counts, also those inside functions; `import rtx` and `from rtx import <not a subpackage>` need
    rtx-tensor, which ships rtx/__init__.py."""
    owner = {m: n for n, info in ms.items() if not info["meta"] for m in ws.owned_modules(n, ms)}

    def owner_of(mod):
        parts = mod.split(".")
        for i in range(len(parts), 1, -1):
            if ".".join(parts[:i]) in owner:
                return owner[".".join(parts[:i])]
        return "rtx-tensor" if mod == "rtx" or mod.count(".") == 1 else None

    found = {}
    for name, info in sorted(ms.items()):
        if info["meta"]:
            continue
        allowed = _declared(info) | {name}
        for path in sorted((info["path"] / "src").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    mods = [f"{node.module}.{a.name}" for a in node.names] if node.module == "rtx" else [node.module]
                else:
                    continue
                for mod in mods:
                    dist = owner_of(mod) if mod == "rtx" or mod.startswith("rtx.") else None
                    if dist and dist not in allowed:
                        where = f"{path.relative_to(info['path'])}:{node.lineno}"
                        found.setdefault(name, {}).setdefault(dist, where)
    return found


def test_distribution_dependency_graph_has_no_cycle():
    cycle = _cycle({n: info["deps"] for n, info in MEMBERS.items()})
    assert cycle is None, "the distributions depend on each other in a cycle: " + " -> ".join(cycle)


def test_cycle_check_finds_one():
    assert _cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == ["a", "b", "c", "a"]
    assert _cycle({"a": ["b", "c"], "b": ["c"], "c": []}) is None


def test_members_declare_every_rtx_package_they_import():
    found = _undeclared_imports(MEMBERS)
    for name, dists in PENDING_UNDECLARED.items():
        for dist in dists:
            found.get(name, {}).pop(dist, None)
    found = {n: d for n, d in found.items() if d}
    assert not found, "imported but not declared in the member's pyproject (dependencies or an extra):\n" + \
        "\n".join(f"{n} imports {d} at {w}" for n, ds in found.items() for d, w in ds.items())


def test_undeclared_import_check_catches_one(tmp_path):
    def member(name, deps, files, extras=None):
        path = tmp_path / name
        for rel, text in files.items():
            (path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / "src" / rel).write_text(text)
        opt = "".join(f"{k} = {v!r}\n" for k, v in (extras or {}).items())
        (path / "pyproject.toml").write_text(f"[project]\nname = {name!r}\ndependencies = {deps!r}\n"
                                             f"[project.optional-dependencies]\n{opt}")
        return {"path": path, "deps": deps, "meta": False}

    ms = {
        "rtx-tensor": member("rtx-tensor", [], {"rtx/__init__.py": "", "rtx/_tensor/__init__.py": ""}),
        "rtx-low": member("rtx-low", ["rtx-tensor"], {"rtx/low/__init__.py": "import rtx\n"}),
        "rtx-high": member("rtx-high", ["rtx-low"], {"rtx/high/__init__.py": "from rtx.low import x\n",
                                                     "rtx/high/opt.py": "def f():\n    import rtx.extra.y\n"},
                           extras={"extra": ["rtx-extra>=0.1"]}),
        "rtx-extra": member("rtx-extra", [], {"rtx/extra/__init__.py": "def f():\n    from rtx import low, tensor\n"}),
    }
    assert _undeclared_imports(ms) == {"rtx-extra": {"rtx-low": "src/rtx/extra/__init__.py:2",
                                                     "rtx-tensor": "src/rtx/extra/__init__.py:2"}}


def test_every_member_states_the_tested_python_versions():
    root = ws.read_pyproject(ROOT / "pyproject.toml")["project"]["requires-python"]
    for name, info in ws.members().items():
        got = ws.read_pyproject(info["path"] / "pyproject.toml")["project"]["requires-python"]
        assert got == root, f"{name} says requires-python {got!r}, the workspace tests {root!r}"


# Code and docs cite only files inside the repository: the design card the project started from
# is not in it (docs/architecture.md is the home of that picture).
_OUTSIDE_DOCS = ("DESIGN" + ".md",)  # spelled in two pieces so this file does not cite it
_NOT_SOURCE = {".git", ".venv", ".uvw", "dist", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _repo_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked sdist, a tmp tree)
        names = [p.relative_to(root).as_posix() for p in Path(root).rglob("*")
                 if p.is_file() and not _NOT_SOURCE & set(p.relative_to(root).parts)]
    return sorted(names)


def _citations_outside(root):
    found = []
    for name in _repo_files(root):
        path = Path(root, name)
        if not path.is_file():  # listed by git, deleted in the working tree
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary (fixtures, archives)
            continue
        for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if any(doc in line for doc in _OUTSIDE_DOCS):
                found.append(f"{name}:{lineno}")
    return found


def test_repository_cites_only_its_own_files():
    found = _citations_outside(ROOT)
    assert not found, "cite docs/architecture.md (the repository's design notes), not a file outside it:\n" + \
        "\n".join(found)


def test_outside_citation_check_catches_one(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nSee " + _OUTSIDE_DOCS[0] + " for the layers.\n")
    (tmp_path / "docs" / "blob.bin").write_bytes(b"\0" + _OUTSIDE_DOCS[0].encode())
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text("# " + _OUTSIDE_DOCS[0] + "\n")
    assert _citations_outside(tmp_path) == ["docs/guide.md:3"]


# One atomic file write: rtx.config.files.write_atomic (temporary file, fsync, os.replace, folder
# fsync). A package that renames files into place itself has made a fifth copy.
_OWN_RENAMES = {
    "packages/rtx-config/src/rtx/config/files.py",  # the one home
    "packages/rtx-hub/src/rtx/hub/registry.py",     # moves whole version folders into place, not files
}


def _file_renames(root):
    found = []
    paths = [p for pattern in ("packages/*/src/**/*.py", "tools/**/*.py", "examples/**/*.py")
             for p in Path(root).glob(pattern)]
    for path in sorted(set(paths)):
        rel = path.relative_to(root).as_posix()
        if rel in _OWN_RENAMES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("replace", "rename") and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id == "os":
                found.append(f"{rel}:{node.lineno}")
    return found


def test_files_are_replaced_only_through_write_atomic():
    found = _file_renames(ROOT)
    assert not found, "write files with rtx.config.files.write_atomic (it fsyncs the file and the folder) " \
        "instead of renaming them into place in:\n" + "\n".join(found)


def test_rename_check_catches_one(tmp_path):
    pkg = tmp_path / "packages" / "rtx-demo" / "src" / "rtx" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "cache.py").write_text("import os\n\n\ndef save(tmp, path):\n    os.replace(tmp, path)\n"
                                  "    return 'a'.replace('a', 'b')\n")
    assert _file_renames(tmp_path) == ["packages/rtx-demo/src/rtx/demo/cache.py:5"]
