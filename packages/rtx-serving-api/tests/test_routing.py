"""A/B traffic split (ratios, stickiness) and hot promotion under load."""
import asyncio
import threading
import time
from collections import Counter

import httpx
import numpy as np
import pytest

from rtx.hub import Registry
from rtx.serving_api import RouteConfig, ServeConfig, create_app
from rtx.serving_api.routing import Split, sticky_point
from rtx.serving_api.testing import ServerThread

INFER = "/v2/models/digits/infer"


def test_split_maps_points_to_cumulative_weights():
    s = Split({"a": 3, "b": 1, "c": 0})
    assert s.versions == ["a", "b"] and s.weights == {"a": 0.75, "b": 0.25}
    assert [s.pick(p) for p in (0.0, 0.74, 0.75, 0.999999)] == ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="positive weight"):
        Split({"a": 0})


def test_sticky_points_are_stable_and_uniform():
    assert sticky_point("alice", "digits") == sticky_point("alice", "digits")
    assert sticky_point("alice", "digits") != sticky_point("alice", "other")
    points = np.array([sticky_point(f"client-{i}", "digits") for i in range(20000)])
    # uniform on [0, 1): every tenth holds 10 % (+- 5 standard deviations of a binomial count)
    counts = np.histogram(points, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - 2000) < 5 * np.sqrt(20000 * 0.1 * 0.9)), counts


async def _versions(url, n, headers_of, body):
    sem = asyncio.Semaphore(16)

    async def one(c, i):
        async with sem:
            r = await c.post(INFER, json=body, headers=headers_of(i))
            assert r.status_code == 200, r.text
            return r.json()["model_version"]

    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        return await asyncio.gather(*(one(c, i) for i in range(n)))


def test_ab_split_ratio_and_stickiness(registry, h):
    cfg = ServeConfig(routes=[RouteConfig(model="digits", split={"1.0.0": 80, "2.0.0": 20})])
    body = h.v2_body("x", h.X[:1])
    with ServerThread(create_app(cfg, registry=registry)) as url:
        n = 400
        sd = np.sqrt(n * 0.2 * 0.8)
        by_client = Counter(asyncio.run(_versions(url, n, lambda i: {"x-client-id": f"user-{i}"}, body)))
        assert abs(by_client["2.0.0"] - 0.2 * n) < 4 * sd, by_client
        anonymous = Counter(asyncio.run(_versions(url, n, lambda i: {}, body)))
        assert abs(anonymous["2.0.0"] - 0.2 * n) < 4 * sd, anonymous
        # sticky: a client keeps its version
        sticky = {}
        for i in range(10):
            seen = set(asyncio.run(_versions(url, 6, lambda _, i=i: {"x-client-id": f"sticky-{i}"}, body)))
            assert len(seen) == 1, (i, seen)
            sticky[i] = seen.pop()
        # a named version bypasses the split
        i = next(i for i, v in sticky.items() if v == "1.0.0")
        r = httpx.post(url + "/v2/models/digits/versions/2.0.0/infer", json=body,
                       headers={"x-client-id": f"sticky-{i}"})
        assert r.json()["model_version"] == "2.0.0"
        meta = httpx.get(url + "/v2/models/digits").json()
        assert meta["split"] == {"1.0.0": 0.8, "2.0.0": 0.2}


