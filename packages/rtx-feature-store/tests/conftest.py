import shutil
import socket
import subprocess
import time

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    """A real redis-server on a free loopback port for the session (skipped only if the binary is absent)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(params=["sqlite", "redis"])
def online_spec(request, tmp_path):
    """The same tests against both online stores; each Redis test gets a fresh database (FLUSHDB)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'online.db'}"
    url = request.getfixturevalue("redis_url")
    import redis
    redis.Redis.from_url(url).flushdb()
    return url
