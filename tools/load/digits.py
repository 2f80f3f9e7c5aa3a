"""Load test: many concurrent HTTP clients against `rtx serve` serving the digits CNN.

The server runs in its own process (python -m rtx.serving_api) on a loopback port; the clients are
coroutines spread over --processes processes (a Python process uses one core at most), each client
with its own httpx.AsyncClient limited to one connection.
Each client sends one request, waits for the answer, then waits until its next send time
(--interval-ms after the previous send; 0: closed loop, send again at once). Every answer is
checked: status 200 and the predicted class equal to the local model's. Bounded: --duration
seconds (at most 300) and --clients (at most 1000), loopback only.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python tools/load/digits.py --clients 100 --duration 30

The model: DigitsCNN trained for --epochs epochs with rtx.demo.train.train (0: random weights).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def histogram_quantile(exposition: str, name: str, q: float) -> float:
    """The upper bound of the Prometheus histogram bucket holding quantile q (all label sets summed):
    the server's own view of latency, from request receipt to response (no client or network)."""
    counts: dict[float, float] = {}
    for line in exposition.splitlines():
        if line.startswith(name + "_bucket{"):
            le = line.split('le="')[1].split('"')[0]
            counts[float(le)] = counts.get(float(le), 0.0) + float(line.rsplit(" ", 1)[1])
    bounds = sorted(counts)
    total = counts[bounds[-1]] if bounds else 0.0
    for b in bounds:
        if counts[b] >= q * total:
            return b
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc): what the server spends per request,
    whatever else the machine is doing."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build_registry(root: Path, epochs: int, seed: int):
    """Register DigitsCNN as digits:1.0.0 (production); returns (test images, local predictions)."""
    import rtx
    from rtx.demo.model import DigitsCNN
    from rtx.demo.train import digits_tensors, train
    from rtx.hub import Registry
    rtx.manual_seed(seed)
    if epochs > 0:
        out = root / "digits.safetensors"
        result = train(epochs=epochs, out=str(out), seed=seed, progress=False, log=lambda *a: None)
        model = DigitsCNN()
        model.load_state_dict(rtx.load(str(out)))
        print(f"trained DigitsCNN for {epochs} epochs: test accuracy {result.accuracy * 100:.1f}%")
    else:
        model = DigitsCNN()
        print("DigitsCNN with random weights (--epochs 0)")
    model.eval()
    _, _, x_test, y_test = digits_tensors(seed)
    x = x_test.numpy()
    with rtx.no_grad():
        pred = model(rtx.from_numpy(x)).numpy().argmax(1)
    reg = Registry(root / "registry")
    reg.register(model, "digits", "1.0.0", example_inputs=x[:1], stage="production")
    return x, pred


async def client(http, url, x, pred, deadline, interval, latencies, failures, rng):
    """One simulated client: its own connection, one request at a time, answers checked."""
    body_cache = {}
    next_send = time.perf_counter() + rng.random() * interval  # spread the first sends
    while True:
        if interval:
            await asyncio.sleep(max(0.0, next_send - time.perf_counter()))
        start = time.perf_counter()
        if start >= deadline:
            return
        next_send = start + interval
        i = rng.randrange(len(x))
        body = body_cache.get(i)
        if body is None:
            body = body_cache[i] = json.dumps({"inputs": [{"name": "x", "shape": [1, 1, 8, 8], "datatype": "FP32",
                                                           "data": x[i].ravel().tolist()}]}).encode()
        try:
            r = await http.post(url, content=body, headers={"content-type": "application/json"})
            ok = r.status_code == 200
            if ok:
                got = int(np.argmax(r.json()["outputs"][0]["data"]))
                ok = got == pred[i]
                why = f"predicted {got}, the local model says {pred[i]}"
            else:
                why = f"HTTP {r.status_code}: {r.text[:200]}"
        except Exception as e:  # a refused or reset connection is a failed request too
            ok, why = False, f"{type(e).__name__}: {e}"
        latencies.append(time.perf_counter() - start)
        if not ok:
            failures.append(why)


def _fast_failing_sniffio():
    """httpcore runs `import sniffio` on every request; when sniffio is not installed (it is not in
    this workspace), each failed import searches all of sys.path again, which cost about a third
    of the load generator's CPU here. A None entry in sys.modules makes the import fail at once."""
    try:
        import sniffio  # noqa: F401
    except ImportError:
        sys.modules["sniffio"] = None


async def run_load(url, x, pred, clients, duration, interval):
    """`clients` concurrent clients for `duration` seconds. Each has its own httpx.AsyncClient limited
    to one connection, as separate users would (one shared pool of many connections also costs
    httpcore time quadratic in the pool size, which would measure the load generator, not the server)."""
    import ssl

    import httpx
    _fast_failing_sniffio()
    latencies, failures = [], []
    tls = ssl.create_default_context()  # unused on http://, but built once instead of once per client
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    https = [httpx.AsyncClient(limits=limits, timeout=30.0, verify=tls) for _ in range(clients)]
    try:
        deadline = time.perf_counter() + duration
        rng = random.Random(0)
        await asyncio.gather(*(client(http, url, x, pred, deadline, interval, latencies, failures,
                                      random.Random(rng.random())) for http in https))
    finally:
        for http in https:
            await http.aclose()
    return latencies, failures


