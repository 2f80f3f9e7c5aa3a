"""Registry: versioned models in a directory tree, safe for concurrent writers.

Layout (everything for one version lives in its own directory, moved into place by one rename)::

    <root>/.lock                     fcntl.flock: serialises writers
    <root>/.revision                 an int, +1 on every change (servers poll it)
    <root>/.tmp/                     versions being written (same filesystem, so rename is atomic)
    <root>/<name>/<version>/model.onnx | model.rtx
    <root>/<name>/<version>/model.json   metadata, signature, sha256, size, format, created, stage
    <root>/<name>/<version>/README.md    the model card
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path

from rtx.hub import formats
from rtx.hub.card import render_card
from rtx.hub.errors import ModelNotFoundError, RegistryError
from rtx.hub.fsutil import copy_hashed, locked, sha256_file, write_atomic, write_json
from rtx.hub.model_version import MODULE_FORMAT, ModelVersion
from rtx.hub.semver import check_version, same_precedence, sort_key
from rtx.hub.signature import check_signature, example_signature, onnx_signature
from rtx.hub.trust import check_json_args

STAGES = ("staging", "production", "archived")
# One path component, starting with a letter or digit: no "/", no "..", no hidden names.
# \Z, not $: "$" also matches before a trailing newline, which would make "m\n" a directory name.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def default_root() -> Path:
    """$RTX_HOME/registry, else ~/.rtx/registry."""
    home = os.environ.get("RTX_HOME")
    return (Path(home) if home else Path.home() / ".rtx").expanduser() / "registry"


def check_name(name: object) -> str:
    """Return `name` if it can be a model name (one safe path component), else raise RegistryError."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistryError(f"invalid model name {name!r}: use 1-128 letters, digits, '.', '_' or '-', starting "
                            "with a letter or digit (no '/', no '..')")
    return name


def check_stage(stage: object) -> str:
    if stage not in STAGES:
        raise RegistryError(f"invalid stage {stage!r}: expected one of {', '.join(STAGES)}")
    return stage


