"""Feature definitions, shaped like Feast's: Entity, Field, FileSource, PushSource, RequestSource, FeatureView,
OnDemandFeatureView, FeatureService. Each turns into a plain dict (`to_dict`) for the registry and TOML files."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

# Feast's type names (feast.types); the string form is what the registry and TOML files store.
DTYPES = ("Int32", "Int64", "Float32", "Float64", "String", "Bool", "UnixTimestamp")
Int32, Int64, Float32, Float64, String, Bool, UnixTimestamp = DTYPES


def _check_dtype(dtype, where):
    if dtype not in DTYPES:
        raise ValueError(f"{where}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def _check_name(name, what):
    if not isinstance(name, str) or not name or not name.replace("_", "a").replace("-", "a").isalnum():
        raise ValueError(f"{what} name must be a non-empty string of letters, digits, '_' or '-', got {name!r}")
    return name


@dataclass(frozen=True)
class Field:
    name: str
    dtype: str

    def __post_init__(self):
        _check_name(self.name, "Field")
        _check_dtype(self.dtype, f"Field {self.name!r}")

    def to_dict(self):
        return {"name": self.name, "dtype": self.dtype}


@dataclass
class Entity:
    """What features are about (a driver, a customer); `join_keys` are the columns that identify one."""
    name: str
    join_keys: list[str] = None
    value_type: str = "Int64"
    description: str = ""
    tags: dict = field(default_factory=dict)

    def __post_init__(self):
        _check_name(self.name, "Entity")
        if self.join_keys is None:  # Feast: the entity's name is its join key when none is given
            self.join_keys = [self.name]
        if isinstance(self.join_keys, str) or not self.join_keys:
            raise ValueError(f"Entity {self.name!r}: join_keys must be a non-empty list of column names, "
                             f"got {self.join_keys!r}")
        _check_dtype(self.value_type, f"Entity {self.name!r}")

    def to_dict(self):
        return {"kind": "entity", "name": self.name, "join_keys": list(self.join_keys),
                "value_type": self.value_type, "description": self.description, "tags": dict(self.tags)}


@dataclass
class FileSource:
    """Events in a Parquet or CSV file (or a folder/glob of Parquet files)."""
    path: str
    timestamp_field: str = "event_timestamp"
    created_timestamp_column: str | None = None
    name: str | None = None
    file_format: str | None = None  # "parquet" | "csv"; from the path's suffix when None

    def __post_init__(self):
        self.path = str(self.path)
        if self.name is None:
            self.name = self.path
        if self.file_format is None:
            self.file_format = "csv" if self.path.lower().endswith(".csv") else "parquet"
        if self.file_format not in ("parquet", "csv"):
            raise ValueError(f"FileSource {self.path!r}: file_format must be 'parquet' or 'csv', got "
                             f"{self.file_format!r}")

    def to_dict(self):
        return {"kind": "file_source", "path": self.path, "timestamp_field": self.timestamp_field,
                "created_timestamp_column": self.created_timestamp_column, "name": self.name,
                "file_format": self.file_format}


@dataclass
class PushSource:
    """Rows pushed at serving time (`FeatureStore.write_to_online_store`); history lives in `batch_source`."""
    name: str
    batch_source: FileSource

    def to_dict(self):
        return {"kind": "push_source", "name": self.name, "batch_source": self.batch_source.to_dict()}

    # A FeatureView reads history through its push source's batch source.
    @property
    def path(self):
        return self.batch_source.path

    @property
    def timestamp_field(self):
        return self.batch_source.timestamp_field

    @property
    def created_timestamp_column(self):
        return self.batch_source.created_timestamp_column

    @property
    def file_format(self):
        return self.batch_source.file_format


@dataclass
class RequestSource:
    """Values that come with the request (e.g. a ride's distance), for on-demand features."""
    name: str
    schema: list[Field]

    def to_dict(self):
        return {"kind": "request_source", "name": self.name, "schema": [f.to_dict() for f in self.schema]}


def _ttl_seconds(ttl):
    if ttl is None:
        return None
    if isinstance(ttl, dt.timedelta):
        ttl = ttl.total_seconds()
    if not isinstance(ttl, (int, float)) or ttl < 0:
        raise ValueError(f"ttl must be a datetime.timedelta or seconds >= 0, got {ttl!r}")
    return None if ttl == 0 else float(ttl)  # Feast: a zero ttl means values never expire


class _Projectable:
    def __getitem__(self, names):
        """`fv[["a", "b"]]`: a projection of some features, as in Feast (for FeatureService)."""
        if isinstance(names, str):
            names = [names]
        known = [f.name for f in self.features]
        missing = [n for n in names if n not in known]
        if missing:
            raise KeyError(f"{self.name!r} has no feature(s) {missing}; it has {known}")
        return FeatureViewProjection(self.name, list(names))


@dataclass
class FeatureViewProjection:
    name: str
    features: list[str]


class FeatureView(_Projectable):
    """A group of features read from one source, keyed by entities, valid for `ttl` after their timestamp."""

    def __init__(self, name, entities, schema, source, ttl=None, online=True, tags=None, description=""):
        self.name = _check_name(name, "FeatureView")
        self.entities = [e if isinstance(e, Entity) else str(e) for e in entities]
        self.schema = list(schema)
        self.source = source
        self.ttl = _ttl_seconds(ttl)
        self.online = bool(online)
        self.tags = dict(tags or {})
        self.description = description
        if not isinstance(source, (FileSource, PushSource)):
            raise TypeError(f"FeatureView {name!r}: source must be a FileSource or PushSource, got "
                            f"{type(source).__name__}")
        names = [f.name for f in self.schema]
        if len(set(names)) != len(names):
            raise ValueError(f"FeatureView {name!r}: duplicate field names in schema {names}")

    @property
    def entity_names(self):
        return [e.name if isinstance(e, Entity) else e for e in self.entities]

    @property
    def join_keys(self):
        """Join key columns, once resolved against the registry's entities (`FeatureStore` fills this)."""
        keys = []
        for e in self.entities:
            keys += e.join_keys if isinstance(e, Entity) else [e]
        return keys

    @property
    def features(self):
        keys = set(self.join_keys)
        return [f for f in self.schema if f.name not in keys]  # Feast lists entity columns in the schema too

    def to_dict(self):
        return {"kind": "feature_view", "name": self.name, "entities": self.entity_names,
                "schema": [f.to_dict() for f in self.schema], "source": self.source.to_dict(), "ttl": self.ttl,
                "online": self.online, "tags": self.tags, "description": self.description}

    def __repr__(self):
        return f"FeatureView({self.name!r}, features={[f.name for f in self.features]}, ttl={self.ttl})"


class OnDemandFeatureView(_Projectable):
    """Features computed at request time by a Python function of request data and other features.

    `udf(inputs: dict[str, list]) -> dict[str, list]` (Feast's mode="python", on columns): `inputs` holds the
    request source's fields and the source feature views' features by their short names."""

    def __init__(self, name, sources, schema, udf, description="", tags=None):
        self.name = _check_name(name, "OnDemandFeatureView")
        self.sources = list(sources)
        self.schema = list(schema)
        self.udf = udf
        self.description = description
        self.tags = dict(tags or {})
        if not callable(udf):
            raise TypeError(f"OnDemandFeatureView {name!r}: udf must be callable, got {type(udf).__name__}")
        for s in self.sources:
            if not isinstance(s, (FeatureView, RequestSource, FeatureViewProjection)):
                raise TypeError(f"OnDemandFeatureView {name!r}: sources must be FeatureViews or RequestSources, "
                                f"got {type(s).__name__}")

    @property
    def features(self):
        return self.schema

    def to_dict(self):
        srcs = []
        for s in self.sources:
            if isinstance(s, RequestSource):
                srcs.append(s.to_dict())
            else:
                srcs.append({"kind": "feature_view_ref", "name": s.name})
        udf = f"{getattr(self.udf, '__module__', '?')}:{getattr(self.udf, '__qualname__', '?')}"
        return {"kind": "on_demand_feature_view", "name": self.name, "sources": srcs,
                "schema": [f.to_dict() for f in self.schema], "udf": udf, "description": self.description,
                "tags": self.tags}


class FeatureService:
    """A named list of features a model uses; the registry keeps a version that grows when the list changes."""

    def __init__(self, name, features, description="", tags=None):
        self.name = _check_name(name, "FeatureService")
        self.features = list(features)
        self.description = description
        self.tags = dict(tags or {})
        self.version = None  # set by the registry

    def feature_refs(self):
        refs = []
        for f in self.features:
            if isinstance(f, FeatureViewProjection):
                refs += [f"{f.name}:{n}" for n in f.features]
            elif isinstance(f, (FeatureView, OnDemandFeatureView)):
                refs += [f"{f.name}:{x.name}" for x in f.features]
            elif isinstance(f, str) and ":" in f:
                refs.append(f)
            else:
                raise TypeError(f"FeatureService {self.name!r}: features must be feature views, projections "
                                f"(fv[['a']]) or 'view:feature' strings, got {f!r}")
        return refs

    def to_dict(self):
        return {"kind": "feature_service", "name": self.name, "features": self.feature_refs(),
                "description": self.description, "tags": self.tags}


def from_dict(d, entities=None, feature_views=None, udfs=None):
    """Rebuild a definition from its `to_dict` form (registry rows, TOML tables)."""
    kind = d["kind"]
    if kind == "entity":
        return Entity(d["name"], d.get("join_keys"), d.get("value_type", "Int64"), d.get("description", ""),
                      d.get("tags", {}))
    if kind == "file_source":
        return FileSource(d["path"], d.get("timestamp_field", "event_timestamp"), d.get("created_timestamp_column"),
                          d.get("name"), d.get("file_format"))
    if kind == "push_source":
        return PushSource(d["name"], from_dict(d["batch_source"]))
    if kind == "request_source":
        return RequestSource(d["name"], [Field(**f) for f in d["schema"]])
    if kind == "feature_view":
        ents = [(entities or {}).get(e, e) for e in d["entities"]]
        return FeatureView(d["name"], ents, [Field(**f) for f in d["schema"]], from_dict(d["source"]),
                           ttl=d.get("ttl"), online=d.get("online", True), tags=d.get("tags"),
                           description=d.get("description", ""))
    if kind == "on_demand_feature_view":
        udf = (udfs or {}).get(d["name"])
        if udf is None:
            return None  # its code is not loaded: the registry never imports code by name (see FeatureStore)
        srcs = [from_dict(s) if s["kind"] == "request_source" else feature_views[s["name"]] for s in d["sources"]]
        return OnDemandFeatureView(d["name"], srcs, [Field(**f) for f in d["schema"]], udf,
                                   d.get("description", ""), d.get("tags"))
    if kind == "feature_service":
        fs = FeatureService(d["name"], d["features"], d.get("description", ""), d.get("tags"))
        fs.version = d.get("version")
        return fs
    raise ValueError(f"unknown definition kind {kind!r}")
