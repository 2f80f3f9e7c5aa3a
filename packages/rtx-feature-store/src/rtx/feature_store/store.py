"""FeatureStore: apply definitions to the registry, build training sets, materialize, serve online values."""
from __future__ import annotations

import datetime as dt
import json
import math
import time
import tomllib
from itertools import repeat
from pathlib import Path

import numpy as np
import pyarrow as pa

from . import offline
from .definitions import Entity, FeatureService, FeatureView, OnDemandFeatureView, RequestSource, from_dict
from .online import decode_row, entity_key, open_online_store, row_prefix
from .registry import Registry

PRESENT, NOT_FOUND, OUTSIDE_MAX_AGE, NULL_VALUE = "PRESENT", "NOT_FOUND", "OUTSIDE_MAX_AGE", "NULL_VALUE"
EPOCH = dt.datetime(1970, 1, 1)


def to_naive_utc(t):
    """datetime (aware: converted to UTC; naive: taken as UTC), ISO string or epoch seconds -> naive UTC."""
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return EPOCH + dt.timedelta(seconds=t)
    if isinstance(t, str):
        t = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    if isinstance(t, np.datetime64):
        return EPOCH + dt.timedelta(microseconds=int(t.astype("datetime64[us]").astype(np.int64)))
    if hasattr(t, "to_pydatetime"):  # pandas Timestamp
        t = t.to_pydatetime()
    if not isinstance(t, dt.datetime):
        raise TypeError(f"expected a datetime, ISO string or epoch seconds, got {type(t).__name__}")
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t


def epoch(t):
    return (to_naive_utc(t) - EPOCH).total_seconds()


def _as_arrow(df):
    if isinstance(df, pa.Table):
        return df
    if isinstance(df, dict):
        return pa.table(df)
    if isinstance(df, (str, Path)):
        import pyarrow.parquet as pq
        return pq.read_table(str(df))
    if hasattr(df, "to_dict") and hasattr(df, "columns"):  # pandas, without importing it
        return pa.Table.from_pandas(df, preserve_index=False)
    raise TypeError(f"expected a pyarrow Table, pandas DataFrame, dict of columns or Parquet path, "
                    f"got {type(df).__name__}")


class RetrievalJob:
    """The training set of `get_historical_features` (computed eagerly, held as an Arrow table)."""

    def __init__(self, table):
        self.table = table

    def to_arrow(self):
        return self.table

    def to_df(self):
        return self.table.to_pandas()

    def to_parquet(self, path):
        import pyarrow.parquet as pq
        pq.write_table(self.table, str(path))
        return str(path)

    def to_rtx_dataset(self, label=None, features=None, dtype="float32"):
        """An rtx.data.TensorDataset of (features, label) rows, or of features alone when `label` is None.
        `features` defaults to every numeric column except the label and timestamps; nulls become NaN."""
        import rtx
        import rtx.data

        if features is None:
            features = [f.name for f in self.table.schema if f.name != label
                        and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                             or pa.types.is_boolean(f.type))]
        if not features:
            raise ValueError("to_rtx_dataset: no numeric feature columns; pass features=[...]")

        def col(name):
            if name not in self.table.column_names:
                raise KeyError(f"to_rtx_dataset: no column {name!r}; columns are {self.table.column_names}")
            c = self.table.column(name)
            if not (pa.types.is_integer(c.type) or pa.types.is_floating(c.type) or pa.types.is_boolean(c.type)):
                raise TypeError(f"to_rtx_dataset: column {name!r} is {c.type}, not numeric")
            return c.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(dtype)  # nulls -> NaN

        x = rtx.tensor(np.stack([col(n) for n in features], axis=1))
        if label is None:
            return rtx.data.TensorDataset(x)
        return rtx.data.TensorDataset(x, rtx.tensor(col(label)))


def _iso_us(ts):
    if None in ts:
        ts = [0.0 if t is None else t for t in ts]
    us = np.rint(np.asarray(ts, dtype=np.float64) * 1e6).astype("datetime64[us]")
    return np.datetime_as_string(us, unit="us").tolist()  # NumPy formats the lot in one call


