"""The feature server (ASGI, Starlette): Feast's `POST /get-online-features`, `/health`, Prometheus `/metrics`.

As rtx-serving-api: every bad request gets a 4xx JSON body `{"error": ...}` naming the problem; only a fault of
the server itself may answer 5xx."""
from __future__ import annotations

import json
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def _error(status, msg):
    return JSONResponse({"error": msg}, status_code=status)


def create_app(store):
    registry = CollectorRegistry()  # per app: two apps in one process (tests) never clash
    requests = Counter("feature_server_requests_total", "requests by route and status", ["route", "status"],
                       registry=registry)
    latency = Histogram("feature_server_request_seconds", "time to answer get-online-features", registry=registry,
                        buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0))
    rows = Counter("feature_server_entity_rows_total", "entity rows looked up", registry=registry)

    async def get_online_features(request):
        t0 = time.perf_counter()
        resp = _get_online_features(store, await request.body())
        requests.labels("/get-online-features", str(resp.status_code)).inc()
        if resp.status_code == 200:
            latency.observe(time.perf_counter() - t0)
            rows.inc(resp.n_rows)
        return resp

    async def health(request):
        requests.labels("/health", "200").inc()
        return JSONResponse({"status": "ok"})

    async def metrics(request):
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    async def not_found(request, exc):
        return _error(getattr(exc, "status_code", 404), f"{request.method} {request.url.path}: "
                      f"{getattr(exc, 'detail', 'not found')}; routes: POST /get-online-features, GET /health, "
                      f"GET /metrics")

    return Starlette(routes=[Route("/get-online-features", get_online_features, methods=["POST"]),
                             Route("/health", health), Route("/metrics", metrics)],
                     exception_handlers={404: not_found, 405: not_found})


def _get_online_features(store, body):
    try:
        req = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return _error(400, f"malformed JSON: {e}")
    if not isinstance(req, dict):
        return _error(400, f"expected a JSON object with 'features' (or 'feature_service') and 'entities', "
                           f"got {type(req).__name__}")
    entities = req.get("entities")
    if not isinstance(entities, dict) or not entities or not all(isinstance(v, list) for v in entities.values()):
        return _error(400, "'entities' must be an object of join key -> list of values, e.g. {\"driver_id\": [1001]}")
    if "feature_service" in req:
        if not isinstance(req["feature_service"], str):
            return _error(400, "'feature_service' must be a string")
        try:
            features = store.get_feature_service(req["feature_service"])
        except KeyError as e:
            return _error(404, str(e.args[0]))
    else:
        features = req.get("features")
        if not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features):
            return _error(400, "'features' must be a non-empty list of 'view:feature' strings")
    try:
        r = store.get_online_features(features, entities, full_feature_names=bool(req.get("full_feature_names")))
    except KeyError as e:
        return _error(404, str(e.args[0]))
    except (TypeError, ValueError) as e:
        return _error(422 if isinstance(e, TypeError) else 400, str(e))
    resp = Response(r.to_feast_json_bytes(), media_type="application/json")  # the answer encoded once, no model
    resp.n_rows = len(next(iter(entities.values())))
    return resp


def serve(open_store, host, port, workers=1):
    """Run the feature server until SIGINT/SIGTERM. `open_store`: a picklable function returning the
    FeatureStore; with workers > 1 each worker process opens its own (SQLite and Redis connections are per
    process) and serves the same port (rtx.runtime.workers, as `rtx serve --workers`: a worker that dies is
    replaced). /metrics then counts the requests of the worker that answers it."""
    import uvicorn

    if workers <= 1:
        uvicorn.run(create_app(open_store()), host=host, port=port, log_level="warning")
        return 0
    if port == 0:
        raise ValueError("--workers needs a fixed --port, not 0: the workers must agree on it")
    from rtx.runtime.workers import run_workers

    return run_workers(_worker, workers, (open_store, host, port), name="rtx-feature-server")


def _worker(open_store, host, port, index):
    import uvicorn

    from rtx.runtime.workers import reuseport_socket

    server = uvicorn.Server(uvicorn.Config(create_app(open_store()), log_level="warning"))
    server.run(sockets=[reuseport_socket(host, port)])
