"""Loading a feature repository's definitions: `features.toml` (declarative) and/or `features.py` (Python).

`features.py` is the user's own code, run only by an explicit command (`rtx feature-store apply/serve`), as
`feast apply` runs a repo's Python files; the registry itself never names code to import."""
from __future__ import annotations

import runpy
import tomllib
from pathlib import Path

from .definitions import Entity, FeatureService, FeatureView, Field, FileSource, OnDemandFeatureView, PushSource


def _source(d, repo):
    d = dict(d)
    if "batch_source" in d:
        return PushSource(d["name"], _source(d["batch_source"], repo))
    p = Path(d.pop("path"))
    return FileSource(str(p if p.is_absolute() else (repo / p)), **d)


def from_toml(path):
    """[[entities]] name, join_keys, value_type; [[feature_views]] name, entities, schema = [{name, dtype}],
    source = {path, timestamp_field, created_timestamp_column}, ttl_seconds, online, tags;
    [[feature_services]] name, features = ["view:feature", ...]. Relative paths are from the file's folder."""
    path = Path(path)
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    repo = path.parent.resolve()
    objs = [Entity(e["name"], e.get("join_keys"), e.get("value_type", "Int64"), e.get("description", ""),
                   e.get("tags", {})) for e in doc.get("entities", [])]
    for v in doc.get("feature_views", []):
        objs.append(FeatureView(v["name"], v["entities"], [Field(**f) for f in v["schema"]], _source(v["source"], repo),
                                ttl=v.get("ttl_seconds"), online=v.get("online", True), tags=v.get("tags"),
                                description=v.get("description", "")))
    for s in doc.get("feature_services", []):
        objs.append(FeatureService(s["name"], s["features"], s.get("description", ""), s.get("tags")))
    return objs


def load_definitions(repo):
    repo = Path(repo)
    objs = []
    if (repo / "features.toml").exists():
        objs += from_toml(repo / "features.toml")
    if (repo / "features.py").exists():
        ns = runpy.run_path(str(repo / "features.py"), run_name="feature_repo")
        objs += [v for v in ns.values()
                 if isinstance(v, (Entity, FeatureView, OnDemandFeatureView, FeatureService))]
    if not objs:
        raise FileNotFoundError(f"{repo}: no features.toml or features.py with definitions")
    order = (Entity, FeatureView, OnDemandFeatureView, FeatureService)  # entities before the views that use them
    return sorted(objs, key=lambda o: next(i for i, t in enumerate(order) if isinstance(o, t)))
