"""`rtx serve` as a separate process: configuration from a TOML file, environment and flags; SIGTERM
drains the request in flight and exits 0; a bad configuration is refused with a message."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import pytest

from rtx.hub import Registry


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, env=None):
    return subprocess.Popen([sys.executable, "-m", "rtx.runtime.cli", "serve", *args],
                            env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_ready(proc, url, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"rtx serve exited with {proc.returncode}:\n{proc.stdout.read()}")
        try:
            if httpx.get(url + "/v2/health/ready", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("rtx serve did not become ready")


def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(tmp_path, models, h):
    reg = Registry(tmp_path / "reg")
    reg.register(models["1.0.0"], "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    (tmp_path / "serve.toml").write_text('log_level = "warning"\nmax_body_bytes = 100000\n')
    port = free_port()
    proc = start(["--config", str(tmp_path / "serve.toml"), "--registry", str(tmp_path / "reg"), "--port", str(port)],
                 env={"RTX_SERVE_REQUEST_TIMEOUT_S": "20"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url)
        r = httpx.post(url + "/v2/models/digits/infer", content=b" " * 100001)  # max_body_bytes from the TOML file
        assert r.status_code == 413 and "100000" in r.json()["error"]
        body = json.dumps(h.v2_body("x", h.X[:2])).encode()
        started = threading.Event()

        def slow_body():  # the request is in flight (its body half sent) when SIGTERM arrives
            yield body[:100]
            started.set()
            time.sleep(1.5)
            yield body[100:]

        result = {}
        t = threading.Thread(target=lambda: result.update(r=httpx.post(url + "/v2/models/digits/infer",
                                                                       content=slow_body(), timeout=30)))
        t.start()
        assert started.wait(10)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        t.join(30)
        r = result["r"]
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(np.array(r.json()["outputs"][0]["data"]).reshape(2, 10),
                                   h.eager(models["1.0.0"], h.X[:2]), rtol=1e-5, atol=1e-6)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_configuration_is_refused_with_a_message(tmp_path):
    (tmp_path / "serve.toml").write_text("max_body_bytez = 5\n")
    proc = start(["--config", str(tmp_path / "serve.toml")])
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "max_body_bytez" in out and "max_body_bytes" in out
    proc = start(["--registry", str(tmp_path)], env={"RTX_SERVE_MAX_CONCURRENCY": "lots"})
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "RTX_SERVE_MAX_CONCURRENCY" in out and "lots" in out


def test_serve_config_sources(tmp_path):
    from rtx.serving_api import RouteConfig, ServeConfig
    (tmp_path / "serve.toml").write_text(
        'port = 9001\nmax_body_bytes = 1024\n[batching]\nmax_batch_size = 4\n'
        '[[routes]]\nmodel = "digits"\nsplit = {"1.0.0" = 90, "2.0.0" = 10}\n')
    cfg = ServeConfig.load(tmp_path / "serve.toml", env={"RTX_SERVE_PORT": "9002",
                                                         "RTX_SERVE_BATCHING__MAX_WAIT_MS": "0.5"},
                           overrides={"max_concurrency": "7"})
    assert (cfg.port, cfg.max_body_bytes, cfg.max_concurrency) == (9002, 1024, 7)
    assert (cfg.batching.max_batch_size, cfg.batching.max_wait_ms) == (4, 0.5)
    assert cfg.routes == [RouteConfig(model="digits", split={"1.0.0": 90.0, "2.0.0": 10.0})]
    assert ServeConfig().max_body_bytes == 8 * 1024 * 1024 and ServeConfig().sticky_header == "x-client-id"
    with pytest.raises(ValueError, match="max_concurrency"):
        ServeConfig(max_concurrency=0)
    with pytest.raises(ValueError, match="sum to 0"):
        ServeConfig(routes=[RouteConfig(model="m", split={"1.0.0": 0})])
    with pytest.raises(ValueError, match="two routes"):
        ServeConfig(routes=[RouteConfig(model="m", split={"1.0.0": 1})] * 2)