def iso_timestamps(ts):
    """Epoch seconds (None: the epoch) -> ISO 8601 UTC strings as Feast's server writes them: microseconds only
    when not zero, then "Z"."""
    return [s[:-7] + "Z" if s.endswith(".000000") else s + "Z" for s in _iso_us(ts)]


def iso_timestamps_json(ts):
    """JSON text of iso_timestamps(ts), made by joins and one replace instead of a Python step per string."""
    if not ts:
        return "[]"
    return ('["' + 'Z","'.join(_iso_us(ts)) + 'Z"]').replace('.000000Z"', 'Z"')


class OnlineResponse:
    def __init__(self, keys, names, values, statuses, timestamps, value_json=None):
        self.keys, self.names = keys, names  # keys: {join key: [values]}, names: feature output names
        self.statuses, self.timestamps = statuses, timestamps  # {name: [per row]}
        # A feature's values are held either as a list or, when cut straight out of the online store's text
        # (split_columns), as a JSON array text, decoded only if someone reads `values`: the feature server
        # never does.
        self._values, self.value_json = values, value_json or {}

    @property
    def values(self):
        for n, text in self.value_json.items():
            if n not in self._values:
                self._values[n] = json.loads(text)
        return self._values

    def to_dict(self, include_event_timestamps=False):
        out = {k: list(v) for k, v in self.keys.items()}
        for n in self.names:
            out[n] = list(self.values[n])
            if include_event_timestamps:
                out[n + "__ts"] = list(self.timestamps[n])
        return out

    def to_feast_json(self):
        """Feast's feature-server response: metadata.feature_names and one result (values, statuses,
        event_timestamps) per column, join keys first."""
        names = list(self.keys) + self.names
        results = []
        for v in self.keys.values():
            results.append({"values": list(v), "statuses": [PRESENT] * len(v),
                            "event_timestamps": ["1970-01-01T00:00:00Z"] * len(v)})
        formatted = {}  # a view's features share one timestamps list: format it once
        for n in self.names:
            ts = self.timestamps[n]
            if id(ts) not in formatted:
                formatted[id(ts)] = iso_timestamps(ts)
            results.append({"values": self.values[n], "statuses": self.statuses[n],
                            "event_timestamps": formatted[id(ts)]})
        return {"metadata": {"feature_names": names}, "results": results}


    def to_feast_json_bytes(self):
        """to_feast_json() as UTF-8 JSON text, each distinct list encoded once: the features of a view share one
        timestamps list and mostly equal statuses, which the plain encoder would write out (spending as much CPU
        as on the values) once per feature. Values cut from the online store's text (value_json) go in as they
        are."""
        enc = _FEAST_ENCODER.encode
        stamps_json = {}  # id(timestamps list) -> its JSON
        statuses_json = []  # (statuses, JSON): a feature whose statuses equal an earlier one's reuses its text

        def status_json(st):
            for seen, j in statuses_json:
                if st == seen:
                    return j
            j = enc(st)
            statuses_json.append((st, j))
            return j
        parts = []
        for v in self.keys.values():
            epoch_json = "[" + ",".join(['"1970-01-01T00:00:00Z"'] * len(v)) + "]"
            parts.append(f'{{"values":{enc(list(v))},"statuses":{status_json([PRESENT] * len(v))},'
                         f'"event_timestamps":{epoch_json}}}')
        for n in self.names:
            ts = self.timestamps[n]
            if id(ts) not in stamps_json:
                stamps_json[id(ts)] = iso_timestamps_json(ts)
            values = self.value_json.get(n) or enc(self._values[n])
            parts.append(f'{{"values":{values},"statuses":{status_json(self.statuses[n])},'
                         f'"event_timestamps":{stamps_json[id(ts)]}}}')
        names = enc(list(self.keys) + self.names)
        return f'{{"metadata":{{"feature_names":{names}}},"results":[{",".join(parts)}]}}'.encode()


# As Starlette's JSONResponse: compact, UTF-8, and no NaN/Infinity (not JSON).
_FEAST_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

