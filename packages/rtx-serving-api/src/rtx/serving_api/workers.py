"""`rtx serve --workers N`: N server processes on one port.

Each worker is a whole server (the HTTP app, gRPC when asked, its own ModelManager polling the
registry, so every worker picks up a promotion by itself) bound with SO_REUSEPORT: the kernel
spreads new connections over the workers' listening sockets, with no master in the request path.
The master (rtx.runtime.workers.run_workers, shared with `rtx feature-store serve --workers`) only
starts the workers, restarts one that dies, and on SIGTERM/SIGINT passes the signal on and waits:
every worker drains its requests (shutdown_timeout_s), and the master exits 0 once all have exited 0.

Metrics: the workers write prometheus_client's multiprocess files into one folder
(PROMETHEUS_MULTIPROC_DIR, a fresh temporary one unless set), and GET /metrics on any worker
aggregates them: counters and histograms summed over workers, gauges per worker (a `pid` label)."""
from __future__ import annotations

import logging
import os
import shutil
import tempfile

from rtx.runtime.workers import reuseport_socket, run_workers
from rtx.serving_api.config import ServeConfig

log = logging.getLogger("rtx.serving_api")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def _worker(config: ServeConfig, registry, index: int) -> None:
    from rtx.serving_api.server import run_one
    os.environ["RTX_SERVE_WORKER"] = str(index)
    run_one(config, registry=registry, sockets=[reuseport_socket(config.host, config.port)])


def serve_workers(config: ServeConfig, *, registry=None) -> int:
    """Run config.workers worker processes until SIGTERM/SIGINT; returns the exit status."""
    if config.port == 0 or config.grpc_port == 0:
        raise ValueError("--workers needs fixed ports (--port, --grpc-port), not 0: the workers must agree on them")
    own_dir = None
    if not os.environ.get(MULTIPROC_ENV):
        own_dir = tempfile.mkdtemp(prefix="rtx-serve-metrics-")
        os.environ[MULTIPROC_ENV] = own_dir  # the workers inherit it: set before they start
    try:
        return run_workers(_worker, config.workers, (config, registry), name="rtx-serve", on_exit=_mark_dead, log=log)
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)


def _mark_dead(pid: int) -> None:
    try:
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(pid)  # drops the dead worker's live gauges
    except Exception:  # nothing to clean (no files yet)
        pass


def multiprocess_exposition(accept: str | None) -> tuple[bytes, str] | None:
    """/metrics aggregated over every worker's files, or None outside --workers."""
    if not os.environ.get(MULTIPROC_ENV):
        return None
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder
    from prometheus_client.multiprocess import MultiProcessCollector
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type
