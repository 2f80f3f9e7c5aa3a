"""`rtx serve --workers N`: N server processes on one port.

Each worker is a whole server (the HTTP app, gRPC when asked, its own ModelManager polling the
registry, so every worker picks up a promotion by itself) bound with SO_REUSEPORT: the kernel
spreads new connections over the workers' listening sockets, with no master in the request path.
The master only starts the workers, restarts one that dies, and on SIGTERM/SIGINT passes the
signal on and waits: every worker drains its requests (shutdown_timeout_s), and the master exits 0
once all have exited 0.

Metrics: the workers write prometheus_client's multiprocess files into one folder
(PROMETHEUS_MULTIPROC_DIR, a fresh temporary one unless set), and GET /metrics on any worker
aggregates them: counters and histograms summed over workers, gauges per worker (a `pid` label)."""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time

from rtx.serving_api.config import ServeConfig

log = logging.getLogger("rtx.serving_api")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket with SO_REUSEPORT, so that every worker can bind the same port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


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
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no event loop or threads copied
    procs: dict[int, multiprocessing.Process] = {}
    stopping = False

    def start(i):
        p = ctx.Process(target=_worker, args=(config, registry, i), name=f"rtx-serve-{i}", daemon=False)
        p.start()
        procs[i] = p
        log.info("worker %d started (pid %d)", i, p.pid)

    def stop(sig, frame):
        nonlocal stopping
        stopping = True
        for p in procs.values():
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    try:
        for i in range(config.workers):
            start(i)
        restarts: list[float] = []
        while procs:
            time.sleep(0.2)
            for i, p in list(procs.items()):
                if p.is_alive():
                    continue
                p.join()
                _mark_dead(p.pid)
                del procs[i]
                if stopping:
                    status = status or (p.exitcode if p.exitcode and p.exitcode > 0 else 0)
                    continue
                # A worker died on its own (a crash, the OOM killer): replace it, unless they keep dying.
                now = time.monotonic()
                restarts = [t for t in restarts if now - t < 60] + [now]
                if len(restarts) > 2 * config.workers:
                    log.error("workers keep exiting (last status %s); stopping", p.exitcode)
                    stop(None, None)
                    status = 1
                    continue
                log.warning("worker %d (pid %d) exited with %s; starting another", i, p.pid, p.exitcode)
                start(i)
    finally:
        for p in procs.values():
            if p.is_alive():
                p.kill()
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
    return status


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