_NO_VALUES = {}  # the values of a row that is missing or too old: every feature reads as None
_SCALAR_DTYPES = frozenset(("Int32", "Int64", "Float32", "Float64", "Bool"))  # stored as JSON numbers/true/false


def split_columns(text, k, n):
    """The online store's text of n rows of k bare values each (`0.25,9,0.5,null`: read_rows with the view's
    prefix) -> one list of value texts per feature, without decoding: the stored text of a value is already what
    an answer says, and parsing and printing 1,000 floats was most of a server request's CPU. None when a value
    is not a plain scalar (a string, NaN or Infinity, which JSON lacks): the caller decodes the rows instead."""
    if '"' in text or "[" in text or "{" in text or "N" in text or "I" in text:
        return None
    parts = text.split(",")
    if len(parts) != n * k:
        return None
    return [parts[j::k] for j in range(k)]


class _EntityRows:
    """Entity rows given as a dict of columns (the feature server's form: used as is) or a list of dicts; read
    by column, so a lookup never builds a dict per row."""

    def __init__(self, entity_rows):
        if isinstance(entity_rows, dict):
            cols = {k: v if isinstance(v, list) else list(v) for k, v in entity_rows.items()}
            lens = {len(v) for v in cols.values()}
            if len(lens) > 1:
                raise ValueError(f"entity_rows columns differ in length: {sorted(lens)}")
            self.n, self.cols, self.rows = (lens.pop() if lens else 0), cols, None
        elif isinstance(entity_rows, list) and all(isinstance(r, dict) for r in entity_rows):
            self.n, self.cols, self.rows = len(entity_rows), {}, entity_rows
        else:
            raise TypeError("entity_rows must be a list of dicts or a dict of lists")

    def column(self, key, message):
        """The values of `key`; if a row lacks it, ValueError(message(that row))."""
        col = self.cols.get(key)
        if col is not None:
            return col
        if self.rows is None:
            raise ValueError(message({k: v[0] for k, v in self.cols.items()} if self.n else {}))
        for r in self.rows:
            if key not in r:
                raise ValueError(message(r))
        col = self.cols[key] = [r[key] for r in self.rows]
        return col


def _coerce_key(value, dtype, key):
    """An entity key value from a request, checked against the entity's type (a wrong type is the caller's
    error, never a silent miss)."""
    if dtype in ("Int64", "Int32"):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"entity key {key!r} expects an integer ({dtype}), got {type(value).__name__} {value!r}")
        return int(value)
    if dtype == "String":
        if not isinstance(value, str):
            raise TypeError(f"entity key {key!r} expects a string, got {type(value).__name__} {value!r}")
        return value
    if dtype in ("Float32", "Float64"):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"entity key {key!r} expects a number ({dtype}), got {type(value).__name__}")
        return float(value)
    return value


def _native(v):
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


