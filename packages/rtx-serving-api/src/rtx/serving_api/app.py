"""create_app: the Starlette application. Routes speak KServe v2 (Open Inference Protocol) and
TF-Serving / KServe v1; every error is JSON {"error": "..."}; every inference request passes the
same guard (concurrency, timeout, metrics, model release)."""
from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from rtx.serving_api.config import ServeConfig
from rtx.serving_api.errors import ServeError, bad_request, error_response
from rtx.serving_api.generate import parse_generate
from rtx.serving_api.limits import (
    BINARY_HEADER,
    OCTET,
    READING_BODY,
    ConcurrencyGate,
    binary_header_size,
    content_kind,
    read_body,
)
from rtx.serving_api.models import load_version
from rtx.serving_api.openapi import docs_html, openapi_document
from rtx.serving_api.protocol import (
    npy_bytes,
    parse_json,
    parse_npy,
    parse_v1_request,
    parse_v2_request,
    v1_response,
    v2_response,
)
from rtx.serving_api.repository import ModelManager

log = logging.getLogger("rtx.serving_api")

# The protocol extensions this server speaks (GET /v2 and gRPC ServerMetadata list them).
EXTENSIONS = ["binary_tensor_data", "model_repository", "statistics"]


class JSON(Response):
    """JSON with NaN/Infinity written as TF-Serving writes them (a model may output them; strict
    JSON cannot say them, and refusing the response would turn a valid answer into a 500)."""
    media_type = "application/json"

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=True, separators=(",", ":")).encode()


def _drain(source) -> tuple[str, str]:
    """The whole text and the finish reason (the iterator's return value, as sse_stream reads it)."""
    it = iter(source)
    pieces = []
    while True:
        try:
            pieces.append(next(it))
        except StopIteration as end:
            reason = end.value if end.value is not None else getattr(it, "finish_reason", None)
            return "".join(pieces), reason or "stop"


class _After:
    """Sends `response`, then calls `done` (even when the client went away): a streamed answer
    keeps its model and its concurrency slot until the last byte."""

    def __init__(self, response, done):
        self.response, self.done = response, done
        self.status_code = getattr(response, "status_code", 200)

    async def __call__(self, scope, receive, send):
        try:
            await self.response(scope, receive, send)
        finally:
            self.done()


class _Ctx:
    __slots__ = ("model", "label")

    def __init__(self):
        self.model = None      # the acquired ServedModel, released after the response
        self.label = ("", "")  # (model, version) for the metrics


