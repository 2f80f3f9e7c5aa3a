"""tune(): optimum regions, samplers, pruning, and workers sharing one SQLite study."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from rtx.auto import parse_space, tune
from rtx.auto.callbacks import PruningCallback
from rtx.auto.search import make_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)
HERE = Path(__file__).resolve().parent
SPACE_TOML = 'x = { type = "uniform", low = -5.0, high = 5.0 }\n'


def test_space_forms_agree():
    a = parse_space({"lr": ("loguniform", 1e-4, 1e-1), "n": ("int", 1, 8), "act": ("categorical", ["relu", "tanh"])})
    b = parse_space('lr = {type="loguniform", low=1e-4, high=1e-1}\nn = {type="int", low=1, high=8}\n'
                    'act = {type="categorical", choices=["relu", "tanh"]}')
    assert a == b
    with pytest.raises(ValueError, match="low <= high"):
        parse_space({"x": ("uniform", 2, 1)})
    with pytest.raises(ValueError, match="one of"):
        parse_space({"x": ("normal", 0, 1)})


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_finds_the_optimum_region(sampler):
    # Branin-like bowl with its minimum at (2, -1)
    study = tune(lambda t: (t["x"] - 2) ** 2 + 3 * (t["y"] + 1) ** 2,
                 {"x": ("uniform", -10, 10), "y": ("uniform", -10, 10)}, n_trials=80, sampler=sampler, seed=1)
    assert len(study.trials) == 80
    tol = 0.5 if sampler == "tpe" else 2.5     # TPE must beat blind sampling by far
    assert abs(study.best_params["x"] - 2) < tol and abs(study.best_params["y"] + 1) < tol


def test_grid_covers_every_point_and_maximize():
    study = tune(lambda t: -abs(t["n"] - 3) + (t["act"] == "tanh"),
                 {"n": ("int", 1, 4), "act": ("categorical", ["relu", "tanh"])},
                 n_trials=8, sampler="grid", direction="maximize")
    assert sorted((t.params["n"], t.params["act"]) for t in study.trials) == sorted(
        (n, a) for n in range(1, 5) for a in ("relu", "tanh"))
    assert study.best_params == {"n": 3, "act": "tanh"}
    with pytest.raises(ValueError, match="continuous"):
        tune(lambda t: 0, {"x": ("uniform", 0, 1)}, n_trials=1, sampler="grid")


def test_pruning_stops_bad_trials():
    steps = {}

    def objective(trial):
        cb = PruningCallback(trial, monitor="loss")
        for epoch in range(20):
            loss = trial["x"] ** 2 + 1.0 / (epoch + 1)   # a learning curve; bad x stays bad
            steps[trial.number] = epoch + 1
            cb(epoch, {"loss": loss})
        return loss
    study = tune(objective, {"x": ("uniform", -10, 10)}, n_trials=30, sampler="random", pruner="median", seed=0)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert len(pruned) >= 8
    assert all(steps[t.number] < 20 for t in pruned)
    best = min(study.trials, key=lambda t: abs(t.params["x"]))
    assert best.state == TrialState.COMPLETE        # the best x is never pruned
    assert sum(steps.values()) < 0.75 * 20 * 30


@pytest.mark.parametrize("pruner", ["asha", "hyperband"])
def test_asha_and_hyperband_prune(pruner):
    def objective(trial):
        for epoch in range(27):
            trial.report(trial["x"] ** 2 + 1.0 / (epoch + 1), epoch)
            if trial.should_prune():
                trial.prune()
        return trial["x"] ** 2
    study = tune(objective, {"x": ("uniform", -10, 10)}, n_trials=30, sampler="random", pruner=pruner, seed=0)
    assert sum(t.state == TrialState.PRUNED for t in study.trials) >= 5


def _worker(db, extra_env=None, n=12, extra=()):
    env = dict(os.environ, **(extra_env or {}))
    space = db.parent / "space.toml"
    space.write_text(SPACE_TOML)
    return subprocess.Popen([sys.executable, "-m", "rtx.auto.cli", "worker", "--study", "s", "--storage",
                             f"sqlite:///{db}", "--objective", f"{HERE / 'auto_objectives.py'}:quadratic",
                             "--space", str(space), "--n-trials", str(n), "--sampler", "random", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_workers_complete_exactly_n_trials(tmp_path):
    db = tmp_path / "study.db"
    procs = [_worker(db), _worker(db)]
    outs = [p.communicate(timeout=240)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{db}")
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) == 12
    assert len({t.number for t in done}) == 12
    assert all(t.state in (TrialState.COMPLETE, TrialState.FAIL) for t in study.trials)
    assert all(t.user_attrs.get("rtx_auto_surplus") for t in study.trials if t.state == TrialState.FAIL)
    assert len({t.user_attrs["pid"] for t in done}) == 2          # both workers pulled trials


def test_killed_workers_trial_is_failed_and_retried(tmp_path):
    db = tmp_path / "study.db"
    hb = ["--heartbeat", "1", "--grace", "2", "--retries", "1"]
    a = _worker(db, {"RTX_AUTO_TEST_HANG": "1"}, n=3, extra=hb)
    storage = f"sqlite:///{db}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:   # wait until worker A is inside its first trial
        try:
            if optuna.load_study(study_name="s", storage=storage).get_trials(states=(TrialState.RUNNING,)):
                break
        except KeyError:
            pass
        time.sleep(0.2)
    else:
        a.kill()
        pytest.fail("worker A never started a trial: " + a.communicate()[0])
    time.sleep(2.5)   # Optuna fails only trials that sent a heartbeat: let A's first beats land
    a.send_signal(signal.SIGKILL)
    a.wait()
    b = _worker(db, n=3, extra=hb)
    out = b.communicate(timeout=120)[0]
    assert b.returncode == 0, out
    study = optuna.load_study(study_name="s", storage=storage)
    states = {t.number: t.state for t in study.trials}
    assert states[0] == TrialState.FAIL                        # A's trial: failed, not lost, not left running
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) == 3
    retried = [t for t in done if optuna.storages.RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == 0]
    assert len(retried) == 1 and retried[0].params == study.trials[0].params


def test_trial_of_a_worker_killed_before_its_first_heartbeat_is_failed_and_retried(tmp_path):
    # A worker that dies between creating its trial and its heartbeat thread's first beat leaves a RUNNING trial
    # with no heartbeat, which Optuna's own stale check never fails. study.ask() creates exactly such a trial (it
    # starts no heartbeat thread); dropping it is what a SIGKILL at that instant leaves in the database.
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=make_storage(storage, retries=1, heartbeat_interval=1,
                                                                     grace_period=2))
    orphan = study.ask({"x": optuna.distributions.FloatDistribution(-5, 5)})
    t0 = time.monotonic()
    tune(lambda trial: (trial["x"] - 1.0) ** 2, {"x": ("uniform", -5, 5)}, n_trials=3, timeout=30, storage=storage,
         study_name="s", seed=0, retries=1, heartbeat_interval=1, grace_period=2)
    assert time.monotonic() - t0 < 30     # it did not wait for the orphan until the timeout
    study = optuna.load_study(study_name="s", storage=storage)
    assert study.trials[orphan.number].state == TrialState.FAIL      # failed, not left RUNNING
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) == 3
    retry = optuna.storages.RetryHeartbeatStaleTrialCallback
    retried = [t for t in done if retry.retried_trial_number(t) == orphan.number]
    assert len(retried) == 1 and retried[0].params == study.trials[orphan.number].params
