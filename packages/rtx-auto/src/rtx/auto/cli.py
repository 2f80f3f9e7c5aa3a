"""`rtx auto worker` (pull trials of a shared study) and `rtx auto report` (best trials, PNGs)."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path


def load_objective(spec: str):
    """'package.module:function' or 'path/to/file.py:function'. This runs the named code: the
    user names it on their own command line (nothing is loaded from the study)."""
    target, _, fn = spec.rpartition(":")
    if not target or not fn:
        raise SystemExit(f"rtx auto: --objective expects MODULE:FUNCTION or FILE.py:FUNCTION, got {spec!r}")
    if target.endswith(".py"):
        path = Path(target).resolve()
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[path.stem] = module
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, fn)


def worker(argv):
    from rtx.auto.search import PRUNERS, SAMPLERS, tune
    p = argparse.ArgumentParser(prog="rtx auto worker", description="pull trials of a shared study until it has N")
    p.add_argument("--study", required=True)
    p.add_argument("--storage", required=True, help="sqlite:///study.db, postgresql://..., mysql://...")
    p.add_argument("--objective", required=True, help="MODULE:FUNCTION or FILE.py:FUNCTION taking a Trial")
    p.add_argument("--space", default=None, help="a TOML file with the search space")
    p.add_argument("--n-trials", type=int, default=None, help="finished trials of the whole study")
    p.add_argument("--timeout", type=float, default=None)
    p.add_argument("--sampler", default="tpe", choices=SAMPLERS)
    p.add_argument("--pruner", default=None, choices=[x for x in PRUNERS if x])
    p.add_argument("--direction", default="minimize", choices=["minimize", "maximize"])
    p.add_argument("--retries", type=int, default=0, help="re-queue a dead worker's trial this many times")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--heartbeat", type=int, default=2, help="seconds between a running trial's heartbeats")
    p.add_argument("--grace", type=int, default=6, help="seconds without a heartbeat before a trial is failed")
    a = p.parse_args(argv)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = tune(load_objective(a.objective), a.space, n_trials=a.n_trials, timeout=a.timeout, sampler=a.sampler,
                 pruner=a.pruner, storage=a.storage, study_name=a.study, direction=a.direction, seed=a.seed,
                 retries=a.retries, heartbeat_interval=a.heartbeat, grace_period=a.grace)
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    print(f"study {a.study}: {len(done)} complete trials" + (f", best {study.best_value:.6g} {study.best_params}"
                                                             if done else ""))
    return 0


def report(argv):
    p = argparse.ArgumentParser(prog="rtx auto report", description="best trials of a study, and PNG figures")
    p.add_argument("study")
    p.add_argument("--storage", required=True)
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--out", default=None, help="folder for history.png and importances.png (needs matplotlib)")
    a = p.parse_args(argv)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=a.study, storage=a.storage)
    trials = study.trials
    states = {}
    for t in trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    print(f"study {a.study} ({study.direction.name.lower()}): {len(trials)} trials "
          + ", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())))
    done = sorted((t for t in trials if t.state.name == "COMPLETE"), key=lambda t: t.value,
                  reverse=study.direction.name == "MAXIMIZE")
    names = sorted({k for t in done for k in t.params})
    print(f"{'trial':>6} {'value':>12}  " + "  ".join(f"{n:>12}" for n in names))
    for t in done[:a.top]:
        cells = [f"{t.params[n]:>12.5g}" if isinstance(t.params.get(n), float) else f"{t.params.get(n, '-')!s:>12}"
                 for n in names]
        print(f"{t.number:>6} {t.value:>12.6g}  " + "  ".join(cells))
    if a.out:
        import matplotlib
        matplotlib.use("Agg")
        from optuna.visualization import matplotlib as vis
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        vis.plot_optimization_history(study).figure.savefig(out / "history.png", dpi=100, bbox_inches="tight")
        if len(done) > 1 and len(names) > 1:
            vis.plot_param_importances(study).figure.savefig(out / "importances.png", dpi=100, bbox_inches="tight")
        print(f"wrote {out}/history.png" + (" and importances.png" if len(done) > 1 and len(names) > 1 else ""))
    return 0


def auto_command(argv):
    """hyper-parameter search workers and study reports (Optuna)"""
    commands = {"worker": worker, "report": report}
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in commands:
        print("usage: rtx auto {worker,report} [args...]\n"
              "  worker   pull trials of a shared study (--study NAME --storage URL --objective MOD:FN)\n"
              "  report   print a study's best trials; --out DIR writes history/importances PNGs",
              file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(auto_command(sys.argv[1:]))