def create_app(config: ServeConfig | None = None, *, registry=None, loader=load_version) -> Starlette:
    """The ASGI app serving every model version of `registry` (an rtx.hub.Registry, a registry
    folder, or None: config.registry, else rtx.hub's default) that is not archived.

    loader(model_version, batching_config) -> ServedModel turns a registry entry into a served
    model (default: rtx.inference sessions and rtx.streaming text generators)."""
    from rtx.monitoring import ServingMetrics
    config = ServeConfig() if config is None else config
    if registry is None or isinstance(registry, (str, Path)):
        from rtx.hub import Registry
        registry = Registry(registry if registry is not None else config.registry)
    if loader is load_version:
        from rtx.serving_api.backends import choose
        choose(config.backend)  # refuse --backend onnxruntime without onnxruntime at once, not per model
        loader = functools.partial(load_version, backend=config.backend)
    tokens = None
    if config.auth_token_file is not None:
        from rtx.serving_api.auth import read_tokens
        tokens = read_tokens(config.auth_token_file)  # read once: a missing file stops the start, not a request
    metrics = ServingMetrics()
    manager = ModelManager(registry, config, metrics, loader)
    gate = ConcurrencyGate(config.max_concurrency, config.retry_after_s)

    def guarded(protocol: str, handler):
        """Concurrency gate, timeout, error mapping, metrics and model release around `handler`."""
        async def endpoint(request: Request):
            start = time.perf_counter()
            ctx = _Ctx()
            entered = False

            def done(code: int):
                if ctx.model is not None:
                    ctx.model.release()
                if entered:
                    gate.exit()
                    metrics.in_flight.dec()
                metrics.observe_request(ctx.label[0], ctx.label[1], protocol, code, time.perf_counter() - start)

            try:
                gate.enter()
                entered = True
                metrics.in_flight.inc()
                async with asyncio.timeout(config.request_timeout_s):  # no extra task, unlike wait_for
                    response = await handler(request, ctx)
            except ServeError as e:
                response = error_response(e.status, e.message, e.headers)
            except TimeoutError:
                if request.scope.get(READING_BODY):
                    response = error_response(408, "the request body did not arrive within "
                                                   f"{config.request_timeout_s} s "
                                                   "(request_timeout_s): is Content-Length larger than the body?")
                else:
                    response = error_response(504, f"the request took longer than {config.request_timeout_s} s "
                                                   "(request_timeout_s) and was abandoned")
            except Exception:
                log.exception("unexpected error handling %s %s", request.method, request.url.path)
                response = error_response(500, "internal server error (see the server log)")
            code = response.status_code
            return _After(response, lambda: done(code))
        return endpoint

    def resolve(request: Request, ctx: _Ctx, name: str, version: str | None):
        model = manager.resolve(name, version, request.headers.get(config.sticky_header))
        ctx.model = model
        ctx.label = (model.name, model.version)
        return model

    def tensor_model(model):
        if model.kind != "tensor":
            raise bad_request(f"model {model.name}:{model.version} is a text generator; "
                              f"use POST /v1/models/{model.name}:generate")
        return model

    # ---- inference -----------------------------------------------------------------------------------

    async def tensor_request(request: Request, ctx: _Ctx, binary: bool = False):
        """The shared start of v2 /infer and v1 :predict: (model, body, headers, reply, kind), where
        reply is the whole answer to an .npy body (the protocols differ only in their JSON forms), else None."""
        kind = content_kind(request, binary=binary)
        model = tensor_model(resolve(request, ctx, request.path_params["name"], request.path_params.get("version")))
        body = await read_body(request, config.max_body_bytes)
        headers = {"x-model-version": model.version}
        if kind != "npy":
            return model, body, headers, None, kind
        names, outs = await model.infer(parse_npy(body, model.signature), None)
        data, media = npy_bytes(names, outs)
        return model, body, headers, Response(data, media_type=media, headers=headers), kind

    async def v2_infer(request: Request, ctx: _Ctx):
        model, body, headers, reply, kind = await tensor_request(request, ctx, binary=True)
        if reply is not None:
            return reply
        raw = None
        if kind == "binary":
            size = binary_header_size(request.headers[BINARY_HEADER], len(body))
            body, raw = body[:size], memoryview(body)[size:]
        feed, out_names, rid, binary = parse_v2_request(parse_json(body), model.signature, raw)
        names, outs = await model.infer(feed, out_names)
        doc, blobs = v2_response(model.name, model.version, names, outs, rid, binary)
        if not blobs:
            return JSON(doc, headers=headers)
        head = JSON(doc).body
        headers[BINARY_HEADER] = str(len(head))
        return Response(b"".join([head, *blobs]), media_type=OCTET, headers=headers)

    async def v1_verb(request: Request, ctx: _Ctx):
        verb = request.path_params["verb"]
        if verb == "predict":
            return await v1_predict(request, ctx)
        if verb == "generate":
            return await v1_generate(request, ctx)
        raise ServeError(404, f"unknown method ':{verb}'; this server supports :predict and :generate")

    async def v1_predict(request: Request, ctx: _Ctx):
        model, body, headers, reply, _ = await tensor_request(request, ctx)
        if reply is not None:
            return reply
        feed, fmt = parse_v1_request(parse_json(body), model.signature)
        names, outs = await model.infer(feed, None)
        return JSON(v1_response(names, outs, fmt), headers=headers)

    async def v1_generate(request: Request, ctx: _Ctx):
        content_kind(request, npy=False)
        model = resolve(request, ctx, request.path_params["name"], request.path_params.get("version"))
        if model.kind != "text-generator":
            raise bad_request(f"model {model.name}:{model.version} is not a text generator; "
                              f"use :predict or /v2/models/{model.name}/infer")
        prompt, stream, params = parse_generate(parse_json(await read_body(request, config.max_body_bytes)),
                                                config.max_new_tokens)
        generator = model.generator
        headers = {"x-model-version": model.version}
        try:
            # TextGenerator's protocol: parameters are checked here, before any text is computed
            source = generator.stream_text(prompt, **params)
        except (ValueError, TypeError) as e:
            raise bad_request(f"model {model.name}:{model.version} refused the request: {e}") from None
        if stream:
            from rtx.streaming import sse_stream
            response = sse_stream(request, source)
            response.headers.update(headers)
            return response
        text, reason = await asyncio.to_thread(_drain, source)
        return JSON({"model_name": model.name, "model_version": model.version, "text": text,
                     "finish_reason": reason}, headers=headers)

    # ---- metadata and health ----------------------------------------------------------------------------

    async def v2_model_metadata(request: Request):
        name, version = request.path_params["name"], request.path_params.get("version")
        entry = manager.entry(name)
        m = manager.resolve(name, version or entry.default)
        m.release()
        doc = {"name": name, "versions": entry.available(), "platform": "rtx", "default_version": entry.default,
               "version": m.version, "stage": m.stage, "kind": m.kind, "backend": m.backend}
        if entry.split is not None:
            doc["split"] = entry.split.weights
        if m.signature is not None:
            doc["inputs"] = [s.to_json() for s in m.signature.inputs]
            doc["outputs"] = [s.to_json() for s in m.signature.outputs]
        return JSON(doc)

    async def v2_model_ready(request: Request):
        name, version = request.path_params["name"], request.path_params.get("version")
        m = manager.resolve(name, version or manager.entry(name).default)
        m.release()
        return JSON({"name": name, "version": m.version, "ready": True})

    async def v2_model_stats(request: Request):
        """Triton's statistics extension, with rtx.inference's own figures: the session's run
        latency and the batcher's batch sizes, queue depth and submit-to-result latency."""
        name, version = request.path_params["name"], request.path_params.get("version")
        entry = manager.entry(name)
        if version is not None:
            manager.resolve(name, version).release()  # 404 for an unknown version
        stats = []
        for v in ([version] if version else entry.available()):
            m = entry.versions[v]
            doc = {"name": name, "version": v, "in_flight": m.in_flight}
            if m.session is not None and hasattr(m.session, "stats"):
                doc["inference_stats"] = m.session.stats()
            if m.batcher is not None:
                doc["batch_stats"] = m.batcher.stats()
            stats.append(doc)
        return JSON({"model_stats": stats})

    async def v1_model_status(request: Request):
        name, version = request.path_params["name"], request.path_params.get("version")
        if ":" in name or ":" in (version or ""):  # a POST-only verb (:predict) reached with GET
            raise ServeError(405, f"method {request.method} is not allowed on {request.url.path}; allowed: POST",
                             {"Allow": "POST"})
        entry = manager.entry(name)
        versions = [version] if version else entry.available()
        for v in versions:
            manager.resolve(name, v).release()  # 404 for an unknown version
        return JSON({"model_version_status": [{"version": v, "state": "AVAILABLE",
                                               "status": {"error_code": "OK", "error_message": ""}}
                                              for v in versions]})

    async def repository_index(request: Request):
        loaded = [{"name": m.name, "version": m.version, "state": "READY", "stage": m.stage}
                  for m in manager.models()]
        failed = [{"name": n, "version": v, "state": "UNAVAILABLE", "reason": why}
                  for (n, v), why in manager.failures.items()]
        return JSON(loaded + failed)

    async def live(request: Request):
        return JSON({"live": True})

    async def ready(request: Request):
        return JSON({"ready": manager.ready}, status_code=200 if manager.ready else 503)

    async def server_metadata(request: Request):
        from rtx.serving_api import __version__
        return JSON({"name": "rtx", "version": __version__, "extensions": EXTENSIONS})

    async def prometheus(request: Request):
        for m in manager.models():
            if m.batcher is not None:
                stats = m.batcher.stats()
                metrics.set_queue_depth(m.name, int(stats.get("queue_depth", 0)))
                # the batcher counts batches by size; the histogram gets what happened since the last scrape
                for size, count in m.batch_sizes_since_last_look(stats.get("batch_sizes", {})).items():
                    for _ in range(count):
                        metrics.observe_batch(m.name, int(size))
        from rtx.serving_api.workers import multiprocess_exposition
        body, media = multiprocess_exposition(request.headers.get("accept")) or \
            metrics.exposition(request.headers.get("accept"))
        return Response(body, headers={"Content-Type": media})

    async def openapi(request: Request):
        return JSON(openapi_document())

    async def docs(request: Request):
        return HTMLResponse(docs_html(openapi_document()))

    def plain(handler):
        """Metadata routes: client errors as JSON, nothing else."""
        async def endpoint(request: Request):
            try:
                return await handler(request)
            except ServeError as e:
                return error_response(e.status, e.message, e.headers)
        return endpoint

    routes = [
        # the hot path first: Starlette tries routes in order (no route shadows another)
        Route("/v2/models/{name}/infer", guarded("v2", v2_infer), methods=["POST"]),
        Route("/v2/models/{name}/versions/{version}/infer", guarded("v2", v2_infer), methods=["POST"]),
        Route("/v2/health/live", plain(live), methods=["GET"]),
        Route("/v2/health/ready", plain(ready), methods=["GET"]),
        Route("/v2", plain(server_metadata), methods=["GET"]),
        Route("/v2/repository/index", plain(repository_index), methods=["POST", "GET"]),
        Route("/v2/models/{name}", plain(v2_model_metadata), methods=["GET"]),
        Route("/v2/models/{name}/ready", plain(v2_model_ready), methods=["GET"]),
        Route("/v2/models/{name}/versions/{version}", plain(v2_model_metadata), methods=["GET"]),
        Route("/v2/models/{name}/versions/{version}/ready", plain(v2_model_ready), methods=["GET"]),
        Route("/v2/models/{name}/stats", plain(v2_model_stats), methods=["GET"]),
        Route("/v2/models/{name}/versions/{version}/stats", plain(v2_model_stats), methods=["GET"]),
        Route("/v1/models/{name}:{verb}", guarded("v1", v1_verb), methods=["POST"]),
        Route("/v1/models/{name}/versions/{version}:{verb}", guarded("v1", v1_verb), methods=["POST"]),
        Route("/v1/models/{name}", plain(v1_model_status), methods=["GET"]),
        Route("/v1/models/{name}/versions/{version}", plain(v1_model_status), methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
    ]

    async def http_error(request: Request, exc: HTTPException):
        # The router's own answers (no such route, wrong method) in the same JSON shape.
        if exc.status_code == 404:
            msg = f"no route {request.method} {request.url.path}; see GET /openapi.json for the routes"
        elif exc.status_code == 405:
            msg = f"method {request.method} is not allowed on {request.url.path}; allowed: " \
                  f"{(exc.headers or {}).get('Allow', '?')}"
        else:
            msg = exc.detail
        return error_response(exc.status_code, msg, exc.headers)

    async def server_error(request: Request, exc: Exception):
        log.error("unexpected error handling %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal server error (see the server log)")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await manager.refresh(force=True)
        manager.start()
        grpc_server = None
        try:
            if config.grpc_port is not None:
                from rtx.serving_api.grpc_server import start_grpc
                grpc_server, app.state.grpc_port = await start_grpc(app.state, config.host, config.grpc_port,
                                                                    tokens=tokens)
                log.info("gRPC (inference.GRPCInferenceService) on %s:%d", config.host, app.state.grpc_port)
            yield
        finally:
            if grpc_server is not None:
                # HTTP has drained (uvicorn runs the lifespan's end after its connections close);
                # gRPC refuses new calls now and lets the running ones finish.
                await grpc_server.stop(grace=config.shutdown_timeout_s)
            await manager.stop()

    middleware = []
    if tokens is not None:
        from starlette.middleware import Middleware

        from rtx.serving_api.auth import BearerAuth
        middleware.append(Middleware(BearerAuth, tokens=tokens))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.config, app.state.manager, app.state.metrics, app.state.gate = config, manager, metrics, gate
    app.state.grpc_port = None
    return app
