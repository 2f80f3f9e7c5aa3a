"""What `import rtx` costs, beside `import numpy` (which it must load): each import in a fresh
interpreter, rounds alternating between the two, best wall and CPU time kept.

    .venv/bin/python tools/bench/import_cost.py --rounds 5
    .venv/bin/python tools/bench/import_cost.py --rounds 5 --no-bytecode
    .venv/bin/python tools/bench/import_cost.py --rounds 5 --src-root /tmp/old-checkout

By default Python's bytecode cache is warm (a private PYTHONPYCACHEPREFIX, filled by a first
import), as it is for an installed wheel. --no-bytecode compiles every module at every import, as
happens in a checkout run with PYTHONDONTWRITEBYTECODE=1 (the case on the project's shared machine).
--src-root DIR adds a row for another checkout's `DIR/packages/*/src` (e.g. `git worktree add DIR
<commit>`); for a fair comparison the current tree is then also measured with its own
`packages/*/src` first on PYTHONPATH, so both rows search a path of the same length."""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env(src_root, bytecode, cache):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    if src_root is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in sorted(Path(src_root).glob("packages/*/src")))
    if bytecode:
        env["PYTHONPYCACHEPREFIX"] = cache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _time(module, env):
    """(wall, CPU) seconds of `python -c "import module"`, the interpreter's own start-up included."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], env=env, check=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--no-bytecode", action="store_true", help="compile every module at each import")
    p.add_argument("--src-root", action="append", default=[], help="another checkout to measure beside this one")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        rows = [("bare python", "sys", None), ("numpy", "numpy", None), ("rtx", "rtx", None)]
        if args.src_root:
            rows += [("rtx, this tree first on PYTHONPATH", "rtx", ROOT)]
            rows += [(f"rtx, {d} first on PYTHONPATH", "rtx", d) for d in args.src_root]
        envs = [_env(src, not args.no_bytecode, cache) for _, _, src in rows]
        for (_, module, _), env in zip(rows, envs):
            _time(module, env)  # fills the bytecode cache (when there is one) and the OS's file cache
        times = [[] for _ in rows]
        for _ in range(args.rounds):
            for i, ((_, module, _), env) in enumerate(zip(rows, envs)):
                times[i].append(_time(module, env))
    load = os.getloadavg()
    print(f"best of {args.rounds} alternating rounds, bytecode cache {'off' if args.no_bytecode else 'warm'}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    base_wall, base_cpu = (min(x[k] for x in times[1]) for k in (0, 1))
    for (label, module, _), ts in zip(rows, times):
        wall, cpu = min(t[0] for t in ts), min(t[1] for t in ts)
        extra = f"   (+{wall - base_wall:.3f} wall, +{cpu - base_cpu:.3f} CPU over numpy)" if module == "rtx" else ""
        print(f"  {label:<40} wall {wall:.3f} s   CPU {cpu:.3f} s{extra}")


if __name__ == "__main__":
    main()
