"""The workspace's one source of truth: which members exist and in which layer.

Each member declares its layer in its own pyproject (``[tool.rtx] layer = "core"``);
everything derived from that (the import-linter contract in the root pyproject, the
meta-packages' dependency lists, the root dev group) is generated here, so nothing can drift.
Used by tools/new-package, tools/sync-workspace, ci/release-matrix and the workspace tests.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"

# Lowest first, as in docs/architecture.md. A package imports only from its own layer or below.
LAYERS = ["foundation", "core", "training", "production", "models", "specialized"]

# Inside the foundation layer the order is stricter: the autograd engine never imports the
# tensor, and the kernels and memory pool sit on the runtime alone. Lowest first.
FOUNDATION_ORDER = [["rtx-config"], ["rtx-runtime"], ["rtx-memory", "rtx-kernel"],
                    ["rtx-autograd"], ["rtx-tensor"]]

# Meta-packages: name -> (description, the layers they bundle). A meta-package is generated
# only once one of its own layers (the last one listed) has a member: until then it would be
# an empty alias of a smaller bundle.
META = {
    "rtx": ("rtx: the whole framework, every package", LAYERS),
    "rtx-core": ("rtx core: tensors, autograd, nn, optim, data", ["foundation", "core"]),
    "rtx-training": ("rtx training stack: core plus attention, transformers, distributed, compression",
                     ["foundation", "core", "training"]),
    "rtx-inference-stack": ("rtx inference stack: core plus ONNX, inference runtime, serving",
                            ["foundation", "core", "production"]),
}

# Each package's import name, where it differs from rtx.<name> (rtx-tensor owns the root).
IMPORT_NAME = {"rtx-tensor": "rtx._tensor"}

# Versions across the workspace: a sibling requires ">=X.Y,<X.(Y+1)" of what is in the tree
# (0.x minor versions may break, as SemVer allows).


def import_name(dist: str) -> str:
    return IMPORT_NAME.get(dist, "rtx." + dist.removeprefix("rtx-").replace("-", "_"))


def owned_modules(dist: str, ms: dict | None = None) -> list[str]:
    """Every top-level module a member installs into the shared rtx/ folder: its own package and
    the rest (rtx-optim's rtx.amp, rtx-data's rtx.utils.data inside the PEP 420 folder rtx/utils,
    rtx-tensor's rtx.testing and rtx.extend, ...), so that the layer contract covers them all."""
    ms = members() if ms is None else ms
    root = ms[dist]["path"] / "src" / "rtx"
    found = []

    def walk(folder, prefix):
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith(".") or entry.name == "__pycache__":
                continue
            if entry.is_dir():
                if (entry / "__init__.py").exists():
                    found.append(f"{prefix}.{entry.name}")
                elif any(entry.rglob("*.py")):  # a namespace folder shared with other members
                    walk(entry, f"{prefix}.{entry.name}")
            elif entry.suffix == ".py" and entry.name != "__init__.py":
                found.append(f"{prefix}.{entry.stem}")

    if root.is_dir():
        walk(root, "rtx")
    return found


def read_pyproject(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def members() -> dict[str, dict]:
    """dist name -> {'layer', 'version', 'path', 'deps' (rtx siblings), 'meta'}"""
    out = {}
    for pp in sorted(PACKAGES.glob("*/pyproject.toml")):
        data = read_pyproject(pp)
        project = data["project"]
        rtx_table = data.get("tool", {}).get("rtx", {})
        deps = [re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0] for d in project.get("dependencies", [])]
        out[project["name"]] = {
            "layer": rtx_table.get("layer", "meta"),
            "version": project["version"],
            "path": pp.parent,
            "deps": [d for d in deps if d.startswith("rtx")],
            "meta": rtx_table.get("layer") is None,
            # An application or demo (rtx-demo) sits on a layer but only the whole-framework
            # bundle `rtx` installs it: rtx-core stays the lean set a PyTorch user trains with.
            "layer_bundles": rtx_table.get("layer-bundles", True),
        }
    return out


def by_layer(ms: dict | None = None) -> dict[str, list[str]]:
    ms = members() if ms is None else ms
    table = {layer: [] for layer in LAYERS}
    for name, info in ms.items():
        if not info["meta"]:
            table[info["layer"]].append(name)
    return table


def modules_of(name: str, ms: dict | None = None) -> list[str]:
    """The modules that installing `name` must make importable: its own, or for a meta-package
    (which ships no code) those of every package it bundles."""
    ms = members() if ms is None else ms
    if not ms[name]["meta"]:
        return [import_name(name)]
    return sorted(import_name(n) for n in closure(name, ms) if not ms[n]["meta"])


def readme_example(readme: Path) -> str | None:
    """The first ```python block of a README: the example that the tests and the release matrix run."""
    m = re.search(r"^```python[ \t]*\n(.*?)^```", readme.read_text(), re.S | re.M)
    return m.group(1) if m else None


def merge_sources(dest: Path) -> Path:
    """Copy every member's src/rtx into dest/rtx, laid out as installed wheels are; returns dest.

    import-linter (grimp) scans only the folders in the spec of `rtx`, and with uv's editable
    installs that is rtx-tensor's src/rtx alone, so lint-imports run in the dev venv cannot see
    the other packages. With PYTHONPATH=dest it scans the merged copy instead."""
    import shutil

    for src in sorted(PACKAGES.glob("*/src/rtx")):
        shutil.copytree(src, dest / "rtx", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # grimp does not descend into PEP 420 folders (rtx/utils): in this copy only, mark them as
    # regular packages so the contract sees rtx.utils.data and rtx.utils.checkpoint.
    for folder in (dest / "rtx").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__" and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("")
    return dest


def compatible_range(version: str) -> str:
    major, minor = (int(x) for x in version.split(".")[:2])
    if major == 0:
        return f">={major}.{minor},<0.{minor + 1}"
    return f">={major}.{minor},<{major + 1}"


def closure(name: str, ms: dict | None = None) -> set[str]:
    """All rtx distributions that installing `name` brings in, itself included."""
    ms = members() if ms is None else ms
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(ms[n]["deps"])
    return seen


def meta_members(ms: dict | None = None) -> dict[str, list[str]]:
    """meta-package -> the distributions it must depend on (generated, sorted)."""
    ms = members() if ms is None else ms
    table = by_layer(ms)
    out = {}
    for meta, (_, layers) in META.items():
        if not table[layers[-1]] and meta != "rtx":
            continue
        out[meta] = sorted(n for layer in layers for n in table[layer]
                           if meta == "rtx" or ms[n]["layer_bundles"])
    return out


def contract_text(ms: dict | None = None) -> str:
    """The import-linter section of the root pyproject, generated from the layer table."""
    ms = members() if ms is None else ms
    table = by_layer(ms)
    lines = ["[tool.importlinter]", 'root_packages = ["rtx"]', "include_external_packages = false", "",
             "[[tool.importlinter.contracts]]", 'name = "Layers: a package imports only from its own layer or below"',
             'type = "layers"', "layers = ["]
    for layer in reversed(LAYERS):
        mods = sorted(m for n in table[layer] for m in owned_modules(n, ms))
        if mods:
            lines.append(f'    "{" : ".join(mods)}",  # {layer}')
    lines.append("]")
    # Members of one tier are independent of each other ("|"); a member's own modules (rtx-autograd's
    # rtx.autograd and rtx.utils.checkpoint) may import each other (":").
    foundation = []
    for tier in reversed(FOUNDATION_ORDER):
        owned = [owned_modules(n, ms) for n in tier if n in ms]
        owned = [mods for mods in owned if mods]
        if len(owned) == 1:
            foundation.append(" : ".join(owned[0]))
        elif owned:
            if any(len(mods) > 1 for mods in owned):
                raise ValueError(f"foundation tier {tier}: a member with several modules must have a tier of its own")
            foundation.append(" | ".join(mods[0] for mods in owned))
    if len(foundation) > 1:
        lines += ["", "[[tool.importlinter.contracts]]",
                  'name = "Foundation: runtime < memory, kernel < autograd < tensor"',
                  'type = "layers"', "layers = ["]
        lines += [f'    "{tier}",' for tier in foundation]
        lines.append("]")
    return "\n".join(lines) + "\n"


BEGIN, END = "# BEGIN generated by tools/sync-workspace", "# END generated by tools/sync-workspace"


def replace_block(text: str, block: str) -> str:
    start, end = text.index(BEGIN), text.index(END)
    return text[: start + len(BEGIN)] + "\n" + block + text[end:]


def installed_closure(dist: str) -> set[str]:
    """Every distribution that `pip install dist` brings in, read from the installed metadata of
    the running environment (markers evaluated, no extras): normalised names, itself included."""
    from importlib import metadata

    from packaging.requirements import Requirement

    def norm(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    seen, todo = set(), [norm(dist)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(norm(req.name))
    return seen


def installed_bytes(dist: str) -> int:
    """Bytes of one installed distribution: its RECORD'ed files, or for a workspace member
    installed in editable mode, its source folder (what its wheel would hold)."""
    from importlib import metadata

    d = metadata.distribution(dist)
    name = re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower()
    if name.startswith("rtx") and (PACKAGES / name).is_dir():
        src = PACKAGES / name / "src"
        return sum(f.stat().st_size for f in src.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    total = 0
    for f in d.files or []:
        if f.size is not None:
            total += f.size
        else:
            p = f.locate()
            total += p.stat().st_size if p.is_file() else 0
    return total
