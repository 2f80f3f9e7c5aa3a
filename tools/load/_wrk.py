"""wrk helpers shared by the load scripts (tools/load/wrk_serve.py, tools/bench/feature_store.py): a POST script
for a body file, wrk's figures parsed from its output, and the CPU seconds of a server process tree.

wrk (a C load generator) keeps the client's cost out of the server's figures, which a Python client on the same
cores would not."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

# The body is read from a file once per wrk thread; `extra` adds Lua lines (headers, a delay() function).
LUA = """
local f = assert(io.open("{body}", "rb"))
wrk.method = "POST"
wrk.body = f:read("*all")
f:close()
wrk.headers["Content-Type"] = "{ctype}"
{extra}
"""


def post_script(path, body_path, ctype="application/json", extra=""):
    """Write a wrk Lua script that POSTs the bytes of `body_path`; returns `path`."""
    Path(path).write_text(LUA.format(body=body_path, ctype=ctype, extra=extra))
    return path


def parse(out: str) -> dict:
    """wrk --latency output -> rps, p50/p99 (ms), requests, errors (socket errors + non-2xx answers) and
    error_kinds (wrk's own words: a timeout is wrk giving up after 2 s, not an error answer)."""
    def ms(s):
        unit = s[-2:] if s[-2:] in ("ms", "us") else s[-1]
        return float(s[:-len(unit)]) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]
    res = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
           "p50": ms(re.search(r"\s50%\s+(\S+)", out).group(1)), "p99": ms(re.search(r"\s99%\s+(\S+)", out).group(1)),
           "requests": int(re.search(r"(\d+) requests in", out).group(1))}
    kinds = []
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        kinds += [f"{n} {w}" for w, n in zip(["connect", "read", "write", "timeout"], m.groups()) if int(n)]
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        kinds.append(f"{m.group(1)} non-2xx")
    res["error_kinds"] = kinds
    res["errors"] = sum(int(k.split()[0]) for k in kinds)
    return res


def run(url, script, connections, seconds, threads=2, timeout=None) -> dict:
    """Run wrk against `url` with `script` and return parse() of its output."""
    exe = shutil.which("wrk")
    if exe is None:
        raise FileNotFoundError("wrk is not installed (Debian/Ubuntu: apt-get install wrk)")
    out = subprocess.run([exe, f"-t{min(threads, connections)}", f"-c{connections}", f"-d{seconds}s", "--latency",
                          "-s", str(script), url], capture_output=True, text=True, check=True,
                         timeout=timeout or seconds + 60).stdout
    return parse(out)


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` and its descendants (a server's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # exited meanwhile
                continue
            stats[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks)  # ppid, utime+stime
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo += [c for c, (ppid, _) in stats.items() if ppid == p]
    return total
