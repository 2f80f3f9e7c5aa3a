"""Errors the server answers with: every one is JSON `{"error": "..."}` (KServe v2's shape)."""
from __future__ import annotations

from starlette.responses import JSONResponse


class ServeError(Exception):
    """A request the server refuses: `status` (4xx/5xx), a message saying what was wrong, and
    optional response headers (Allow, Retry-After)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def error_response(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def bad_request(message: str) -> ServeError:
    return ServeError(400, message)
