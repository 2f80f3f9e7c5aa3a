"""rtx.runtime.workers: N spawned processes on one port (SO_REUSEPORT), replaced when they die, stopped together."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtx.runtime.workers import reuseport_socket, run_workers

DEMO = Path(__file__).with_name("workers_demo.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answering_pids(port, tries=200):
    pids = set()
    for _ in range(tries):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                pids.add(int(c.recv(32)))
        except (ConnectionError, ValueError):  # not listening yet, or a killed worker's queued connection
            time.sleep(0.05)
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_workers_share_a_port_are_replaced_and_stop_on_sigterm():
    port = free_port()
    master = subprocess.Popen([sys.executable, str(DEMO), str(port)], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        pids = set()
        while len(pids) < 2:  # the kernel spreads connections over both workers' sockets
            assert time.monotonic() < deadline, f"two workers never answered (saw {pids})"
            pids |= answering_pids(port, 20)
        assert len(pids) == 2 and master.pid not in pids
        victim = min(pids)
        os.kill(victim, signal.SIGKILL)  # a crash: the master starts another worker
        deadline = time.monotonic() + 60
        while True:
            now = answering_pids(port, 20)
            if victim not in now and len(now - pids) >= 1 and len(now) == 2:
                break
            assert time.monotonic() < deadline, f"no replacement for {victim} (answering: {now})"
        master.send_signal(signal.SIGTERM)
        assert master.wait(60) == 0
        out = master.stdout.read().split()
        exited = {int(p) for p in out[1::2]}
        assert victim in exited and (now | pids) <= exited  # on_exit saw every worker
        assert not any(alive(p) for p in now | pids)
    finally:
        if master.poll() is None:
            master.kill()


def test_a_stop_during_start_up_starts_no_more_workers_and_returns():
    # SIGTERM right after the first of two workers started: the second is never started (or is stopped at once),
    # and the master returns 0 instead of waiting for a worker nobody signalled.
    port = free_port()
    master = subprocess.Popen([sys.executable, str(DEMO), str(port), "--term-during-start"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert master.wait(60) == 0
        exited = master.stdout.read().split()[1::2]
        assert len(exited) == 1 and not alive(int(exited[0]))
    finally:
        if master.poll() is None:
            master.kill()


def test_workers_that_keep_exiting_stop_the_launcher():
    # sys.exit(0) as the worker: each exits at once; after more than 2 n exits within a minute the status is 1
    t = time.monotonic()
    assert run_workers(sys.exit, 1, poll_s=0.05) == 1
    assert time.monotonic() - t < 60
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the caller's handlers are back


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one worker"):
        run_workers(sys.exit, 0)
    a = reuseport_socket("127.0.0.1", 0)
    try:
        b = reuseport_socket("127.0.0.1", a.getsockname()[1])  # a second socket on the same port: allowed
        b.close()
    finally:
        a.close()