class Registry:
    """A model registry rooted at a directory (created on the first write).

    root: the directory; None means $RTX_HOME/registry, else ~/.rtx/registry."""

    def __init__(self, root: str | os.PathLike | None = None):
        # absolute: artifact paths handed out must survive a later chdir (servers, workers)
        self.root = (Path(root).expanduser() if root is not None else default_root()).absolute()
        if self.root.exists() and not self.root.is_dir():
            raise RegistryError(f"registry root {str(self.root)!r} exists and is not a directory")

    def __repr__(self) -> str:
        return f"Registry({str(self.root)!r})"

    # ---- reading ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The registered model names, sorted."""
        return sorted(p.name for p in _entries(self.root) if _NAME.match(p.name)
                      and any((v / "model.json").is_file() for v in _entries(p)))

    def list(self, name: str | None = None) -> list[ModelVersion]:
        """Every version (of `name`, or of all models), sorted by name, then semantic version."""
        names = [check_name(name)] if name is not None else self.names()
        out = []
        for n in names:
            out += sorted(self._versions(n), key=lambda mv: sort_key(mv.version))
        return out

    def get(self, name: str, version: str | None = None, *, stage: str | None = None) -> ModelVersion:
        """One version. version=None: the highest version in `stage` if given, else the highest in
        production, else the highest of all. ModelNotFoundError lists what exists."""
        check_name(name)
        if stage is not None:
            check_stage(stage)
        if version is not None and stage is None and _NAME.match(version):
            try:  # the common case: one directory, no scan
                return ModelVersion.from_dir(self.root / name / check_version(version))
            except FileNotFoundError:
                pass  # fall through to the scan, which lists what exists
        versions = sorted(self._versions(name), key=lambda mv: sort_key(mv.version))
        if not versions:
            known = self.names()
            raise ModelNotFoundError(f"no model {name!r} in the registry {str(self.root)!r}; "
                                     f"models: {_listing(known) or '(none)'}")
        if version is not None:
            check_version(version)
            # exact, else the one version that differs only in build metadata ("1.0.0" finds
            # "1.0.0+build.5"; register() refuses a second one of equal precedence)
            found = ([mv for mv in versions if mv.version == version]
                     or [mv for mv in versions if same_precedence(mv.version, version)])
            if not found:
                raise ModelNotFoundError(f"model {name!r} has no version {version!r}; versions: {_vlist(versions)}")
            if stage is not None and found[0].stage != stage:
                raise ModelNotFoundError(f"{name}:{version} is in stage {found[0].stage!r}, not {stage!r}")
            return found[0]
        if stage is not None:
            in_stage = [mv for mv in versions if mv.stage == stage]
            if not in_stage:
                raise ModelNotFoundError(f"model {name!r} has no version in stage {stage!r}; versions: "
                                         f"{_vlist(versions)}")
            return in_stage[-1]
        production = [mv for mv in versions if mv.stage == "production"]
        return (production or versions)[-1]

    def revision(self) -> int:
        """A counter that increases on every change of the registry (one small file read)."""
        path = self.root / ".revision"
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return 0
        try:
            return int(text or 0)
        except ValueError:  # only an edit outside rtx.hub gets here (writes are atomic)
            raise RegistryError(f"{str(path)!r} holds {text[:40]!r}, not an integer; it was edited outside "
                                "rtx.hub: write a number into it (or delete it) to repair the registry") from None

    def _versions(self, name: str) -> list[ModelVersion]:
        out = []
        for v in _entries(self.root / name):
            if not (v / "model.json").is_file():
                continue
            try:
                out.append(ModelVersion.from_dir(v))
            except FileNotFoundError:  # removed between listing and reading
                continue
            except RegistryError as e:  # one damaged entry must not hide the others from list()
                warnings.warn(f"rtx.hub: skipping {str(v)!r}: {e}", RuntimeWarning, stacklevel=3)
        return out

    # ---- writing ---------------------------------------------------------------------------

    def register(self, model_or_path, name: str, version: str, *, metadata: dict | None = None,
                 signature: dict | None = None, card: str | None = None, stage: str = "staging",
                 example_inputs=None, module_args: tuple | list | None = None,
                 module_kwargs: dict | None = None) -> ModelVersion:
        """Add `name`:`version` to the registry and return it.

        model_or_path: a path to an .onnx file or an rtx checkpoint (what rtx.save writes; also
        safetensors and PyTorch zip checkpoints), an rtx nn.Module (its class path, module_args,
        module_kwargs and state_dict are saved with rtx.save, so load() can rebuild it), or an
        onnx.ModelProto. signature: KServe-style inputs/outputs; read from the graph for ONNX,
        computed from one forward pass on `example_inputs` for a module. card: Markdown text for
        the model card. A duplicate version (equal semver precedence) is refused."""
        check_name(name)
        check_version(version)
        check_stage(stage)
        metadata = _check_metadata(metadata)
        signature = check_signature(signature)
        if card is not None and not isinstance(card, str):
            raise RegistryError(f"card must be a string (Markdown), got {type(card).__name__}")
        self._refuse_duplicate(name, version)  # early, before copying a large file; again under the lock
        with self._writing(f"register {name}:{version}"):
            return self._register(model_or_path, name, version, metadata, signature, card, stage, example_inputs,
                                  module_args, module_kwargs)

    def _register(self, model_or_path, name, version, metadata, signature, card, stage, example_inputs,
                  module_args, module_kwargs) -> ModelVersion:
        # A crashed writer may have left a directory under .tmp/: names are unique (mkdtemp), so it
        # never collides with this one; nothing reads .tmp/ (see README: clean it when no writer runs).
        tmp_root = self.root / ".tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}-{version}-", dir=tmp_root))
        try:
            info = self._write_artifact(model_or_path, tmp, signature, example_inputs, module_args, module_kwargs)
            info = {"name": name, "version": version, "stage": stage, **info, "metadata": metadata,
                    "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")}
            write_json(tmp / "model.json", info)
            write_atomic(tmp / "README.md", render_card(info, card))
            with self._lock():
                self._refuse_duplicate(name, version)
                (self.root / name).mkdir(exist_ok=True)
                os.rename(tmp, self.root / name / version)  # the version appears whole, or not at all
                self._bump()
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return ModelVersion.from_dir(self.root / name / version)

    def promote(self, name: str, version: str, stage: str, *, archive_existing: bool = False) -> ModelVersion:
        """Move a version to `stage` (staging, production or archived). archive_existing=True with
        stage="production" moves the model's other production versions to archived (by default
        several versions may be in production at once, e.g. for A/B routing)."""
        check_stage(stage)
        with self._writing(f"promote {name}:{version}"), self._lock():
            mv = self.get(name, version)
            self._set_stage(mv, stage)
            if archive_existing and stage == "production":
                for other in self._versions(name):
                    if other.stage == "production" and other.version != version:
                        self._set_stage(other, "archived")
            self._bump()
        return self.get(name, version)

    def remove(self, name: str, version: str) -> ModelVersion:
        """Delete a version (its directory is first moved aside, so it vanishes in one step)."""
        with self._writing(f"remove {name}:{version}"), self._lock():
            mv = self.get(name, version)
            trash = self.root / ".tmp" / f"removed-{name}-{version}-{uuid.uuid4().hex}"
            trash.parent.mkdir(exist_ok=True)
            os.rename(mv.path, trash)
            try:
                (self.root / name).rmdir()  # only succeeds when it was the last version
            except OSError:
                pass
            self._bump()
        shutil.rmtree(trash, ignore_errors=True)
        return mv

    def verify(self, name: str | None = None) -> list[ModelVersion]:
        """verify() every version (of `name`, or all); IntegrityError at the first bad artifact."""
        out = self.list(name)
        for mv in out:
            mv.verify()
        return out

    # ---- internals -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self, what: str):
        """Turn filesystem failures of a write (a read-only or full disk, a root under a file,
        missing permissions) into a RegistryError that names the registry and the operation."""
        try:
            yield
        except OSError as e:
            where = os.fspath(e.filename) if e.filename is not None else str(self.root)
            if not Path(where).is_relative_to(self.root) and not self.root.is_relative_to(where):
                # the source file, not the registry (an unreadable model file)
                raise RegistryError(f"cannot {what}: reading {where!r} failed: {e.strerror or e}") from None
            raise RegistryError(f"cannot {what} in the registry {str(self.root)!r}: {e.strerror or e} "
                                f"({where}); the registry directory must be writable") from None

    @contextlib.contextmanager
    def _lock(self):
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            self.revision()  # a damaged .revision must stop a writer before it changes anything
            yield

    def _bump(self) -> None:
        write_atomic(self.root / ".revision", f"{self.revision() + 1}\n")

    def _set_stage(self, mv: ModelVersion, stage: str) -> None:
        path = mv.path / "model.json"
        info = json.loads(path.read_text(encoding="utf-8"))
        info["stage"] = stage
        write_json(path, info)

    def _refuse_duplicate(self, name: str, version: str) -> None:
        for mv in self._versions(name):
            if same_precedence(mv.version, version):
                same = "is" if mv.version == version else f"has the same precedence as {mv.version!r}, which"
                raise RegistryError(f"{name}:{version} {same} already registered (stage {mv.stage}); "
                                    "versions are immutable: register a new version, or remove this one first")

    def _write_artifact(self, obj, tmp: Path, signature, example_inputs, module_args, module_kwargs) -> dict:
        info: dict = {}
        if isinstance(obj, (str, os.PathLike)):
            src = Path(obj).expanduser()
            fmt = formats.detect(src)
            if fmt == "onnx":
                proto = formats.read_onnx(src)
                signature = signature or onnx_signature(proto)
            else:
                info["checkpoint_format"] = formats.checkpoint_format(src)
            artifact = tmp / f"model{formats.SUFFIX[fmt]}"
            sha, size = copy_hashed(src, artifact)
        elif _is_onnx_proto(obj):
            import onnx

            fmt, artifact = "onnx", tmp / "model.onnx"
            onnx.save(obj, os.fspath(artifact))
            formats.read_onnx(artifact)
            signature = signature or onnx_signature(obj)
            sha, size = sha256_file(artifact), artifact.stat().st_size
        elif _is_module(obj):
            import rtx

            fmt, artifact = "rtx", tmp / "model.rtx"
            cls = type(obj)
            # load() rebuilds only from JSON values: refuse now what could never be rebuilt
            module_args, module_kwargs = check_json_args(module_args or [], module_kwargs or {}, "register")
            if example_inputs is not None and signature is None:
                signature = example_signature(obj, example_inputs)
            ckpt = {"format": MODULE_FORMAT, "class": f"{cls.__module__}:{cls.__qualname__}",
                    "args": module_args, "kwargs": module_kwargs, "model": obj.state_dict()}
            try:  # safetensors only: a registry artifact never holds a pickle
                rtx.save(ckpt, artifact, format="safetensors")
            except TypeError as e:
                raise RegistryError(f"cannot save the module: {e}") from None
            info["checkpoint_format"] = MODULE_FORMAT
            sha, size = sha256_file(artifact), artifact.stat().st_size
        else:
            raise RegistryError(f"cannot register a {type(obj).__module__}.{type(obj).__qualname__}: expected a "
                                "path to an .onnx file or an rtx checkpoint, an rtx nn.Module or an onnx.ModelProto")
        if info.get("checkpoint_format") is None:
            info.pop("checkpoint_format", None)
        return {"format": fmt, "artifact": artifact.name, "sha256": sha, "size": size,
                "signature": signature, **info}


def _entries(d: Path) -> list[Path]:
    """The subdirectories of d; [] if d is missing (or was removed while we looked: readers take no lock)."""
    try:
        return [p for p in d.iterdir() if p.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _is_module(obj) -> bool:
    try:
        from rtx.nn import Module
    except ImportError:  # rtx-nn not installed: nothing can be a module
        return False
    return isinstance(obj, Module)


def _is_onnx_proto(obj) -> bool:
    return type(obj).__name__ == "ModelProto" and hasattr(obj, "graph") and hasattr(obj, "opset_import")


def _check_metadata(metadata) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise RegistryError(f"metadata must be a dict with string keys, got {metadata!r}")
    for k, v in metadata.items():
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise RegistryError(f"metadata[{k!r}] = {v!r} cannot be stored as JSON ({e})") from None
    return dict(metadata)


def _listing(items: list[str], limit: int = 20) -> str:
    return ", ".join(items[:limit]) + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _vlist(versions: list[ModelVersion]) -> str:
    return _listing([f"{mv.version} ({mv.stage})" for mv in versions])
