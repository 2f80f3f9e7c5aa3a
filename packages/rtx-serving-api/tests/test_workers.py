"""`rtx serve --workers 2`: two processes on one port (SO_REUSEPORT), both serving HTTP and gRPC,
both following a promotion in the registry, /metrics summed over both, SIGTERM draining both."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import tritonclient.grpc as tg

from rtx.hub import Registry


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_by(url, n=40):
    """The versions and worker pids seen over `n` fresh connections (each may land on either worker)."""
    versions, pids = set(), set()
    for _ in range(n):
        with httpx.Client(base_url=url, timeout=30) as c:  # a new connection each time
            r = c.get("/v2/models/digits")
            versions.add(r.json()["version"])
    metrics = httpx.get(url + "/metrics", timeout=30).text
    pids = set(re.findall(r'rtx_model_load_seconds\{.*?pid="(\d+)"', metrics))
    return versions, pids, metrics


def test_two_workers_share_the_port_follow_promotion_and_drain(tmp_path, models, h):
    reg = Registry(tmp_path / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    port, gport = free_port(), free_port()
    (tmp_path / "metrics").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "rtx.runtime.cli", "serve", "--registry", str(tmp_path / "reg"),
                             "--port", str(port), "--grpc-port", str(gport), "--workers", "2",
                             "--log-level", "warning"],
                            env={**os.environ, "RTX_SERVE_POLL_INTERVAL_S": "0.2",
                                 "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:  # both workers up: each reports its model load under its own pid
            assert proc.poll() is None, proc.stdout.read()
            try:
                versions, pids, _ = served_by(url, 4)
                if len(pids) == 2:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.3)
        body = h.v2_body("x", h.X[:2])
        for _ in range(10):
            with httpx.Client(base_url=url, timeout=30) as c:
                assert c.post("/v2/models/digits/infer", json=body).status_code == 200
        c = tg.InferenceServerClient(f"127.0.0.1:{gport}")
        x = tg.InferInput("x", [2, 1, 8, 8], "FP32")
        x.set_data_from_numpy(h.X[:2])
        np.testing.assert_allclose(c.infer("digits", [x]).as_numpy("output"), h.eager(models["1.0.0"], h.X[:2]),
                                   rtol=1e-5, atol=1e-6)
        _, _, metrics = served_by(url, 1)
        total = sum(float(v) for v in re.findall(r'rtx_requests_total\{[^}]*protocol="v2"[^}]*\} (\S+)', metrics))
        assert total == 10  # summed over both workers' files

        reg.register(models["2.0.0"], "digits", "2.0.0", example_inputs=h.X[:1], stage="production")  # promotion
        deadline = time.monotonic() + 30
        while served_by(url, 20)[0] != {"2.0.0"}:
            assert time.monotonic() < deadline, "a worker kept the old version"
            time.sleep(0.3)

        # requests in flight on many connections (so on both workers) when SIGTERM arrives
        payload = httpx.Request("POST", "/", json=body).content
        results, started = [], threading.Barrier(7)

        def slow():
            def chunks():
                yield payload[:100]
                started.wait(10)
                time.sleep(1.0)
                yield payload[100:]
            results.append(httpx.post(url + "/v2/models/digits/infer", content=chunks(), timeout=30))
        threads = [threading.Thread(target=slow) for _ in range(6)]
        for t in threads:
            t.start()
        started.wait(10)
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(30)
        assert [r.status_code for r in results] == [200] * 6
        for r in results:
            np.testing.assert_allclose(np.reshape(r.json()["outputs"][0]["data"], (2, 10)),
                                       h.eager(models["2.0.0"], h.X[:2]), rtol=1e-5, atol=1e-6)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_workers_need_fixed_ports():
    import pytest

    from rtx.serving_api import ServeConfig
    from rtx.serving_api.workers import serve_workers
    for cfg in (ServeConfig(workers=2, port=0), ServeConfig(workers=2, port=8000, grpc_port=0)):
        with pytest.raises(ValueError, match="fixed ports"):
            serve_workers(cfg)
