"""Which module classes a checkpoint may name: no code runs because a registry file says so.

An rtx-module/1 checkpoint names its class as "module:qualname" and carries constructor arguments.
Whoever can write to a registry directory writes that text, so it is resolved against an allow-list
before anything is imported or called (the same stance as PyTorch's weights_only=True and Hugging
Face's trust_remote_code):

1. classes given to register_class() (looked up by name in a dict: nothing imported);
2. rtx's own classes: the module path is `rtx` or `rtx.<sub>...` where <sub> is a known rtx
   subpackage, and every module on the way is a file that an installed rtx distribution owns
   (checked before it is imported, so an `rtx/evil.py` planted in a folder on sys.path is refused);
3. classes named by an installed distribution's entry point in the group "rtx.hub.classes"
   (value "module:qualname"): installed code, trusted like any installed package;
4. anything importable, only when the caller passes trust_remote_code=True.

Whatever the route, the object must be a class and a subclass of rtx.nn.Module before it is called,
and the constructor arguments must be JSON values (nothing in them is imported or instantiated).
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from importlib import metadata
from pathlib import Path

from rtx.hub.errors import RegistryError, UntrustedClassError

ENTRY_POINT_GROUP = "rtx.hub.classes"

_registered: dict[str, type] = {}  # "module:qualname" -> class
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*\Z")  # pytest's importlib names hold "-"


def class_path(cls: type) -> str:
    """The "module:qualname" an rtx-module/1 checkpoint records for `cls`."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _module_base():
    from rtx.nn import Module  # rtx-nn is a dependency of rtx-hub; imported late to keep import rtx.hub light

    return Module


def _check_module_class(obj, where: str, uri: str) -> type:
    Module = _module_base()
    if not isinstance(obj, type):
        raise UntrustedClassError(f"{uri}: {where!r} is a {type(obj).__name__}, not a class: only rtx.nn.Module "
                                  "subclasses are built from a checkpoint", class_path=where)
    if not issubclass(obj, Module):
        raise UntrustedClassError(f"{uri}: {where!r} is the class {obj.__module__}.{obj.__qualname__}, which is not a "
                                  "subclass of rtx.nn.Module: only modules are built from a checkpoint",
                                  class_path=where)
    return obj


def register_class(cls: type | None = None):
    """Allow checkpoints to rebuild `cls` (an rtx.nn.Module subclass) by its "module:qualname".
    Usable as a decorator (`@register_class`). Returns cls."""
    if cls is None:  # @register_class()
        return register_class
    if not isinstance(cls, type) or not issubclass(cls, _module_base()):
        what = f"the class {cls.__qualname__}" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise TypeError(f"register_class expects an rtx.nn.Module subclass, got {what}")
    _registered[class_path(cls)] = cls
    return cls


def unregister_class(cls: type) -> None:
    """Undo register_class(cls); a class that was not registered is ignored."""
    if _registered.get(class_path(cls)) is cls:
        del _registered[class_path(cls)]


def registered_classes() -> dict[str, type]:
    """{"module:qualname": class} of the classes allowed by register_class (a copy)."""
    return dict(_registered)


def resolve_class(where, uri: str, *, trust_remote_code: bool = False) -> type:
    """The rtx.nn.Module subclass that the checkpoint text `where` ("module:qualname") names, if it
    is allowed (see the module docstring); UntrustedClassError, before any import, if it is not."""
    if not isinstance(where, str):
        raise RegistryError(f"{uri}: the checkpoint's \"class\" field is a {type(where).__name__}, expected a "
                            "\"module:qualname\" string")
    if where in _registered:
        return _check_module_class(_registered[where], where, uri)
    mod_name, sep, qual = where.partition(":")
    if not (sep and _MODULE.match(mod_name) and _DOTTED.match(qual)) or any(
            p.startswith("__") for p in qual.split(".")):
        raise UntrustedClassError(f"{uri}: the checkpoint's class {where!r} is not a \"module:qualname\" path of "
                                  "a class (names only, no dunder attributes); refusing to import anything",
                                  class_path=where)
    not_rtx = ""
    if mod_name == "rtx" or mod_name.startswith("rtx."):
        locations = _rtx_code_locations()
        if _trusted_rtx_module(mod_name, locations):
            cls = _check_module_class(_lookup(importlib.import_module(mod_name), qual, where, uri), where, uri)
            # an attribute of an rtx module could be some other object: the class itself must be rtx's
            if not _trusted_rtx_module(cls.__module__, locations):
                raise UntrustedClassError(f"{uri}: {where!r} is the class {cls.__module__}.{cls.__qualname__}, "
                                          "defined outside rtx's installed packages", class_path=where)
            return cls
        not_rtx = " (it is not a module of an installed rtx package)"
    else:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):  # reads metadata files only
            if ep.attr and f"{ep.module}:{ep.attr}" == where:
                return _check_module_class(ep.load(), where, uri)
    if trust_remote_code:
        return _check_module_class(_lookup(importlib.import_module(mod_name), qual, where, uri), where, uri)
    raise UntrustedClassError(
        f"{uri}: the checkpoint names the class {where!r}{not_rtx}, which is not allowed to be built from a "
        f"registry file (nothing was imported). rtx's own classes and allowed ones load; to allow this one, call "
        f"rtx.hub.register_class(cls) (or decorate the class with @rtx.hub.register_class) before loading, declare "
        f"it in the entry point group {ENTRY_POINT_GROUP!r} of an installed package "
        f"(any_name = \"{where}\"), or pass trust_remote_code=True to load() if you trust whoever can write to this "
        "registry", class_path=where)


