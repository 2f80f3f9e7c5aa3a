"""Load test of `rtx serve` with wrk (a C load generator, so the figures are the server's, not a
Python client's): the digits MLP (64 -> 128 -> 10) behind 1, 2 and 4 workers, single-image KServe v2
requests with JSON bodies and with the binary tensor data extension, on loopback only.

    .venv/bin/python tools/load/wrk_serve.py --workers 1 2 4 --connections 50 --duration 20

Prints a Markdown table (requests/s, p50, p99, errors) per run. Before each run one request is
checked against the local model; wrk's own error counts (socket errors, non-2xx answers) are
reported as they are. Bounded: at most 1,000 connections, 8 workers, 120 s per run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _wrk import post_script, run, tree_cpu_seconds  # noqa: E402  (tools/load is the script's folder)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_registry(root: Path):
    import rtx
    import rtx.nn as nn
    from rtx.hub import Registry
    rtx.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    x = np.random.default_rng(0).random((1, 64), dtype=np.float32)
    # as ONNX: a Sequential is rebuilt from a checkpoint only through a registered class, and an ONNX
    # file is what a deployment would serve (on onnxruntime or rtx.inference: --backend)
    import rtx.onnx
    root.mkdir(parents=True)
    rtx.onnx.export(model, rtx.from_numpy(x), str(root / "mlp.onnx"), input_names=["x"], output_names=["logits"],
                    dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    Registry(root / "reg").register(root / "mlp.onnx", "digits-mlp", "1.0.0", stage="production")
    with rtx.no_grad():
        expected = model(rtx.from_numpy(x)).numpy()
    return x, expected


def bodies(x: np.ndarray, folder: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (body file, content type, extra Lua lines)."""
    doc = {"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
    (folder / "json.body").write_bytes(json.dumps(doc).encode())
    head = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}],
                       "parameters": {"binary_data_output": True}}).encode()
    (folder / "binary.body").write_bytes(head + x.astype("<f4").tobytes())
    return {"json": (folder / "json.body", "application/json", ""),
            "binary": (folder / "binary.body", "application/octet-stream",
                       f'wrk.headers["Inference-Header-Content-Length"] = "{len(head)}"')}


def check_answer(url: str, body: Path, ctype: str, extra: str, expected: np.ndarray) -> None:
    headers = {"Content-Type": ctype}
    m = re.search(r'"Inference-Header-Content-Length"\] = "(\d+)"', extra)
    if m:
        headers["Inference-Header-Content-Length"] = m.group(1)
    with urllib.request.urlopen(urllib.request.Request(url, body.read_bytes(), headers), timeout=30) as r:
        data = r.read()
        n = r.headers.get("Inference-Header-Content-Length")
    if n:
        got = np.frombuffer(data[int(n):], "<f4").reshape(expected.shape)
    else:
        got = np.reshape(json.loads(data)["outputs"][0]["data"], expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def _children_cpu() -> float:
    import resource
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--bodies", nargs="+", default=["json", "binary"], choices=["json", "binary"])
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--duration", type=int, default=20, help="seconds per run")
    p.add_argument("--backend", default="auto", choices=["auto", "onnxruntime", "rtx"], help="rtx serve --backend")
    args = p.parse_args(argv)
    if not (1 <= args.connections <= 1000 and all(1 <= w <= 8 for w in args.workers) and 1 <= args.duration <= 120):
        p.error("bounds: 1-1000 connections, 1-8 workers, 1-120 s")
    wrk = shutil.which("wrk")
    if wrk is None:
        p.error("wrk is not installed (Debian/Ubuntu: apt-get install wrk)")
    tmp = Path(tempfile.mkdtemp(prefix="rtx-wrk-"))
    x, expected = build_registry(tmp / "registry")
    kinds = bodies(x, tmp)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # one core per worker
    rows = []
    try:
        for n in args.workers:
            port = free_port()
            server = subprocess.Popen([sys.executable, "-m", "rtx.runtime.cli", "serve", "--registry",
                                       str(tmp / "registry" / "reg"), "--port", str(port), "--workers", str(n),
                                       "--backend", args.backend, "--log-level", "warning"], env=env)
            url = f"http://127.0.0.1:{port}/v2/models/digits-mlp/infer"
            try:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1)
                        break
                    except OSError:
                        if server.poll() is not None or time.monotonic() > deadline:
                            raise SystemExit("rtx serve did not start") from None
                        time.sleep(0.2)
                time.sleep(1.0 if n > 1 else 0.0)  # the other workers load their models too
                for kind in args.bodies:
                    body, ctype, extra = kinds[kind]
                    check_answer(url, body, ctype, extra, expected)
                    script = post_script(tmp / f"{kind}.lua", body, ctype, extra)
                    load = os.getloadavg()[0]
                    server_cpu, client_cpu = tree_cpu_seconds(server.pid), _children_cpu()
                    r = run(url, script, args.connections, args.duration, args.threads)
                    # CPU per request does not depend on what else the machine runs, unlike req/s and p99
                    r["server_ms"] = 1e3 * (tree_cpu_seconds(server.pid) - server_cpu) / max(r["requests"], 1)
                    r["client_ms"] = 1e3 * (_children_cpu() - client_cpu) / max(r["requests"], 1)
                    rows.append((n, kind, load, r))
                    print(f"workers={n} body={kind}: {r['rps']:.0f} req/s, p50 {r['p50']:.1f} ms, "
                          f"p99 {r['p99']:.1f} ms, errors {r['errors']}, server CPU {r['server_ms']:.3f} ms/req, "
                          f"wrk CPU {r['client_ms']:.3f} ms/req", flush=True)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| backend | workers | body | load avg | requests | req/s | p50 | p99 | errors | server CPU/req "
          "| wrk CPU/req |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, kind, load, r in rows:
        print(f"| {args.backend} | {n} | {kind} | {load:.1f} | {r['requests']:,} | {r['rps']:,.0f} | "
              f"{r['p50']:.1f} ms | {r['p99']:.1f} ms | {r['errors']} | {r['server_ms']:.3f} ms | "
              f"{r['client_ms']:.3f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