def _worker(url, x, pred, clients, duration, interval, start_at, use_uvloop):
    """One load-generator process: `clients` clients from wall-clock time `start_at` on. Returns
    (latencies in s, failure messages, CPU seconds this process spent)."""
    factory = None
    if use_uvloop:
        import uvloop
        factory = uvloop.new_event_loop
    time.sleep(max(0.0, start_at - time.time()))
    cpu0 = time.process_time()
    with asyncio.Runner(loop_factory=factory) as runner:
        lat, failures = runner.run(run_load(url, x, pred, clients, duration, interval))
    return lat, failures, time.process_time() - cpu0


def generate_load(url, x, pred, clients, duration, interval, processes, use_uvloop):
    """Spread the clients over `processes` processes (one Python process uses one core at most)."""
    import concurrent.futures
    import multiprocessing
    start_at = time.time() + 1.0
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    if processes == 1:
        return _worker(url, x, pred, clients, duration, interval, start_at, use_uvloop)
    ctx = multiprocessing.get_context("fork")  # the parent runs no threads; fork is quick
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        parts = [f.result() for f in [pool.submit(_worker, url, x, pred, n, duration, interval, start_at, use_uvloop)
                                      for n in shares if n]]
    return [v for p in parts for v in p[0]], [v for p in parts for v in p[1]], sum(p[2] for p in parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--duration", type=float, default=30.0, help="seconds of load (at most 300)")
    p.add_argument("--interval-ms", type=float, default=1000.0,
                   help="each client sends every this many ms (0: closed loop, no pause)")
    p.add_argument("--epochs", type=int, default=3, help="training epochs for the model (0: random weights)")
    p.add_argument("--max-batch-size", type=int, default=32)
    p.add_argument("--max-wait-ms", type=float, default=2.0)
    p.add_argument("--uvloop", action=argparse.BooleanOptionalAction, default=True,
                   help="run the clients on uvloop (less load-generator CPU per request)")
    p.add_argument("--processes", type=int, default=2, help="load-generator processes sharing the clients")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = p.parse_args(argv)
    if not (1 <= args.clients <= 1000 and 0 < args.duration <= 300 and 1 <= args.processes <= 8):
        p.error("--clients must be in 1..1000, --duration in (0, 300] and --processes in 1..8")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        x, pred = build_registry(root, args.epochs, seed=0)
        port = free_port()
        env = {**os.environ, "RTX_SERVE_BATCHING__MAX_BATCH_SIZE": str(args.max_batch_size),
               "RTX_SERVE_BATCHING__MAX_WAIT_MS": str(args.max_wait_ms)}
        server = subprocess.Popen([sys.executable, "-m", "rtx.serving_api", "--registry", str(root / "registry"),
                                   "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
                                   "--max-concurrency", str(max(256, 2 * args.clients))], env=env)
        try:
            import httpx
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + 60
            while True:
                try:
                    if httpx.get(base + "/v2/health/ready", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.time() > deadline:
                    raise RuntimeError("the server did not become ready")
                time.sleep(0.1)
            url = base + "/v2/models/digits/infer"
            asyncio.run(run_load(url, x, pred, min(args.clients, 10), 1.0, 0.0))  # warm up
            cpu0 = cpu_seconds(server.pid)
            lat, failures, client_cpu = generate_load(url, x, pred, args.clients, args.duration,
                                                      args.interval_ms / 1e3, args.processes, args.uvloop)
            wall, server_cpu = args.duration, cpu_seconds(server.pid) - cpu0
            stats = httpx.get(base + "/metrics").text
            model_stats = httpx.get(base + "/v2/models/digits/stats").json()["model_stats"][0]
        finally:
            server.terminate()
            server.wait(30)
    lat_ms = np.array(lat) * 1e3
    res = {"clients": args.clients, "processes": args.processes, "duration_s": round(wall, 1),
           "interval_ms": args.interval_ms,
           "requests": len(lat), "failed": len(failures), "throughput_rps": round(len(lat) / wall, 1),
           "p50_ms": round(float(np.percentile(lat_ms, 50)), 2), "p90_ms": round(float(np.percentile(lat_ms, 90)), 2),
           "p99_ms": round(float(np.percentile(lat_ms, 99)), 2), "max_ms": round(float(lat_ms.max()), 2),
           "server_cpu_ms_per_request": round(server_cpu / max(1, len(lat)) * 1e3, 3),
           "client_cpu_ms_per_request": round(client_cpu / max(1, len(lat)) * 1e3, 3),
           "server_exit_code": server.returncode}
    res["server_p99_ms_at_most"] = histogram_quantile(stats, "rtx_request_duration_seconds", 0.99) * 1e3
    batch = model_stats.get("batch_stats", {})
    if batch:
        res["mean_batch_size"] = round(batch["mean_batch_size"], 2)
        res["batcher_p99_ms"] = round(batch["latency"].get("p99_ms", float("nan")), 2)
        res["session_p99_ms"] = round(model_stats["inference_stats"].get("p99_ms", float("nan")), 3)
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:>18}: {v}")
        if failures:
            print("first failures:", *failures[:5], sep="\n  ")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