def _lookup(module, qual: str, where: str, uri: str):
    """module.<qual> through the objects' own __dict__s: no module __getattr__ (rtx's lazy imports)
    and no descriptor runs."""
    obj = module
    for part in qual.split("."):
        try:
            obj = vars(obj)[part]
        except (KeyError, TypeError):
            owner = getattr(obj, "__name__", obj)
            raise UntrustedClassError(f"{uri}: {where!r}: {type(obj).__name__} {owner!r} has no attribute {part!r}",
                                      class_path=where) from None
    return obj


def _trusted_rtx_module(name: str, locations: tuple[set[Path], set[Path]]) -> bool:
    """True when `name` and each package above it are files of installed rtx distributions.
    Only the parents (already checked) are imported while looking: the module itself is not."""
    parts = name.split(".")
    if parts[0] != "rtx":
        return False
    if len(parts) > 1:
        import rtx

        sub = parts[1]
        if sub not in getattr(rtx, "KNOWN_PACKAGES", ()) and not _installed(f"rtx-{sub.replace('_', '-')}"):
            return False
    dirs, files = locations
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        try:
            spec = importlib.util.find_spec(prefix)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        if spec.origin is None or spec.origin == "namespace":  # a PEP 420 folder runs no code itself
            if not any(_owned(Path(p), dirs, files, folder=True) for p in spec.submodule_search_locations or ()):
                return False
        elif not _owned(Path(spec.origin), dirs, files):
            return False
    return True


def _owned(path: Path, dirs: set[Path], files: set[Path], folder: bool = False) -> bool:
    path = path.resolve()
    if any(path.is_relative_to(d) for d in dirs):
        return True
    return (any(f.is_relative_to(path) for f in files) if folder else path in files)


def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _rtx_code_locations() -> tuple[set[Path], set[Path]]:
    """(folders, files) holding installed rtx code: an editable install's .pth names its source
    folder (whose rtx/ is the code); a wheel lists its files in RECORD."""
    dirs: set[Path] = set()
    files: set[Path] = set()
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name != "rtx" and not name.startswith("rtx-"):
            continue
        for f in dist.files or ():
            if f.suffix == ".pth":
                pth = Path(dist.locate_file(f))
                try:
                    lines = pth.read_text(encoding="utf-8").splitlines()
                except OSError:
                    continue
                for line in lines:
                    line = line.strip()
                    if line and not line.startswith(("#", "import ", "import\t")):
                        dirs.add((pth.parent / line).resolve() / "rtx")  # site.py joins it to the site dir
            elif f.parts[:1] == ("rtx",):
                files.add(Path(dist.locate_file(f)).resolve())
    return dirs, files


def check_json_args(args, kwargs, uri: str) -> tuple[list, dict]:
    """The constructor arguments of a checkpoint, if they are JSON values (None, bool, int, float,
    str, lists/tuples and str-keyed dicts of them); RegistryError naming the first one that is not.
    Nothing in them is imported or instantiated: a dict that looks like a class reference stays a dict."""
    if not isinstance(args, (list, tuple)):
        raise RegistryError(f"{uri}: the constructor arguments \"args\" are a {type(args).__name__}, expected a list")
    if not isinstance(kwargs, dict):
        raise RegistryError(f"{uri}: the constructor arguments \"kwargs\" are a {type(kwargs).__name__}, "
                            "expected a dict")
    try:
        _check_json(list(args), "args")
        _check_json(kwargs, "kwargs")
    except ValueError as e:
        raise RegistryError(f"{uri}: {e}") from None
    for k in kwargs:
        if not k.isidentifier():
            raise RegistryError(f"{uri}: constructor keyword {k!r} is not a Python identifier")
    return list(args), dict(kwargs)


def _check_json(value, where: str) -> None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"constructor argument {where} has the key {k!r}: JSON objects have str keys")
            _check_json(v, f"{where}[{k!r}]")
        return
    raise ValueError(f"constructor argument {where} is a {type(value).__module__}.{type(value).__qualname__}: "
                        "a module is rebuilt only from JSON values (None, bool, int, float, str, lists, dicts); "
                        "build the model yourself and load_state_dict(load(raw=True)['model'])")