def test_hot_promotion_under_load_drops_nothing(tmp_path, h):
    """Clients keep sending while 2.0.0 is registered and promoted (1.0.0 archived): every
    request succeeds with the right answer for the version that served it, requests that start
    after the switch all get 2.0.0, and 1.0.0 is unloaded only after its last request."""
    reg = Registry(tmp_path / "reg")
    m1, m2 = h.digits_model(11), h.digits_model(12)
    reg.register(m1, "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    refs = {"1.0.0": h.eager(m1, h.X[:1])[0], "2.0.0": h.eager(m2, h.X[:1])[0]}
    app = create_app(ServeConfig(poll_interval_s=0.05), registry=reg, loader=h.slow_loader(0.01))
    body = h.v2_body("x", h.X[:1])
    records, stop = [], threading.Event()

    async def client(c):
        while not stop.is_set():
            t0 = time.monotonic()
            r = await c.post(INFER, json=body)
            doc = r.json()
            records.append((t0, time.monotonic(), r.status_code, doc.get("model_version"),
                            doc.get("outputs", [{}])[0].get("data"), doc.get("error")))

    async def load(url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            await asyncio.gather(*(client(c) for _ in range(8)))

    with ServerThread(app) as url:
        old = app.state.manager.table["digits"].versions["1.0.0"]
        t = threading.Thread(target=lambda: asyncio.run(load(url)))
        t.start()
        time.sleep(0.7)
        reg.register(m2, "digits", "2.0.0", example_inputs=h.X[:1])  # loaded in the background, not yet default
        time.sleep(0.7)
        reg.promote("digits", "2.0.0", "production", archive_existing=True)
        deadline = time.monotonic() + 60
        while app.state.manager.table["digits"].default != "2.0.0":  # however slow the machine is
            assert time.monotonic() < deadline and t.is_alive(), "2.0.0 never became the default"
            time.sleep(0.05)
        time.sleep(0.5)
        stop.set()
        t.join(30)
        assert old.retired and old.closed and old.in_flight == 0
        assert set(app.state.manager.table["digits"].versions) == {"2.0.0"}

    assert records and all(r[2] == 200 for r in records), [r for r in records if r[2] != 200][:3]
    for _, _, _, version, data, _ in records:
        np.testing.assert_allclose(data, refs[version], rtol=1e-5, atol=1e-6)
    versions = [r[3] for r in records]
    assert "1.0.0" in versions and "2.0.0" in versions
    switched = min(end for start, end, _, v, _, _ in records if v == "2.0.0")
    assert all(v == "2.0.0" for start, _, _, v, _, _ in records if start > switched)


def test_registry_changes_are_picked_up_without_restart(tmp_path, h):
    reg = Registry(tmp_path / "reg")
    reg.register(h.digits_model(1), "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    app = create_app(ServeConfig(poll_interval_s=0.05), registry=reg)
    with ServerThread(app) as url:
        assert httpx.get(url + "/v2/models/tiny").status_code == 404
        reg.register(h.digits_model(3), "tiny", "0.1.0", example_inputs=h.X[:1])
        deadline = time.monotonic() + 20
        while httpx.get(url + "/v2/models/tiny").status_code != 200:
            assert time.monotonic() < deadline, "the new model never appeared"
            time.sleep(0.05)
        reg.remove("tiny", "0.1.0")
        while httpx.get(url + "/v2/models/tiny").status_code != 404:
            assert time.monotonic() < deadline, "the removed model never went away"
            time.sleep(0.05)


def test_a_version_that_fails_to_load_is_reported_and_the_rest_is_served(tmp_path, h):
    reg = Registry(tmp_path / "reg")
    reg.register(h.digits_model(1), "digits", "1.0.0", example_inputs=h.X[:1], stage="production")
    bad = reg.register(h.digits_model(2), "broken", "1.0.0", example_inputs=h.X[:1], stage="production")
    with open(bad.artifact, "r+b") as f:  # tampered after registration: the checksum no longer matches
        f.write(b"\0\0\0\0")
    with ServerThread(create_app(registry=reg)) as url:
        assert httpx.post(url + INFER, json=h.v2_body("x", h.X[:1])).status_code == 200
        r = httpx.post(url + "/v2/models/broken/infer", json=h.v2_body("x", h.X[:1]))
        assert r.status_code == 404 and "IntegrityError" in r.json()["error"] and "sha256" in r.json()["error"]
        index = {(e["name"], e["state"]) for e in httpx.get(url + "/v2/repository/index").json()}
        assert index == {("digits", "READY"), ("broken", "UNAVAILABLE")}