class FeatureStore:
    """A feature repository: `repo_path/registry.db` (definitions), an online store, sources on disk.

    `online_store`: None (feature_store.toml's `online_store`, else SQLite at repo_path/online.db),
    "sqlite:///path.db" or "redis://host:port/db"."""

    def __init__(self, repo_path=".", online_store=None, project=None, registry_cache_ttl=10.0):
        self.repo_path = Path(repo_path)
        self.repo_path.mkdir(parents=True, exist_ok=True)
        cfg = {}
        if (self.repo_path / "feature_store.toml").exists():
            with open(self.repo_path / "feature_store.toml", "rb") as f:
                cfg = tomllib.load(f)
        self.project = project or cfg.get("project", "default")
        self.registry = Registry(self.repo_path / "registry.db")
        self.online = open_online_store(online_store or cfg.get("online_store"), self.repo_path, self.project)
        self._udfs = {}  # OnDemandFeatureView name -> function: code comes from apply(), never from the registry
        # Like Feast's registry cache_ttl_seconds: definitions are re-read at most this often (apply() in this
        # process refreshes at once), so an online lookup does not pay for registry queries.
        self.registry_cache_ttl = registry_cache_ttl
        self._cache = None
        self._plans = (None, {})  # get_online_features' resolved feature lists, per registry snapshot

    # -- definitions -----------------------------------------------------------------------------------------
    def apply(self, objects, allow_breaking=False):
        """Validate and register definitions (one transaction); BreakingChangeError on incompatible changes."""
        if not isinstance(objects, (list, tuple)):
            objects = [objects]
        self._cache = None  # validate against the registry as it is now, not a cached copy
        entities = {e["name"]: from_dict(e) for e in self.registry.list("entity")}
        entities.update({o.name: o for o in objects if isinstance(o, Entity)})
        views = {v.name: v for v in self.list_feature_views()}
        views.update({o.name: o for o in objects if isinstance(o, FeatureView)})
        odfvs = {o.name: o for o in objects if isinstance(o, OnDemandFeatureView)}
        for o in objects:
            if isinstance(o, FeatureView):
                for i, e in enumerate(o.entities):
                    name = e.name if isinstance(e, Entity) else e
                    if name not in entities:
                        raise ValueError(f"FeatureView {o.name!r}: unknown entity {name!r}; apply it first or "
                                         f"together (known: {sorted(entities)})")
                    o.entities[i] = entities[name]
                self._check_source(o)
            elif isinstance(o, OnDemandFeatureView):
                for s in o.sources:
                    if not isinstance(s, RequestSource) and s.name not in views:
                        raise ValueError(f"OnDemandFeatureView {o.name!r}: unknown source view {s.name!r}")
            elif isinstance(o, FeatureService):
                for ref in o.feature_refs():
                    v, _, f = ref.partition(":")
                    have = views.get(v) or odfvs.get(v)
                    if have is None and self.registry.get("on_demand_feature_view", v) is None:
                        raise ValueError(f"FeatureService {o.name!r}: unknown feature view {v!r} in {ref!r}")
                    if have is not None and f not in [x.name for x in have.features]:
                        raise ValueError(f"FeatureService {o.name!r}: view {v!r} has no feature {f!r}")
            elif not isinstance(o, Entity):
                raise TypeError(f"apply: expected Entity, FeatureView, OnDemandFeatureView or FeatureService, "
                                f"got {type(o).__name__}")
        versions = self.registry.apply([o.to_dict() for o in objects], allow_breaking=allow_breaking)
        self._cache = None
        for o in objects:
            if isinstance(o, OnDemandFeatureView):
                self._udfs[o.name] = o.udf
            if isinstance(o, FeatureService):
                o.version = versions[("feature_service", o.name)]
        return versions

    def _check_source(self, fv):
        """The source's file must hold the join keys, timestamp(s) and features (when it exists already)."""
        src = fv.source
        if not Path(src.path).exists():
            return
        con = offline.connect()
        alias = offline.source_relation(con, fv, "__check")
        cols = [r[0] for r in con.execute(f"DESCRIBE {alias}").fetchall()]
        need = fv.join_keys + [src.timestamp_field] + [f.name for f in fv.features]
        if src.created_timestamp_column:
            need.append(src.created_timestamp_column)
        missing = [c for c in need if c not in cols]
        if missing:
            raise ValueError(f"FeatureView {fv.name!r}: source {src.path} lacks column(s) {missing}; it has {cols}")

    def _defs(self):
        now = time.monotonic()
        if self._cache is None or now - self._cache[0] > self.registry_cache_ttl:
            ents = {d["name"]: from_dict(d) for d in self.registry.list("entity")}
            views = {d["name"]: from_dict(d, ents) for d in self.registry.list("feature_view")}
            odfvs = {d["name"]: d for d in self.registry.list("on_demand_feature_view")}
            self._cache = (now, ents, views, odfvs)
        return self._cache[1:]

    def list_entities(self):
        return list(self._defs()[0].values())

    def list_feature_views(self):
        return list(self._defs()[1].values())

    def list_on_demand_feature_views(self):
        views = {v.name: v for v in self.list_feature_views()}
        out = [from_dict(d, feature_views=views, udfs=self._udfs) for d in self.registry.list("on_demand_feature_view")]
        return [o for o in out if o is not None]

    def list_feature_services(self):
        return [from_dict(d) for d in self.registry.list("feature_service")]

    def get_feature_view(self, name):
        for v in self.list_feature_views():
            if v.name == name:
                return v
        raise KeyError(f"no feature view {name!r}; known: {[v.name for v in self.list_feature_views()]}")

    def get_feature_service(self, name):
        d = self.registry.get("feature_service", name)
        if d is None:
            raise KeyError(f"no feature service {name!r}")
        return from_dict(d)

    def _resolve(self, features):
        """Feature refs ('view:feature' strings or a FeatureService) -> [(view, feature name)] in order."""
        if isinstance(features, FeatureService):
            features = self.get_feature_service(features.name).features
        if isinstance(features, str):
            raise TypeError("features must be a list of 'view:feature' strings or a FeatureService, got a string")
        _, views, odfv_specs = self._defs()
        out = []
        for ref in features:
            if not isinstance(ref, str) or ":" not in ref:
                raise ValueError(f"feature reference must be 'view:feature', got {ref!r}")
            v, _, f = ref.partition(":")
            if v in views:
                view = views[v]
            elif v in odfv_specs:
                if v not in self._udfs:
                    raise ValueError(f"on-demand feature view {v!r} is registered but its function is not loaded in "
                                     f"this process: apply() its definition (rtx feature-store loads the repo's "
                                     f"definitions file)")
                view = from_dict(odfv_specs[v], feature_views=views, udfs=self._udfs)
            else:
                raise KeyError(f"unknown feature view {v!r} in {ref!r}; known: {sorted(views) + sorted(odfv_specs)}")
            if f not in [x.name for x in view.features]:
                raise KeyError(f"feature view {v!r} has no feature {f!r}; it has {[x.name for x in view.features]}")
            out.append((view, f))
        return out

    @staticmethod
    def _group(resolved):
        groups = {}
        for view, f in resolved:
            groups.setdefault(view.name, (view, []))[1].append(f)
        return list(groups.values())

    # -- offline -------------------------------------------------------------------------------------------
    def get_historical_features(self, entity_df, features, full_feature_names=False,
                                timestamp_field="event_timestamp"):
        """Point-in-time correct training set: each entity row gets, per feature view, the latest value at or
        before its event timestamp and no older than the view's ttl (else null). Runs in DuckDB."""
        table = _as_arrow(entity_df)
        if timestamp_field not in table.column_names:
            raise ValueError(f"entity_df needs an event timestamp column {timestamp_field!r}; it has "
                             f"{table.column_names}")
        groups = self._group(self._resolve(features))
        plain, odfvs = [], []
        for view, names in groups:
            (odfvs if isinstance(view, OnDemandFeatureView) else plain).append((view, names))
        # On-demand views need their source views' features: fetch those too, drop them afterwards.
        extra = {}
        for odfv, _ in odfvs:
            for s in odfv.sources:
                if isinstance(s, FeatureView):
                    extra.setdefault(s.name, (s, [f.name for f in s.features]))
        requested = {v.name: names for v, names in plain}
        fetch = [(v, list(dict.fromkeys(requested.get(v.name, []) + extra.get(v.name, (None, []))[1])))
                 for v in {**{v.name: v for v, _ in plain}, **{k: s for k, (s, _) in extra.items()}}.values()]
        for v, _ in fetch:
            missing = [k for k in v.join_keys if k not in table.column_names]
            if missing:
                raise ValueError(f"entity_df lacks join key(s) {missing} of feature view {v.name!r}")
        specs, internal = [], []
        for v, names in fetch:
            outs = []
            for n in names:
                wanted = n in requested.get(v.name, [])
                out = f"{v.name}__{n}" if (full_feature_names or not wanted) else n
                if not wanted:
                    out = "__odfv_in__" + out
                    internal.append(out)
                outs.append(out)
            specs.append((v, names, outs))
        out_names = [o for _, _, outs in specs for o in outs if o not in internal]
        clash = {n for n in out_names if out_names.count(n) > 1 or n in table.column_names}
        if clash:
            raise ValueError(f"feature name(s) {sorted(clash)} collide; pass full_feature_names=True")
        con = offline.connect()
        result = offline.historical(con, table, timestamp_field, specs) if specs else table
        for odfv, names in odfvs:
            inputs = self._odfv_inputs_offline(odfv, result, specs, full_feature_names)
            outputs = odfv.udf(inputs)
            for n in names:
                result = result.append_column(f"{odfv.name}__{n}" if full_feature_names else n,
                                              pa.array(list(outputs[n])))
        return RetrievalJob(result.drop_columns([c for c in internal if c in result.column_names]))

    @staticmethod
    def _odfv_inputs_offline(odfv, result, specs, full):
        inputs = {}
        for s in odfv.sources:
            if isinstance(s, RequestSource):
                for f in s.schema:
                    if f.name not in result.column_names:
                        raise ValueError(f"on-demand view {odfv.name!r} needs request field {f.name!r} in entity_df")
                    inputs[f.name] = result.column(f.name).to_pylist()
            else:
                for v, names, outs in specs:
                    if v.name == s.name:
                        for n, o in zip(names, outs):
                            inputs[n] = result.column(o).to_pylist()
        return inputs

    # -- materialization ------------------------------------------------------------------------------------
    def materialize(self, start_date, end_date, feature_views=None):
        """Load the newest value per entity with start <= timestamp < end into the online store. Idempotent:
        the online store only ever replaces a value with a newer one. Returns rows written per view."""
        start, end = to_naive_utc(start_date), to_naive_utc(end_date)
        if end <= start:
            raise ValueError(f"materialize: end {end} must be after start {start}")
        views = [v for v in self.list_feature_views()
                 if v.online and (feature_views is None or v.name in feature_views)]
        counts = {}
        for v in views:
            counts[v.name] = self._materialize_view(v, start, end)
        return counts

    def materialize_incremental(self, end_date, feature_views=None):
        """Materialize each view from where its last run ended (or end - ttl, or the epoch) up to `end_date`."""
        end = to_naive_utc(end_date)
        counts = {}
        for v in self.list_feature_views():
            if not v.online or (feature_views is not None and v.name not in feature_views):
                continue
            last = self.registry.last_materialized(v.name)
            if last is not None:
                start = EPOCH + dt.timedelta(seconds=last)
            elif v.ttl is not None:
                start = end - dt.timedelta(seconds=v.ttl)
            else:
                start = EPOCH
            counts[v.name] = self._materialize_view(v, start, end) if end > start else 0
        return counts

    def _materialize_view(self, v, start, end):
        con = offline.connect()
        t = offline.latest_per_entity(con, v, start, end)
        keys = [t.column(k).to_pylist() for k in v.join_keys]
        ts = t.column("__ts").cast(pa.timestamp("us")).cast(pa.int64()).to_numpy() / 1e6
        cr = t.column("__created").cast(pa.timestamp("us")).cast(pa.int64()).fill_null(0).to_numpy() / 1e6
        feats = {f.name: t.column(f.name).to_pylist() for f in v.features}
        names = list(feats)
        rows = [(entity_key([k[i] for k in keys]), {n: _native(feats[n][i]) for n in names}, ts[i], cr[i])
                for i in range(t.num_rows)]
        self.online.write(v.name, rows)
        self.registry.record_materialization(v.name, epoch(start), epoch(end))
        return len(rows)

    def write_to_online_store(self, feature_view_name, df):
        """Push rows (with the view's join keys, timestamp and features) straight into the online store."""
        v = self.get_feature_view(feature_view_name)
        t = _as_arrow(df)
        need = v.join_keys + [v.source.timestamp_field]
        missing = [c for c in need if c not in t.column_names]
        if missing:
            raise ValueError(f"write_to_online_store({feature_view_name!r}): missing column(s) {missing}")
        cols = {c: t.column(c).to_pylist() for c in t.column_names}
        rows = []
        cr_col = v.source.created_timestamp_column
        for i in range(t.num_rows):
            vals = {f.name: _native(cols[f.name][i]) for f in v.features if f.name in cols}
            ek = entity_key([cols[k][i] for k in v.join_keys])
            has_created = cr_col and cr_col in cols and cols[cr_col][i] is not None
            created = epoch(cols[cr_col][i]) if has_created else time.time()
            rows.append((ek, vals, epoch(cols[v.source.timestamp_field][i]), created))
        self.online.write(v.name, rows)
        return len(rows)

    # -- online --------------------------------------------------------------------------------------------
    def _online_plan(self, features):
        """(view groups, {join key: entity value type}) for a feature list, memoized while the registry cache
        holds: a server asking for the same features on every request resolves them once."""
        self._defs()  # refreshes self._cache when it is older than registry_cache_ttl
        memo_key = tuple(features) if isinstance(features, list) and all(type(f) is str for f in features) else None
        if self._plans[0] is not self._cache:
            self._plans = (self._cache, {})
        plan = self._plans[1].get(memo_key) if memo_key is not None else None
        if plan is None:
            groups = self._group(self._resolve(features))
            key_types = {k: e.value_type for e in self.list_entities() for k in e.join_keys}
            plan = (groups, key_types, {})  # the last: view name -> how to read its rows (_read_spec), filled lazily
            if memo_key is not None and len(self._plans[1]) < 1024:
                self._plans[1][memo_key] = plan
        return plan

    def get_online_features(self, features, entity_rows, full_feature_names=False, now=None):
        """Latest values per entity row, with a status per value: PRESENT, NOT_FOUND, OUTSIDE_MAX_AGE (older
        than the view's ttl: value None, as Feast) or NULL_VALUE. `entity_rows`: list of dicts or dict of lists."""
        rows = _EntityRows(entity_rows)
        n = rows.n
        now = time.time() if now is None else epoch(now)
        groups, key_types, specs = self._online_plan(features)
        values, value_json, statuses, stamps, names = {}, {}, {}, {}, []
        fetched, decoded = {}, {}  # view name -> (rows' JSON text, stamps) / its rows as dicts, for on-demand views

        def fetch(view):
            if view.name not in fetched:
                jk = view.join_keys
                def lacks(r, jk=jk, name=view.name):
                    return f"entity row {r} lacks join key(s) {[k for k in jk if k not in r]} of feature view {name!r}"
                cols = [rows.column(k, lacks) for k in jk]
                types = [key_types.get(k) for k in jk]
                if not jk:
                    keys = [entity_key([])] * n
                elif len(jk) == 1 and types[0] in ("Int64", "Int32") and set(map(type, cols[0])) <= {int}:
                    keys = [f"[{v}]" for v in cols[0]]  # the common case: entity_key() of each, inline
                else:
                    keys = [entity_key([_coerce_key(v, t, k) for v, t, k in zip(vals, types, jk)])
                            for vals in zip(*cols)]
                layout, prefix, missing = read_spec(view)
                text, others, ts = self.online.read_rows(view.name, keys, prefix, missing)
                if others:  # rows of another layout (written before the view changed): read them all whole
                    text, _, ts = self.online.read_rows(view.name, keys, "", "null")
                    prefix = ""
                fetched[view.name] = (text, prefix, ts)
            return fetched[view.name]

        def read_spec(view):
            # (feature names, prefix, missing): views of numbers and booleans ask for their rows cut down to the
            # bare values (split_columns), a missing row then reading as a row of nulls that keeps its place.
            spec = specs.get(view.name)
            if spec is None:
                layout = [f.name for f in view.features]
                if layout and all(f.dtype in _SCALAR_DTYPES for f in view.features):
                    spec = (layout, row_prefix(layout), ",".join(["null"] * len(layout)))
                else:
                    spec = (layout, "", "null")
                specs[view.name] = spec
            return spec

        def docs_of(view):
            if view.name not in decoded:
                text, prefix, _ = fetch(view)
                if prefix:  # bare values, k per row
                    flat, layout = json.loads(f"[{text}]"), read_spec(view)[0]
                    k = len(layout)
                    decoded[view.name] = [dict(zip(layout, flat[i * k:(i + 1) * k])) for i in range(n)]
                else:
                    decoded[view.name] = [decode_row(d) for d in json.loads(f"[{text}]")]
            return decoded[view.name]

        def row_states(view, ts):
            """None when every row is found and fresh, else per row None (fine), NOT_FOUND or OUTSIDE_MAX_AGE."""
            ttl = getattr(view, "ttl", None)
            if None not in ts and (ttl is None or not ts or now - min(ts) <= ttl):
                return None
            return [NOT_FOUND if t is None else OUTSIDE_MAX_AGE if ttl is not None and now - t > ttl else None
                    for t in ts]

        def add(view, f, vs, base, null):
            """Record feature f's values `vs` (a list, or value texts when null == "null") and its statuses."""
            name = f"{view.name}__{f}" if full_feature_names else f
            if name in values or name in value_json:
                raise ValueError(f"feature name {name!r} requested twice; pass full_feature_names=True")
            names.append(name)
            if null is None:
                values[name] = vs
            else:
                value_json[name] = "[" + ",".join(vs) + "]"
            if base is None:
                statuses[name] = [PRESENT] * n if null not in vs else [
                    NULL_VALUE if x == null else PRESENT for x in vs]
            elif vs.count(null) == n - base.count(None):  # null only where the row is missing or too old
                statuses[name] = [b or PRESENT for b in base]
            else:
                statuses[name] = [b or (NULL_VALUE if x == null else PRESENT) for b, x in zip(base, vs)]

        def put(view, fs, text, prefix, ts):
            # Row states once per view; then per feature, in the common case (a view of numbers, rows of its
            # current layout), the values' own text cut out of the store's answer; else one decoder call for the
            # view and one C-level pass per feature. Statuses by repetition when every row is found and fresh.
            base = row_states(view, ts)
            layout = read_spec(view)[0]
            cols = split_columns(text, len(layout), n) if prefix else None
            if cols is not None:
                bad = [] if base is None else [i for i, b in enumerate(base) if b is not None]
                for f in fs:
                    vs = cols[layout.index(f)]
                    if bad:  # rows too old read as null (missing ones already do)
                        vs = list(vs)
                        for i in bad:
                            vs[i] = "null"
                    add(view, f, vs, base, "null")
                    stamps[names[-1]] = ts  # one list per view, shared by its features (to_dict copies)
                return
            docs = docs_of(view)
            if base is not None:
                docs = [_NO_VALUES if b is not None else d for d, b in zip(docs, base)]
            for f in fs:
                add(view, f, list(map(dict.get, docs, repeat(f, n))), base, None)
                stamps[names[-1]] = ts

        for view, fs in groups:
            if isinstance(view, OnDemandFeatureView):
                inputs, ok = {}, [True] * n
                for s in view.sources:
                    if isinstance(s, RequestSource):
                        for fld in s.schema:
                            msg = f"on-demand view {view.name!r} needs request field {fld.name!r}"
                            inputs[fld.name] = list(rows.column(fld.name, lambda r, msg=msg: msg))
                    else:
                        docs, ts = docs_of(s), fetch(s)[2]
                        for f in s.features:
                            inputs[f.name] = [None if d is None else d.get(f.name) for d in docs]
                        ok = [o and t is not None for o, t in zip(ok, ts)]
                out = view.udf(inputs)
                ts = [now if o else None for o in ok]
                base = row_states(view, ts)
                docs = [{f: out[f][i] for f in fs} if ok[i] else _NO_VALUES for i in range(n)]
                for f in fs:
                    add(view, f, list(map(dict.get, docs, repeat(f, n))), base, None)
                    stamps[names[-1]] = ts
            else:
                put(view, fs, *fetch(view))
        keys = {}
        for view, _ in groups:
            for k in getattr(view, "join_keys", []):
                if k not in keys:
                    keys[k] = list(rows.column(k, lambda r, k=k: f"entity row {r} lacks join key {k!r}"))
        return OnlineResponse(keys, names, values, statuses, stamps, value_json)
