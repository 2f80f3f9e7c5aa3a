"""tune(): hyper-parameter search over Optuna.

The objective receives a Trial: `trial.params` holds the values sampled from `space` (if one was
given), `trial.suggest_*` samples more, and `trial.report(value, step)` / `trial.should_prune()`
talk to the pruner. Studies live in Optuna's storage: in memory by default, or an RDB URL
(`sqlite:///study.db` locally, a PostgreSQL/MySQL URL on a cluster) that any number of worker
processes (`rtx auto worker`) share. With an RDB storage every worker sends heartbeats: a
worker that dies leaves its running trial to be marked FAIL by the next worker that looks
(Optuna's stale-trial check, extended to a trial that died before its first heartbeat), and
re-queued when `retries` > 0 - never lost, never run twice.
`n_trials` counts finished trials across all workers (complete or pruned): a worker takes a
new trial only while fewer than n_trials are finished or running.
"""
from __future__ import annotations

import time
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

import optuna
from optuna.trial import TrialState

__all__ = ["SAMPLERS", "PRUNERS", "Trial", "make_pruner", "make_sampler", "make_storage", "parse_space", "tune"]

SAMPLERS = ("tpe", "random", "grid", "cmaes")
PRUNERS = ("asha", "hyperband", "median", None)
_KINDS = ("uniform", "loguniform", "int", "categorical")
_COUNTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)


# ---- the search space ------------------------------------------------------------------------------

def parse_space(space) -> dict:
    """{name: {"type": kind, ...}} from a dict, a TOML string or a path to a .toml file. Kinds:
    uniform/loguniform (low, high), int (low, high, optional step/log), categorical (choices).
    A dict value may also be a tuple: ("loguniform", 1e-4, 1e-1), ("categorical", [..])."""
    if space is None:
        return {}
    if isinstance(space, Path) or (isinstance(space, str) and space.endswith(".toml") and "\n" not in space):
        space = Path(space).read_text()
    if isinstance(space, str):
        space = tomllib.loads(space)
    if not isinstance(space, dict):
        raise TypeError(f"space expects a dict, TOML text or a .toml path, got {type(space).__name__}")
    out = {}
    for name, spec in space.items():
        if isinstance(spec, (tuple, list)):
            kind, *rest = spec
            spec = ({"type": kind, "choices": list(rest[0])} if kind == "categorical"
                    else {"type": kind, "low": rest[0], "high": rest[1], **(rest[2] if len(rest) > 2 else {})})
        if not isinstance(spec, dict) or spec.get("type") not in _KINDS:
            raise ValueError(f"space[{name!r}] expects one of {', '.join(_KINDS)} as its type, got {spec!r}")
        if spec["type"] == "categorical":
            if not spec.get("choices"):
                raise ValueError(f"space[{name!r}]: categorical needs a non-empty 'choices' list")
        elif not ("low" in spec and "high" in spec and spec["low"] <= spec["high"]):
            raise ValueError(f"space[{name!r}]: {spec['type']} needs low <= high, got {spec!r}")
        out[name] = spec
    return out


def _sample(trial, name, spec):
    kind = spec["type"]
    if kind == "uniform":
        return trial.suggest_float(name, spec["low"], spec["high"])
    if kind == "loguniform":
        return trial.suggest_float(name, spec["low"], spec["high"], log=True)
    if kind == "int":
        return trial.suggest_int(name, spec["low"], spec["high"], step=spec.get("step", 1), log=spec.get("log", False))
    return trial.suggest_categorical(name, spec["choices"])


def _grid(space):
    grid = {}
    for name, spec in space.items():
        if spec["type"] == "categorical":
            grid[name] = list(spec["choices"])
        elif "grid" in spec:
            grid[name] = list(spec["grid"])
        elif spec["type"] == "int":
            grid[name] = list(range(spec["low"], spec["high"] + 1, spec.get("step", 1)))
        else:
            raise ValueError(f"grid search: space[{name!r}] is continuous; give it a 'grid' list of values")
    return grid


# ---- engine parts ------------------------------------------------------------------------------------

def make_sampler(sampler, space=None, seed=None):
    if isinstance(sampler, optuna.samplers.BaseSampler):
        return sampler
    if sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if sampler == "grid":
        return optuna.samplers.GridSampler(_grid(parse_space(space)), seed=seed)
    if sampler == "cmaes":
        try:
            import cmaes  # noqa: F401  (Optuna's CmaEsSampler needs it)
        except ImportError:
            raise ImportError("sampler='cmaes' needs the cmaes package: pip install cmaes") from None
        return optuna.samplers.CmaEsSampler(seed=seed)
    raise ValueError(f"sampler expects one of {SAMPLERS} or an optuna sampler, got {sampler!r}")


def make_pruner(pruner):
    if isinstance(pruner, optuna.pruners.BasePruner):
        return pruner
    if pruner is None:
        return optuna.pruners.NopPruner()
    if pruner == "asha":   # Optuna's SuccessiveHalvingPruner is asynchronous successive halving
        return optuna.pruners.SuccessiveHalvingPruner()
    if pruner == "hyperband":
        return optuna.pruners.HyperbandPruner()
    if pruner == "median":
        return optuna.pruners.MedianPruner()
    raise ValueError(f"pruner expects one of {PRUNERS} or an optuna pruner, got {pruner!r}")


