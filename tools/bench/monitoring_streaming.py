#!/usr/bin/env python3
"""Costs of rtx-monitoring and rtx-streaming (issue: production stack), each against a baseline:

- ServingMetrics.observe_request vs the same two prometheus_client calls made directly
  (Counter.labels().inc() + Histogram.labels().observe()): what the wrapper's checks cost.
- TrainingLogger.log (3 scalars; CSV + TensorBoard, flushed per call) vs csv.writer alone.
- sse_stream over uvicorn on loopback: pieces per second of a producer that never waits, read
  by httpx, vs a plain Starlette StreamingResponse of the same events from an async generator
  (no worker thread, no window): what the thread hand-off and backpressure cost per piece.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python tools/bench/monitoring_streaming.py
"""
import csv
import io
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of  # noqa: E402


def bench_metrics():
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from rtx.monitoring import LATENCY_BUCKETS, ServingMetrics
    m = ServingMetrics()
    reg = CollectorRegistry()
    c = Counter("c", "c", ("model", "version", "protocol", "code"), registry=reg)
    h = Histogram("h", "h", ("model", "version"), buckets=LATENCY_BUCKETS, registry=reg)

    def ours():
        m.observe_request("resnet", "1.0.0", "v2", 200, 0.0042)

    def raw():
        c.labels("resnet", "1.0.0", "v2", "200").inc()
        h.labels("resnet", "1.0.0").observe(0.0042)

    return best_of(ours), best_of(raw)


def bench_logger():
    from rtx.monitoring import TrainingLogger
    d = tempfile.mkdtemp()
    logger = TrainingLogger(d, progress=False)
    step = iter(range(10**9))

    def ours():
        logger.log(next(step), loss=0.25, lr=1e-3, acc=0.9)

    buf = io.StringIO()
    w = csv.writer(buf)

    def raw():
        w.writerow([1, time.time(), repr(0.25), repr(1e-3), repr(0.9)])

    out = best_of(ours, repeat=5), best_of(raw)
    logger.close()
    return out


def _serve(app):
    import uvicorn
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    while not server.started:
        time.sleep(0.01)
    return server, t, sock.getsockname()[1]


def bench_sse(n=20000):
    import httpx
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from rtx.streaming import sse_stream

    def pieces():
        for i in range(n):
            yield f" tok{i}"
        return "length"

    async def ours(request):
        return sse_stream(request, pieces)

    async def plain(request):
        async def events():
            text = []
            for i in range(n):
                text.append(f" tok{i}")
                yield b"data: " + json.dumps({"index": i, "text": text[-1]}).encode() + b"\n\n"
            yield b"data: " + json.dumps({"finish_reason": "length", "text": "".join(text)}).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    server, t, port = _serve(Starlette(routes=[Route("/ours", ours, methods=["POST"]),
                                               Route("/plain", plain, methods=["POST"])]))
    rates = {}
    try:
        with httpx.Client(timeout=60) as client:
            for path in ("/ours", "/plain") * 3:
                start = time.perf_counter()
                with client.stream("POST", f"http://127.0.0.1:{port}{path}") as r:
                    count = sum(1 for line in r.iter_lines() if line.startswith("data: {\"index\""))
                assert count == n, count
                rates[path] = max(rates.get(path, 0.0), n / (time.perf_counter() - start))
    finally:
        server.should_exit = True
        t.join(10)
    return rates["/ours"], rates["/plain"]


def main():
    ours, raw = bench_metrics()
    print(f"ServingMetrics.observe_request    {ours * 1e6:7.2f} us   raw prometheus_client {raw * 1e6:7.2f} us   "
          f"ratio {ours / raw:.2f}x")
    ours, raw = bench_logger()
    print(f"TrainingLogger.log (csv+tb, 3)    {ours * 1e6:7.2f} us   csv.writer row        {raw * 1e6:7.2f} us   "
          f"ratio {ours / raw:.1f}x")
    ours, plain = bench_sse()
    print(f"sse_stream over uvicorn           {ours:7.0f} pieces/s   plain StreamingResponse {plain:7.0f} pieces/s   "
          f"ratio {plain / ours:.2f}x slower")


if __name__ == "__main__":
    main()
