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


def content_kind(request: Request, *, npy: bool = True) -> str:
    """"json" or "npy" from the Content-Type header (absent: JSON)."""
    raw = request.headers.get("content-type", "")
    base = raw.split(";", 1)[0].strip().lower()
    if base in ("",) + JSON_TYPES or base.endswith("+json"):
        return "json"
    if npy and base == NPY:
        return "npy"
    accepted = "application/json" + (f" or {NPY}" if npy else "")
    raise ServeError(415, f"unsupported content type {raw!r}; send {accepted}")


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
