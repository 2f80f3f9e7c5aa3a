"""ServingMetrics: the Prometheus metrics of an rtx model server.

Each instance owns its metrics in its own prometheus_client.CollectorRegistry (a new private one
unless one is passed), so several apps in one process, and tests, never collide over metric
names in prometheus_client's global registry.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder

__all__ = ["ServingMetrics", "LATENCY_BUCKETS", "BATCH_SIZE_BUCKETS"]

#: request latency buckets (seconds): 0.5 ms .. 10 s, about three per decade, since a small model
#: answers in a millisecond and a large batch or a text generation takes seconds
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: batch size buckets: powers of two up to 1024 (dynamic batchers cap batches at such sizes)
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class ServingMetrics:
    """The metrics a model server exports on GET /metrics.

        m = ServingMetrics()
        m.observe_request("resnet", "1.0.0", "v2", 200, 0.0123)
        body, content_type = m.exposition()

    Attributes (prometheus_client metrics, free to use directly):
      requests     Counter   rtx_requests_total{model,version,protocol,code}
      latency      Histogram rtx_request_duration_seconds{model,version}
      batch_size   Histogram rtx_batch_size{model}
      queue_depth  Gauge     rtx_queue_depth{model}
      in_flight    Gauge     rtx_in_flight_requests
      model_load   Gauge     rtx_model_load_seconds{model,version}
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, latency_buckets=LATENCY_BUCKETS,
                 batch_size_buckets=BATCH_SIZE_BUCKETS):
        if registry is None:
            # auto_describe: a custom collector added later is checked for name clashes, as the global one is
            registry = CollectorRegistry(auto_describe=True)
        elif not isinstance(registry, CollectorRegistry):
            raise TypeError(f"ServingMetrics: registry must be a prometheus_client.CollectorRegistry or None, "
                            f"got {type(registry).__name__}")
        self.registry = registry
        self.requests = Counter("rtx_requests", "Requests answered, by model, version, protocol and HTTP status code",
                                ("model", "version", "protocol", "code"), registry=registry)
        self.latency = Histogram("rtx_request_duration_seconds", "Request latency in seconds (receipt to response)",
                                 ("model", "version"), buckets=latency_buckets, registry=registry)
        self.batch_size = Histogram("rtx_batch_size", "Rows per executed batch", ("model",),
                                    buckets=batch_size_buckets, registry=registry)
        self.queue_depth = Gauge("rtx_queue_depth", "Requests waiting for a batch", ("model",), registry=registry)
        self.in_flight = Gauge("rtx_in_flight_requests", "Requests being handled now", registry=registry)
        self.model_load = Gauge("rtx_model_load_seconds", "Seconds the last load of a model version took",
                                ("model", "version"), registry=registry)

    # ---- recording ------------------------------------------------------------------------------

    def observe_request(self, model: str, version: str, protocol: str, code: int | str, seconds: float) -> None:
        """Count one answered request and record its latency (seconds, >= 0)."""
        seconds = _seconds(seconds, "observe_request")
        code = _status_code(code)
        self.requests.labels(str(model), str(version), str(protocol), str(code)).inc()
        self.latency.labels(str(model), str(version)).observe(seconds)

    def observe_batch(self, model: str, size: int) -> None:
        """Record the number of rows in one executed batch (>= 1)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"observe_batch: size must be an int >= 1, got {size!r}")
        self.batch_size.labels(str(model)).observe(size)

    def set_queue_depth(self, model: str, depth: int) -> None:
        """Set the number of requests waiting for a batch of `model`."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"set_queue_depth: depth must be an int >= 0, got {depth!r}")
        self.queue_depth.labels(str(model)).set(depth)

    def observe_model_load(self, model: str, version: str, seconds: float) -> None:
        """Record how long loading a model version took."""
        self.model_load.labels(str(model), str(version)).set(_seconds(seconds, "observe_model_load"))

    @contextlib.contextmanager
    def track_request(self, model: str, version: str, protocol: str):
        """Context manager around handling one request: counts it in flight, and on exit records it with
        the status code set on the yielded object (`r.code = 404`; default 200, and 500 when the block
        raises).

            with metrics.track_request("resnet", "1.0.0", "v2") as r:
                ...
                r.code = 200
        """
        record = _Request()
        self.in_flight.inc()
        start = time.perf_counter()
        try:
            yield record
        except BaseException:
            if record.code == 200:
                record.code = 500
            raise
        finally:
            self.in_flight.dec()
            self.observe_request(model, version, protocol, record.code, time.perf_counter() - start)

    def remove_model(self, model: str, version: str | None = None) -> None:
        """Drop the label sets of a model (one version, or all when version is None), e.g. when it is
        unloaded, so /metrics no longer lists it."""
        model, version = str(model), None if version is None else str(version)
        for metric, labelnames in ((self.requests, ("model", "version", "protocol", "code")),
                                   (self.latency, ("model", "version")), (self.model_load, ("model", "version")),
                                   (self.batch_size, ("model",)), (self.queue_depth, ("model",))):
            if version is not None and "version" not in labelnames:
                continue  # per-model metrics stay while another version may still be served
            present = {tuple(s.labels[n] for n in labelnames) for family in metric.collect() for s in family.samples}
            for values in present:
                if values[0] == model and (version is None or values[1] == version):
                    metric.remove(*values)

    # ---- exposition -----------------------------------------------------------------------------

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """(body, content type) for GET /metrics: Prometheus' text format 0.0.4, or OpenMetrics when the
        request's Accept header (pass it as `accept`) asks for application/openmetrics-text."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


class _Request:
    __slots__ = ("code",)

    def __init__(self):
        self.code = 200


def _status_code(code) -> int:
    # int(code) alone took 200.7 as 200 and True as 1; a label value must be a real status code.
    if isinstance(code, str) and code.strip().isascii() and code.strip().isdigit():
        code = int(code)
    if isinstance(code, bool) or not isinstance(code, numbers.Integral) or not 100 <= code <= 599:
        raise ValueError(f"observe_request: code must be an HTTP status code (an int from 100 to 599, such "
                         f"as 200), got {code!r}")
    return int(code)


def _seconds(seconds, where) -> float:
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: seconds must be a number, got {type(seconds).__name__}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: seconds must be finite and >= 0, got {seconds!r}")
    return value
