"""Run the real server (uvicorn, real sockets) in a background thread: for tests and notebooks.

    with ServerThread(create_app(cfg, registry=reg)) as url:
        httpx.get(url + "/v2/health/ready")
"""
from __future__ import annotations

import threading
import time

from rtx.serving_api.config import ServeConfig


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1 and a free port, in a daemon thread; the context manager
    yields the base URL once the server accepts connections (after the models are loaded) and on
    exit shuts it down gracefully (in-flight requests finish)."""

    def __init__(self, app, *, host: str = "127.0.0.1", port: int = 0, startup_timeout_s: float = 60.0,
                 config: ServeConfig | None = None):
        import uvicorn

        from rtx.serving_api.server import uvicorn_config
        cfg = config or getattr(app.state, "config", None) or ServeConfig()
        ucfg = uvicorn_config(app, cfg, host=host, port=port, log_level="warning")
        self.server = uvicorn.Server(ucfg)
        self.startup_timeout_s = startup_timeout_s
        self.thread = threading.Thread(target=self.server.run, name="rtx-serve", daemon=True)
        self.url = None

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the server thread exited during startup (see the log above)")
            if time.monotonic() > deadline:
                self.server.should_exit = True
                raise TimeoutError(f"the server did not start within {self.startup_timeout_s} s")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        scheme = "https" if self.server.config.ssl_certfile else "http"
        self.url = f"{scheme}://{self.server.config.host}:{port}"
        return self.url

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=60)
