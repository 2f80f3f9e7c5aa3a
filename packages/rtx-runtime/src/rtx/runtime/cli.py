"""The `rtx` command line: `rtx <command> [args...]`.

Commands are not listed here: every installed distribution may add some, through entry points
in the group ``rtx.commands`` (rtx-runtime itself provides ``info``)::

    [project.entry-points."rtx.commands"]
    serve = "rtx.serving_api.cli:serve_command"

A command is a callable ``fn(argv: list[str]) -> int``:

- ``argv`` holds the arguments after the command's name (``rtx serve --port 80`` passes
  ``["--port", "80"]``); parse it with ``argparse.ArgumentParser(prog="rtx serve")``.
- It returns the exit status (0 for success; None counts as 0). Raising SystemExit is fine too
  (argparse does on ``--help`` and on bad arguments).
- The first line of its docstring is its one-line description in ``rtx --help``.
- ``rtx --help`` loads every command to read that line, so a command's module should import
  heavy libraries (CuPy, onnxruntime, ...) inside the function, not at the top.

This is the extension point that keeps the CLI free of upward imports: rtx-runtime sits at the
bottom of the layer table and never imports the packages whose commands it runs.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.metadata as metadata
import json
import os
import platform
import re
import sys

GROUP = "rtx.commands"

# Commands that other distributions provide, so that `rtx demo` without them says what to install.
# tests/test_workspace.py checks this table against every member's rtx.commands entry points.
KNOWN = {
    "demo": ("rtx-demo", "train a small CNN on the digits data set, end to end"),
    "hub": ("rtx-hub", "manage a versioned model registry"),
    "serve": ("rtx-serving-api", "serve models over HTTP"),
    "launch": ("rtx-distributed", "start a data-parallel job (MPI/NCCL)"),
    "vision": ("rtx-vision", "vision models and datasets"),
    "federated": ("rtx-federated", "simulate federated training (FedAvg, secure aggregation, DP)"),
    "nlg": ("rtx-nlg", "train and sample a small GPT"),
    "rl": ("rtx-rl", "train and evaluate reinforcement-learning agents (PPO, A2C, DQN, SAC, TD3)"),
    "diffuse": ("rtx-diffuse", "train a class-conditional diffusion model and sample from it"),
    "multimodal": ("rtx-multimodal", "train a small CLIP on the digits; zero-shot classify images"),
    "cfd": ("rtx-cfd", "run flow cases (cavity, channel, cylinder) against published benchmarks"),
    "feature-store": ("rtx-feature-store", "point-in-time features: apply, materialize, serve online features"),
    "etl": ("rtx-etl", "run a data pipeline declared in TOML (local or Dask); inspect data files"),
    "automeasure": ("rtx-automeasure", "tune rtx's kernels for this machine, show the tuning cache, run benchmarks"),
    "auto": ("rtx-auto", "run hyper-parameter search workers and report studies (Optuna)"),
}

USAGE = "usage: rtx <command> [args...]\n       rtx --help | --version | help <command>"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rtx` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(help_text(), file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("-h", "--help"):
        print(help_text())
        return 0
    if cmd == "--version":
        print("rtx", _version("rtx-runtime") or "unknown")
        return 0
    if cmd == "help":
        if not rest:
            print(help_text())
            return 0
        cmd, rest = rest[0], ["--help"]
    commands, clashes = _commands()
    if cmd in clashes:
        print(f"rtx: command {cmd!r} is provided by more than one distribution ({', '.join(clashes[cmd])}); "
              "uninstall all but one", file=sys.stderr)
        return 2
    if cmd in commands:
        try:
            status = commands[cmd].load()(rest)
        except KeyboardInterrupt:
            return 130
        return 0 if status is None else int(status)
    if cmd in KNOWN:
        print(f"rtx: the {cmd!r} command is not installed; it comes with {KNOWN[cmd][0]}: "
              f"pip install {KNOWN[cmd][0]}", file=sys.stderr)
        return 2
    hint = difflib.get_close_matches(cmd, [*commands, *KNOWN], n=1)
    print(f"rtx: unknown command {cmd!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "") +
          f". Installed commands: {', '.join(sorted(commands)) or 'none'}. See 'rtx --help'.", file=sys.stderr)
    return 2


def _commands() -> tuple[dict, dict[str, list[str]]]:
    """name -> entry point, and the names that two distributions both claim."""
    found, owners = {}, {}
    for ep in metadata.entry_points(group=GROUP):
        owner = ep.dist.name if ep.dist is not None else "?"
        if ep.name in found:
            if owner not in owners[ep.name]:
                owners[ep.name].append(owner)
            continue
        found[ep.name] = ep
        owners[ep.name] = [owner]
    return found, {name: dists for name, dists in owners.items() if len(dists) > 1}


def _describe(ep) -> str:
    try:
        fn = ep.load()
    except Exception as e:  # a broken plugin must not break `rtx --help`
        return f"(cannot load {ep.value}: {type(e).__name__}: {e})"
    doc = (fn.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def help_text() -> str:
    commands, _ = _commands()
    width = max(len(n) for n in [*commands, *KNOWN, "command"]) + 2
    lines = [USAGE, "", "rtx: a PyTorch-shaped deep-learning framework (NumPy on CPU, CuPy on GPU).", "",
             "commands:"]
    lines += [f"  {name:<{width}}{_describe(commands[name])}" for name in sorted(commands)]
    missing = sorted(set(KNOWN) - set(commands))
    if missing:
        lines += ["", "more commands, once their package is installed:"]
        lines += [f"  {n:<{width}}{KNOWN[n][1]:<42}pip install {KNOWN[n][0]}" for n in missing]
    lines += ["", "Run 'rtx <command> --help' for a command's options."]
    return "\n".join(lines)


# ---- rtx info ------------------------------------------------------------------------------


def info_command(argv: list[str]) -> int:
    """Show the installation: rtx packages, Python, NumPy, CuPy, BLAS, devices, features."""
    p = argparse.ArgumentParser(prog="rtx info", description=info_command.__doc__)
    p.add_argument("--json", action="store_true", help="print one JSON object (for bug reports and scripts)")
    args = p.parse_args(argv)
    info = collect_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    width = max(len(k) for k in info) + 2
    for key, value in info.items():
        if isinstance(value, dict):
            print(key)
            inner = max((len(k) for k in value), default=0) + 2
            for k, v in value.items():
                print(f"  {k:<{inner}}{v}")
        else:
            print(f"{key:<{width}}{value}")
    return 0


def collect_info() -> dict:
    """What `rtx info` prints, as a dict of strings (and dicts of strings for lists)."""
    import numpy as np

    return {
        "rtx packages": _rtx_distributions() or {"(none)": "no rtx distribution found by importlib.metadata"},
        "python": f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        "platform": platform.platform(),
        "numpy": np.__version__,
        "cupy": _cupy_version() or "not installed",
        "blas": _blas(),
        "devices": _devices(),
        "autograd": _feature("rtx.autograd", "rtx-autograd"),
        "kernels": _feature("rtx.kernel", "rtx-kernel"),
    }


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _rtx_distributions() -> dict[str, str]:
    found = {}
    for d in metadata.distributions():
        name = _canonical(d.metadata["Name"] or "")
        if name == "rtx" or name.startswith("rtx-"):
            found.setdefault(name, d.version)  # the first one on sys.path is the one imported
    return dict(sorted(found.items()))


def _cupy_version() -> str | None:
    # From the metadata, not `import cupy` (0.2-1 s); its wheels are named cupy-cuda12x etc.
    for d in metadata.distributions():
        name = _canonical(d.metadata["Name"] or "")
        if name == "cupy" or name.startswith("cupy-"):
            return f"{d.version} ({name})"
    return None


def _blas() -> str:
    try:
        import threadpoolctl
    except ImportError:
        threadpoolctl = None
    if threadpoolctl is not None:
        libs = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        if libs:
            return "; ".join(
                f"{i.get('internal_api')} {i.get('version') or ''} ({i.get('architecture') or 'unknown'} kernel, "
                f"{i.get('num_threads')} threads, {os.path.basename(i.get('filepath', ''))})" for i in libs)
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception as e:  # show_config's layout is not a stable API
        return f"unknown ({type(e).__name__}: {e})"
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "unknown"
    config = blas.get("openblas configuration", "").split()
    return (f"{blas.get('name')} {blas.get('version', '')} (build config: {' '.join(config[1:]) or 'n/a'}, "
            f"threads: {threads}; pip install threadpoolctl to see the kernel in use)")


def _devices() -> dict[str, str]:
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    out = {"cpu": f"{usable} cores" + (f" usable of {cores}" if usable != cores else "")}
    from rtx.runtime import cuda

    if not cuda.is_available():
        why = "CuPy is not installed" if _cupy_version() is None else "CuPy found no usable driver or GPU"
        out["cuda"] = f"not available ({why})"
        return out
    for i in range(cuda.device_count()):
        try:
            out[f"cuda:{i}"] = cuda.get_device_name(i)
        except Exception as e:
            out[f"cuda:{i}"] = f"error: {type(e).__name__}: {e}"
    return out


def _feature(module: str, dist: str) -> str:
    # import_module by name, not an import statement: probing a higher layer is no dependency on it.
    try:
        importlib.import_module(module)
    except ImportError as e:
        if _version(dist) is None:
            return f"not installed (pip install {dist})"
        return f"installed but not importable ({type(e).__name__}: {e})"
    except Exception as e:
        return f"broken ({type(e).__name__}: {e})"
    return f"available ({module}, {dist} {_version(dist)})"


if __name__ == "__main__":
    sys.exit(main())
