"""A two-worker TCP server for test_workers (run as a script, so the spawned workers can import its `serve`):
each connection is answered with the answering worker's pid. `python workers_demo.py PORT`."""
import logging
import os
import signal
import sys

from rtx.runtime.workers import reuseport_socket, run_workers


def serve(port, index):
    sock = reuseport_socket("127.0.0.1", port)
    sock.setblocking(True)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # as a server would: stop cleanly on the master's signal
    while True:
        conn, _ = sock.accept()
        conn.sendall(str(os.getpid()).encode())
        conn.close()


class _TermOnFirstStart(logging.Logger):
    """--term-during-start: the master signals itself as soon as its first worker has started, so the
    stop arrives while the others are still to be started."""

    def info(self, msg, *args, **kwargs):
        super().info(msg, *args, **kwargs)
        if "started" in msg and not getattr(self, "sent", False):
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    log = _TermOnFirstStart("demo") if "--term-during-start" in sys.argv else None
    sys.exit(run_workers(serve, 2, (int(sys.argv[1]),), log=log,
                         on_exit=lambda pid: print("exited", pid, flush=True)))
