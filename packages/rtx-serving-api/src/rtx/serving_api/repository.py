"""The routing table: which model versions are loaded, which one a request gets, and hot
promotion. A background task polls the registry's revision; on a change it loads the new
versions first (in a worker thread, while requests keep being served), then swaps the table in
one assignment, then retires the versions no longer served (each closes when its last in-flight
request ends)."""
from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field

from rtx.serving_api.errors import ServeError
from rtx.serving_api.models import ServedModel, load_version
from rtx.serving_api.routing import Split

log = logging.getLogger("rtx.serving_api")

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def semver_key(version: str):
    """Sort key: numeric major.minor.patch; a pre-release sorts before its release."""
    m = _SEMVER.match(version)
    if not m:
        return ((-1,), version)
    major, minor, patch, pre = m.groups()
    return ((int(major), int(minor), int(patch)), (0, pre) if pre else (1, ""))


@dataclass
class ModelEntry:
    """The loaded versions of one model name, its default version and its A/B split."""
    name: str
    versions: dict[str, ServedModel] = field(default_factory=dict)
    default: str | None = None
    split: Split | None = None

    def available(self) -> list[str]:
        return sorted(self.versions, key=semver_key)


class ModelManager:
    def __init__(self, registry, config, metrics=None, loader=load_version):
        self.registry = registry
        self.loader = loader
        self.config = config
        self.metrics = metrics
        self.table: dict[str, ModelEntry] = {}
        self.revision = None
        self.failures: dict[tuple[str, str], str] = {}  # versions that failed to load, with why
        self.ready = False
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None

    # ---- lookup -------------------------------------------------------------------------------------

    def entry(self, name: str) -> ModelEntry:
        e = self.table.get(name)
        if e is None:
            failed = {v: why for (n, v), why in self.failures.items() if n == name}
            extra = f" (versions that failed to load: {failed})" if failed else ""
            raise ServeError(404, f"unknown model {name!r}{extra}; available models: {sorted(self.table)}")
        return e

    def resolve(self, name: str, version: str | None = None, client_id: str | None = None) -> ServedModel:
        """The version a request gets, acquired (the caller must release() it): the named version;
        else the A/B split's pick (sticky by client id); else the default version."""
        e = self.entry(name)
        if version is None:
            version = e.split.choose(name, client_id) if e.split is not None else e.default
        m = e.versions.get(version)
        if m is None:
            why = self.failures.get((name, version))
            extra = f" (it failed to load: {why})" if why else ""
            raise ServeError(404, f"unknown version {version!r} of model {name!r}{extra}; "
                                  f"available versions: {e.available()}")
        return m.acquire()

    def models(self) -> list[ServedModel]:
        return [m for e in self.table.values() for m in e.versions.values()]

    # ---- hot reload -----------------------------------------------------------------------------------

    async def refresh(self, force: bool = False) -> bool:
        """Bring the table in line with the registry; True when it changed."""
        async with self._lock:
            rev = await asyncio.to_thread(self.registry.revision)
            if rev == self.revision and not force:
                return False
            listed = await asyncio.to_thread(self.registry.list)
            current = {(m.name, m.version): m for m in self.models()}
            kept: dict[tuple[str, str], ServedModel] = {}
            for mv in listed:
                if mv.stage == "archived":
                    continue
                key = (mv.name, mv.version)
                old = current.get(key)
                if old is not None and old.sha256 == mv.sha256:
                    old.stage = mv.stage
                    old.metadata = dict(mv.metadata or {})
                    kept[key] = old
                    continue
                try:
                    kept[key] = await asyncio.to_thread(self.loader, mv, self.config.batching)
                except Exception as e:  # a broken artifact must not take the server down: report it
                    log.exception("could not load %s:%s", mv.name, mv.version)
                    self.failures[key] = f"{type(e).__name__}: {e}"
                    continue
                self.failures.pop(key, None)
                log.info("loaded %s:%s (%s, %.2f s)", mv.name, mv.version, mv.stage, kept[key].load_seconds)
                if self.metrics is not None:
                    self.metrics.observe_model_load(mv.name, mv.version, kept[key].load_seconds)
            self.table = self._build_table(kept)  # one assignment: requests see the old or the new table
            self.revision = rev
            for key, m in current.items():
                if kept.get(key) is not m:
                    m.retire()
                    if self.metrics is not None and key not in kept:
                        self.metrics.remove_model(*key)
            self.ready = True
            return True

    def _build_table(self, models: dict[tuple[str, str], ServedModel]) -> dict[str, ModelEntry]:
        table: dict[str, ModelEntry] = {}
        for (name, version), m in sorted(models.items(), key=lambda kv: (kv[0][0], semver_key(kv[0][1]))):
            table.setdefault(name, ModelEntry(name)).versions[version] = m
        for e in table.values():
            # rtx.hub's rule: the highest production version, else the highest of all
            production = [v for v, m in e.versions.items() if m.stage == "production"]
            e.default = max(production or e.versions, key=semver_key)
        for route in self.config.routes:
            e = table.get(route.model)
            if e is None:
                log.warning("route for %r: the model is not loaded; requests use no split", route.model)
                continue
            weights = {v: w for v, w in route.split.items() if v in e.versions}
            missing = sorted(set(route.split) - set(weights))
            if missing:
                log.warning("route for %r: versions %s are not loaded; splitting between %s",
                            route.model, missing, sorted(weights))
            if any(w > 0 for w in weights.values()):
                e.split = Split(weights)
        return table

    async def poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.poll_interval_s)
            try:
                await self.refresh()
            except Exception:  # a registry briefly unreadable (being written): try again next time
                log.exception("registry poll failed")

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.poll_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for m in self.models():
            m.retire()
        self.table = {}
