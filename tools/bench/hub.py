"""rtx-hub figures: the cost of the registry's guarantees, against the bare operations they wrap.

register (copy while hashing + fsync + rename) vs shutil.copyfile; verify vs hashlib.sha256 of the
same file; list() and get() of a registry with many versions; revision() (what servers poll).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python tools/bench/hub.py [--mib 64] [--versions 200]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import best_of  # noqa: E402

import rtx  # noqa: E402
from rtx.hub import Registry  # noqa: E402


def once(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=64, help="size of the big checkpoint")
    p.add_argument("--versions", type=int, default=200, help="versions in the registry for list/get")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    try:
        big = tmp / "big.rtx"
        rtx.save({"w": rtx.randn(args.mib * (1 << 20) // 4)}, big)
        reg = Registry(tmp / "reg")
        counter = iter(range(10**6))
        t_copy = once(lambda: shutil.copyfile(big, tmp / "copy.bin"))
        t_reg = once(lambda: reg.register(big, "big", f"1.0.{next(counter)}"))

        def sha():
            h = hashlib.sha256()
            with open(big, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            return h.hexdigest()

        mv = reg.get("big")
        t_sha, t_verify = once(sha), once(mv.verify)
        small = tmp / "small.rtx"
        rtx.save({"w": rtx.randn(16)}, small)
        for i in range(args.versions):
            reg.register(small, "many", f"0.{i}.0")
        t_list = best_of(lambda: reg.list("many"), repeat=3)
        t_get = best_of(lambda: reg.get("many", f"0.{args.versions // 2}.0"), repeat=3)
        t_latest = best_of(lambda: reg.get("many"), repeat=3)
        t_rev = best_of(reg.revision, repeat=3)
        mib = big.stat().st_size / (1 << 20)
        print(f"artifact {mib:.0f} MiB, registry with {args.versions} versions of one model; "
              f"cpu count {os.cpu_count()}")
        print(f"register           {t_reg * 1e3:8.1f} ms   shutil.copyfile {t_copy * 1e3:8.1f} ms   "
              f"ratio {t_reg / t_copy:.2f}x (hash + fsync + rename)")
        print(f"verify             {t_verify * 1e3:8.1f} ms   hashlib.sha256  {t_sha * 1e3:8.1f} ms   "
              f"ratio {t_verify / t_sha:.2f}x  ({mib / t_verify:.0f} MiB/s)")
        print(f"list(name)         {t_list * 1e3:8.2f} ms   ({t_list / args.versions * 1e6:.0f} us per version)")
        print(f"get(name, version) {t_get * 1e3:8.3f} ms   get(name) {t_latest * 1e3:.2f} ms (scans all versions)")
        print(f"revision()         {t_rev * 1e6:8.1f} us")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
