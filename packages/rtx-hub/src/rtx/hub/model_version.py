"""ModelVersion: one registered version, as read from its model.json; verify() and load()."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from rtx.hub.errors import IntegrityError, ModelNotFoundError, RegistryError
from rtx.hub.fsutil import sha256_file
from rtx.hub.trust import check_json_args, resolve_class

MODULE_FORMAT = "rtx-module/1"  # the checkpoint layout Registry.register writes for an in-memory module


@dataclasses.dataclass(frozen=True)
class ModelVersion:
    """A registered model version. `artifact` is the file's path inside the registry; `sha256` and
    `size` were measured when it was registered; `card` is the model card's Markdown (README.md)."""

    name: str
    version: str
    stage: str
    format: str
    artifact: Path
    sha256: str
    size: int
    metadata: dict
    signature: dict | None
    card: str
    created: str
    checkpoint_format: str | None = None  # an rtx checkpoint's own "format" field (e.g. "rtx-nlg-gpt/1")

    @property
    def path(self) -> Path:
        """The version's directory (artifact, model.json, README.md)."""
        return self.artifact.parent

    @property
    def uri(self) -> str:
        """NAME:VERSION, as the CLI writes it."""
        return f"{self.name}:{self.version}"

    def verify(self) -> Path:
        """Recompute the artifact's sha256; return its path, or raise IntegrityError naming the file,
        the recorded hash and the hash found (a tampered, truncated or missing file).
        ModelNotFoundError if the whole version was removed since this object was read."""
        try:
            found = sha256_file(self.artifact)
        except FileNotFoundError:
            if not (self.path / "model.json").exists():  # the whole version is gone: removed, not damaged
                raise ModelNotFoundError(f"{self.uri} was removed from the registry {str(self.path.parent.parent)!r} "
                                         "after it was looked up") from None
            raise IntegrityError(f"{self.uri}: artifact {str(self.artifact)!r} is missing (expected sha256 "
                                 f"{self.sha256})", path=self.artifact, expected=self.sha256) from None
        if found != self.sha256:
            size = self.artifact.stat().st_size
            why = (f"it is {size:,} bytes, {self.size:,} were registered (truncated or extended)"
                   if size != self.size else "same size, different bytes (modified)")
            raise IntegrityError(f"{self.uri}: artifact {str(self.artifact)!r} does not match its registered "
                                 f"checksum: expected sha256 {self.sha256}, found {found}; {why}. Refusing to "
                                 "load it: re-register the model from a good copy",
                                 path=self.artifact, expected=self.sha256, found=found)
        return self.artifact

    def load(self, *, raw: bool = False, map_location=None, trust_remote_code: bool = False):
        """verify(), then: ONNX -> the artifact's path (a str, for onnxruntime or rtx.inference);
        rtx -> rtx.load(artifact). A module registered in memory comes back as that module (its class
        built with the arguments saved at registration, then load_state_dict) if the class is allowed:
        rtx's own, registered with rtx.hub.register_class or the entry point group rtx.hub.classes;
        any other class raises UntrustedClassError before it is imported, unless trust_remote_code=True
        (only for registries whose writers you trust: the file decides what code runs).
        raw=True returns the checkpoint dict instead. map_location goes to rtx.load."""
        path = self.verify()
        if self.format == "onnx":
            return str(path)
        import rtx

        obj = rtx.load(path, map_location=map_location)
        if raw or not (isinstance(obj, dict) and obj.get("format") == MODULE_FORMAT):
            return obj
        return rebuild_module(obj, self.uri, trust_remote_code=trust_remote_code)

    def to_dict(self) -> dict:
        """JSON-ready fields (the card is left out: it is the README's text)."""
        d = dataclasses.asdict(self)
        d["artifact"] = str(self.artifact)
        d.pop("card")
        return d

    @classmethod
    def from_dir(cls, path: Path) -> ModelVersion:
        """Read the version stored in directory `path` (model.json and README.md)."""
        text = (path / "model.json").read_text(encoding="utf-8")  # FileNotFoundError: no such version
        try:
            card = (path / "README.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            card = ""
        try:
            info = json.loads(text)
            artifact = info["artifact"]
            # model.json is not signed: an edited "artifact": "../../x" must not point outside the
            # version's directory, and a directory copied by hand must not pass for another version.
            if not isinstance(artifact, str) or artifact in ("", ".", "..") or Path(artifact).name != artifact:
                raise ValueError(f"artifact {artifact!r} is not a file name inside the version's directory")
            if (info["name"], info["version"]) != (path.parent.name, path.name):
                raise ValueError(f"it describes {info['name']}:{info['version']} but lies in "
                                 f"{path.parent.name}/{path.name}")
            return cls(name=info["name"], version=info["version"], stage=info["stage"], format=info["format"],
                       artifact=path / info["artifact"], sha256=info["sha256"], size=info["size"],
                       metadata=info.get("metadata") or {}, signature=info.get("signature"), card=card,
                       created=info["created"], checkpoint_format=info.get("checkpoint_format"))
        except (ValueError, KeyError, TypeError) as e:
            raise RegistryError(f"{str(path / 'model.json')!r} is unreadable ({type(e).__name__}: {e}); it was "
                                "edited or damaged outside rtx.hub") from None


def rebuild_module(ckpt: dict, uri: str, *, trust_remote_code: bool = False):
    """An nn.Module from an rtx-module/1 checkpoint: check the class against the allow-list
    (rtx.hub.trust) and the arguments are JSON values, build it, load the weights. Nothing named by
    the file is imported or called before both checks pass."""
    where = ckpt.get("class", "")
    args, kwargs = check_json_args(ckpt.get("args") or [], ckpt.get("kwargs") or {}, uri)
    try:
        cls = resolve_class(where, uri, trust_remote_code=trust_remote_code)
    except (ImportError, AttributeError) as e:  # trust_remote_code=True and the class is not importable
        raise RegistryError(f"{uri}: cannot import the module class {where!r} ({type(e).__name__}: {e}); make it "
                            "importable, or load(raw=True) and call load_state_dict on a model you build") from None
    try:
        module = cls(*args, **kwargs)
    except TypeError as e:
        raise RegistryError(f"{uri}: cannot build {where} from the saved arguments args={args} kwargs={kwargs} "
                            f"({e}); register it with module_args=/module_kwargs=, or load(raw=True) and call "
                            "load_state_dict on a model you build") from None
    module.load_state_dict(ckpt["model"])
    module.eval()
    return module
