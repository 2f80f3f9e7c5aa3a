"""serve(): run the app under uvicorn. SIGTERM/SIGINT stop accepting connections and wait up to
shutdown_timeout_s for the requests in flight (uvicorn's graceful shutdown), then unload the
models; the process then exits with status 0."""
from __future__ import annotations

import logging
import signal

from rtx.serving_api.app import create_app
from rtx.serving_api.config import ServeConfig


def uvicorn_config(app, config: ServeConfig, **overrides):
    import uvicorn
    kw = dict(host=config.host, port=config.port, log_level=config.log_level)
    if config.ssl_certfile is not None:
        kw.update(ssl_certfile=str(config.ssl_certfile), ssl_keyfile=str(config.ssl_keyfile))
    kw.update(overrides)
    return uvicorn.Config(app, **kw, timeout_graceful_shutdown=config.shutdown_timeout_s, lifespan="on",
                          access_log=False)  # an access line per request would cost more than a small model


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            super().handle_exit(sig, frame)
            # uvicorn re-raises a captured SIGTERM after its graceful shutdown, so the process would
            # report "killed by SIGTERM"; a drained shutdown is a clean exit (status 0) for
            # supervisors (Kubernetes, systemd) that read the status.
            captured = getattr(self, "_captured_signals", None)
            if sig == signal.SIGTERM and isinstance(captured, list) and sig in captured:
                captured.remove(sig)

    return Server


def run_one(config: ServeConfig, *, registry=None, sockets=None) -> None:
    """One server process: uvicorn (and gRPC, from the app's lifespan) until SIGTERM/SIGINT."""
    logging.basicConfig(level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = _server_class()(uvicorn_config(create_app(config, registry=registry), config))
    server.run(sockets=sockets)


def serve(config: ServeConfig | None = None, *, registry=None) -> int:
    """Serve `registry` (or config.registry) until SIGTERM/SIGINT; blocks. With config.workers > 1,
    that many processes share the port (rtx.serving_api.workers). Returns the exit status."""
    config = ServeConfig() if config is None else config
    if config.workers > 1:
        from rtx.serving_api.workers import serve_workers
        logging.basicConfig(level=config.log_level.upper(),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return serve_workers(config, registry=registry)
    run_one(config, registry=registry)
    return 0
