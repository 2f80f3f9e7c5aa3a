"""Server worker processes: N processes serving one port, the launcher behind `rtx serve --workers N` and
`rtx feature-store serve --workers N`.

Each worker is a whole server in a fresh interpreter (spawn: no event loop, threads or locks copied from the
master) that binds its own listening socket with SO_REUSEPORT (`reuseport_socket`): the kernel spreads new
connections over the workers, with no master in the request path. The master only starts the workers, starts
another when one dies on its own (unless they keep dying), and on SIGTERM/SIGINT passes SIGTERM on and waits:
each worker drains its requests and exits, and the master returns 0 once all have exited 0."""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import time

__all__ = ["reuseport_socket", "run_workers"]


def reuseport_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A listening, non-blocking TCP socket with SO_REUSEPORT, so that every worker can bind the same port."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


def run_workers(target, n: int, args: tuple = (), *, name: str = "rtx-worker", on_exit=None,
                log: logging.Logger | None = None, poll_s: float = 0.2) -> int:
    """Run `target(*args, index)` for index 0..n-1, each in a spawned process, until SIGTERM/SIGINT; blocks.

    `target` and `args` must be picklable (a module-level function). A worker that exits before the signal is
    replaced, unless more than 2 n have exited within a minute: then all are stopped and the status is 1.
    `on_exit(pid)` runs after each worker has exited (e.g. to drop its metrics files). Returns 0 when every
    worker exited 0 (or by the signal) after the stop, else the first positive exit status."""
    if n < 1:
        raise ValueError(f"run_workers needs at least one worker, got {n}")
    log = log or logging.getLogger("rtx.runtime.workers")
    ctx = multiprocessing.get_context("spawn")
    procs: dict[int, multiprocessing.Process] = {}
    stopping = False

    def start(i):
        p = ctx.Process(target=target, args=(*args, i), name=f"{name}-{i}", daemon=False)
        p.start()
        procs[i] = p
        log.info("worker %d started (pid %d)", i, p.pid)
        if stopping:  # the signal came while this one was starting: stop() did not see it
            os.kill(p.pid, signal.SIGTERM)

    def stop(sig, frame):
        nonlocal stopping
        stopping = True
        for p in procs.values():
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    status = 0
    try:
        for i in range(n):
            if stopping:  # a signal during start-up: start no more
                break
            start(i)
        exits: list[float] = []
        while procs:
            time.sleep(poll_s)
            for i, p in list(procs.items()):
                if p.is_alive():
                    continue
                p.join()
                del procs[i]
                if on_exit is not None:
                    on_exit(p.pid)
                if stopping:
                    status = status or (p.exitcode if p.exitcode and p.exitcode > 0 else 0)
                    continue
                # A worker died on its own (a crash, the OOM killer): replace it, unless they keep dying.
                now = time.monotonic()
                exits = [t for t in exits if now - t < 60] + [now]
                if len(exits) > 2 * n:
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
        for s, h in old.items():
            signal.signal(s, h)
    return status
