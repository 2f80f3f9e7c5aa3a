"""rtx serving-api: an HTTP model server speaking KServe v2 and TF-Serving protocols.

    from rtx.serving_api import create_app, ServeConfig, serve
    app = create_app(ServeConfig(), registry="models/")   # a Starlette app
    serve(ServeConfig(port=8000, registry="models/"))      # uvicorn, until SIGTERM
"""
__version__ = "0.1.0"

from rtx.serving_api.app import create_app  # noqa: E402
from rtx.serving_api.config import BatchingConfig, RouteConfig, ServeConfig  # noqa: E402
from rtx.serving_api.errors import ServeError  # noqa: E402
from rtx.serving_api.server import serve  # noqa: E402

__all__ = ["create_app", "serve", "ServeConfig", "BatchingConfig", "RouteConfig", "ServeError"]