def make_storage(storage, retries=0, heartbeat_interval=2, grace_period=6):
    """None (in memory), an optuna storage, or an RDB URL: then with heartbeats, so that a dead
    worker's trial is failed (and retried `retries` times) by the workers that remain."""
    if storage is None or not isinstance(storage, str):
        return storage
    import warnings

    import sqlalchemy.exc
    with warnings.catch_warnings():   # "experimental" since Optuna 2.8; RetryFailedTrialCallback is deprecated
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        callback = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=retries) if retries else None
    for attempt in range(6):
        try:
            with warnings.catch_warnings():   # heartbeats are "experimental" in Optuna 5: we rely on them
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return _HeartbeatStorage(storage, heartbeat_interval=heartbeat_interval,
                                         grace_period=grace_period, heartbeat_stale_trial_callback=callback)
        except sqlalchemy.exc.SQLAlchemyError:
            # workers started together race to create the schema of a new database: the loser
            # sees a unique-constraint or lock error; by the next try the schema exists
            if attempt == 5:
                raise
            time.sleep(0.2 * (attempt + 1))


class _HeartbeatStorage(optuna.storages.RDBStorage):
    """Optuna's RDBStorage, whose stale-trial check also counts a RUNNING trial that never sent a
    heartbeat and started more than grace_period ago. Optuna skips those: a worker killed between
    creating its trial and the heartbeat thread's first beat left the trial RUNNING for ever, and a
    study waiting for n_trials never finished. A live worker beats as soon as its trial starts, so
    grace_period without any beat means the worker is gone. The age is read against this machine's
    clock (Optuna stamps datetime_start with the creating worker's): keep worker clocks in step."""

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        stale = super()._get_stale_trial_ids(study_id)
        from optuna.storages._rdb import models  # the heartbeat table has no public query
        grace = timedelta(seconds=self.grace_period if self.grace_period is not None else 2 * self.heartbeat_interval)
        session = self.scoped_session()
        try:
            beating = {tid for (tid,) in session.query(models.TrialHeartbeatModel.trial_id)
                       .join(models.TrialModel).filter(models.TrialModel.study_id == study_id)}
        finally:
            self.scoped_session.remove()
        now = datetime.now()
        for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            if t._trial_id not in beating and t._trial_id not in stale and t.datetime_start is not None \
                    and now - t.datetime_start > grace:
                stale.append(t._trial_id)
        return stale


class Trial:
    """An Optuna trial with the space's values in `params` (and as trial[name])."""

    def __init__(self, trial, space):
        self.optuna_trial = trial
        self.params = {name: _sample(trial, name, spec) for name, spec in space.items()}

    def __getitem__(self, name):
        return self.params[name]

    def __getattr__(self, name):   # suggest_float/int/categorical, number, set_user_attr, ...
        return getattr(self.optuna_trial, name)

    def report(self, value, step):
        self.optuna_trial.report(float(value), int(step))

    def should_prune(self) -> bool:
        return self.optuna_trial.should_prune()

    def prune(self):
        """Raise optuna.TrialPruned: the trial ends as PRUNED."""
        raise optuna.TrialPruned()


def _counted_before(study, number):
    return sum(1 for t in study.get_trials(deepcopy=False, states=_COUNTED) if t.number < number)


def tune(objective, space=None, n_trials=None, timeout=None, sampler="tpe", pruner=None, storage=None,
         study_name=None, direction="minimize", seed=None, retries=0, n_jobs=1, show_progress_bar=False,
         heartbeat_interval=2, grace_period=6):
    """Run (or join) a study: objective(Trial) -> float. Returns the optuna Study (best_params,
    best_value, trials_dataframe(), ...). With an RDB `storage` and a `study_name`, every process
    that calls tune() (or runs `rtx auto worker`) on the same study pulls trials from it until
    `n_trials` are finished across all of them."""
    space = parse_space(space)
    study = optuna.create_study(storage=make_storage(storage, retries, heartbeat_interval, grace_period),
                                sampler=make_sampler(sampler, space, seed),
                                pruner=make_pruner(pruner), study_name=study_name, direction=direction,
                                load_if_exists=study_name is not None)
    if n_trials is None and timeout is None:
        raise ValueError("tune needs n_trials or timeout (else it would never stop)")
    deadline = None if timeout is None else time.monotonic() + timeout
    stop = {"flag": False}

    def run(trial):
        if n_trials is not None and _counted_before(study, trial.number) >= n_trials:
            # another worker took the last trial between our count and our ask: this one ends as
            # FAIL (marked surplus) without running, so finished trials stay exactly n_trials
            trial.set_user_attr("rtx_auto_surplus", True)
            stop["flag"] = True
            raise _Surplus(f"trial {trial.number}: the study already has {n_trials} trials")
        return objective(Trial(trial, space))

    shared = isinstance(storage, (str, optuna.storages.RDBStorage))
    while not stop["flag"]:
        left_s = None if deadline is None else deadline - time.monotonic()
        if left_s is not None and left_s <= 0:
            break
        if shared:   # trials of dead workers: FAIL (and re-queued when retries > 0)
            optuna.storages.fail_stale_trials(study)
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))   # e.g. a dead worker's, re-queued
        if n_trials is not None and n_trials - len(study.get_trials(deepcopy=False, states=_COUNTED)) <= 0 \
                and not waiting:
            if shared and study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                time.sleep(0.5)   # another worker's trial may yet die and come back: stay until done
                continue
            break
        study.optimize(run, n_trials=1, timeout=left_s, n_jobs=n_jobs, gc_after_trial=False,
                       show_progress_bar=show_progress_bar, catch=(_Surplus,))
    return study


class _Surplus(Exception):
    pass
