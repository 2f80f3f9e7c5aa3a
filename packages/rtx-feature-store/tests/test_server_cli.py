"""The CLI end to end on a TOML repository, and the feature server over real HTTP under bad input."""
import datetime as dt
import json
import socket
import subprocess
import sys
import time

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rtx.feature_store import FeatureStore

T0 = dt.datetime(2024, 1, 1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

TOML = """
[[entities]]
name = "driver"
join_keys = ["driver_id"]

[[feature_views]]
name = "driver_stats"
entities = ["driver"]
ttl_seconds = 86400
schema = [{name = "conv_rate", dtype = "Float64"}, {name = "trips", dtype = "Int64"}]
source = {path = "data/stats.parquet", timestamp_field = "ts"}

[[feature_services]]
name = "ranker"
features = ["driver_stats:conv_rate"]
"""


def rtx(*args):
    code = "import sys; from rtx.runtime.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "feature-store", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"driver_id": [1, 2, 1], "ts": [T0, T0, T0 + dt.timedelta(hours=1)],
                             "conv_rate": [0.1, 0.2, 0.3], "trips": [5, 6, 7]}), tmp_path / "data" / "stats.parquet")
    (tmp_path / "features.toml").write_text(TOML)
    return tmp_path


def test_cli_apply_materialize_list(repo):
    r = rtx("apply", "--repo", str(repo))
    assert r.returncode == 0, r.stderr
    assert "applied feature_view driver_stats (version 1)" in r.stdout
    r = rtx("materialize", "2023-12-31T00:00:00", "2024-01-02T00:00:00", "--repo", str(repo))
    assert r.returncode == 0 and "driver_stats: 2 entities" in r.stdout, r.stderr
    r = rtx("list", "--repo", str(repo))
    assert "feature_service ranker v1" in r.stdout
    got = FeatureStore(repo).get_online_features(["driver_stats:conv_rate"], {"driver_id": [1, 2]},
                                                 now=T0 + dt.timedelta(hours=2))
    assert got.to_dict()["conv_rate"] == [0.3, 0.2]
    r = rtx("materialize", "2024-01-02", "2024-01-01", "--repo", str(repo))
    assert r.returncode == 1 and "must be after start" in r.stderr
    assert rtx().returncode == 2


def start_server(repo, *extra, tries):
    """`rtx feature-store serve` on a free port, waited for until /health answers (tries x 50 ms at most);
    (process, base URL). The caller terminates it."""
    port = free_port()
    code = "import sys; from rtx.runtime.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "feature-store", "serve", "--repo", str(repo), "--port",
                             str(port), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _ in range(tries):
        try:
            if httpx.get(base + "/health").status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.terminate()
    pytest.fail(proc.stderr.read1().decode())


def test_server_bad_input_never_5xx(repo):
    # the server answers at the real "now": values that never expire (ttl 0), so the 2024 rows are PRESENT
    (repo / "features.toml").write_text(TOML.replace("ttl_seconds = 86400", "ttl_seconds = 0"))
    assert rtx("apply", "--repo", str(repo)).returncode == 0
    assert rtx("materialize-incremental", "2030-01-01", "--repo", str(repo)).returncode == 0
    proc, base = start_server(repo, tries=200)
    try:
        ok = httpx.post(base + "/get-online-features",
                        json={"features": ["driver_stats:conv_rate", "driver_stats:trips"],
                              "entities": {"driver_id": [1, 3]}})
        assert ok.status_code == 200
        body = ok.json()
        assert body["metadata"]["feature_names"] == ["driver_id", "conv_rate", "trips"]
        assert body["results"][1]["values"] == [0.3, None]
        assert body["results"][1]["statuses"][1] == "NOT_FOUND"
        svc = httpx.post(base + "/get-online-features",
                         json={"feature_service": "ranker", "entities": {"driver_id": [2]}})
        assert svc.status_code == 200 and svc.json()["results"][1]["values"] == [0.2]
        bad = [
            (b"{not json", 400, "malformed JSON"),
            (b"[1, 2]", 400, "JSON object"),
            (json.dumps({"features": ["driver_stats:nope"], "entities": {"driver_id": [1]}}), 404, "no feature 'nope'"),
            (json.dumps({"features": ["ghost:x"], "entities": {"driver_id": [1]}}), 404, "unknown feature view"),
            (json.dumps({"features": ["driver_stats:trips"], "entities": {"driver_id": ["one"]}}), 422,
             "expects an integer"),
            (json.dumps({"features": ["driver_stats:trips"], "entities": {"rider_id": [1]}}), 400, "lacks join key"),
            (json.dumps({"features": ["driver_stats:trips"], "entities": {"driver_id": [1], "x": [1, 2]}}), 400,
             "differ in length"),
            (json.dumps({"features": "driver_stats:trips", "entities": {"driver_id": [1]}}), 400, "'features'"),
            (json.dumps({"feature_service": "nobody", "entities": {"driver_id": [1]}}), 404, "no feature service"),
            (json.dumps({"features": ["driver_stats:trips"]}), 400, "'entities'"),
        ]
        for body, status, words in bad:
            r = httpx.post(base + "/get-online-features", content=body)
            assert r.status_code == status, (body, r.status_code, r.text)
            assert words in r.json()["error"], (body, r.text)
        assert httpx.get(base + "/nowhere").status_code == 404
        assert httpx.get(base + "/get-online-features").status_code == 405
        m = httpx.get(base + "/metrics").text
        assert 'feature_server_requests_total{route="/get-online-features",status="200"} 2.0' in m
        assert 'status="404"' in m and 'status="422"' in m
    finally:
        proc.terminate()
        proc.wait(10)


def test_server_workers_share_the_port(repo):
    # --workers 2: two processes bound to one port (SO_REUSEPORT); every connection is answered, by either, with
    # the in-process answer; SIGTERM stops both and the command exits 0.
    (repo / "features.toml").write_text(TOML.replace("ttl_seconds = 86400", "ttl_seconds = 0"))
    assert rtx("apply", "--repo", str(repo)).returncode == 0
    assert rtx("materialize-incremental", "2030-01-01", "--repo", str(repo)).returncode == 0
    body = {"features": ["driver_stats:conv_rate", "driver_stats:trips"], "entities": {"driver_id": [1, 3, 2]}}
    want = FeatureStore(repo).get_online_features(body["features"], body["entities"]).to_feast_json()
    proc, base = start_server(repo, "--workers", "2", tries=400)
    try:
        for _ in range(20):  # a new connection each time: the kernel picks a worker per connection
            r = httpx.post(base + "/get-online-features", json=body)
            assert r.status_code == 200 and r.json() == want
        # -ww: no width limit (ps cuts a non-terminal line at 80 columns, and a long checkout path pushed the
        # marker past it on CI).
        children = subprocess.run(["ps", "-ww", "--ppid", str(proc.pid), "-o", "args="], capture_output=True,
                                  text=True)
        assert children.stdout.count("--multiprocessing-fork") == 2, children.stdout
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, proc.stderr.read().decode()
