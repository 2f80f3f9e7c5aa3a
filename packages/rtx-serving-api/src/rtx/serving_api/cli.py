"""`rtx serve`: the model server on the command line."""
from __future__ import annotations

import argparse
import sys


def serve_command(argv: list[str]) -> int:
    """Serve the models of a registry over HTTP (KServe v2, TF-Serving v1, Prometheus /metrics)."""
    from rtx.serving_api.config import ServeConfig
    from rtx.serving_api.server import serve
    p = argparse.ArgumentParser(prog="rtx serve", description=serve_command.__doc__.splitlines()[0],
                                epilog="Every setting can also come from --config (TOML) or RTX_SERVE_<NAME> "
                                       "environment variables; flags win.")
    p.add_argument("--config", help="a TOML file of ServeConfig settings")
    p.add_argument("--registry", help="the model registry folder (default: rtx.hub's)")
    p.add_argument("--host", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="TCP port (default 8000)")
    p.add_argument("--grpc-port", type=int, help="also serve gRPC (inference.GRPCInferenceService) on this port")
    p.add_argument("--backend", choices=["auto", "onnxruntime", "rtx"],
                   help="what runs ONNX models (default auto: onnxruntime when installed, else rtx.inference)")
    p.add_argument("--workers", type=int, help="server processes sharing the port (default 1)")
    p.add_argument("--max-body-bytes", type=int, help="largest request body (default 8 MiB)")
    p.add_argument("--request-timeout-s", type=float, help="per-request time limit (default 30)")
    p.add_argument("--max-concurrency", type=int, help="requests in flight before 503 (default 256)")
    p.add_argument("--auth-token-file", help="require 'Authorization: Bearer <token>' with a token from this file "
                                            "(one a line) on every route but health")
    p.add_argument("--ssl-certfile", help="serve HTTPS and gRPC over TLS with this certificate chain (PEM)")
    p.add_argument("--ssl-keyfile", help="the private key of --ssl-certfile (PEM)")
    p.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    args = p.parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    try:
        config = ServeConfig.load(args.config, overrides=overrides)
    except ValueError as e:
        print(f"rtx serve: {e}", file=sys.stderr)
        return 2
    return serve(config)
