"""Request limits: body size (413), content type (415), concurrency (503 + Retry-After)."""
from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from rtx.serving_api.errors import ServeError
from rtx.serving_api.protocol import NPY

# application/x-www-form-urlencoded is what `curl -d` sends unless told otherwise, and the
# TF-Serving and Triton documentation's curl examples rely on it (those servers ignore the
# header): the body is read as JSON, so those commands work unchanged.
READING_BODY = "rtx.reading_body"  # scope key: True while read_body waits for the body
JSON_TYPES = ("application/json", "application/x-www-form-urlencoded")


BINARY_HEADER = "inference-header-content-length"  # the Open Inference Protocol's binary tensor data extension
OCTET = "application/octet-stream"


def content_kind(request: Request, *, npy: bool = True, binary: bool = False) -> str:
    """"json", "npy" or "binary" (a JSON header then raw tensors, announced by the
    Inference-Header-Content-Length header) from the request headers (no Content-Type: JSON)."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity":
        raise ServeError(415, f"unsupported Content-Encoding {encoding!r}; send the body uncompressed")
    raw = request.headers.get("content-type", "")
    base = raw.split(";", 1)[0].strip().lower()
    if BINARY_HEADER in request.headers:
        if not binary:
            raise ServeError(415, "the binary tensor data extension (Inference-Header-Content-Length) is "
                                  "accepted on /v2/models/{name}/infer only")
        if base in ("", OCTET) + JSON_TYPES:
            return "binary"
        raise ServeError(415, f"unsupported content type {raw!r} for a binary tensor body; send {OCTET} or none")
    if base in ("",) + JSON_TYPES or base.endswith("+json"):
        return "json"
    if npy and base == NPY:
        return "npy"
    accepted = "application/json" + (f" or {NPY}" if npy else "")
    raise ServeError(415, f"unsupported content type {raw!r}; send {accepted}")


def binary_header_size(value: str, body_size: int) -> int:
    """The Inference-Header-Content-Length value: the JSON header's size, within the body."""
    try:
        n = int(value.strip())
    except ValueError:
        raise ServeError(400, f"invalid Inference-Header-Content-Length header {value!r}; expected the size "
                              "of the JSON header in bytes") from None
    if not 0 < n <= body_size:
        raise ServeError(400, f"Inference-Header-Content-Length is {n} but the body has {body_size} bytes; "
                              "the JSON header must fit in the body")
    return n


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refusing more than `limit` bytes: by the declared Content-Length before
    reading anything, and by counting what arrives (chunked bodies have no length)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            n = int(declared)
        except ValueError:
            raise ServeError(400, f"invalid Content-Length header {declared!r}") from None
        if n > limit:
            raise ServeError(413, f"request body of {n} bytes exceeds the limit of {limit} bytes (max_body_bytes)")
    chunks, size = [], 0
    # A client that promises more bytes than it sends keeps us waiting until request_timeout_s:
    # the flag lets the timeout answer 408 (the client's fault), not 504.
    request.scope[READING_BODY] = True
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ServeError(413, f"request body exceeds the limit of {limit} bytes (max_body_bytes)")
            chunks.append(chunk)
    except ClientDisconnect:  # a client mistake (or a broken chunked encoding), not a server fault
        raise ServeError(400, f"the client disconnected after sending {size} bytes of the body") from None
    request.scope[READING_BODY] = False
    return b"".join(chunks)


class ConcurrencyGate:
    """Counts requests in flight; past `limit` a request is refused at once with 503, so that an
    overloaded server answers quickly instead of queueing without bound."""

    def __init__(self, limit: int, retry_after_s: int):
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.in_flight = 0

    def enter(self) -> None:
        if self.in_flight >= self.limit:
            raise ServeError(503, f"server busy: {self.in_flight} requests in flight, the limit is {self.limit} "
                                  "(max_concurrency); retry later", headers={"Retry-After": str(self.retry_after_s)})
        self.in_flight += 1

    def exit(self) -> None:
        self.in_flight -= 1
