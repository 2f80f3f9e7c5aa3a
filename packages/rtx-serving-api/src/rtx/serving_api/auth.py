"""Optional bearer-token authentication (--auth-token-file) for HTTP and gRPC.

The file holds the accepted tokens, one a line (blank lines and lines starting with # are
skipped), so a token can be rotated by adding the new one before removing the old. Every route
needs `Authorization: Bearer <token>` except the health routes (/v2/health/live and
/v2/health/ready; gRPC ServerLive and ServerReady), which probes call without credentials. A
request without a valid token gets 401 (gRPC UNAUTHENTICATED) with one message whatever was wrong:
no header, another scheme, or a wrong token. Tokens are compared with hmac.compare_digest, against
every accepted token, so the time taken says nothing about how close a guess was."""
from __future__ import annotations

import hmac
import json
from pathlib import Path

import grpc

PUBLIC_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})
PUBLIC_RPCS = frozenset({"/inference.GRPCInferenceService/ServerLive", "/inference.GRPCInferenceService/ServerReady"})
MESSAGE = "unauthorized: send the header 'Authorization: Bearer <token>' with a valid token"


def read_tokens(path) -> list[bytes]:
    lines = Path(path).read_text().splitlines()
    tokens = [s.strip().encode() for s in lines if s.strip() and not s.strip().startswith("#")]
    if not tokens:
        raise ValueError(f"the auth token file {path} holds no token")
    return tokens


def authorized(header: str | bytes | None, tokens: list[bytes]) -> bool:
    if isinstance(header, str):
        header = header.encode("latin-1", "replace")
    scheme, _, given = (header or b"").partition(b" ")
    ok = scheme.lower() == b"bearer"
    given = given.strip()
    match = False
    for t in tokens:  # no early exit: every token is compared
        match |= hmac.compare_digest(given, t)
    return ok and match


class BearerAuth:
    """ASGI middleware: 401 for HTTP requests without a valid token (health routes excepted)."""

    def __init__(self, app, tokens: list[bytes]):
        self.app, self.tokens = app, tokens

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or ()).get(b"authorization")
        if authorized(header, self.tokens):
            return await self.app(scope, receive, send)
        body = json.dumps({"error": MESSAGE}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="rtx"')]})
        await send({"type": "http.response.body", "body": body})


class GrpcBearerAuth(grpc.aio.ServerInterceptor):
    """The same check on gRPC metadata; a refused call ends with UNAUTHENTICATED."""

    def __init__(self, tokens: list[bytes]):
        self.tokens = tokens

    async def intercept_service(self, continuation, details):
        if details.method in PUBLIC_RPCS:
            return await continuation(details)
        header = dict(details.invocation_metadata or ()).get("authorization")
        if authorized(header, self.tokens):
            return await continuation(details)

        async def deny(request, context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, MESSAGE)

        if details.method.endswith("/ModelStreamInfer"):
            return grpc.stream_stream_rpc_method_handler(deny)
        return grpc.unary_unary_rpc_method_handler(deny)
